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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/oauth2"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/security"
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

func (a *idTokenReviewer) Authenticate(ctx context.Context, token string) (*security.User, error) {
	a.mu.Lock()
	a.last = token
	a.mu.Unlock()
	id, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return nil, security.ErrUnauthenticated
	}
	return &security.User{Name: "oidc:" + id.Subject}, nil // the apiserver's default --oidc-username-claim is sub
}

type ssoRig struct {
	gcscope, provider *httptest.Server
	server            *Server
	sso               *security.SSO
	reviewer          *idTokenReviewer
	audit             *lockedBuffer
	tokenHits         atomic.Int64 // requests to the provider's token endpoint
}

// ssoTokenPath is the example provider's token endpoint.
const ssoTokenPath = "/oauth/token"

func newSSORig(t *testing.T) *ssoRig {
	t.Helper()
	g, p := &deferred{}, &deferred{}
	rig := &ssoRig{gcscope: httptest.NewServer(g), provider: httptest.NewTLSServer(p), audit: &lockedBuffer{}}
	t.Cleanup(rig.gcscope.Close)
	t.Cleanup(rig.provider.Close)
	issuer := rig.provider.URL
	storage.RegisterClients(storage.WebClient(ssoClientID, ssoSecret, rig.gcscope.URL+"/login/sso/callback"))
	op := exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	p.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ssoTokenPath {
			rig.tokenHits.Add(1)
		}
		op.ServeHTTP(w, r)
	})

	// The provider's CA, as an operator would give it (--oidc-ca-file).
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rig.provider.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sso, err := security.NewSSO(ctx, security.SSOConfig{IssuerURL: issuer, ClientID: ssoClientID, ClientSecret: ssoSecret,
		Scopes: []string{"email", "offline_access"}, CAFile: ca, Name: "Example"})
	if err != nil {
		t.Fatal(err)
	}
	rig.sso = sso
	if !strings.HasSuffix(sso.OAuth2().Endpoint.TokenURL, ssoTokenPath) {
		t.Fatalf("the provider's token endpoint is %s, not at %s: count its requests there", sso.OAuth2().Endpoint.TokenURL, ssoTokenPath)
	}
	prov, err := oidc.NewProvider(oidc.ClientContext(ctx, rig.provider.Client()), issuer)
	if err != nil {
		t.Fatal(err)
	}
	rig.reviewer = &idTokenReviewer{verifier: prov.Verifier(&oidc.Config{ClientID: ssoClientID})}
	rig.server = New(Options{Auth: rig.reviewer, SSO: sso, Audit: rig.audit})
	g.h = rig.server
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
	rig.sso.SetClock(func() time.Time { return time.Now().Add(time.Hour) })
	code, s := rig.session(t, b)
	rig.sso.SetClock(time.Now)
	if second := lastToken(); code != http.StatusOK || !strings.Contains(s, "oidc:id1") || second == first {
		t.Fatalf("near its expiry: /api/v1/session %d %s, the ID token renewed: %v; want the user, with a new ID token", code, s, second != first)
	}
	// A refresh token the provider does not take ends the session (Sessions.Token).
	src := rig.sso.Renewing(rig.sso.OAuth2(), &oauth2.Token{RefreshToken: "not-a-refresh-token"}, "")
	if tok, err := src.Token(context.Background()); err == nil {
		t.Fatalf("a refresh token the provider does not know renewed the ID token: %q", tok)
	}
}

// user1 is the example provider's first user (its subject: id1); test-user2 is id2's.
func (rig *ssoRig) user1() string {
	host, _, _ := strings.Cut(strings.TrimPrefix(rig.provider.URL, "https://"), ":")
	return "test-user@" + host
}

// untilCallback is b (its cookies shared) stopping where the provider sends it back to
// gcscope, as an attacker does who keeps the code for another browser.
func untilCallback(b *http.Client) *http.Client {
	c := *b
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == "/login/sso/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return &c
}

