package edge

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"

	"github.com/gcscope/gcscope/server/security"
)

// The single sign-on flow between gcscope's redirect to the provider and the provider's
// answer. Cookies ignore ports: any other application on this host receives gcscope's
// cookies and can set its own under gcscope's names, and one set at
// Path=/login/sso/callback is sent first. So the callback takes a flow only when
//   - it is the request's one flow cookie (RequestCookie: two are refused, never guessed),
//   - gcscope issued it: an HMAC under the process key covers its state, nonce, PKCE
//     verifier and expiry, so nothing in it can be made up or changed, and
//   - it was issued to this browser: the HMAC also covers the browser's id
//     (SSOBrowserCookie), so a genuine flow that another browser got (an attacker's own
//     sign-in, its code kept back) is refused in a browser that holds an id of its own.
//
// What the browser binding does not stop: a browser that never started single sign-on
// here holds no id, so a planted flow comes with a planted id; and an application on this
// host that answers with a Set-Cookie of the same name and path replaces gcscope's id
// (cookies ignore ports). Against those, no cookie can tell browsers apart. It does stop
// whoever can add cookies but not replace gcscope's: a script on another site of this host
// (document.cookie cannot overwrite an HttpOnly cookie) and a neighbouring domain (its
// Domain cookies are other cookies, so the browser sends two, which are refused).

// SSOBrowserCookie holds a random id of the browser, which every flow it starts is bound
// to. It lasts as long as the browser's session (as the session cookie does): a browser
// signed in through single sign-on holds one. SameSite=Lax, as the flow cookie.
const SSOBrowserCookie = "gcscope_sso_browser"

// ssoBrowser is the request's browser id, or a new one (set on w) when it has none.
// Two are an error: a new one would not replace the other.
func ssoBrowser(w http.ResponseWriter, r *http.Request) (string, error) {
	id, err := RequestCookie(r, SSOBrowserCookie)
	switch {
	case err == nil && validSessionID(id):
		return id, nil
	case err != nil && err != http.ErrNoCookie:
		return "", err
	}
	b := make([]byte, SessionIDBytes)
	rand.Read(b)
	id = base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: SSOBrowserCookie, Value: id, Path: "/login/sso", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return id, nil
}

// ssoFlowOf is the flow the request's cookies hold, when gcscope issued it to this
// browser and it has not expired.
func (e *Edge) ssoFlowOf(r *http.Request) (security.SSOFlow, error) {
	value, err := RequestCookie(r, SSOFlowCookie)
	if err != nil && err != http.ErrNoCookie {
		return security.SSOFlow{}, err
	}
	browser, berr := RequestCookie(r, SSOBrowserCookie)
	if berr != nil && berr != http.ErrNoCookie {
		return security.SSOFlow{}, berr
	}
	if err != nil || berr != nil {
		return security.SSOFlow{}, security.ErrNoSSOFlow
	}
	return security.OpenSSOFlow(e.opts.ProcessKey, browser, value, e.opts.SSO.Now())
}
