package server

// The API against the embedded control plane with the engine running active.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/wire"
)

type apiEnv struct {
	cluster *cluster.Cluster
	config  *rest.Config
	client  kubernetes.Interface
	engine  *gc.GarbageCollector
	stop    context.CancelFunc
}

var (
	apiOnce sync.Once
	theEnv  *apiEnv
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theEnv != nil {
		theEnv.stop()
		theEnv.cluster.Stop()
	}
	os.Exit(code)
}

func env(t testing.TB) *apiEnv {
	t.Helper()
	apiOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c, err := cluster.Start(ctx, cluster.Options{})
		if err != nil {
			envErr = err
			return
		}
		e := &apiEnv{cluster: c, config: c.RESTConfig()}
		e.client = kubernetes.NewForConfigOrDie(e.config)
		if e.engine, err = gc.NewForConfig(e.config, gc.Options{DiscoveryPeriod: 2 * time.Second}); err != nil {
			envErr = err
			return
		}
		runCtx, stop := context.WithCancel(context.Background())
		e.stop = stop
		go e.engine.Run(runCtx)
		<-e.engine.Started()
		theEnv = e
	})
	if envErr != nil {
		t.Fatalf("test environment: %v", envErr)
	}
	return theEnv
}

// serve starts a gcscope server over the shared engine.
func (e *apiEnv) serve(t testing.TB, o Options) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	audit := &lockedBuffer{}
	o.Engine, o.Kube, o.Audit = e.engine, e.config, audit
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	return ts, &audit.buf
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (e *apiEnv) namespace(t testing.TB) string {
	t.Helper()
	ns, err := e.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func (e *apiEnv) configMap(t *testing.T, ns, name string, finalizers []string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr(true)})
	}
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs, Finalizers: finalizers}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the engine observes "+name, func() bool {
		n, ok := e.engine.Node(cm.UID)
		return ok && n.Observed
	})
	return cm
}

func (e *apiEnv) exists(t *testing.T, cm *corev1.ConfigMap) bool {
	t.Helper()
	got, err := e.client.CoreV1().ConfigMaps(cm.Namespace).Get(context.Background(), cm.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.UID == cm.UID
}

func ptr[T any](v T) *T { return &v }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// client is a browser-like HTTP client: a cookie jar, and the page's origin.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newClient(t *testing.T, ts *httptest.Server) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: ts.URL, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (c *client) do(method, path string, body any, header http.Header) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			j, _ := json.Marshal(b)
			rd = bytes.NewReader(j)
		}
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (c *client) getJSON(path string, v any) int {
	c.t.Helper()
	code, body := c.do(http.MethodGet, path, nil, nil)
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			c.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return code
}

// login posts the login form as the page does (following the redirect to the UI), with
// extra headers; it returns the final status.
func (c *client) login(token string, header http.Header) int {
	c.t.Helper()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for k, v := range header {
		h[k] = v
	}
	code, _ := c.do(http.MethodPost, "/login", url.Values{"token": {token}}.Encode(), h)
	return code
}

// session fetches the CSRF token (and its cookie), as the page does.
func (c *client) session() sessionResponse {
	c.t.Helper()
	var s sessionResponse
	if code := c.getJSON("/api/v1/session", &s); code != http.StatusOK {
		c.t.Fatalf("session: %d", code)
	}
	c.csrf = s.CSRFToken
	return s
}

// deleteObj posts a delete the way the UI does: same origin, with the CSRF token.
func (c *client) deleteObj(uid types.UID, body any) (int, []byte) {
	c.t.Helper()
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}, csrfHeader: {c.csrf}}
	return c.do(http.MethodPost, "/api/v1/objects/"+string(uid)+"/delete", body, h)
}

