package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/security"
)

// resourceAuthz allows listing one resource in one namespace.
type resourceAuthz struct{ resource, ns string }

func (a resourceAuthz) Allowed(_ context.Context, _ *security.User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
	return res != nil && res.Resource == a.resource && res.Namespace == a.ns, nil
}

// dismissMarks posts the dismissal as the page does (same origin, CSRF token), with extra
// headers.
func (c *client) dismissMarks(uid types.UID, extra http.Header) (int, []byte) {
	c.t.Helper()
	h := http.Header{"Origin": {c.base}, edge.CSRFHeader: {c.csrf}}
	for k, v := range extra {
		h[k] = v
	}
	return c.do(http.MethodPost, "/api/v1/objects/"+string(uid)+"/orphan-marks/dismiss", nil, h)
}

// An object the collector orphaned carries its mark in the object's routes, with the
// former owner named only to a user who may see it; the dismissal is a write (CSRF,
// audit) that --read-only allows, since it changes only gcscope's memory.
func TestOrphanMarksInTheAPI(t *testing.T) {
	e := env(t)
	ns := e.namespace(t)
	ctx := context.Background()
	owner, err := e.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "search-keys"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "search-index",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes the dependent", func() bool {
		n, ok := e.engine.Node(dep.UID)
		return ok && n.Observed && len(n.Owners) == 1
	})
	before := time.Now()
	if err := e.client.CoreV1().Secrets(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the dependent is marked orphaned", func() bool {
		n, _ := e.engine.Node(dep.UID)
		return len(n.Orphaned) == 1
	})
	path := "/api/v1/objects/" + string(dep.UID)

	// Everyone sees everything: the former owner is named.
	ts, audit := e.serve(t, Options{})
	c := newClient(t, ts)
	var obj objects.ObjectResponse
	if code := c.getJSON(path, &obj); code != 200 {
		t.Fatalf("GET object: %d", code)
	}
	want := gc.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "search-keys", UID: owner.UID}
	if len(obj.Orphaned) != 1 || obj.Orphaned[0].Owner != want || obj.Orphaned[0].Cause != gc.OrphanDelete ||
		!obj.Orphaned[0].Controller || obj.Orphaned[0].At.Before(before.Add(-time.Second)) {
		t.Errorf("object's orphaned = %+v, want the mark naming %+v", obj.Orphaned, want)
	}
	var ex objects.ExplainResponse
	if code := c.getJSON(path+"/explain", &ex); code != 200 || len(ex.Object.Orphaned) != 1 || ex.Object.Orphaned[0].Owner != want {
		t.Errorf("explain: %d, object's orphaned = %+v", code, ex.Object.Orphaned)
	}

	// A user who may list the ConfigMaps of ns but not its Secrets: the mark is there, the
	// former owner is not named, in the object, its explanation and the graph. (The
	// explanation's lastAction, the orphaning itself, is the engine's action as recorded:
	// not a mark, and not checked here.)
	limited, _ := e.serve(t, Options{Authorizer: resourceAuthz{resource: "configmaps", ns: ns}})
	lc := newClient(t, limited)
	for _, p := range []string{path, path + "/explain", "/api/v1/graph?namespace=" + ns} {
		code, body := lc.do(http.MethodGet, p, nil, nil)
		if code != 200 {
			t.Fatalf("GET %s as the limited user: %d %s", p, code, body)
		}
		if strings.HasSuffix(p, "/explain") {
			var x objects.ExplainResponse
			if err := json.Unmarshal(body, &x); err != nil {
				t.Fatal(err)
			}
			body, _ = json.Marshal(x.Object)
		}
		s := string(body)
		if strings.Contains(s, "search-keys") || strings.Contains(s, string(owner.UID)) {
			t.Errorf("GET %s names the former owner to a user who may not see it: %s", p, s)
		}
		if !strings.Contains(s, `"ownerHidden":true`) || !strings.Contains(s, "an object you may not see") {
			t.Errorf("GET %s: the mark is missing or not redacted: %s", p, s)
		}
	}

	// The dismissal: refused without the CSRF token, and from another site with it.
	if code, body := c.dismissMarks(dep.UID, nil); code != 403 || !strings.Contains(string(body), `"csrf"`) {
		t.Errorf("dismiss without a CSRF token: %d %s", code, body)
	}
	c.session()
	if code, body := c.dismissMarks(dep.UID, http.Header{"Origin": {"http://evil.example"}}); code != 403 || !strings.Contains(string(body), "cross-origin") {
		t.Errorf("cross-origin dismiss: %d %s", code, body)
	}
	if code, body := c.dismissMarks(dep.UID, http.Header{"Origin": nil, "Sec-Fetch-Site": {"cross-site"}}); code != 403 || !strings.Contains(string(body), `"csrf"`) {
		t.Errorf("cross-site dismiss: %d %s", code, body)
	}
	if code, _ := c.dismissMarks("no-such-uid", nil); code != 404 {
		t.Errorf("dismiss of an unknown object: %d, want 404", code)
	}
	if n, _ := e.engine.Node(dep.UID); len(n.Orphaned) != 1 {
		t.Fatalf("a refused dismissal dropped the mark: %+v", n.Orphaned)
	}

	// Read-only still dismisses: the cluster is not touched.
	ro, roAudit := e.serve(t, Options{ReadOnly: true})
	rc := newClient(t, ro)
	rc.session()
	code, body := rc.dismissMarks(dep.UID, nil)
	var resp objects.DismissResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Dismissed != 1 {
		t.Errorf("dismiss (read-only server): %d %s, want 200 with dismissed 1", code, body)
	}
	obj = objects.ObjectResponse{}
	if c.getJSON(path, &obj); len(obj.Orphaned) != 0 {
		t.Errorf("object's orphaned after dismissal = %+v, want none", obj.Orphaned)
	}
	if !strings.Contains(roAudit.String(), `"action":"dismissOrphanMarks"`) || !strings.Contains(roAudit.String(), `"result":"ok"`) {
		t.Errorf("audit log of the dismissal: %s", roAudit)
	}
	if n := strings.Count(audit.String(), `"action":"dismissOrphanMarks"`); n != 4 {
		t.Errorf("audit log has %d refused dismissals, want 4 (no token, cross-origin, cross-site, unknown object):\n%s", n, audit)
	}
}
