package edge

import (
	"fmt"
	"net/http"
)

// RequestCookie is the value of the request's one cookie called name. Cookies belong to a
// host, not to a port: another application served on 127.0.0.1 may have set a cookie of
// the same name, which the browser sends too (first, if its path is longer). gcscope does
// not guess which is its own: a session or a CSRF token it cannot tell apart is refused.
func RequestCookie(r *http.Request, name string) (string, error) {
	cs := r.CookiesNamed(name)
	switch len(cs) {
	case 0:
		return "", http.ErrNoCookie
	case 1:
		return cs[0].Value, nil
	}
	return "", fmt.Errorf("the request carries %d %s cookies, and gcscope does not guess which is its own "+
		"(another application on this host may have set one): clear this site's cookies, then sign in again", len(cs), name)
}

// endSessions ends every session the request's session cookies name (signing in again,
// or out, leaves none behind, whichever is gcscope's own).
func (e *Edge) endSessions(r *http.Request) {
	for _, c := range r.CookiesNamed(SessionCookie) {
		e.opts.Sessions.End(c.Value)
	}
}
