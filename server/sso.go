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
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
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
// nonce and PKCE verifier of one sign-in. SameSite=Lax: it must come back on the
// provider's redirect, a cross-site navigation.
const ssoFlowCookie = "gcscope_sso"

// ssoFlowLifetime is how long a user has at the provider's sign-in page.
const ssoFlowLifetime = 10 * time.Minute

// renewBefore is how long before its expiry an ID token is renewed.
const renewBefore = time.Minute

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
	return ownOrigin(r) + "/login/sso/callback"
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
func (s *Server) handleSSOStart(w http.ResponseWriter, r *http.Request) {
	o := s.opts.SSO
	state, nonce, verifier := randomString(), randomString(), oauth2.GenerateVerifier()
	http.SetCookie(w, ssoFlowCookieFor(r, state+"."+nonce+"."+verifier, int(ssoFlowLifetime.Seconds())))
	cfg := o.oauth
	cfg.RedirectURL = redirectURL(r)
	http.Redirect(w, r, cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusSeeOther)
}

// handleSSOCallback takes the provider's answer: the code is traded for tokens (with the
// PKCE verifier), the ID token checked, then reviewed by the cluster as any token is; a
// session starts that renews it.
func (s *Server) handleSSOCallback(w http.ResponseWriter, r *http.Request) {
	o := s.opts.SSO
	fail := func(status int, msg string) {
		entry := entryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", status, msg
		s.audit.write(entry)
		s.renderLogin(w, r, status, "Single sign-on failed: "+msg)
	}
	http.SetCookie(w, ssoFlowCookieFor(r, "", -1)) // one try per flow
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail(http.StatusUnauthorized, "the provider answered "+quoteClip(e)+" "+quoteClip(q.Get("error_description")))
		return
	}
	c, err := r.Cookie(ssoFlowCookie)
	parts := []string{}
	if err == nil {
		parts = strings.Split(c.Value, ".")
	}
	if len(parts) != 3 || subtle.ConstantTimeCompare([]byte(parts[0]), []byte(q.Get("state"))) != 1 {
		fail(http.StatusBadRequest, "this sign-in was not started here, or took longer than 10 minutes: start again")
		return
	}
	nonce, verifier := parts[1], parts[2]
	cfg := o.oauth
	cfg.RedirectURL = redirectURL(r)
	ctx := o.ctx(r.Context())
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		fail(http.StatusUnauthorized, "the provider did not trade the code for tokens: "+err.Error())
		return
	}
	idToken, name, expiry, err := o.check(ctx, tok, nonce)
	if err != nil {
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	u, refused := s.authenticateToken(r, idToken)
	if refused != nil {
		fail(refused.status, "the cluster did not accept your ID token: "+refused.err.Message)
		return
	}
	src := &ssoToken{sso: o, cfg: cfg, token: tok, idToken: idToken, expiry: expiry}
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
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/"><title>gcscope</title><p>Signed in as %s. <a href="/">Go on to gcscope</a></p>`, html.EscapeString(name))
}

// check verifies the ID token of tok (issuer, audience, expiry, signature; nonce when
// given) and returns it with the user's name as the configured claim says, and its expiry.
func (o *SSO) check(ctx context.Context, tok *oauth2.Token, nonce string) (idToken, name string, expiry time.Time, err error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", "", time.Time{}, errors.New("the provider's answer has no ID token")
	}
	id, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("the ID token: %w", err)
	}
	if nonce != "" && subtle.ConstantTimeCompare([]byte(id.Nonce), []byte(nonce)) != 1 {
		return "", "", time.Time{}, errors.New("the ID token is not this sign-in's (its nonce differs)")
	}
	var claims map[string]any
	id.Claims(&claims)
	name, _ = claims[o.cfg.NameClaim].(string)
	if name == "" {
		name = id.Subject
	}
	return raw, name, id.Expiry, nil
}

// ssoToken is a signed-in user's ID token, renewed with the refresh token before it expires.
type ssoToken struct {
	sso     *SSO
	cfg     oauth2.Config
	mu      sync.Mutex
	token   *oauth2.Token
	idToken string
	expiry  time.Time
}

// Token is the current ID token; within renewBefore of its expiry, a new one from the
// provider (an error, which ends the session, when it cannot give one).
func (t *ssoToken) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sso.now().Add(renewBefore).Before(t.expiry) {
		return t.idToken, nil
	}
	if t.token.RefreshToken == "" {
		return "", errors.New("the ID token expired and the provider gave no refresh token (ask for the offline_access scope)")
	}
	ctx = t.sso.ctx(ctx)
	renewed, err := t.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: t.token.RefreshToken}).Token()
	if err != nil {
		return "", fmt.Errorf("renewing the ID token: %w", err)
	}
	idToken, _, expiry, err := t.sso.check(ctx, renewed, "") // a refreshed ID token carries no nonce of ours
	if err != nil {
		return "", err
	}
	if renewed.RefreshToken == "" {
		renewed.RefreshToken = t.token.RefreshToken
	}
	t.token, t.idToken, t.expiry = renewed, idToken, expiry
	return idToken, nil
}
