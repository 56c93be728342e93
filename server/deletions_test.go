package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/wire"
)

func (e *apiEnv) deletions(t *testing.T) *deletion.Explainer {
	t.Helper()
	x, err := deletion.New(e.engine, e.config)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestExplainNamesWhoAddedTheFinalizer: a ConfigMap held by a finalizer a named field
// manager added is explained with that manager (read from its managedFields), the
// operation and time, the controller's liveness and the risk of a release by hand; the
// stuck list names it under its finalizer.
func TestExplainNamesWhoAddedTheFinalizer(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{Deletions: e.deletions(t)})
	c := newClient(t, ts)
	ns := e.namespace(t)
	const hold, manager = "nobody.example.org/hold", "ghost-operator"
	ctx := context.Background()
	// With data: an object created with no field the apiserver tracks (a name only) gets
	// no managedFields entry, and then none is recorded for later updates either.
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+hold+`"]}}`), metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	testkit.Eventually(t, "the engine sees it held", func() bool {
		n, _ := e.engine.Node(cm.UID)
		return n.BeingDeleted && slices.Contains(n.Finalizers, hold)
	})

	var ex explainResponse
	if code := c.getJSON("/api/v1/objects/"+string(cm.UID)+"/explain", &ex); code != http.StatusOK {
		t.Fatalf("explain: %d", code)
	}
	if ex.Deletion == nil || len(ex.Deletion.Origins) != 1 {
		t.Fatalf("deletion = %+v, want one origin", ex.Deletion)
	}
	o := ex.Deletion.Origins[0]
	if o.Finalizer != hold || o.Manager != manager || o.Operation != "Update" || o.Time == nil {
		t.Errorf("origin = %+v, want %s added by %s", o, hold, manager)
	}
	if o.Controller.State != deletion.None || !strings.Contains(o.Controller.Says, "no running controller found for nobody.example.org") {
		t.Errorf("controller = %+v, want none found for nobody.example.org", o.Controller)
	}
	if !strings.Contains(o.Risk, "left behind") {
		t.Errorf("risk = %q", o.Risk)
	}

	var stuck deletion.StuckReport
	if code := c.getJSON("/api/v1/stuck?olderThan=0s", &stuck); code != http.StatusOK {
		t.Fatalf("stuck: %d", code)
	}
	i := slices.IndexFunc(stuck.Groups, func(g deletion.StuckGroup) bool { return g.Finalizer == hold })
	if i < 0 || stuck.Groups[i].Cause != deletion.CauseFinalizer || stuck.Groups[i].Objects[0].Object.UID != cm.UID ||
		stuck.Groups[i].Origin == nil || stuck.Groups[i].Origin.Manager != manager {
		t.Fatalf("stuck = %+v, want a finalizer group of %s with the ConfigMap, added by %s", stuck, hold, manager)
	}
	if code := c.getJSON("/api/v1/stuck", &stuck); code != http.StatusOK || slices.ContainsFunc(stuck.Groups, func(g deletion.StuckGroup) bool { return g.Finalizer == hold }) {
		t.Errorf("the default threshold (5m) lists an object held for seconds: %d %+v", code, stuck)
	}
}

func TestStuckAndHealthRequests(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{Deletions: e.deletions(t)})
	c := newClient(t, ts)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/stuck?olderThan=soon", 400, "not a duration"},
		{"/api/v1/stuck?olderThan=-1s", 400, "not a duration"},
		{"/api/v1/stuck?olderThan=1s&olderThan=2s", 400, "given 2 times"},
		{"/api/v1/stuck?since=1", 400, `"allowed":["olderThan"]`},
		{"/api/v1/health?x=1", 400, ""},
		{"/api/v1/stuck?olderThan=90m", 200, `"olderThan":"1h30m0s"`},
		{"/api/v1/health", 200, `"healthy":true`},
	} {
		code, body := c.do(http.MethodGet, tc.path, nil, nil)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s = %d %s, want %d with %s", tc.path, code, body, tc.code, tc.want)
		}
	}
	// Without a cluster connection to explain with, the stuck list says so.
	ts2, _ := e.serve(t, Options{})
	if code, body := newClient(t, ts2).do(http.MethodGet, "/api/v1/stuck", nil, nil); code != http.StatusServiceUnavailable {
		t.Errorf("stuck without Deletions = %d %s, want 503", code, body)
	}
}

