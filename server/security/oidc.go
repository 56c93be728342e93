package security

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
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

// Issuer is the provider's issuer URL (an ID token's iss).
func (s *SSO) Issuer() string { return s.cfg.IssuerURL }

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

// Name is what the sign-in button says.
func (o *SSO) Name() string { return o.cfg.Name }

// Now is the mechanism's clock (the flow's expiry, the ID token's renewal).
func (o *SSO) Now() time.Time { return o.now() }

// SetClock replaces the clock: tests move it to an ID token's expiry.
func (o *SSO) SetClock(now func() time.Time) { o.now = now }

// OAuth2 is the client's configuration towards the provider, without a redirect URL.
func (o *SSO) OAuth2() oauth2.Config { return o.oauth }

// ClientContext makes ctx's requests to the provider trust its CA.
func (o *SSO) ClientContext(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.client)
}

// AuthCodeURL is where a sign-in sends the browser: the provider, asked for a code for
// redirectURL with the flow's state, nonce and PKCE challenge.
func (o *SSO) AuthCodeURL(redirectURL string, f SSOFlow) string {
	cfg := o.oauth
	cfg.RedirectURL = redirectURL
	return cfg.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
}

// SSOAnswer is the provider's answer to one sign-in, checked.
type SSOAnswer struct {
	cfg     oauth2.Config // with the redirect URL the code was given for
	token   *oauth2.Token
	idToken string
	id      *oidc.IDToken
}

// IDToken is the answer's ID token: the user's credential towards the cluster.
func (a *SSOAnswer) IDToken() string { return a.idToken }

// Exchange trades a callback's code for tokens with flow (whose state the caller checked)
// and checks the ID token, nonce included; or says why not.
func (o *SSO) Exchange(ctx context.Context, redirectURL, code string, flow SSOFlow) (*SSOAnswer, error) {
	a := &SSOAnswer{cfg: o.oauth}
	a.cfg.RedirectURL = redirectURL
	ctx = o.ClientContext(ctx)
	var err error
	a.token, err = a.cfg.Exchange(ctx, code, oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		return nil, fmt.Errorf("the provider did not trade the code for tokens: %w", err)
	}
	if a.idToken, a.id, err = o.verify(ctx, a.token); err != nil {
		return nil, err
	}
	// Never skipped: an ID token without this flow's nonce may be one the provider gave
	// anyone else (a flow always has one; OpenSSOFlow refuses an empty one).
	if flow.Nonce == "" || subtle.ConstantTimeCompare([]byte(a.id.Nonce), []byte(flow.Nonce)) != 1 {
		return nil, errors.New("the ID token is not this sign-in's (its nonce differs)")
	}
	if a.id.Subject == "" {
		return nil, errors.New("the ID token names no subject")
	}
	return a, nil
}

// Session is the answer's ID token as a session's TokenSource, renewed as it goes.
func (o *SSO) Session(a *SSOAnswer) TokenSource {
	return &ssoToken{sso: o, cfg: a.cfg, token: a.token, idToken: a.idToken, subject: a.id.Subject, expiry: a.id.Expiry}
}

// Renewing is a TokenSource of subject's tokens from tok (got with cfg) that renews on its
// first use: what a session holds once its ID token is due.
func (o *SSO) Renewing(cfg oauth2.Config, tok *oauth2.Token, subject string) TokenSource {
	return &ssoToken{sso: o, cfg: cfg, token: tok, subject: subject}
}

// NameOf is the user of a checked answer as the configured claim says (its subject
// without one).
func (o *SSO) NameOf(a *SSOAnswer) string { return o.nameOf(a.id) }

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

// VerifyIDToken checks that raw is an ID token the provider issued to gcscope's client and
// that it has not expired (signature, issuer, audience, expiry): a hub forwards no
// forged or stale one to its remotes.
func (o *SSO) VerifyIDToken(ctx context.Context, raw string) error {
	if _, err := o.verifier.Verify(o.ClientContext(ctx), raw); err != nil {
		return fmt.Errorf("not an ID token of %s: %w", o.cfg.IssuerURL, err)
	}
	return nil
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
	ctx = t.sso.ClientContext(ctx)
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
		return "", fmt.Errorf("the renewed ID token is another user's (subject %s, not %s)", quoteClip(id.Subject), quoteClip(t.subject))
	}
	if renewed.RefreshToken == "" {
		renewed.RefreshToken = t.token.RefreshToken
	}
	t.token, t.idToken, t.expiry = renewed, idToken, id.Expiry
	return idToken, nil
}