// withoutRedirects is b (its cookies shared) following no redirect.
func withoutRedirects(b *http.Client) *http.Client {
	c := *b
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// startFlow starts a sign-in in b and returns where gcscope sends it (the provider's
// authorization URL), not going there: b holds the flow.
func (rig *ssoRig) startFlow(t *testing.T, b *http.Client) *url.URL {
	t.Helper()
	resp, err := withoutRedirects(b).Get(rig.gcscope.URL + "/login/sso")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, err := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("the sign-in did not start: %s, %v", resp.Status, err)
	}
	return to
}

// authorize goes from start (gcscope's /login/sso, or an authorization URL of the
// provider's) to the provider's form, signs in there as username, and returns the
// callback URL the provider sends b back to, not opened.
func (rig *ssoRig) authorize(t *testing.T, b *http.Client, start, username string) *url.URL {
	t.Helper()
	c := untilCallback(b)
	form, err := c.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	form.Body.Close()
	if !strings.HasPrefix(form.Request.URL.String(), rig.provider.URL+"/login/username") {
		t.Fatalf("%s did not reach the provider's form: %s (%s)", start, form.Request.URL, form.Status)
	}
	resp, err := c.PostForm(rig.provider.URL+"/login/username", url.Values{"id": {form.Request.URL.Query().Get("authRequestID")}, "username": {username}, "password": {"verysecure"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := resp.Location()
	if err != nil || back.Path != "/login/sso/callback" || back.Query().Get("code") == "" {
		t.Fatalf("the provider did not send %s back with a code: %s, %v", username, resp.Status, err)
	}
	return back
}

// ownAuthorization is an authorization URL made without gcscope, as anyone can (the
// client ID and the redirect URL are no secret): state, nonce ("": none asked) and PKCE
// verifier are the maker's.
func (rig *ssoRig) ownAuthorization(state, nonce, verifier string) string {
	cfg := rig.sso.OAuth2()
	cfg.RedirectURL = rig.gcscope.URL + "/login/sso/callback"
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if nonce != "" {
		opts = append(opts, oidc.Nonce(nonce))
	}
	return cfg.AuthCodeURL(state, opts...)
}

// providerTokens are the tokens the provider gives username (with a refresh token), got
// without gcscope's callback.
func (rig *ssoRig) providerTokens(t *testing.T, username string) (oauth2.Config, *oauth2.Token) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	back := rig.authorize(t, rig.browser(t), rig.ownAuthorization(security.RandomString(), security.RandomString(), verifier), username)
	cfg := rig.sso.OAuth2()
	cfg.RedirectURL = rig.gcscope.URL + "/login/sso/callback"
	tok, err := cfg.Exchange(rig.sso.ClientContext(context.Background()), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("the provider's tokens for %s: %v (a refresh token: %v)", username, err, tok != nil && tok.RefreshToken != "")
	}
	return cfg, tok
}

// cookieOf is the value of b's cookie name sent to gcscope's callback.
func (rig *ssoRig) cookieOf(t *testing.T, b *http.Client, name string) string {
	t.Helper()
	u, _ := url.Parse(rig.gcscope.URL + "/login/sso/callback")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	t.Fatalf("the browser holds no %s cookie", name)
	return ""
}

// plant sets a cookie in b as another application on gcscope's host can (cookies ignore
// ports): at Path=/login/sso/callback, which the browser sends before gcscope's own.
func (rig *ssoRig) plant(b *http.Client, name, value string) {
	u, _ := url.Parse(rig.gcscope.URL)
	b.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/login/sso/callback"}})
}

// open GETs u as b and returns the status and the page.
func open(t *testing.T, b *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// signedInVictim is a browser signed in as id1 through single sign-on.
func (rig *ssoRig) signedInVictim(t *testing.T) *http.Client {
	t.Helper()
	b := rig.browser(t)
	rig.signIn(t, b, rig.user1(), "verysecure")
	rig.wantUser(t, b, "oidc:id1")
	return b
}

// wantUser fails t unless b is signed in as user.
func (rig *ssoRig) wantUser(t *testing.T, b *http.Client, user string) {
	t.Helper()
	if code, s := rig.session(t, b); code != http.StatusOK || !strings.Contains(s, `"name":"`+user+`"`) {
		t.Errorf("/api/v1/session: %d %s; want %s signed in", code, s, user)
	}
}

// audited reports whether one line of the audit log holds every one of parts.
func (rig *ssoRig) audited(parts ...string) bool {
	for line := range strings.Lines(rig.audit.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestSSOPlantedFlowCookie: a flow cookie that another application on the host plants in
// a signed-in browser (at Path=/login/sso/callback, so sent first), with the callback URL
// of a sign-in of the attacker's, signs nobody in and leaves the browser's own session
// alone: whether gcscope never issued it (made up, with or without a nonce, or with a MAC
// of the attacker's) or issued it to another browser (the attacker's, who kept the code).
func TestSSOPlantedFlowCookie(t *testing.T) {
	made := func(nonce string, mac bool) func(*testing.T, *ssoRig) (map[string]string, *url.URL) {
		return func(t *testing.T, rig *ssoRig) (map[string]string, *url.URL) {
			state, verifier := security.RandomString(), oauth2.GenerateVerifier()
			back := rig.authorize(t, rig.browser(t), rig.ownAuthorization(state, nonce, verifier), "test-user2")
			flow := state + "." + nonce + "." + verifier
			if mac {
				flow += "." + strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10) + "." + security.RandomString()
			}
			return map[string]string{edge.SSOFlowCookie: flow}, back
		}
	}
	issuedElsewhere := func(withBrowserID bool) func(*testing.T, *ssoRig) (map[string]string, *url.URL) {
		return func(t *testing.T, rig *ssoRig) (map[string]string, *url.URL) {
			attacker := rig.browser(t)
			back := rig.authorize(t, attacker, rig.gcscope.URL+"/login/sso", "test-user2")
			planted := map[string]string{edge.SSOFlowCookie: rig.cookieOf(t, attacker, edge.SSOFlowCookie)}
			if withBrowserID {
				planted[edge.SSOBrowserCookie] = rig.cookieOf(t, attacker, edge.SSOBrowserCookie)
			}
			return planted, back
		}
	}
	for _, c := range []struct {
		name  string
		plant func(*testing.T, *ssoRig) (map[string]string, *url.URL)
	}{
		{"made up", made(security.RandomString(), false)},
		{"made up, with no nonce", made("", false)},
		{"made up, with a MAC of its own", made(security.RandomString(), true)},
		{"issued to another browser", issuedElsewhere(false)},
		{"issued to another browser, with its browser id", issuedElsewhere(true)},
	} {
		t.Run(c.name, func(t *testing.T) {
			rig := newSSORig(t)
			victim := rig.signedInVictim(t)
			planted, back := c.plant(t, rig)
			for name, value := range planted {
				rig.plant(victim, name, value)
			}
			code, page := open(t, victim, back.String())
			if code < 400 || !strings.Contains(page, "Single sign-on failed") {
				t.Errorf("the attacker's callback with the planted flow: %d, want it refused:\n%s", code, page)
			}
			rig.wantUser(t, victim, "oidc:id1")
			if !rig.audited(`"action":"login"`, `"path":"/login/sso/callback"`, `"result":"denied"`) {
				t.Error("the refusal is not audited")
			}
		})
	}
}

// TestSSODuplicateFlowCookies: a browser with a sign-in of its own under way and another
// flow planted beside it is refused for the two cookies, never decided by which comes
// first (the planted one, at the longer path).
func TestSSODuplicateFlowCookies(t *testing.T) {
	rig := newSSORig(t)
	victim := rig.signedInVictim(t)
	rig.startFlow(t, victim)
	attacker := rig.browser(t)
	back := rig.authorize(t, attacker, rig.gcscope.URL+"/login/sso", "test-user2")
	rig.plant(victim, edge.SSOFlowCookie, rig.cookieOf(t, attacker, edge.SSOFlowCookie))
	code, page := open(t, victim, back.String())
	if code != http.StatusBadRequest || !strings.Contains(page, "2 "+edge.SSOFlowCookie+" cookies") {
		t.Errorf("a callback with two flow cookies: %d, want 400 saying so:\n%s", code, page)
	}
	rig.wantUser(t, victim, "oidc:id1")
}

// TestSSOFlowWithoutNonce: the nonce is never skipped. Even a flow gcscope signed for this
// browser, were its nonce empty, takes no ID token: here one with no nonce, as the provider
// gives to an authorization request that asks none (the old callback took it).
func TestSSOFlowWithoutNonce(t *testing.T) {
	rig := newSSORig(t)
	b := rig.browser(t)
	rig.startFlow(t, b)
	state, verifier := security.RandomString(), oauth2.GenerateVerifier()
	back := rig.authorize(t, rig.browser(t), rig.ownAuthorization(state, "", verifier), rig.user1())
	flow := security.SSOFlow{State: state, Verifier: verifier, Expires: time.Now().Add(time.Minute)}.Seal(rig.server.processKey, rig.cookieOf(t, b, edge.SSOBrowserCookie))
	u, _ := url.Parse(rig.gcscope.URL)
	b.Jar.SetCookies(u, []*http.Cookie{edge.SSOFlowCookieFor(&http.Request{}, flow, 60)}) // in place of gcscope's
	code, page := open(t, b, back.String())
	if code < 400 || !strings.Contains(page, "Single sign-on failed") {
		t.Errorf("a flow with no nonce: %d, want it refused:\n%s", code, page)
	}
	if code, s := rig.session(t, b); code != http.StatusUnauthorized {
		t.Errorf("after a flow with no nonce, /api/v1/session: %d %s; want 401", code, s)
	}
}

// TestSSOStartFromAnotherSite: a link (or a redirect) from another site to /login/sso
// neither sends the browser to the provider (which may answer at once, ending the
// browser's session for another) nor touches the session: it gets the login page, whose
// button starts the sign-in from gcscope's own page. A typed URL and that button still do.
func TestSSOStartFromAnotherSite(t *testing.T) {
	rig := newSSORig(t)
	victim := rig.signedInVictim(t)
	b := withoutRedirects(victim)
	start := func(header, value string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, rig.gcscope.URL+"/login/sso", nil)
		req.Header.Set(header, value)
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, h := range [][2]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"}, // another port of this host
		{"Origin", "https://elsewhere.example"},
		{"Referer", "https://elsewhere.example/page"},
	} {
		resp := start(h[0], h[1])
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" || !strings.Contains(string(page), `href="/login/sso"`) {
			t.Errorf("%s: %s: %s (to %q); want 403 and the login page with its button:\n%s", h[0], h[1], resp.Status, resp.Header.Get("Location"), page)
		}
		for _, c := range resp.Cookies() {
			if c.Name == edge.SSOFlowCookie {
				t.Errorf("%s: %s: a flow cookie was set", h[0], h[1])
			}
		}
		rig.wantUser(t, victim, "oidc:id1")
	}
	if !rig.audited(`"action":"login"`, `"path":"/login/sso"`, `"result":"denied"`, `"status":403`) {
		t.Error("the refusals are not audited")
	}
	for _, site := range []string{"none", "same-origin"} {
		resp := start("Sec-Fetch-Site", site)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), rig.provider.URL) {
			t.Errorf("Sec-Fetch-Site: %s: %s to %q; want the provider", site, resp.Status, resp.Header.Get("Location"))
		}
	}
}

