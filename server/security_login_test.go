package server

// Login: the token travels in a POST body, never a URL, and only from gcscope's own form;
// a cross-site page cannot log a browser in (as anyone).

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream"
)

const loginToken = "login-token-0123456789"

func loginServer(t *testing.T) (*httptest.Server, *lockedBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte(loginToken+" alice\n"), 0o600)
	tf, err := security.LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	audit := &lockedBuffer{}
	ts := httptest.NewServer(New(Options{Auth: tf, Audit: audit}))
	t.Cleanup(ts.Close)
	return ts, audit
}

// postLogin posts the login form, with the cookies the browser already holds.
func postLogin(t *testing.T, ts *httptest.Server, token string, h http.Header, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return postNoRedirect(t, ts.URL+"/login", url.Values{"token": {token}}.Encode(), h, cookies...)
}

// postLogout signs the browser of cookie out.
func postLogout(t *testing.T, ts *httptest.Server, h http.Header, cookie *http.Cookie) *http.Response {
	t.Helper()
	return postNoRedirect(t, ts.URL+"/logout", "", h, cookie)
}

// noRedirects answers a response itself, not where it redirects to.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// postNoRedirect posts body with the headers and cookies given, and answers the response
// itself, not where it redirects to (its body closed).
func postNoRedirect(t *testing.T, target, body string, h http.Header, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", target, strings.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func sessionCookieOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == edge.SessionCookie {
			return c
		}
	}
	return nil
}

