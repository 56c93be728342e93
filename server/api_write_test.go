package server

// The API's writes: deletes (validation, CSRF, dry runs, foreground cascades, read-only,
// impersonation), token-file authentication and the slow-motion switch.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/wire"
)

func TestDeleteRequestValidationAndCSRF(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	c := newClient(t, ts)
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)

	// No session: no CSRF token.
	if code, body := c.deleteObj(cm.UID, wire.DeleteRequest{PropagationPolicy: "Background"}); code != 403 || !strings.Contains(string(body), `"csrf"`) {
		t.Errorf("without CSRF token: %d %s", code, body)
	}
	c.session()
	// Cross-origin, even with the token.
	h := http.Header{"Origin": {"http://evil.example"}, edge.CSRFHeader: {c.csrf}}
	if code, body := c.do("POST", "/api/v1/objects/"+string(cm.UID)+"/delete", `{"propagationPolicy":"Background"}`, h); code != 403 || !strings.Contains(string(body), "cross-origin") {
		t.Errorf("cross-origin: %d %s", code, body)
	}
	cases := []struct {
		body   any
		status int
		want   string
	}{
		{`{"propagationPolicy":"Sideways","dryRun":true}`, 400, `"allowed":["Background","Foreground","Orphan"]`},
		{`{}`, 400, `\"dryRun\" is required`},
		{`{"propagationPolicy":"Background"}`, 400, `\"dryRun\" is required`},
		{`{"propagationPolicy":"Background","dryRun":null}`, 400, `\"dryRun\" is required`},
		{`{"propagationPolicy":"Orphan","force":true}`, 400, "unknown field"},
		{`not json`, 400, "bad_request"},
		{`{"propagationPolicy":"Orphan"}{}`, 400, "more than one JSON value"},
		{strings.Repeat(" ", edge.MaxBodyBytes+1) + `{}`, 400, "larger than"},
	}
	for _, tc := range cases {
		code, body := c.deleteObj(cm.UID, tc.body)
		if code != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("body %.40q: %d %s, want %d with %s", fmt.Sprint(tc.body), code, body, tc.status, tc.want)
		}
	}
	if code, _ := c.deleteObj("no-such-uid", wire.DeleteRequest{PropagationPolicy: "Background"}); code != 404 {
		t.Errorf("unknown uid: %d, want 404", code)
	}
	if !e.exists(t, cm) {
		t.Fatal("a refused request deleted the object")
	}
	if n := strings.Count(audit.String(), `"action":"delete"`); n < len(cases) {
		t.Errorf("audit log has %d delete lines, want one per request that reached the handler (%d+):\n%s", n, len(cases), audit)
	}
}