// TestSSOCallbackThrottled: failed callbacks spend the address's budget of failed
// sign-ins, as failed logins do; past it they are answered 429 before the provider's token
// endpoint is asked. Each callback here carries a genuine flow and a code the provider
// does not know, so each one let through costs a request to the token endpoint.
func TestSSOCallbackThrottled(t *testing.T) {
	rig := newSSORig(t)
	rig.server.failures.HoldTime = 0 // 429s are not held back here (the tarpit's own tests are in security/)
	b := rig.browser(t)
	to := rig.startFlow(t, b)
	flow, browser := rig.cookieOf(t, b, edge.SSOFlowCookie), rig.cookieOf(t, b, edge.SSOBrowserCookie)
	const n = 3 * security.FailureBurst
	var last *http.Response
	var err error
	throttled := 0
	for range n {
		req, _ := http.NewRequest(http.MethodGet, rig.gcscope.URL+"/login/sso/callback?code=not-a-code&state="+url.QueryEscape(to.Query().Get("state")), nil)
		req.AddCookie(&http.Cookie{Name: edge.SSOFlowCookie, Value: flow})
		req.AddCookie(&http.Cookie{Name: edge.SSOBrowserCookie, Value: browser})
		if last, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		last.Body.Close()
		if last.StatusCode == http.StatusTooManyRequests {
			throttled++
		}
	}
	// One more failure may have come back while the test ran (one per FailureRefill). The
	// token endpoint is asked twice per code it refuses: oauth2 tries the client secret in a
	// header, then in the body.
	through := security.FailureBurst + 1
	if hits := rig.tokenHits.Load(); hits > 2*int64(through) || throttled < n-through {
		t.Errorf("%d failed callbacks from one address: %d requests reached the token endpoint, %d callbacks were throttled; want at most %d through",
			n, hits, throttled, through)
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Errorf("the last callback: %s, Retry-After %q; want 429 with Retry-After", last.Status, last.Header.Get("Retry-After"))
	}
	if !rig.audited(`"path":"/login/sso/callback"`, `"result":"denied"`, `"status":429`) {
		t.Error("the throttled callbacks are not audited")
	}
}

