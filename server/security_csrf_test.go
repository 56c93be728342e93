package server

// CSRF: a write needs a token the server issued for this browser session (and user); a
// cookie/header pair chosen by an attacker, or a token of another session, user or
// server, is refused and audited. A delete must say dryRun in so many words.

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/security"
)

// issued is a CSRF session: its cookie and the token the server gave for it.
type issued struct {
	cookie *http.Cookie
	token  string
}

// issue asks srv for a session, with extra headers (a bearer token, say).
func issue(t *testing.T, base string, h http.Header) issued {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/session", nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s edge.SessionResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != 200 {
		t.Fatalf("session: %d %v", resp.StatusCode, err)
	}
	for _, c := range resp.Cookies() {
		if c.Name == edge.CSRFCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("csrf cookie %+v: want HttpOnly and SameSite=Strict", c)
			}
			return issued{cookie: c, token: s.CSRFToken}
		}
	}
	t.Fatal("session set no csrf cookie")
	return issued{}
}

// post sends a delete of uid with the given cookie and token and extra headers.
func postDelete(t *testing.T, base string, uid types.UID, body string, cookie *http.Cookie, token string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/objects/"+string(uid)+"/delete", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	if token != "" {
		req.Header.Set(edge.CSRFHeader, token)
	}
	if cookie != nil {
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCSRFForgeriesAreRefused(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	other, _ := e.serve(t, Options{}) // another gcscope: another key
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)
	testkit.Eventually(t, "the engine to observe the target", func() bool { _, ok := e.engine.Node(cm.UID); return ok })
	real := `{"propagationPolicy":"Background","dryRun":false}`
	planted := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("p", edge.SessionIDBytes)))
	a, b := issue(t, ts.URL, nil), issue(t, ts.URL, nil)
	foreign := issue(t, other.URL, nil)

	for name, tc := range map[string]struct {
		cookie *http.Cookie
		token  string
		h      http.Header
		want   string
	}{
		"planted cookie with the same value in the header (double submit)": {&http.Cookie{Name: edge.CSRFCookie, Value: planted}, planted, nil, "CSRF token"},
		"session A's token with session B's cookie":                        {b.cookie, a.token, nil, "CSRF token"},
		"a token another gcscope issued":                                   {foreign.cookie, foreign.token, nil, "CSRF token"},
		"no token":                                                         {a.cookie, "", nil, "CSRF token"},
		"no cookie":                                                        {nil, a.token, nil, "CSRF token"},
		"the token over another scheme":                                    {a.cookie, a.token, http.Header{"Origin": {strings.Replace(ts.URL, "http://", "https://", 1)}}, "cross-origin"},
		"a cross-site fetch without Origin":                                {a.cookie, a.token, http.Header{"Origin": nil, "Sec-Fetch-Site": {"cross-site"}}, "cross-site"},
		"a same-site (other port) fetch without Origin":                    {a.cookie, a.token, http.Header{"Origin": nil, "Sec-Fetch-Site": {"same-site"}}, "cross-site"},
		"two Origins, gcscope's own first":                                 {a.cookie, a.token, http.Header{"Origin": {ts.URL, "http://evil.example"}}, "more than one"},
		"two Sec-Fetch-Site, same-origin first":                            {a.cookie, a.token, http.Header{"Origin": nil, "Sec-Fetch-Site": {"same-origin", "cross-site"}}, "more than one"},
	} {
		code, body := postDelete(t, ts.URL, cm.UID, real, tc.cookie, tc.token, tc.h)
		if code != http.StatusForbidden || !strings.Contains(body, `"csrf"`) || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want 403 csrf saying %q", name, code, body, tc.want)
		}
	}
	if !e.exists(t, cm) {
		t.Fatal("a forged write deleted the object")
	}
	var refused int
	for _, en := range auditEntries(t, audit.String()) {
		if en.Action == "delete" && en.Status == http.StatusForbidden && en.Result == "denied" && en.Host != "" && en.Remote != "" && en.User == "local" {
			refused++
		}
	}
	if refused != 10 {
		t.Errorf("audit has %d refused deletes, want 10:\n%s", refused, audit)
	}
	// The real session's own token works (a dry run, to keep the object).
	if code, body := postDelete(t, ts.URL, cm.UID, `{"propagationPolicy":"Background","dryRun":true}`, a.cookie, a.token, nil); code != 200 {
		t.Errorf("the issued token: %d %s", code, body)
	}
}

// TestCSRFTokenIsBoundToTheUser: with authentication, a token issued to one user's
// session is no good with another user's credentials.
func TestCSRFTokenIsBoundToTheUser(t *testing.T) {
	e := env(t)
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("alice-token-0123456789 alice\nbob-token-0123456789 bob\n"), 0o600)
	tf, err := security.LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := e.serve(t, Options{Auth: tf})
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)
	testkit.Eventually(t, "the engine to observe the target", func() bool { _, ok := e.engine.Node(cm.UID); return ok })
	alice := http.Header{"Authorization": {"Bearer alice-token-0123456789"}}
	bob := http.Header{"Authorization": {"Bearer bob-token-0123456789"}}
	s := issue(t, ts.URL, alice)
	dry := `{"propagationPolicy":"Orphan","dryRun":true}`
	if code, body := postDelete(t, ts.URL, cm.UID, dry, s.cookie, s.token, bob); code != http.StatusForbidden || !strings.Contains(body, "CSRF token") {
		t.Errorf("alice's token with bob's credentials: %d %s; want 403", code, body)
	}
	if code, body := postDelete(t, ts.URL, cm.UID, dry, s.cookie, s.token, alice); code != 200 {
		t.Errorf("alice's token with alice's credentials: %d %s", code, body)
	}
}

// TestDeleteNeedsAnExplicitDryRun: a body without dryRun, or with null, is a 400 and
// never a delete; the audit line says the body was not understood (no policy, no
// dryRun taken from it).
func TestDeleteNeedsAnExplicitDryRun(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "target", nil)
	testkit.Eventually(t, "the engine to observe the target", func() bool { _, ok := e.engine.Node(cm.UID); return ok })
	s := issue(t, ts.URL, nil)
	for _, body := range []string{`{"propagationPolicy":"Background"}`, `{"propagationPolicy":"Background","dryRun":null}`,
		`{"propagationPolicy":"Background","DryRun":false}`, `{"propagationPolicy":"Background","dryRun":0}`} {
		code, resp := postDelete(t, ts.URL, cm.UID, body, s.cookie, s.token, nil)
		if code != http.StatusBadRequest || !strings.Contains(resp, "bad_request") {
			t.Errorf("%s: %d %s; want 400", body, code, resp)
		}
	}
	if !e.exists(t, cm) {
		t.Fatal("a delete without an explicit dryRun deleted the object")
	}
	var unparsable int
	for _, en := range auditEntries(t, audit.String()) {
		if en.Action == "delete" && en.Unparsable && en.DryRun == nil && en.Policy == "" && en.Status == 400 {
			unparsable++
		}
	}
	if unparsable != 4 {
		t.Errorf("audit has %d unparsable deletes, want 4:\n%s", unparsable, audit)
	}
}
