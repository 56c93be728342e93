package server

// Cookies belong to a host, not to a port: another application on 127.0.0.1 can set a
// gcscope_session or gcscope_csrf cookie that the browser sends beside gcscope's own.
// gcscope refuses to guess which is its own.

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gcscope/gcscope/server/edge"
)

// TestAnAmbiguousSessionIsRefused: a session cookie planted ahead of the user's own (a
// trial saw the first one win, silently: the attacker's session, had it been one) makes
// every request a 401 that says why, never the planted session's user nor the user's own.
func TestAnAmbiguousSessionIsRefused(t *testing.T) {
	ts, audit := loginServer(t)
	own := sessionCookieOf(postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}}))
	planted := sessionCookieOf(postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}})) // a good session, of another browser
	if own == nil || planted == nil {
		t.Fatal("no session cookies")
	}
	get := func(path string, cookies ...*http.Cookie) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", "text/html")
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/api/v1/session", own); code != http.StatusOK {
		t.Fatalf("one session cookie: %d %s", code, body)
	}
	for _, path := range []string{"/api/v1/session", "/"} {
		code, body := get(path, planted, own)
		if code != http.StatusUnauthorized || !strings.Contains(body, "2 gcscope_session cookies") || strings.Contains(body, "alice") {
			t.Errorf("GET %s with two session cookies: %d %.300s; want a 401 naming the two cookies", path, code, body)
		}
	}
	// A write with two session cookies is refused and audited like any other.
	before := len(auditEntries(t, audit.String()))
	resp := postNoRedirect(t, ts.URL+"/api/v1/slow-motion", `{"enabled":true}`, http.Header{"Content-Type": {"application/json"}}, planted, own)
	entries := auditEntries(t, audit.String())
	if resp.StatusCode != http.StatusUnauthorized || len(entries) != before+1 || entries[len(entries)-1].Status != http.StatusUnauthorized {
		t.Errorf("a write with two session cookies: %d, audit lines %+v; want a 401 with its line", resp.StatusCode, entries[before:])
	}
}

// TestAnAmbiguousCSRFCookieIsRefused: a gcscope_csrf cookie planted beside the page's own
// blocks nothing silently: the write is refused saying why (a trial saw "missing or wrong
// CSRF token" while the page had sent the right one), and the refusal is audited.
func TestAnAmbiguousCSRFCookieIsRefused(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	c := newClient(t, ts)
	cm := e.configMap(t, e.namespace(t), "target", nil)
	c.session()
	path := "/api/v1/objects/" + string(cm.UID) + "/delete"
	body := `{"propagationPolicy":"Background","dryRun":true}`
	if code, out := c.do("POST", path, body, http.Header{edge.CSRFHeader: {c.csrf}}); code != http.StatusOK {
		t.Fatalf("the page's own CSRF cookie and token: %d %s", code, out)
	}
	// The cookie jar sends the page's cookie; the planted one comes in a header beside it.
	planted := http.Header{edge.CSRFHeader: {c.csrf}, "Cookie": {edge.CSRFCookie + "=" + strings.Repeat("A", 43)}}
	before := len(auditEntries(t, audit.String()))
	code, out := c.do("POST", path, body, planted)
	if code != http.StatusForbidden || !strings.Contains(string(out), "2 gcscope_csrf cookies") {
		t.Errorf("a write with two CSRF cookies: %d %s; want a 403 naming the two cookies", code, out)
	}
	if entries := auditEntries(t, audit.String()); len(entries) != before+1 || entries[len(entries)-1].Status != http.StatusForbidden {
		t.Errorf("the refusal's audit lines: %+v, want one 403", entries[before:])
	}
}