// TestSSOCallbacksFromOtherSitesLockNoOneOut: any page can send browsers to the callback;
// callbacks that fail its own checks (the provider's error, no flow of this browser's)
// never reach the provider and do not spend the address's budget of failed sign-ins, so
// a page that sends many does not keep everyone behind the address from signing in.
func TestSSOCallbacksFromOtherSitesLockNoOneOut(t *testing.T) {
	rig := newSSORig(t)
	rig.server.failures.HoldTime = 0
	for i := range 3 * security.FailureBurst {
		path := "/login/sso/callback?error=x"
		if i%2 == 1 {
			path = "/login/sso/callback?code=c&state=s"
		}
		req, _ := http.NewRequest(http.MethodGet, rig.gcscope.URL+path, nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			t.Fatalf("callback %d from another site: 429; a callback that fails its own checks must not spend the budget", i)
		}
	}
	if hits := rig.tokenHits.Load(); hits != 0 {
		t.Errorf("%d requests reached the token endpoint, want none", hits)
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(rig.provider.URL, "https://"), ":")
	if resp, body := rig.signIn(t, rig.browser(t), "test-user@"+host, "verysecure"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in as id1.") {
		t.Errorf("a real sign-in from the same address after them: %s:\n%s", resp.Status, body)
	}
}

