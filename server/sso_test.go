package server

import (
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/oauth2"
)

// The single sign-on tests run a real OpenID provider (zitadel's, in this process, over
// TLS with a CA of its own) and go through the whole authorization code flow with PKCE,
// as a browser would: gcscope's redirect, the provider's sign-in form, the code traded
// for tokens, the ID token checked, a session. The cluster's review of the ID token is
// played by idTokenReviewer, which checks it against the same issuer, as an apiserver
// configured with --oidc-issuer-url does.

const ssoClientID, ssoSecret = "gcscope", "gcscope-secret"

// deferred is a handler set once the servers' URLs are known.
type deferred struct{ h http.Handler }

func (d *deferred) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.h.ServeHTTP(w, r) }

// idTokenReviewer accepts the ID tokens of issuer for ssoClientID, as the apiserver would,
// and remembers the last it was asked about.
type idTokenReviewer struct {
	verifier *oidc.IDTokenVerifier
	mu       sync.Mutex
	last     string
}

func (a *idTokenReviewer) Authenticate(ctx context.Context, token string) (*User, error) {
	a.mu.Lock()
	a.last = token
	a.mu.Unlock()
	id, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return nil, errUnauthenticated
	}
	return &User{Name: "oidc:" + id.Subject}, nil // the apiserver's default --oidc-username-claim is sub
}

type ssoRig struct {
	gcscope, provider *httptest.Server
	sso               *SSO
	reviewer          *idTokenReviewer
	audit             *lockedBuffer
}

func newSSORig(t *testing.T) *ssoRig {
	t.Helper()
	g, p := &deferred{}, &deferred{}
	rig := &ssoRig{gcscope: httptest.NewServer(g), provider: httptest.NewTLSServer(p), audit: &lockedBuffer{}}
	t.Cleanup(rig.gcscope.Close)
	t.Cleanup(rig.provider.Close)
	issuer := rig.provider.URL
	storage.RegisterClients(storage.WebClient(ssoClientID, ssoSecret, rig.gcscope.URL+"/login/sso/callback"))
	p.h = exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), slog.New(slog.NewTextHandler(io.Discard, nil)), false)

	// The provider's CA, as an operator would give it (--oidc-ca-file).
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rig.provider.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sso, err := NewSSO(ctx, SSOConfig{IssuerURL: issuer, ClientID: ssoClientID, ClientSecret: ssoSecret,
		Scopes: []string{"email", "offline_access"}, CAFile: ca, Name: "Example"})
	if err != nil {
		t.Fatal(err)
	}
	rig.sso = sso
	prov, err := oidc.NewProvider(oidc.ClientContext(ctx, rig.provider.Client()), issuer)
	if err != nil {
		t.Fatal(err)
	}
	rig.reviewer = &idTokenReviewer{verifier: prov.Verifier(&oidc.Config{ClientID: ssoClientID})}
	g.h = New(Options{Auth: rig.reviewer, SSO: sso, Audit: rig.audit})
	return rig
}

// browser is a cookie jar that trusts the provider's CA and follows redirects.
func (rig *ssoRig) browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: rig.provider.Client().Transport, Timeout: 30 * time.Second}
}

