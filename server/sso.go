package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
)

// Single sign-on (OIDC). The page's sign-in goes through the identity provider with the
// authorization code flow and PKCE; the ID token it returns is the user's credential
// towards the cluster, exactly as a pasted token is under --auth=kubernetes: the
// apiserver (configured to trust the same issuer) validates it and RBAC decides. gcscope
// checks the token itself too (issuer, audience, expiry, nonce) before it asks the
// cluster, and renews it with the refresh token before it expires.

// SSOConfig is the identity provider gcscope signs users in with.
type SSOConfig struct {
	IssuerURL    string
	ClientID     string
	ClientSecret string
	// Scopes besides openid (offline_access for a refresh token, email, groups…).
	Scopes []string
	// NameClaim is the ID token's claim shown as the user (email, preferred_username…).
	NameClaim string
	// CAFile, when set, is the PEM bundle that signs the issuer's certificate.
	CAFile string
	// Name is what the sign-in button says ("Sign in with …"); default: the issuer's host.
	Name string
}

// ssoFlowCookie holds, between the redirect to the provider and its answer, the state,
// nonce and PKCE verifier of one sign-in, signed and bound to the browser (sso_flow.go).
// SameSite=Lax: it must come back on the provider's redirect, a cross-site navigation.
const ssoFlowCookie = "gcscope_sso"

// ssoFlowLifetime is how long a user has at the provider's sign-in page.
const ssoFlowLifetime = 10 * time.Minute

// renewBefore is how long before its expiry an ID token is renewed.
const renewBefore = time.Minute

// renewTimeout bounds one renewal, which no request's end cancels.
const renewTimeout = 30 * time.Second

// SSO signs users in through an OpenID provider.
type SSO struct {
	cfg      SSOConfig
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	client   *http.Client // towards the provider (its CA)
	now      func() time.Time
}

// NewSSO reads the provider's discovery document (so a wrong issuer fails at start-up,
// not at the first sign-in).
func NewSSO(ctx context.Context, cfg SSOConfig) (*SSO, error) {
	if cfg.IssuerURL == "" || cfg.ClientID == "" {
		return nil, errors.New("single sign-on needs an issuer URL and a client ID")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the issuer's CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the issuer's CA: no PEM certificate in %s", cfg.CAFile)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: http.ProxyFromEnvironment}
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, client), cfg.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("the OpenID provider %s: %w", cfg.IssuerURL, err)
	}
	if cfg.NameClaim == "" {
		cfg.NameClaim = "email"
	}
	if cfg.Name == "" {
		cfg.Name = strings.TrimPrefix(strings.TrimPrefix(cfg.IssuerURL, "https://"), "http://")
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, s := range cfg.Scopes {
		if s != "" && s != oidc.ScopeOpenID {
			scopes = append(scopes, s)
		}
	}
	return &SSO{
		cfg:      cfg,
		oauth:    oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: provider.Endpoint(), Scopes: scopes},
		verifier: provider.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		client:   client,
		now:      time.Now,
	}, nil
}

func (o *SSO) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.client)
}

// redirectURL is where the provider sends the browser back: this gcscope, as the browser
// reached it.
func redirectURL(r *http.Request) string {
	return security.OwnOrigin(r) + "/login/sso/callback"
}

// ssoFlowCookieFor is the flow cookie holding value (or, with a negative age, its removal).
func ssoFlowCookieFor(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: ssoFlowCookie, Value: value, Path: "/login/sso", MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
}