func TestDeleteDryRunPredictsAndForegroundDeletes(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	c := newClient(t, ts)
	c.session()
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	other := e.configMap(t, ns, "other", nil)
	child := e.configMap(t, ns, "child", nil, owner)
	shared := e.configMap(t, ns, "shared", nil, owner, other)
	held := e.configMap(t, ns, "held", []string{"test.gcscope.io/hold"}, child)
	// A cluster-scoped object naming the owner: an invalid reference, which keeps it
	// forever (not "owner ConfigMap owner still holds it": the owner is what goes).
	invalid, err := e.client.RbacV1().ClusterRoles().Create(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "invalid-owner-", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.RbacV1().ClusterRoles().Delete(context.Background(), invalid.Name, metav1.DeleteOptions{})
	})
	testkit.Eventually(t, "the engine observes "+invalid.Name, func() bool { n, ok := e.engine.Node(invalid.UID); return ok && n.Observed })

	code, body := c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Foreground", DryRun: true})
	var resp objects.DeleteResponse
	json.Unmarshal(body, &resp)
	if code != 200 || !resp.DryRun || resp.Result != "predicted" {
		t.Fatalf("dry run: %d %s", code, body)
	}
	p := resp.Prediction
	if got := objNames(p.Deleted); !sameSet(got, []string{"owner", "child", "held"}) {
		t.Errorf("predicted deleted: %v", got)
	}
	if got := objNames(p.Kept); !sameSet(got, []string{"shared", invalid.Name}) {
		t.Errorf("predicted kept: %v", got)
	}
	for _, k := range p.Kept {
		if want := map[string]string{"shared": "owner ConfigMap other still holds it",
			invalid.Name: "its reference to ConfigMap owner is invalid (a cluster-scoped object cannot have a namespaced owner)"}[k.Object.Name]; !strings.HasPrefix(k.Reason, want) {
			t.Errorf("kept %s: %q, want %q", k.Object.Name, k.Reason, want)
		}
	}
	// In the foreground the removals go up the blocking chain: held, then child, then the
	// owner, in that order, as the deletion below then does.
	steps := map[string]int{}
	for _, d := range p.Deleted {
		steps[d.Object.Name] = d.Step
	}
	if want := map[string]int{"held": 1, "child": 2, "owner": 3}; !maps.Equal(steps, want) || p.Order == "" {
		t.Errorf("predicted steps %v (order %q), want %v and the order in words", steps, p.Order, want)
	}
	if got := objNames(p.Waiting); !sameSet(got, []string{"held"}) {
		t.Errorf("predicted waiting: %v", got)
	}
	if got := objNames(p.TargetWaitsFor); !sameSet(got, []string{"held"}) {
		t.Errorf("predicted target waits for: %v", got)
	}
	var orphan objects.DeleteResponse
	_, body = c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Orphan", DryRun: true})
	json.Unmarshal(body, &orphan)
	if got := objNames(orphan.Prediction.Orphaned); !sameSet(got, []string{"child", "shared", invalid.Name}) || len(orphan.Prediction.Deleted) != 1 {
		t.Errorf("orphan prediction: orphaned %v, deleted %v", got, objNames(orphan.Prediction.Deleted))
	}
	if !e.exists(t, owner) {
		t.Fatal("a dry run deleted the owner")
	}

	from := e.engine.Feed().LastSeq()
	code, body = c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Foreground"})
	if code != 200 || !strings.Contains(string(body), "deletion started") {
		t.Fatalf("delete: %d %s", code, body)
	}
	testkit.Eventually(t, "held is being deleted: the chain waits on its finalizer", func() bool {
		got, err := e.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "held", metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil
	})
	if !e.exists(t, owner) || !e.exists(t, child) {
		t.Fatal("the foreground deletion did not wait for held")
	}
	e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	testkit.Eventually(t, "the chain goes once held is released", func() bool {
		return !e.exists(t, owner) && !e.exists(t, child) && !e.exists(t, held)
	})
	if !e.exists(t, shared) || !e.exists(t, other) {
		t.Error("shared (held by another owner) or other was deleted")
	}
	if _, err := e.client.RbacV1().ClusterRoles().Get(context.Background(), invalid.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the ClusterRole with the invalid reference: %v, want it kept", err)
	}
	var removed []string
	testkit.Eventually(t, "the engine to see the three removals", func() bool {
		evs, err := e.engine.Feed().Since(from, 100000)
		if err != nil {
			t.Fatal(err)
		}
		removed = removed[:0]
		for _, ev := range evs {
			if ev.Type == gc.NodeRemoved && ev.Node.Namespace == ns && steps[ev.Node.Name] > 0 {
				removed = append(removed, ev.Node.Name)
			}
		}
		return len(removed) == 3
	})
	if !slices.Equal(removed, []string{"held", "child", "owner"}) {
		t.Errorf("removed in the order %v, want the predicted steps' held, child, owner", removed)
	}
	var entries []edge.Entry
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var a edge.Entry
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("audit line is not JSON: %q", line)
		}
		entries = append(entries, a)
	}
	last := entries[len(entries)-1]
	if len(entries) != 3 || last.Object.UID != owner.UID || last.Policy != "Foreground" || last.DryRun == nil || *last.DryRun || last.Result != "ok" || last.User != "local" {
		t.Errorf("audit entries: %+v", entries)
	}
}

func objNames(ps []gc.PredictedObject) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Object.Name)
	}
	return out
}

func TestReadOnlyRefusesWritesButPredicts(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{ReadOnly: true})
	c := newClient(t, ts)
	if s := c.session(); !s.ReadOnly {
		t.Error("session does not say read-only")
	}
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)
	if code, body := c.deleteObj(cm.UID, wire.DeleteRequest{PropagationPolicy: "Background"}); code != 403 || !strings.Contains(string(body), "read_only") {
		t.Errorf("read-only delete: %d %s", code, body)
	}
	if code, _ := c.deleteObj(cm.UID, wire.DeleteRequest{PropagationPolicy: "Background", DryRun: true}); code != 200 {
		t.Errorf("read-only dry run: %d", code)
	}
	if !e.exists(t, cm) {
		t.Error("read-only mode deleted the object")
	}
}

func TestTokenFileAuthentication(t *testing.T) {
	e := env(t)
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("# operators\n0123456789abcdef0123 alice\n\n"), 0o600)
	tf, err := security.LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := e.serve(t, Options{Auth: tf})
	c := newClient(t, ts)
	if code, _ := c.do("GET", "/api/v1/graph", nil, nil); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := c.do("GET", "/api/v1/graph", nil, http.Header{"Authorization": {"Bearer wrong-token-000000"}}); code != 401 {
		t.Errorf("wrong token: %d, want 401", code)
	}
	if code, _ := c.do("GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("healthz needs no token: %d", code)
	}
	var s edge.SessionResponse
	code, body := c.do("GET", "/api/v1/session", nil, http.Header{"Authorization": {"Bearer 0123456789abcdef0123"}})
	json.Unmarshal(body, &s)
	if code != 200 || s.User.Name != "alice" {
		t.Errorf("token session: %d %s", code, body)
	}
	// A browser logs in once through the form; the cookie carries it (websockets cannot
	// send headers).
	if code := c.login("0123456789abcdef0123", http.Header{"Origin": {c.base}}); code != 200 {
		t.Errorf("login: %d", code)
	}
	if code, _ := c.do("GET", "/api/v1/queues", nil, nil); code != 200 {
		t.Errorf("after login: %d", code)
	}
	if _, err := security.LoadTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing token file loads")
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := security.LoadTokenFile(short); err == nil || !strings.Contains(err.Error(), "shorter than 16") {
		t.Errorf("short token: %v", err)
	}
}

