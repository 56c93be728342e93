package server

// Limits and strictness: bounded streams with a clear close reason, queries that mean
// exactly one thing, escaped uids, and headers that keep every API answer out of caches,
// sniffers and frames.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
)

// slashEngine answers for an object whose uid has a "/" in it (bad data a fake cluster
// can hold), and otherwise is the real engine.
type slashEngine struct{ registry.Engine }

const slashUID = types.UID("weird/uid with space")

func (s slashEngine) Node(uid types.UID) (gc.NodeDetail, bool) {
	if uid == slashUID {
		return gc.NodeDetail{NodeState: gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "x", Name: "weird", UID: slashUID}, Observed: true}}, true
	}
	return s.Engine.Node(uid)
}

func TestQueriesAndPathsMeanOneThing(t *testing.T) {
	e := env(t)
	ts := httptest.NewServer(New(Options{Engine: slashEngine{e.engine}}))
	t.Cleanup(ts.Close)
	c := newClient(t, ts)
	for _, tc := range []struct {
		path string
		want int
		says string
	}{
		{"/api/v1/graph?limit=1&limit=1000", 400, `parameter \"limit\" given 2 times`},
		{"/api/v1/graph?q=a&q=b", 400, "given 2 times"},
		{"/api/v1/graph?cursor=a&cursor=b", 400, "given 2 times"},
		{"/api/v1/graph?q=%zz", 400, "does not parse"},
		{"/api/v1/graph?namespace=a;b", 400, "does not parse"},
		{"/api/v1/graph?namespace=a&namespace=b", 200, ""},
		{"/api/v1/queues?x=1", 400, `unknown parameter \"x\"`},
		{"/api/v1/session?csrf=1", 400, "unknown parameter"},
		{"/metrics?x=1", 400, "unknown parameter"},
		{"/debug/controllers/garbagecollector/graph?uid=%zz", 400, "does not parse"},
		{"/debug/controllers/garbagecollector/graph?nope=1", 400, "unknown parameter"},
		{"/api/v1/objects/" + url.PathEscape(string(slashUID)), 200, `"uid":"weird/uid with space"`},
		{"/api/v1/objects/weird/uid", 404, ""},
	} {
		code, body := c.do("GET", tc.path, nil, nil)
		if code != tc.want || !strings.Contains(string(body), tc.says) {
			t.Errorf("GET %s: %d %.200s; want %d with %s", tc.path, code, body, tc.want, tc.says)
		}
	}
	// The stream: the same rules before the upgrade.
	for _, q := range []string{"since=1&since=2", "queues=true&queues=false", "since=%zz"} {
		_, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/v1/stream?"+q, nil)
		if err == nil || resp == nil || resp.StatusCode != 400 {
			t.Errorf("stream ?%s: %v %v; want 400", q, err, resp)
		}
	}
}

// TestEveryAPIAnswerIsUncachedUnsniffedUnframed: API, debug, metrics, login and error
// answers carry nosniff, no-store and frame-ancestors 'none'.
func TestEveryAPIAnswerIsUncachedUnsniffedUnframed(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	c := newClient(t, ts)
	for _, tc := range []struct {
		method, path string
		host         string
	}{
		{"GET", "/api/v1/graph", ""}, {"GET", "/api/v1/session", ""}, {"GET", "/api/v1/queues", ""},
		{"GET", "/api/v1/objects/nope", ""}, {"GET", "/api/v1/graph?bad=1", ""},
		{"GET", "/debug/controllers/garbagecollector/graph", ""}, {"GET", "/metrics", ""},
		{"GET", "/healthz", ""}, {"GET", "/readyz", ""}, {"GET", "/login", ""}, {"GET", "/no/such/path", ""},
		{"POST", "/api/v1/objects/nope/delete", ""}, {"GET", "/api/v1/graph", "evil.example"}, {"GET", "/", ""},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		where := fmt.Sprintf("%s %s (Host %q) → %d", tc.method, tc.path, tc.host, resp.StatusCode)
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: nosniff %q, cache %q, CSP %q", where, h.Get("X-Content-Type-Options"), h.Get("Cache-Control"), h.Get("Content-Security-Policy"))
		}
	}
}
