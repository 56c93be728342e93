package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The single sign-on flow between gcscope's redirect to the provider and the provider's
// answer. Cookies ignore ports: any other application on this host receives gcscope's
// cookies and can set its own under gcscope's names, and one set at
// Path=/login/sso/callback is sent first. So the callback takes a flow only when
//   - it is the request's one flow cookie (requestCookie: two are refused, never guessed),
//   - gcscope issued it: an HMAC under the process key covers its state, nonce, PKCE
//     verifier and expiry, so nothing in it can be made up or changed, and
//   - it was issued to this browser: the HMAC also covers the browser's id
//     (ssoBrowserCookie), so a genuine flow that another browser got (an attacker's own
//     sign-in, its code kept back) is refused in a browser that holds an id of its own.
//
// What the browser binding does not stop: a browser that never started single sign-on
// here holds no id, so a planted flow comes with a planted id; and an application on this
// host that answers with a Set-Cookie of the same name and path replaces gcscope's id
// (cookies ignore ports). Against those, no cookie can tell browsers apart. It does stop
// whoever can add cookies but not replace gcscope's: a script on another site of this host
// (document.cookie cannot overwrite an HttpOnly cookie) and a neighbouring domain (its
// Domain cookies are other cookies, so the browser sends two, which are refused).

// ssoBrowserCookie holds a random id of the browser, which every flow it starts is bound
// to. It lasts as long as the browser's session (as the session cookie does): a browser
// signed in through single sign-on holds one. SameSite=Lax, as the flow cookie.
const ssoBrowserCookie = "gcscope_sso_browser"

// ssoFlow is one sign-in in progress.
type ssoFlow struct {
	state, nonce, verifier string
	expires                time.Time
}

// ssoBrowser is the request's browser id, or a new one (set on w) when it has none.
// Two are an error: a new one would not replace the other.
func ssoBrowser(w http.ResponseWriter, r *http.Request) (string, error) {
	id, err := requestCookie(r, ssoBrowserCookie)
	switch {
	case err == nil && validSessionID(id):
		return id, nil
	case err != nil && err != http.ErrNoCookie:
		return "", err
	}
	b := make([]byte, sessionIDBytes)
	rand.Read(b)
	id = base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: ssoBrowserCookie, Value: id, Path: "/login/sso", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return id, nil
}

// ssoFlowValue is the flow cookie's value for f, bound to browser:
// state.nonce.verifier.expiry.mac (none of them holds a dot).
func (s *Server) ssoFlowValue(browser string, f ssoFlow) string {
	payload := strings.Join([]string{f.state, f.nonce, f.verifier, strconv.FormatInt(f.expires.Unix(), 10)}, ".")
	return payload + "." + s.ssoFlowMAC(browser, payload)
}

func (s *Server) ssoFlowMAC(browser, payload string) string {
	m := hmac.New(sha256.New, s.processKey)
	m.Write([]byte("gcscope-sso-flow\x00"))
	m.Write([]byte(browser))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errNoSSOFlow: the callback has no flow of gcscope's for this browser.
var errNoSSOFlow = errors.New("this sign-in was not started here (in this browser), or took longer than 10 minutes: start again")

// ssoFlowOf is the flow the request's cookies hold, when gcscope issued it to this
// browser and it has not expired.
func (s *Server) ssoFlowOf(r *http.Request) (ssoFlow, error) {
	value, err := requestCookie(r, ssoFlowCookie)
	if err != nil && err != http.ErrNoCookie {
		return ssoFlow{}, err
	}
	browser, berr := requestCookie(r, ssoBrowserCookie)
	if berr != nil && berr != http.ErrNoCookie {
		return ssoFlow{}, berr
	}
	if err != nil || berr != nil {
		return ssoFlow{}, errNoSSOFlow
	}
	parts := strings.Split(value, ".")
	if len(parts) != 5 || slices.Contains(parts, "") {
		return ssoFlow{}, errNoSSOFlow
	}
	payload, mac := strings.Join(parts[:4], "."), parts[4]
	if !hmac.Equal([]byte(mac), []byte(s.ssoFlowMAC(browser, payload))) {
		return ssoFlow{}, errNoSSOFlow
	}
	unix, err := strconv.ParseInt(parts[3], 10, 64)
	f := ssoFlow{state: parts[0], nonce: parts[1], verifier: parts[2], expires: time.Unix(unix, 0)}
	if err != nil || !s.opts.SSO.now().Before(f.expires) {
		return ssoFlow{}, errNoSSOFlow
	}
	return f, nil
}
