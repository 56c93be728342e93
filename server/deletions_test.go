package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
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

	var ex objects.ExplainResponse
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
	var resp objects.DeleteResponse
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
	ts, _ := w.e.serve(t, Options{Auth: security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews()), Deletions: w.e.deletions(t)})
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

// TestVerdictsRestOnWhatTheUserMayList: with per-user reads, whether a finalizer's
// controller runs is told only from objects the user may list. A user of one namespace
// who names finalizers after controllers elsewhere (a Deployment that is down, a renewed
// Lease, nothing at all) reads the same "unknown" for each, in the stuck list and in
// explanations, where an administrator reads down, alive and none.
func TestVerdictsRestOnWhatTheUserMayList(t *testing.T) {
	w := newRBACWorld(t)
	e := w.e
	ctx := context.Background()
	if _, err := e.client.AppsV1().Deployments(w.nsB).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "zeta-controller"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zeta"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "zeta"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoordinationV1().Leases(w.nsB).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "omega-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("omega-7d9f_1"), LeaseDurationSeconds: ptr.To(int32(3600)), RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	finalizers := map[string]string{"zeta.example.com/x": deletion.Down, "omega.example.com/x": deletion.Alive, "nothing-here.example.com/x": deletion.None}
	var held []types.UID
	for f := range finalizers {
		name := "held-by-" + strings.Split(f, ".")[0]
		cm, err := e.client.CoreV1().ConfigMaps(w.nsA).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{f}}, Data: map[string]string{"k": "v"}},
			metav1.CreateOptions{FieldManager: "kubectl-create"}) // a person's tool: the finalizer alone names the controller
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			e.client.CoreV1().ConfigMaps(w.nsA).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
		if err := e.client.CoreV1().ConfigMaps(w.nsA).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		held = append(held, cm.UID)
	}
	testkit.Eventually(t, "the engine sees the ConfigMaps held", func() bool {
		return !slices.ContainsFunc(held, func(u types.UID) bool { n, _ := e.engine.Node(u); return !n.BeingDeleted })
	})
	x := e.deletions(t)
	admin, _ := e.serve(t, Options{Deletions: x})
	perUser, _ := e.serve(t, Options{Deletions: x, Auth: security.NewTokenReviewer(e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(e.client.AuthorizationV1().SubjectAccessReviews())})
	verdicts := func(ts *httptest.Server, h http.Header) (stuck, explained map[string]deletion.Liveness) {
		t.Helper()
		c := newClient(t, ts)
		stuck, explained = map[string]deletion.Liveness{}, map[string]deletion.Liveness{}
		code, body := c.do(http.MethodGet, "/api/v1/stuck?olderThan=0s", nil, h)
		var r deletion.StuckReport
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			t.Fatalf("stuck: %d %s", code, body)
		}
		for _, g := range r.Groups {
			if _, ok := finalizers[g.Finalizer]; ok && g.Origin != nil {
				stuck[g.Finalizer] = g.Origin.Controller
			}
		}
		for _, u := range held {
			code, body := c.do(http.MethodGet, "/api/v1/objects/"+string(u)+"/explain", nil, h)
			var ex objects.ExplainResponse
			if code != http.StatusOK || json.Unmarshal(body, &ex) != nil || ex.Deletion == nil || len(ex.Deletion.Origins) != 1 {
				t.Fatalf("explain %s: %d %s", u, code, body)
			}
			o := ex.Deletion.Origins[0]
			explained[o.Finalizer] = o.Controller
		}
		return stuck, explained
	}
	stuck, explained := verdicts(admin, nil)
	for f, want := range finalizers {
		if stuck[f].State != want || explained[f].State != want {
			t.Errorf("an administrator on %s: stuck list %q, explanation %q; want %q", f, stuck[f].State, explained[f].State, want)
		}
	}
	stuck, explained = verdicts(perUser, http.Header{"Authorization": {"Bearer " + w.tokens["alice"]}})
	says := ""
	for f := range finalizers {
		for where, l := range map[string]deletion.Liveness{"stuck list": stuck[f], "explanation": explained[f]} {
			if l.State != deletion.Unknown || len(l.Evidence) != 0 || !strings.Contains(l.Says, "not all visible to you") {
				t.Errorf("alice (namespace %s only), %s of %s: %+v; want unknown, with no evidence", w.nsA, where, f, l)
			}
			// The words differ only by the names alice gave: nothing tells the cases apart.
			shape := strings.ReplaceAll(l.Says, strings.Split(f, ".")[0], "NAME")
			if says != "" && shape != says {
				t.Errorf("alice reads %q for %s and %q for another: the words tell the cases apart", shape, f, says)
			}
			says = shape
		}
	}
}