// TestNamespaceDeletePredictsItsContent: the delete dialog's dry run of a namespace
// predicts all its content in the namespace controller's order, not "1 object".
func TestNamespaceDeletePredictsItsContent(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{Deletions: e.deletions(t)})
	c := newClient(t, ts)
	c.session()
	ns := e.namespace(t)
	a := e.configMap(t, ns, "a", nil)
	b := e.configMap(t, ns, "b", []string{"example.com/keep"})
	t.Cleanup(func() {
		e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "b", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	nsObj, err := e.client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes the namespace", func() bool { _, ok := e.engine.Node(nsObj.UID); return ok })

	code, body := c.deleteObj(nsObj.UID, wire.DeleteRequest{PropagationPolicy: "Background", DryRun: true})
	var resp deleteResponse
	if err := json.Unmarshal(body, &resp); err != nil || code != http.StatusOK {
		t.Fatalf("dry run: %d %s", code, body)
	}
	p := resp.Prediction
	got := map[types.UID]gc.PredictedObject{}
	for _, d := range p.Deleted {
		got[d.Object.UID] = d
	}
	if len(p.Deleted) != 3 || got[a.UID].Step != 2 || got[b.UID].Step != 2 || got[nsObj.UID].Step != 3 {
		t.Errorf("deleted = %+v, want the two ConfigMaps (step 2) and the namespace (step 3)", p.Deleted)
	}
	if p.Order == "" || len(p.Waiting) != 1 || p.Waiting[0].Object.UID != b.UID {
		t.Errorf("order %q, waiting %+v: want an order and ConfigMap b held", p.Order, p.Waiting)
	}
	if _, err := e.client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the dry run deleted the namespace: %v", err)
	}
}

// TestStuckListIsPerUser: with --auth=kubernetes the stuck list and the health report name
// only what the user may list, and count the rest.
func TestStuckListIsPerUser(t *testing.T) {
	w := newRBACWorld(t)
	ts, _ := w.e.serve(t, Options{Auth: NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews()), Deletions: w.e.deletions(t)})
	c := newClient(t, ts)
	stuckAs := func(user string) (deletion.StuckReport, string) {
		t.Helper()
		code, body := c.do("GET", "/api/v1/stuck?olderThan=0s", nil, http.Header{"Authorization": {"Bearer " + w.tokens[user]}})
		var r deletion.StuckReport
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			t.Fatalf("stuck as %s: %d %s", user, code, body)
		}
		return r, string(body)
	}
	alice, _ := stuckAs("alice")
	if !slices.ContainsFunc(alice.Groups, func(g deletion.StuckGroup) bool {
		return g.Cause == deletion.CauseForeground && slices.ContainsFunc(g.Objects, func(o deletion.StuckObject) bool { return o.Object.Name == "alpha-fg" })
	}) {
		t.Errorf("alice's stuck list %+v lacks her foreground deletion alpha-fg", alice.Groups)
	}
	for _, user := range []string{"bob", "nobody"} {
		r, body := stuckAs(user)
		if strings.Contains(body, "alpha-") || strings.Contains(body, w.nsA) || r.Hidden == 0 {
			t.Errorf("%s's stuck list names namespace %s's objects or hides nothing: %s", user, w.nsA, body)
		}
		code, health := c.do("GET", "/api/v1/health", nil, http.Header{"Authorization": {"Bearer " + w.tokens[user]}})
		if code != http.StatusOK || strings.Contains(string(health), "alpha-") {
			t.Errorf("health as %s: %d %s", user, code, health)
		}
	}
}