func TestLoginTakesTheTokenFromAPostBodyOnly(t *testing.T) {
	ts, _ := loginServer(t)
	// The old URL form is refused, and sets nothing.
	resp, err := http.Get(ts.URL + "/login?token=" + loginToken)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || sessionCookieOf(resp) != nil || !strings.Contains(body.String(), "not accepted") {
		t.Errorf("GET /login?token=: %d, cookie %v; want 400 and no cookie", resp.StatusCode, sessionCookieOf(resp))
	}
	if strings.Contains(body.String(), loginToken) {
		t.Error("the login page echoes the token")
	}
	// The form itself.
	resp, _ = http.Get(ts.URL + "/login")
	body.Reset()
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(body.String(), `method="post"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("GET /login: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	// Same-origin post: a cookie, then the UI.
	resp = postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}, "Sec-Fetch-Site": {"same-origin"}})
	c := sessionCookieOf(resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Errorf("same-origin login: %d, cookie %+v; want 303 to / and an HttpOnly SameSite=Strict cookie (not Secure over http)", resp.StatusCode, c)
	}
	// A browser that opens the UI without a session is sent to the form.
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.Do(req); err != nil || resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("the UI without a session: %v %v; want 303 to /login", resp, err)
	}
	// A direct client (no browser headers) may log in too.
	if resp := postLogin(t, ts, loginToken, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("login without browser headers: %d", resp.StatusCode)
	}
}

func TestCrossSiteLoginIsRefused(t *testing.T) {
	ts, audit := loginServer(t)
	for name, h := range map[string]http.Header{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": {"same-site"}},
		"foreign Origin":            {"Origin": {"http://evil.example"}},
		"Origin null":               {"Origin": {"null"}},
		"foreign Referer":           {"Referer": {"http://evil.example/page"}},
		"Referer of another port":   {"Referer": {"http://127.0.0.1:1/"}},
	} {
		resp := postLogin(t, ts, loginToken, h)
		if resp.StatusCode != http.StatusForbidden || sessionCookieOf(resp) != nil {
			t.Errorf("%s: %d, cookie %v; want 403 and no cookie", name, resp.StatusCode, sessionCookieOf(resp))
		}
	}
	// A bad token is a 401 with the form again, audited.
	if resp := postLogin(t, ts, "not-the-token-000000", http.Header{"Origin": {ts.URL}}); resp.StatusCode != http.StatusUnauthorized || sessionCookieOf(resp) != nil {
		t.Errorf("bad token: %d", resp.StatusCode)
	}
	var refused, failed int
	for _, a := range auditEntries(t, audit.String()) {
		switch {
		case a.Action == "login" && a.Status == 403 && a.Result == "denied" && a.Host != "" && a.Remote != "" && a.User == "unauthenticated":
			refused++
		case a.Action == "login" && a.Status == 401 && a.User == "unauthenticated":
			failed++
		}
	}
	if refused != 6 || failed != 1 {
		t.Errorf("audit: %d cross-site logins refused (want 6), %d failed (want 1), each as the user \"unauthenticated\" (a trial read \"local\" there, the user of a gcscope without authentication):\n%s", refused, failed, audit)
	}
}

// TestSessionCookieIsNotTheToken: a signed-in browser's cookie is a random id standing for
// the token in this process, never the token (cookies ignore ports: every other web app on
// 127.0.0.1 receives them; a trial's did, and read the user's cluster token there). The
// id authenticates until the user signs out; an id gcscope did not issue never does.
func TestSessionCookieIsNotTheToken(t *testing.T) {
	ts, audit := loginServer(t)
	resp := postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}})
	c := sessionCookieOf(resp)
	if c == nil || c.Value == "" || strings.Contains(c.Value, loginToken) || c.Value == loginToken {
		t.Fatalf("the session cookie %+v holds the token, or is missing", c)
	}
	get := func(cookie *http.Cookie) int {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/session", nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(c); code != http.StatusOK {
		t.Fatalf("signed in with the session cookie: %d, want 200", code)
	}
	if !slices.ContainsFunc(auditEntries(t, audit.String()), func(a edge.Entry) bool {
		return a.Action == "login" && a.Result == "ok" && a.User == "alice"
	}) {
		t.Errorf("the sign-in is not audited: %s", audit)
	}
	// Signing in again from the same browser ends its older session.
	again := postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}}, c)
	if code := get(c); code != http.StatusUnauthorized || sessionCookieOf(again) == nil {
		t.Errorf("the older session after signing in again: %d, want 401", code)
	}
	c = sessionCookieOf(again)
	for name, forged := range map[string]string{"the token itself": loginToken, "an id gcscope never issued": strings.Repeat("A", len(c.Value))} {
		if code := get(&http.Cookie{Name: edge.SessionCookie, Value: forged}); code != http.StatusUnauthorized {
			t.Errorf("a session cookie holding %s: %d, want 401", name, code)
		}
	}
	// Signing out, from the page only.
	logout := func(h http.Header) *http.Response { return postLogout(t, ts, h, c) }
	if resp := logout(http.Header{"Origin": {"http://evil.example"}}); resp.StatusCode != http.StatusForbidden || get(c) != http.StatusOK {
		t.Errorf("a cross-site sign-out: %d; want 403 and the session still good", resp.StatusCode)
	}
	if !strings.Contains(audit.String(), `"action":"logout"`) {
		t.Errorf("the refused sign-out is not audited: %s", audit)
	}
	resp = logout(http.Header{"Origin": {ts.URL}})
	if out := sessionCookieOf(resp); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" || out == nil || out.MaxAge >= 0 {
		t.Errorf("sign-out: %d to %q, cookie %+v; want 303 to /login and the cookie cleared", resp.StatusCode, resp.Header.Get("Location"), out)
	}
	if code := get(c); code != http.StatusUnauthorized {
		t.Errorf("the session cookie after sign-out: %d, want 401", code)
	}
}

// TestStreamEndsWithTheSignIn: an open stream is closed, saying why, once the session it
// was opened with has ended (a trial's stream kept delivering for as long as it stayed
// open after its token was revoked).
func TestStreamEndsWithTheSignIn(t *testing.T) {
	e := env(t)
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte(loginToken+" alice\n"), 0o600)
	tf, err := security.LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	auth := &countingTokenFile{TokenFile: tf}
	ts, _ := e.serve(t, Options{Auth: auth, StreamCredentialsInterval: 100 * time.Millisecond})
	session := sessionCookieOf(postLogin(t, ts, loginToken, http.Header{"Origin": {ts.URL}}))
	if session == nil {
		t.Fatal("no session cookie")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/v1/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {session.String()}, "Origin": {ts.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	if _, _, err := conn.Read(ctx); err != nil {
		t.Fatalf("the stream's first frame: %v", err)
	}
	// Still signed in: the stream goes on past several checks (the stream's own
	// authentication is over by its first frame; it is the only client).
	checked := auth.calls.Load()
	testkit.Eventually(t, "two checks of the open stream's credentials", func() bool { return auth.calls.Load() >= checked+2 })
	postLogout(t, ts, http.Header{"Origin": {ts.URL}}, session)
	signedOut := time.Now()
	for {
		_, _, err := conn.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != stream.StatusSignedOut || !strings.Contains(ce.Reason, "sign in again") {
			t.Fatalf("after sign-out the stream ended with %v; want a close with stream.StatusSignedOut (4401) saying to sign in again", err)
		}
		t.Logf("closed %v after the sign-out: %q", time.Since(signedOut).Round(time.Millisecond), ce.Reason)
		return
	}
}

// countingTokenFile is a security.TokenFile that counts the tokens it is asked to authenticate.
type countingTokenFile struct {
	*security.TokenFile
	calls atomic.Int32
}

func (c *countingTokenFile) Authenticate(ctx context.Context, token string) (*security.User, error) {
	c.calls.Add(1)
	return c.TokenFile.Authenticate(ctx, token)
}
