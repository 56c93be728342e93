package server

// Limits and strictness: bounded streams with a clear close reason, queries that mean
// exactly one thing, escaped uids, and headers that keep every API answer out of caches,
// sniffers and frames.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/registry"
)

func TestStreamClientCaps(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{MaxClients: 3, MaxClientsPerUser: 2,
		User: func(r *http.Request) string { return r.Header.Get("X-Test-User") }}).start(t)
	as := func(user string) *websocket.DialOptions {
		return &websocket.DialOptions{HTTPHeader: http.Header{"X-Test-User": {user}}}
	}
	// closedWith dials and expects the server to close at once with 1013 and a reason.
	closedWith := func(user, wantReason string) {
		t.Helper()
		c := e.dialWith(t, "", as(user))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := c.conn.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, wantReason) {
			t.Fatalf("user %s over the cap: %v; want close 1013 saying %q", user, err, wantReason)
		}
	}
	alice1 := e.dialWith(t, "", as("alice"))
	alice1.next()
	e.dialWith(t, "", as("alice")).next()
	closedWith("alice", "too many streams for this user")
	bob := e.dialWith(t, "", as("bob"))
	if f := bob.next(); f.Type != "snapshot" {
		t.Fatalf("bob under his cap: %s", f.raw)
	}
	closedWith("carol", "the server holds its maximum of 3")
	// A closed stream frees its place.
	alice1.conn.Close(websocket.StatusNormalClosure, "bye")
	testkit.Eventually(t, "the server to release alice's stream", func() bool { return e.hub.clientCount() == 2 })
	if f := e.dialWith(t, "", as("carol")).next(); f.Type != "snapshot" {
		t.Fatalf("carol after a stream closed: %s", f.raw)
	}
}

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
