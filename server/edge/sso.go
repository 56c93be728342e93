package edge

import (
	"crypto/subtle"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"time"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
)

// SSOFlowCookie holds, between the redirect to the provider and its answer, the state,
// nonce and PKCE verifier of one sign-in, signed and bound to the browser (sso_flow.go).
// SameSite=Lax: it must come back on the provider's redirect, a cross-site navigation.
const SSOFlowCookie = "gcscope_sso"

// ssoFlowLifetime is how long a user has at the provider's sign-in page.
const ssoFlowLifetime = 10 * time.Minute

// redirectURL is where the provider sends the browser back: this gcscope, as the browser
// reached it.
func redirectURL(r *http.Request) string {
	return security.OwnOrigin(r) + "/login/sso/callback"
}

// SSOFlowCookieFor is the flow cookie holding value (or, with a negative age, its removal).
func SSOFlowCookieFor(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SSOFlowCookie, Value: value, Path: "/login/sso", MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
}

// HandleSSOStart sends the browser to the provider, remembering the flow in a cookie.
// Only from gcscope's own page, or a URL the user typed: a link on another site must not
// start a sign-in that ends the browser's current session (a provider that remembers the
// user answers at once). That link gets the login page, whose button starts it here.
func (e *Edge) HandleSSOStart(w http.ResponseWriter, r *http.Request) {
	o := e.opts.SSO
	refuse := func(status int, why, msg string) {
		entry := EntryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", status, why
		e.audit.Write(entry)
		e.renderLogin(w, r, status, msg)
	}
	if why := crossSiteLogin(r, e.opts.AllowedOrigins); why != "" {
		refuse(http.StatusForbidden, why, "Another site sent you to sign in: start single sign-on from this page.")
		return
	}
	browser, err := ssoBrowser(w, r)
	if err != nil {
		refuse(http.StatusBadRequest, err.Error(), "Single sign-on failed: "+err.Error())
		return
	}
	f := security.NewSSOFlow(o.Now(), ssoFlowLifetime)
	http.SetCookie(w, SSOFlowCookieFor(r, f.Seal(e.opts.ProcessKey, browser), int(ssoFlowLifetime.Seconds())))
	http.Redirect(w, r, o.AuthCodeURL(redirectURL(r), f), http.StatusSeeOther)
}

// HandleSSOCallback takes the provider's answer: the code is traded for tokens (with the
// PKCE verifier), the ID token checked, then reviewed by the cluster as any token is; a
// session starts that renews it. Failed callbacks spend the address's budget of failed
// sign-ins (auth.go), so that no one makes gcscope knock at the provider's token
// endpoint as fast as it can ask.
func (e *Edge) HandleSSOCallback(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		entry := EntryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", status, msg
		e.audit.Write(entry)
		e.renderLogin(w, r, status, "Single sign-on failed: "+msg)
	}
	http.SetCookie(w, SSOFlowCookieFor(r, "", -1)) // one try per flow
	// The answer's own checks first, which cost nothing: a callback that fails them (any
	// page can send a browser to this URL) must not spend the address's budget of failed
	// sign-ins, or a page would lock everyone on it out of signing in.
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail(http.StatusUnauthorized, "the provider answered "+httpapi.QuoteClip(e)+" "+httpapi.QuoteClip(q.Get("error_description")))
		return
	}
	flow, err := e.ssoFlowOf(r)
	if err == nil && subtle.ConstantTimeCompare([]byte(flow.State), []byte(q.Get("state"))) != 1 {
		err = security.ErrNoSSOFlow
	}
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	done, throttled := e.opts.Failures.Begin(security.RemoteIP(r.RemoteAddr))
	if throttled != nil {
		e.opts.Throttled.Inc()
		wait, msg := throttledText(throttled, "sign-ins", "")
		e.opts.Failures.Tarpit(r.Context(), http.StatusTooManyRequests)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
		fail(http.StatusTooManyRequests, msg)
		return
	}
	answer, err := e.opts.SSO.Exchange(r.Context(), redirectURL(r), r.URL.Query().Get("code"), flow)
	done(err != nil)
	if err != nil {
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	u, refused := e.authenticateToken(r, answer.IDToken())
	if refused != nil {
		fail(refused.status, "the cluster did not accept your ID token: "+refused.err.Message)
		return
	}
	e.endSessions(r)
	http.SetCookie(w, sessionCookieFor(r, e.opts.Sessions.StartFrom(e.opts.SSO.Session(answer), "sso "+u.Name), 0))
	entry := EntryFor(r, "login")
	entry.User, entry.Groups = u.Name, u.Groups
	entry.Result, entry.Status = "ok", http.StatusOK
	e.audit.Write(entry)
	// Not a redirect: the session cookie is SameSite=Strict, and a redirect that ends a
	// navigation the provider started is cross-site; a page of gcscope's own that goes on
	// to / is same-site.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/"><title>gcscope</title><p>Signed in as %s. <a href="/">Go on to gcscope</a></p>`, html.EscapeString(e.opts.SSO.NameOf(answer)))
}