// TestSSORenewalOutlivesTheRequest: an ID token due for renewal is renewed even when the
// request that needed it has ended (a closed tab): the renewal is the session's.
func TestSSORenewalOutlivesTheRequest(t *testing.T) {
	rig := newSSORig(t)
	cfg, tok := rig.providerTokens(t, rig.user1())
	src := rig.sso.Renewing(cfg, tok, "id1") // no expiry: due
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if id, err := src.Token(ctx); err != nil || id == "" {
		t.Fatalf("renewing for a request that has ended: %v; want a new ID token", err)
	}
}

// TestSSORenewalOfAnotherUser: a renewed ID token of another subject than the one signed
// in ends the session (as if the provider answered the refresh with another user's token).
func TestSSORenewalOfAnotherUser(t *testing.T) {
	rig := newSSORig(t)
	cfg, tok := rig.providerTokens(t, rig.user1())
	sessions := security.NewSessions()
	id := sessions.StartFrom(rig.sso.Renewing(cfg, tok, "id2"), "sso oidc:id2")
	if got := sessions.Token(context.Background(), id); got != "" {
		t.Fatalf("id2's session renewed to an ID token of id1's: %q", got)
	}
	if got := sessions.Token(context.Background(), id); got != "" {
		t.Fatalf("the session did not end: %q", got)
	}
}
