package server

// DNS rebinding: a page at evil.example, whose name the attacker re-points at 127.0.0.1,
// talks to gcscope as its own origin. Every request it can make must be refused before
// any handler runs, and each refusal audited.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
)

// rebound is a client whose every connection goes to ts, whatever host its URLs name:
// what a browser does once the attacker's DNS answers 127.0.0.1.
func rebound(ts *httptest.Server) *http.Client {
	jar, _ := cookiejar.New(nil)
	addr := ts.Listener.Addr().String()
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

func TestRebindingPageGetsNothingAndChangesNothing(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)
	testkit.Eventually(t, "the engine to observe the target", func() bool { _, ok := e.engine.Node(cm.UID); return ok })

	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	evil := "http://evil.example:" + port
	hc := rebound(ts)
	do := func(method, path, body string, h http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, evil+path, strings.NewReader(body))
		req.Header.Set("Origin", evil)
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// The exact sequence of the report: a session, then a delete with its token.
	code, body := do("GET", "/api/v1/session", "", nil)
	if code != http.StatusMisdirectedRequest || strings.Contains(body, "csrfToken") {
		t.Fatalf("session through a rebound name: %d %s; want 421 and no token", code, body)
	}
	var s edge.SessionResponse
	json.Unmarshal([]byte(body), &s)
	code, body = do("POST", "/api/v1/objects/"+string(cm.UID)+"/delete", `{"propagationPolicy":"Background","dryRun":false}`,
		http.Header{"Content-Type": {"application/json"}, edge.CSRFHeader: {s.CSRFToken}})
	if code != http.StatusMisdirectedRequest {
		t.Errorf("delete through a rebound name: %d %s; want 421", code, body)
	}
	for _, path := range []string{"/", "/api/v1/graph", "/api/v1/queues", "/api/v1/objects/" + string(cm.UID),
		"/api/v1/objects/" + string(cm.UID) + "/explain", "/debug/controllers/garbagecollector/graph", "/metrics",
		"/healthz", "/readyz", "/login", "/static/app.js"} {
		if code, body := do("GET", path, "", nil); code != http.StatusMisdirectedRequest || strings.Contains(body, string(cm.UID)) || strings.Contains(body, ns) {
			t.Errorf("GET %s through a rebound name: %d %.200s; want 421 and nothing of the cluster", path, code, body)
		}
	}
	if code, _ := do("POST", "/api/v1/slow-motion", `{"enabled":true}`, nil); code != http.StatusMisdirectedRequest {
		t.Errorf("slow motion through a rebound name: %d; want 421", code)
	}
	// The websocket: the same name, over the same rebound connection.
	_, resp, err := websocket.Dial(context.Background(), "ws://evil.example:"+port+"/api/v1/stream",
		&websocket.DialOptions{HTTPClient: hc, HTTPHeader: http.Header{"Origin": {evil}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("stream through a rebound name: err %v, response %v; want 421", err, resp)
	}

	if !e.exists(t, cm) {
		t.Fatal("the rebound delete deleted the object")
	}
	var refusals int
	for _, a := range auditEntries(t, audit.String()) {
		if a.Action == "host" && a.Host == "evil.example:"+port && a.Status == http.StatusMisdirectedRequest && a.Result == "denied" && a.Remote != "" && a.User != "" {
			refusals++
		}
	}
	if want := 15; refusals != want {
		t.Errorf("audit has %d host refusals naming evil.example:%s, want %d:\n%s", refusals, port, want, audit)
	}
}

// TestStreamOriginComparesSchemeAndHost: the websocket takes its own origin, scheme
// included, and allowed origins; a https page is not the http gcscope, nor is another
// port's page.
func TestStreamOriginComparesSchemeAndHost(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{AllowedOrigins: []string{"https://gcscope.example.com", "*.trusted.example"}})
	ws := "ws" + strings.TrimPrefix(ts.URL, "http") + "/api/v1/stream"
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	for origin, ok := range map[string]bool{
		ts.URL:                                   true,
		"http://localhost:" + port:               false, // another host name: another origin
		"https://127.0.0.1:" + port:              false, // the same host over https: another origin
		"http://127.0.0.1:1":                     false,
		"http://evil.example:" + port:            false,
		"null":                                   false,
		"https://gcscope.example.com":            true,
		"http://gcscope.example.com":             false,
		"https://a.trusted.example":              true,
		"http://a.trusted.example":               true, // gcscope serves http here: host patterns match it too
		"https://a.trusted.example.evil.example": false,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		cancel()
		switch {
		case ok && err != nil:
			t.Errorf("Origin %s: refused (%v), want accepted", origin, err)
		case !ok && (err == nil || resp == nil || resp.StatusCode != http.StatusForbidden):
			t.Errorf("Origin %s: err %v, response %v; want 403", origin, err, resp)
		}
		if c != nil {
			c.CloseNow()
		}
	}
	if n := strings.Count(audit.String(), `"action":"stream"`); n != 7 {
		t.Errorf("audit has %d stream refusals, want 7 (one per refused origin):\n%s", n, audit)
	}
}

// auditEntries parses the audit log's lines.
func auditEntries(t *testing.T, log string) []edge.Entry {
	t.Helper()
	var out []edge.Entry
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var a edge.Entry
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("audit line is not JSON: %q", line)
		}
		out = append(out, a)
	}
	return out
}