func TestImpersonatedDeleteDeniedByRBAC(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	ns := e.namespace(t)
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts, audit := e.serve(t, Options{Auth: security.NewTokenReviewer(e.client.AuthenticationV1().TokenReviews())})
	c := newClient(t, ts)
	bearer := http.Header{"Authorization": {"Bearer " + tok.Status.Token}}
	var s edge.SessionResponse
	code, body := c.do("GET", "/api/v1/session", nil, bearer)
	json.Unmarshal(body, &s)
	if code != 200 || s.User.Name != "system:serviceaccount:"+ns+":viewer" || !s.User.Impersonate {
		t.Fatalf("session as the service account: %d %s", code, body)
	}
	cm := e.configMap(t, ns, "target", nil)
	h := http.Header{"Authorization": bearer["Authorization"], "Origin": {ts.URL}, edge.CSRFHeader: {s.CSRFToken}}
	code, body = c.do("POST", "/api/v1/objects/"+string(cm.UID)+"/delete", `{"propagationPolicy":"Background","dryRun":false}`, h)
	var apiErr httpapi.Error
	json.Unmarshal(body, &apiErr)
	if code != 403 || apiErr.Reason != "Forbidden" || !strings.Contains(apiErr.Message, "viewer") {
		t.Errorf("impersonated delete: %d %s, want the apiserver's 403", code, body)
	}
	if !e.exists(t, cm) {
		t.Error("the object was deleted despite RBAC")
	}
	if !strings.Contains(audit.String(), `"impersonated":true`) || !strings.Contains(audit.String(), `"status":403`) {
		t.Errorf("audit: %s", audit)
	}
}

// TestSlowMotionSwitch: the page's slow-motion switch turns the engine's action delay off
// and on, as a guarded write; without a delay, or read-only, it is refused.
func TestSlowMotionSwitch(t *testing.T) {
	e := env(t)
	slow, err := gc.NewForConfig(e.config, gc.Options{ActionDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(engine registry.Engine, readOnly bool) (*client, *lockedBuffer) {
		audit := &lockedBuffer{}
		ts := httptest.NewServer(New(Options{Engine: engine, ReadOnly: readOnly, Audit: audit,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
		t.Cleanup(ts.Close)
		c := newClient(t, ts)
		c.session()
		return c, audit
	}
	post := func(c *client, body string, withToken bool) (int, string) {
		h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}}
		if withToken {
			h.Set(edge.CSRFHeader, c.csrf)
		}
		code, out := c.do(http.MethodPost, "/api/v1/slow-motion", body, h)
		return code, string(out)
	}

	c, audit := serve(slow, false)
	if s := c.session(); !s.SlowMotion || s.ActionDelay != "2s" {
		t.Fatalf("session: slowMotion %v, actionDelay %q; want on, 2s", s.SlowMotion, s.ActionDelay)
	}
	if code, body := post(c, `{"enabled":false}`, true); code != 200 || !strings.Contains(body, `"enabled":false`) || slow.SlowMotion() {
		t.Fatalf("switch off: %d %s (engine: %v)", code, body, slow.SlowMotion())
	}
	if code, body := post(c, `{"enabled":true}`, true); code != 200 || !strings.Contains(body, `"enabled":true`) || !slow.SlowMotion() {
		t.Fatalf("switch on: %d %s", code, body)
	}
	if code, body := post(c, `{"enabled":false}`, false); code != 403 || !strings.Contains(body, "csrf") || !slow.SlowMotion() {
		t.Errorf("without the CSRF token: %d %s", code, body)
	}
	if code, body := post(c, `{"on":1}`, true); code != 400 {
		t.Errorf("bad body: %d %s", code, body)
	}
	if !strings.Contains(audit.String(), `"action":"slowMotion"`) {
		t.Errorf("no audit line: %s", audit.String())
	}

	ro, _ := serve(slow, true)
	if code, body := post(ro, `{"enabled":false}`, true); code != 403 || !strings.Contains(body, "read_only") || !slow.SlowMotion() {
		t.Errorf("read-only: %d %s", code, body)
	}
	plain, _ := serve(e.engine, false)
	if code, body := post(plain, `{"enabled":true}`, true); code != 409 || !strings.Contains(body, "--gc-action-delay") {
		t.Errorf("without a delay: %d %s", code, body)
	}
}
