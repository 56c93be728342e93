package server

// The API's reads against the embedded control plane with the engine running active:
// health and metrics, the graph, objects, explanations and queues, unknown routes.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/graph"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/objects"
)

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

	var all graph.GraphResponse
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

	var inNS graph.GraphResponse
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

	var closureResp graph.GraphResponse
	c.getJSON("/api/v1/graph?uid="+string(child.UID), &closureResp)
	if got := nodeNames(closureResp.Nodes); !sameSet(got, []string{"owner", "child", "grandchild"}) {
		t.Errorf("uid closure of child: %v, want owner, child, grandchild", got)
	}
	var text graph.GraphResponse
	c.getJSON("/api/v1/graph?namespace="+ns+"&q=GRAND", &text)
	if got := nodeNames(text.Nodes); !sameSet(got, []string{"grandchild"}) {
		t.Errorf("text search: %v", got)
	}

	// Paging by cursor visits every node once.
	var paged []string
	cursor := ""
	for range 10 {
		var page graph.GraphResponse
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
		var e httpapi.Error
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
	var ex objects.ExplainResponse
	testkit.Eventually(t, "explain names the finalizer that holds the blocker", func() bool {
		c.getJSON("/api/v1/objects/"+string(owner.UID)+"/explain", &ex)
		return len(ex.Blockers) == 1 && strings.Contains(ex.Text, "configmap held is held by finalizer test.gcscope.io/hold")
	})
	if !ex.Object.DeletingDependents || !strings.Contains(ex.Next, "wait for 1 blocking dependent to be deleted") {
		t.Errorf("explain: %+v", ex)
	}

	var q graph.QueuesResponse
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
	testkit.Eventually(t, "the queues view shows the worker's latest action on the owner", func() bool {
		c.getJSON("/api/v1/queues", &q)
		return slices.ContainsFunc(q.Queues[1].Recent, func(a gc.Action) bool { return a.Object.UID == owner.UID })
	})
}

// TestExplainTextReads: the explanation's words are a list, even empty (its sentence:
// server/objects' TestExplainTextReads).
func TestExplainTextReads(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	ns := e.namespace(t)
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lonely"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes lonely", func() bool { n, ok := e.engine.Node(cm.UID); return ok && n.Observed })
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
		var e httpapi.Error
		if code != tc.status || json.Unmarshal(body, &e) != nil || string(e.Code) != tc.code || e.Message == "" {
			t.Errorf("%s %s: %d %s; want %d with the JSON error %q", tc.method, tc.path, code, body, tc.status, tc.code)
		}
	}
	if code, body := c.do("GET", "/no-such-page", nil, nil); code != 404 || json.Valid(body) {
		t.Errorf("GET /no-such-page: %d %s; want a plain 404 outside the API", code, body)
	}
}