func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// handleSSOStart sends the browser to the provider, remembering the flow in a cookie.
// Only from gcscope's own page, or a URL the user typed: a link on another site must not
// start a sign-in that ends the browser's current session (a provider that remembers the
// user answers at once). That link gets the login page, whose button starts it here.
func (s *Server) handleSSOStart(w http.ResponseWriter, r *http.Request) {
	o := s.opts.SSO
	refuse := func(status int, why, msg string) {
		entry := entryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", status, why
		s.audit.write(entry)
		s.renderLogin(w, r, status, msg)
	}
	if why := crossSiteLogin(r, s.opts.AllowedOrigins); why != "" {
		refuse(http.StatusForbidden, why, "Another site sent you to sign in: start single sign-on from this page.")
		return
	}
	browser, err := ssoBrowser(w, r)
	if err != nil {
		refuse(http.StatusBadRequest, err.Error(), "Single sign-on failed: "+err.Error())
		return
	}
	f := ssoFlow{state: randomString(), nonce: randomString(), verifier: oauth2.GenerateVerifier(), expires: o.now().Add(ssoFlowLifetime)}
	http.SetCookie(w, ssoFlowCookieFor(r, s.ssoFlowValue(browser, f), int(ssoFlowLifetime.Seconds())))
	cfg := o.oauth
	cfg.RedirectURL = redirectURL(r)
	http.Redirect(w, r, cfg.AuthCodeURL(f.state, oidc.Nonce(f.nonce), oauth2.S256ChallengeOption(f.verifier)), http.StatusSeeOther)
}

// handleSSOCallback takes the provider's answer: the code is traded for tokens (with the
// PKCE verifier), the ID token checked, then reviewed by the cluster as any token is; a
// session starts that renews it. Failed callbacks spend the address's budget of failed
// sign-ins (auth.go), so that no one makes gcscope knock at the provider's token
// endpoint as fast as it can ask.
func (s *Server) handleSSOCallback(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		entry := entryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", status, msg
		s.audit.write(entry)
		s.renderLogin(w, r, status, "Single sign-on failed: "+msg)
	}
	http.SetCookie(w, ssoFlowCookieFor(r, "", -1)) // one try per flow
	// The answer's own checks first, which cost nothing: a callback that fails them (any
	// page can send a browser to this URL) must not spend the address's budget of failed
	// sign-ins, or a page would lock everyone on it out of signing in.
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail(http.StatusUnauthorized, "the provider answered "+httpapi.QuoteClip(e)+" "+httpapi.QuoteClip(q.Get("error_description")))
		return
	}
	flow, err := s.ssoFlowOf(r)
	if err == nil && subtle.ConstantTimeCompare([]byte(flow.state), []byte(q.Get("state"))) != 1 {
		err = errNoSSOFlow
	}
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	done, throttled := s.failures.Begin(security.RemoteIP(r.RemoteAddr))
	if throttled != nil {
		s.metrics.authThrottled.Inc()
		wait, msg := throttledText(throttled, "sign-ins", "")
		s.failures.Tarpit(r.Context(), http.StatusTooManyRequests)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
		fail(http.StatusTooManyRequests, msg)
		return
	}
	answer, status, err := s.ssoAnswerOf(r, flow)
	done(err != nil)
	if err != nil {
		fail(status, err.Error())
		return
	}
	u, refused := s.authenticateToken(r, answer.idToken)
	if refused != nil {
		fail(refused.status, "the cluster did not accept your ID token: "+refused.err.Message)
		return
	}
	src := &ssoToken{sso: s.opts.SSO, cfg: answer.cfg, token: answer.token, idToken: answer.idToken, subject: answer.id.Subject, expiry: answer.id.Expiry}
	s.endSessions(r)
	http.SetCookie(w, sessionCookieFor(r, s.sessions.StartFrom(src, "sso "+u.Name), 0))
	entry := entryFor(r, "login")
	entry.User, entry.Groups = u.Name, u.Groups
	entry.Result, entry.Status = "ok", http.StatusOK
	s.audit.write(entry)
	// Not a redirect: the session cookie is SameSite=Strict, and a redirect that ends a
	// navigation the provider started is cross-site; a page of gcscope's own that goes on
	// to / is same-site.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/"><title>gcscope</title><p>Signed in as %s. <a href="/">Go on to gcscope</a></p>`, html.EscapeString(s.opts.SSO.nameOf(answer.id)))
}

// ssoAnswer is the provider's answer to one sign-in, checked.
type ssoAnswer struct {
	cfg     oauth2.Config // with the redirect URL the code was given for
	token   *oauth2.Token
	idToken string
	id      *oidc.IDToken
}