// signIn goes from gcscope's button to the provider's form, signs in there as username,
// and returns the page gcscope answers the provider's redirect with.
func (rig *ssoRig) signIn(t *testing.T, b *http.Client, username, password string) (*http.Response, string) {
	t.Helper()
	form, err := b.Get(rig.gcscope.URL + "/login/sso")
	if err != nil {
		t.Fatal(err)
	}
	form.Body.Close()
	if !strings.HasPrefix(form.Request.URL.String(), rig.provider.URL+"/login/username") {
		t.Fatalf("the sign-in did not reach the provider's form: %s (%s)", form.Request.URL, form.Status)
	}
	// The provider was asked for a code with PKCE (S256) and a nonce.
	var authorize *url.URL
	var chain []string
	for r := form.Request; r != nil; {
		chain = append(chain, r.URL.String())
		if r.URL.Query().Get("response_type") == "code" {
			authorize = r.URL
		}
		if r.Response == nil {
			break
		}
		r = r.Response.Request
	}
	if authorize == nil || authorize.Query().Get("code_challenge_method") != "S256" || authorize.Query().Get("nonce") == "" || authorize.Query().Get("state") == "" {
		t.Fatalf("gcscope's request to the provider (redirects %v): %v; want a code challenge (S256), a nonce and a state", chain, authorize)
	}
	resp, err := b.PostForm(rig.provider.URL+"/login/username", url.Values{"id": {form.Request.URL.Query().Get("authRequestID")}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// session reads /api/v1/session as the browser (its user, or the status).
func (rig *ssoRig) session(t *testing.T, b *http.Client) (int, string) {
	t.Helper()
	resp, err := b.Get(rig.gcscope.URL + "/api/v1/session")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// TestSingleSignOn: a browser signs in through the provider and is then the user its ID
// token says, to every route; the sign-in is audited; signing out ends it.
func TestSingleSignOn(t *testing.T) {
	rig := newSSORig(t)
	b := rig.browser(t)
	// The login page offers it.
	resp, err := b.Get(rig.gcscope.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `href="/login/sso"`) || !strings.Contains(string(page), "Sign in with Example") {
		t.Fatalf("the login page does not offer single sign-on:\n%s", page)
	}

	host, _, _ := strings.Cut(strings.TrimPrefix(rig.provider.URL, "https://"), ":")
	resp, body := rig.signIn(t, b, "test-user@"+host, "verysecure")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login/sso/callback" || !strings.Contains(body, "Signed in as id1.") ||
		!strings.Contains(body, `http-equiv="refresh" content="0;url=/"`) {
		t.Fatalf("the provider's redirect back: %s at %s:\n%s", resp.Status, resp.Request.URL, body)
	}
	if code, s := rig.session(t, b); code != http.StatusOK || !strings.Contains(s, "oidc:id1") {
		t.Fatalf("after the sign-in, /api/v1/session: %d %s; want the ID token's user", code, s)
	}
	if log := rig.audit.String(); !strings.Contains(log, `"action":"login"`) || !strings.Contains(log, "oidc:id1") {
		t.Errorf("the sign-in is not audited as the user: %s", log)
	}
	// Signing out (from gcscope's own page) ends the session.
	req, _ := http.NewRequest(http.MethodPost, rig.gcscope.URL+"/logout", nil)
	req.Header.Set("Origin", rig.gcscope.URL)
	if resp, err := b.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if code, _ := rig.session(t, b); code != http.StatusUnauthorized {
		t.Errorf("after signing out, /api/v1/session answers %d; want 401", code)
	}
}

// TestSingleSignOnRefusals: a wrong password stays at the provider; a callback with no
// flow of this browser's, or with another state, is refused; so is the provider's error.
func TestSingleSignOnRefusals(t *testing.T) {
	rig := newSSORig(t)
	b := rig.browser(t)
	host, _, _ := strings.Cut(strings.TrimPrefix(rig.provider.URL, "https://"), ":")
	if resp, _ := rig.signIn(t, b, "test-user@"+host, "wrong"); resp.Request.URL.Host != strings.TrimPrefix(rig.provider.URL, "https://") {
		t.Errorf("a wrong password went on to %s", resp.Request.URL)
	}
	if code, _ := rig.session(t, b); code != http.StatusUnauthorized {
		t.Errorf("after a failed sign-in, /api/v1/session answers %d; want 401", code)
	}
	for name, query := range map[string]string{
		"a code with no flow of this browser's": "?code=abc&state=xyz",
		"the provider's error":                  "?error=access_denied&error_description=no",
	} {
		resp, err := rig.browser(t).Get(rig.gcscope.URL + "/login/sso/callback" + query)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(string(body), "Single sign-on failed") {
			t.Errorf("%s: %s, want it refused with a reason:\n%s", name, resp.Status, body)
		}
	}
}

// TestSingleSignOnRenewsTheIDToken: a session's ID token is renewed with the refresh
// token before it expires (a new token, still the user's); when the provider refuses,
// the session ends.
func TestSingleSignOnRenewsTheIDToken(t *testing.T) {
	rig := newSSORig(t)
	b := rig.browser(t)
	host, _, _ := strings.Cut(strings.TrimPrefix(rig.provider.URL, "https://"), ":")
	rig.signIn(t, b, "test-user@"+host, "verysecure")
	if code, _ := rig.session(t, b); code != http.StatusOK {
		t.Fatalf("not signed in: %d", code)
	}
	lastToken := func() string {
		rig.reviewer.mu.Lock()
		defer rig.reviewer.mu.Unlock()
		return rig.reviewer.last
	}
	first := lastToken()
	// Its expiry near (the clock an hour on): renewed before the request is reviewed.
	rig.sso.now = func() time.Time { return time.Now().Add(time.Hour) }
	code, s := rig.session(t, b)
	rig.sso.now = time.Now
	if second := lastToken(); code != http.StatusOK || !strings.Contains(s, "oidc:id1") || second == first {
		t.Fatalf("near its expiry: /api/v1/session %d %s, the ID token renewed: %v; want the user, with a new ID token", code, s, second != first)
	}
	// A refresh token the provider does not take ends the session (Sessions.Token).
	src := &ssoToken{sso: rig.sso, cfg: rig.sso.oauth, token: &oauth2.Token{RefreshToken: "not-a-refresh-token"}}
	if tok, err := src.Token(context.Background()); err == nil {
		t.Fatalf("a refresh token the provider does not know renewed the ID token: %q", tok)
	}
}