// TestOtherSitesCannotReadTheAPI: a read another site makes the browser send (by
// Sec-Fetch-Site or Origin) is refused before it costs the apiserver anything, and
// audited; gcscope's own page, the user's navigation and clients that are not browsers
// read as before.
func TestOtherSitesCannotReadTheAPI(t *testing.T) {
	e := env(t)
	counter := &requestCounter{next: http.DefaultTransport}
	cfg := rest.CopyConfig(e.config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	x, err := deletion.New(e.engine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts, audit := e.serve(t, Options{Deletions: x})
	c := newClient(t, ts)
	for _, h := range []http.Header{
		{"Sec-Fetch-Site": {"cross-site"}},
		{"Sec-Fetch-Site": {"same-site"}},
		{"Origin": {"https://evil.example"}},
	} {
		for _, path := range []string{"/api/v1/stuck?olderThan=0s", "/api/v1/health", "/api/v1/graph", "/metrics"} {
			if code, body := c.do(http.MethodGet, path, nil, h); code != http.StatusForbidden || !strings.Contains(string(body), "own page") {
				t.Errorf("GET %s with %v: %d %s, want 403", path, h, code, body)
			}
		}
	}
	if n := counter.n.Load(); n != 0 {
		t.Errorf("refused reads made %d apiserver requests, want 0", n)
	}
	if got := strings.Count(audit.String(), `"action":"read"`); got != 12 {
		t.Errorf("%d audit lines of refused reads, want 12:\n%s", got, audit)
	}
	for _, h := range []http.Header{nil, {"Sec-Fetch-Site": {"same-origin"}, "Origin": {ts.URL}}, {"Sec-Fetch-Site": {"none"}}} {
		if code, body := c.do(http.MethodGet, "/api/v1/stuck?olderThan=0s", nil, h); code != http.StatusOK {
			t.Errorf("GET /api/v1/stuck with %v: %d %s, want 200", h, code, body)
		}
	}
}

// requestCounter counts the requests it passes on.
type requestCounter struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// failingEngine is the shared engine with resources whose list keeps failing.
type failingEngine struct {
	registry.Engine
	failing map[string]string
}

func (f failingEngine) SyncState() gc.SyncState {
	st := f.Engine.SyncState()
	st.Failing = f.failing
	return st
}

// TestHealthSaysFailingErrorsOnlyToThoseWhoSeeEverything: the apiserver's error of a
// failing resource (which can name a webhook's Service in another namespace) is shown to a
// user who may list everything; a user of one namespace reads which resources fail, not
// the error.
func TestHealthSaysFailingErrorsOnlyToThoseWhoSeeEverything(t *testing.T) {
	e := env(t)
	secret := `conversion webhook for widgets.example.com failed: Post "https://widget-converter.secret-ns.svc:443/convert": connection refused`
	for _, tc := range []struct {
		authz    security.Authorizer
		wantText bool
	}{{nil, true}, {&countingAuthz{allow: "mine"}, false}} {
		s := New(Options{Engine: failingEngine{e.engine, map[string]string{"example.com/v1/widgets": secret}}, Authorizer: tc.authz,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ts := httptest.NewServer(s)
		code, body := newClient(t, ts).do("GET", "/api/v1/health", nil, nil)
		ts.Close()
		if code != http.StatusOK || !strings.Contains(string(body), "example.com/v1/widgets") || strings.Contains(string(body), "secret-ns") == !tc.wantText {
			t.Errorf("health (may list everything: %v): %d %s", tc.wantText, code, body)
		}
	}
}