// ssoAnswerOf trades the callback's code for tokens with the browser's flow (checked by
// the caller) and checks the ID token, nonce included; or says why not, with a status.
func (s *Server) ssoAnswerOf(r *http.Request, flow ssoFlow) (*ssoAnswer, int, error) {
	o := s.opts.SSO
	q := r.URL.Query()
	a := &ssoAnswer{cfg: o.oauth}
	a.cfg.RedirectURL = redirectURL(r)
	ctx := o.ctx(r.Context())
	var err error
	a.token, err = a.cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(flow.verifier))
	if err != nil {
		return nil, http.StatusUnauthorized, fmt.Errorf("the provider did not trade the code for tokens: %w", err)
	}
	if a.idToken, a.id, err = o.verify(ctx, a.token); err != nil {
		return nil, http.StatusUnauthorized, err
	}
	// Never skipped: an ID token without this flow's nonce may be one the provider gave
	// anyone else (a flow always has one; ssoFlowOf refuses an empty one).
	if flow.nonce == "" || subtle.ConstantTimeCompare([]byte(a.id.Nonce), []byte(flow.nonce)) != 1 {
		return nil, http.StatusUnauthorized, errors.New("the ID token is not this sign-in's (its nonce differs)")
	}
	if a.id.Subject == "" {
		return nil, http.StatusUnauthorized, errors.New("the ID token names no subject")
	}
	return a, 0, nil
}

// verify checks the ID token of tok (issuer, audience, expiry, signature) and returns it,
// raw and parsed. Whose it is, the caller checks: the nonce on sign-in, the subject on
// renewal.
func (o *SSO) verify(ctx context.Context, tok *oauth2.Token) (string, *oidc.IDToken, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", nil, errors.New("the provider's answer has no ID token")
	}
	id, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return "", nil, fmt.Errorf("the ID token: %w", err)
	}
	return raw, id, nil
}

// nameOf is the user's name as the configured claim of id says (its subject without one).
func (o *SSO) nameOf(id *oidc.IDToken) string {
	var claims map[string]any
	id.Claims(&claims)
	if name, _ := claims[o.cfg.NameClaim].(string); name != "" {
		return name
	}
	return id.Subject
}

// ssoToken is a signed-in user's ID token, renewed with the refresh token before it expires.
type ssoToken struct {
	sso     *SSO
	cfg     oauth2.Config
	subject string // the user signed in: every renewed ID token must be theirs
	mu      sync.Mutex
	token   *oauth2.Token
	idToken string
	expiry  time.Time
}

// Token is the current ID token; within renewBefore of its expiry, a new one from the
// provider (an error, which ends the session, when it cannot give one, or gives another
// user's). The renewal is the session's, not the request's: a request that ends meanwhile
// (a closed tab) must not end the session, so it runs detached, for renewTimeout at most.
func (t *ssoToken) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sso.now().Add(renewBefore).Before(t.expiry) {
		return t.idToken, nil
	}
	if t.token.RefreshToken == "" {
		return "", errors.New("the ID token expired and the provider gave no refresh token (ask for the offline_access scope)")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renewTimeout)
	defer cancel()
	ctx = t.sso.ctx(ctx)
	renewed, err := t.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: t.token.RefreshToken}).Token()
	if err != nil {
		return "", fmt.Errorf("renewing the ID token: %w", err)
	}
	// A refreshed ID token carries no nonce of ours; its subject says whose it is.
	idToken, id, err := t.sso.verify(ctx, renewed)
	if err != nil {
		return "", err
	}
	if t.subject == "" || id.Subject != t.subject {
		return "", fmt.Errorf("the renewed ID token is another user's (subject %s, not %s)", httpapi.QuoteClip(id.Subject), httpapi.QuoteClip(t.subject))
	}
	if renewed.RefreshToken == "" {
		renewed.RefreshToken = t.token.RefreshToken
	}
	t.token, t.idToken, t.expiry = renewed, idToken, id.Expiry
	return idToken, nil
}