func TestHealthReadyAndMetrics(t *testing.T) {
	e := env(t)
	var notReady error = fmt.Errorf("syncing")
	ts, _ := e.serve(t, Options{Ready: func() error { return notReady }})
	c := newClient(t, ts)
	if code, body := c.do("GET", "/readyz", nil, nil); code != 503 || !strings.Contains(string(body), "syncing") {
		t.Errorf("readyz while not ready: %d %s", code, body)
	}
	notReady = nil
	if code, _ := c.do("GET", "/readyz", nil, nil); code != 200 {
		t.Errorf("readyz: %d", code)
	}
	if code, _ := c.do("GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	code, body := c.do("GET", "/metrics", nil, nil)
	for _, want := range []string{`workqueue_depth{name="garbage_collector_attempt_to_delete"}`, "garbagecollector_controller_resources_sync_error_total", `gcscope_http_requests_total{code="200",method="GET",route="/readyz"}`} {
		if code != 200 || !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s (status %d)", want, code)
		}
	}
}

func TestGraphFiltersAndPaging(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	child := e.configMap(t, ns, "child", nil, owner)
	grandchild := e.configMap(t, ns, "grandchild", nil, child)
	loner := e.configMap(t, ns, "loner", nil)

	var all graphResponse
	if code := c.getJSON("/api/v1/graph?limit=100000", &all); code != 200 {
		t.Fatalf("graph: %d", code)
	}
	snap := e.engine.Snapshot()
	if all.Total != len(all.Nodes) || all.NextCursor != "" || all.Seq == 0 {
		t.Errorf("full graph: total %d, %d nodes, cursor %q, seq %d", all.Total, len(all.Nodes), all.NextCursor, all.Seq)
	}
	if d := len(snap.Nodes) - len(all.Nodes); d < -5 || d > 5 { // the cluster changes a little meanwhile
		t.Errorf("graph has %d nodes, the engine %d", len(all.Nodes), len(snap.Nodes))
	}

	var inNS graphResponse
	c.getJSON("/api/v1/graph?namespace="+ns+"&kind=configmap", &inNS)
	names := nodeNames(inNS.Nodes)
	for _, want := range []string{"owner", "child", "grandchild", "loner"} {
		if !slices.Contains(names, want) {
			t.Errorf("namespace+kind filter lacks %s: %v", want, names)
		}
	}
	for _, n := range inNS.Nodes {
		if n.Namespace != ns || n.Kind != "ConfigMap" {
			t.Errorf("namespace+kind filter let through %s %s/%s", n.Kind, n.Namespace, n.Name)
		}
	}
	if len(inNS.Edges) != 2 {
		t.Errorf("edges in namespace: %+v, want child→owner and grandchild→child", inNS.Edges)
	}

	var closureResp graphResponse
	c.getJSON("/api/v1/graph?uid="+string(child.UID), &closureResp)
	if got := nodeNames(closureResp.Nodes); !sameSet(got, []string{"owner", "child", "grandchild"}) {
		t.Errorf("uid closure of child: %v, want owner, child, grandchild", got)
	}
	var text graphResponse
	c.getJSON("/api/v1/graph?namespace="+ns+"&q=GRAND", &text)
	if got := nodeNames(text.Nodes); !sameSet(got, []string{"grandchild"}) {
		t.Errorf("text search: %v", got)
	}

	// Paging by cursor visits every node once.
	var paged []string
	cursor := ""
	for range 10 {
		var page graphResponse
		c.getJSON("/api/v1/graph?namespace="+ns+"&kind=ConfigMap&limit=2&cursor="+url.QueryEscape(cursor), &page)
		if page.Total != len(inNS.Nodes) || len(page.Nodes) > 2 {
			t.Fatalf("page: total %d, %d nodes", page.Total, len(page.Nodes))
		}
		paged = append(paged, nodeNames(page.Nodes)...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !sameSet(paged, names) || len(paged) != len(names) {
		t.Errorf("paging visited %v, want %v once each", paged, names)
	}

	for _, bad := range []string{"/api/v1/graph?limit=0", "/api/v1/graph?limit=x", "/api/v1/graph?namespaces=a"} {
		code, body := c.do("GET", bad, nil, nil)
		var e apiError
		json.Unmarshal(body, &e)
		if code != 400 || e.Code != "bad_request" || e.Message == "" {
			t.Errorf("GET %s: %d %s, want a 400 saying why", bad, code, body)
		}
	}
	_ = loner
	_ = grandchild
}

func nodeNames(ns []gc.NodeState) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func TestObjectExplainAndQueues(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	held := e.configMap(t, ns, "held", []string{"test.gcscope.io/hold"}, owner)
	t.Cleanup(func() {
		e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	var obj gc.NodeDetail
	if code := c.getJSON("/api/v1/objects/"+string(owner.UID), &obj); code != 200 || obj.Name != "owner" || len(obj.Dependents) != 1 || obj.Dependents[0].UID != held.UID {
		t.Errorf("object: %d %+v", code, obj)
	}
	if code, body := c.do("GET", "/api/v1/objects/no-such-uid", nil, nil); code != 404 || !strings.Contains(string(body), "not_found") {
		t.Errorf("unknown uid: %d %s", code, body)
	}

	fg := metav1.DeletePropagationForeground
	if err := e.client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	var ex explainResponse
	waitFor(t, "explain names the finalizer that holds the blocker", func() bool {
		c.getJSON("/api/v1/objects/"+string(owner.UID)+"/explain", &ex)
		return len(ex.Blockers) == 1 && strings.Contains(ex.Text, "configmap held is held by finalizer test.gcscope.io/hold")
	})
	if !ex.Object.DeletingDependents || !strings.Contains(ex.Next, "wait for 1 blocking dependent to be deleted") {
		t.Errorf("explain: %+v", ex)
	}

	var q queuesResponse
	if code := c.getJSON("/api/v1/queues", &q); code != 200 || len(q.Queues) != 3 {
		t.Fatalf("queues: %d %+v", code, q)
	}
	var names []string
	for _, qs := range q.Queues {
		names = append(names, string(qs.Name))
	}
	if !slices.Equal(names, []string{"graphChanges", "attemptToDelete", "attemptToOrphan"}) || q.Queues[0].Adds == 0 {
		t.Errorf("queues: %v, graphChanges adds %d", names, q.Queues[0].Adds)
	}
	waitFor(t, "the queues view shows the worker's latest action on the owner", func() bool {
		c.getJSON("/api/v1/queues", &q)
		return slices.ContainsFunc(q.Queues[1].Recent, func(a gc.Action) bool { return a.Object.UID == owner.UID })
	})
}

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
	h := http.Header{"Origin": {"http://evil.example"}, csrfHeader: {c.csrf}}
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
		{strings.Repeat(" ", maxBodyBytes+1) + `{}`, 400, "larger than"},
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

	code, body := c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Foreground", DryRun: true})
	var resp deleteResponse
	json.Unmarshal(body, &resp)
	if code != 200 || !resp.DryRun || resp.Result != "predicted" {
		t.Fatalf("dry run: %d %s", code, body)
	}
	p := resp.Prediction
	if got := objNames(p.Deleted); !sameSet(got, []string{"owner", "child", "held"}) {
		t.Errorf("predicted deleted: %v", got)
	}
	if got := objNames(p.Kept); !sameSet(got, []string{"shared"}) {
		t.Errorf("predicted kept: %v", got)
	}
	if got := objNames(p.Waiting); !sameSet(got, []string{"held"}) {
		t.Errorf("predicted waiting: %v", got)
	}
	if got := objNames(p.TargetWaitsFor); !sameSet(got, []string{"held"}) {
		t.Errorf("predicted target waits for: %v", got)
	}
	var orphan deleteResponse
	_, body = c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Orphan", DryRun: true})
	json.Unmarshal(body, &orphan)
	if got := objNames(orphan.Prediction.Orphaned); !sameSet(got, []string{"child", "shared"}) || len(orphan.Prediction.Deleted) != 1 {
		t.Errorf("orphan prediction: orphaned %v, deleted %v", got, objNames(orphan.Prediction.Deleted))
	}
	if !e.exists(t, owner) {
		t.Fatal("a dry run deleted the owner")
	}

	code, body = c.deleteObj(owner.UID, wire.DeleteRequest{PropagationPolicy: "Foreground"})
	if code != 200 || !strings.Contains(string(body), "deletion started") {
		t.Fatalf("delete: %d %s", code, body)
	}
	waitFor(t, "held is being deleted: the chain waits on its finalizer", func() bool {
		got, err := e.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "held", metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil
	})
	if !e.exists(t, owner) || !e.exists(t, child) {
		t.Fatal("the foreground deletion did not wait for held")
	}
	e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	waitFor(t, "the chain goes once held is released", func() bool {
		return !e.exists(t, owner) && !e.exists(t, child) && !e.exists(t, held)
	})
	if !e.exists(t, shared) || !e.exists(t, other) {
		t.Error("shared (held by another owner) or other was deleted")
	}
	var entries []auditEntry
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var a auditEntry
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
	tf, err := LoadTokenFile(path)
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
	var s sessionResponse
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
	if _, err := LoadTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing token file loads")
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := LoadTokenFile(short); err == nil || !strings.Contains(err.Error(), "shorter than 16") {
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
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts, audit := e.serve(t, Options{Auth: NewTokenReviewer(e.client.AuthenticationV1().TokenReviews())})
	c := newClient(t, ts)
	bearer := http.Header{"Authorization": {"Bearer " + tok.Status.Token}}
	var s sessionResponse
	code, body := c.do("GET", "/api/v1/session", nil, bearer)
	json.Unmarshal(body, &s)
	if code != 200 || s.User.Name != "system:serviceaccount:"+ns+":viewer" || !s.User.Impersonate {
		t.Fatalf("session as the service account: %d %s", code, body)
	}
	cm := e.configMap(t, ns, "target", nil)
	h := http.Header{"Authorization": bearer["Authorization"], "Origin": {ts.URL}, csrfHeader: {s.CSRFToken}}
	code, body = c.do("POST", "/api/v1/objects/"+string(cm.UID)+"/delete", `{"propagationPolicy":"Background","dryRun":false}`, h)
	var apiErr apiError
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
	serve := func(engine Engine, readOnly bool) (*client, *lockedBuffer) {
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
			h.Set(csrfHeader, c.csrf)
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

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestExplainTextReads: the explanation's sentence reads as English whatever comes next
// (a trial read "next, the engine will nothing: …"), and its words are a list, even empty.
func TestExplainTextReads(t *testing.T) {
	for next, want := range map[string]string{
		"nothing: an object without owners is never collected": "ConfigMap a in ns: next, the engine will do nothing: an object without owners is never collected.",
		"delete it: none of its owners exists":                 "ConfigMap a in ns: next, the engine will delete it: none of its owners exists.",
	} {
		ex := gc.Explanation{Next: next}
		ex.Object.Kind, ex.Object.Name, ex.Object.Namespace = "ConfigMap", "a", "ns"
		if got := explainText(ex, nil); got != want {
			t.Errorf("explainText(%q) = %q, want %q", next, got, want)
		}
	}
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	ns := e.namespace(t)
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lonely"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the engine observes lonely", func() bool { n, ok := e.engine.Node(cm.UID); return ok && n.Observed })
	code, body := c.do("GET", "/api/v1/objects/"+string(cm.UID)+"/explain", nil, nil)
	if code != 200 || !strings.Contains(string(body), `"words":[`) || !strings.Contains(string(body), "will do nothing") {
		t.Errorf("the explanation of an object without owners: %d %s; want its words a list and its text to read", code, body)
	}
}

// TestUnknownAPIRoutesAnswerJSON: a route the API does not have answers the API's JSON
// error (a trial got chi's plain "404 page not found" for /api/v1/scenarios on a cluster
// without the scenario player), and a wrong method a JSON 405.
func TestUnknownAPIRoutesAnswerJSON(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/api/v1/scenarios", 404, "not_found"},
		{"GET", "/api/v1/no-such-thing", 404, "not_found"},
		{"DELETE", "/api/v1/graph", 405, "method_not_allowed"},
	} {
		code, body := c.do(tc.method, tc.path, nil, nil)
		var e apiError
		if code != tc.status || json.Unmarshal(body, &e) != nil || string(e.Code) != tc.code || e.Message == "" {
			t.Errorf("%s %s: %d %s; want %d with the JSON error %q", tc.method, tc.path, code, body, tc.status, tc.code)
		}
	}
	if code, body := c.do("GET", "/no-such-page", nil, nil); code != 404 || json.Valid(body) {
		t.Errorf("GET /no-such-page: %d %s; want a plain 404 outside the API", code, body)
	}
}
