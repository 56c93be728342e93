package edge

import (
	"net/http"
	"net/url"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/web"
)

// maxLoginBytes bounds the login form (a token is a few kilobytes at most).
const maxLoginBytes = 16 << 10

// HandleLoginForm shows the login form. A token in the URL (the old /login?token=) is
// refused: URLs end up in history, proxy logs and Referer headers.
func (e *Edge) HandleLoginForm(w http.ResponseWriter, r *http.Request) {
	if e.opts.Auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	status, msg := http.StatusOK, ""
	if r.URL.Query().Has("token") {
		status, msg = http.StatusBadRequest, "A token in the URL is not accepted: paste it here (it is sent in the request body)."
	}
	e.renderLogin(w, r, status, msg)
}

// HandleLogin trades a token from the form body for a session cookie, so a browser (and
// its websocket, which cannot send headers) is authenticated; then it goes to the UI.
// Cross-site posts are refused: a page elsewhere must not log a browser in as someone
// else (login CSRF).
func (e *Edge) HandleLogin(w http.ResponseWriter, r *http.Request) {
	if e.opts.Auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if why := crossSiteLogin(r, e.opts.AllowedOrigins); why != "" {
		e.audit.Refuse(w, r, "login", http.StatusForbidden, httpapi.ErrCSRF(why))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		e.audit.Refuse(w, r, "login", http.StatusBadRequest, httpapi.ErrBadRequest("unparsable login form: "+err.Error()))
		return
	}
	token := r.PostForm.Get("token")
	u, fail := e.authenticateToken(r, token)
	if fail != nil {
		entry := EntryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", fail.status, fail.err.Message
		e.audit.Write(entry)
		e.opts.Failures.Tarpit(r.Context(), fail.status)
		fail.setHeaders(w)
		e.renderLogin(w, r, fail.status, "That token was not accepted: "+fail.err.Message+".")
		return
	}
	e.endSessions(r)                                                        // a browser signing in again leaves no older session behind
	http.SetCookie(w, sessionCookieFor(r, e.opts.Sessions.Start(token), 0)) // until the browser closes, or the session ends
	entry := EntryFor(r, "login")
	entry.User, entry.Groups = u.Name, u.Groups
	entry.Result, entry.Status = "ok", http.StatusSeeOther
	e.audit.Write(entry)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// HandleLogout ends the browser's session and goes to the form. Only from gcscope's own
// page: a page elsewhere must not sign a browser out.
func (e *Edge) HandleLogout(w http.ResponseWriter, r *http.Request) {
	if why := crossSiteLogin(r, e.opts.AllowedOrigins); why != "" {
		e.audit.Refuse(w, r, "logout", http.StatusForbidden, httpapi.ErrCSRF(why))
		return
	}
	e.endSessions(r)
	http.SetCookie(w, sessionCookieFor(r, "", -1))
	to := "/login"
	if e.opts.Auth == nil {
		to = "/"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// crossSiteLogin reports why a login post does not come from gcscope's own form:
// Sec-Fetch-Site, then Origin, then Referer, whichever the browser sent.
func crossSiteLogin(r *http.Request, allowedOrigins []string) string {
	if why := security.CrossSite(r, allowedOrigins); why != "" {
		return why
	}
	if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "" {
		if ref := r.Header.Get("Referer"); ref != "" {
			u, err := url.Parse(ref)
			if err != nil || !security.OriginAllowed(u.Scheme+"://"+u.Host, r, allowedOrigins) {
				return "cross-site login (Referer " + httpapi.QuoteClip(ref) + ")"
			}
		}
	}
	return ""
}

func (e *Edge) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p := web.LoginPage{Page: web.Page{Title: "sign in", Version: e.opts.Version, Asset: e.opts.Asset}, Error: msg}
	if e.opts.SSO != nil {
		p.SSO = e.opts.SSO.Name()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	if err := web.Login(p).Render(r.Context(), w); err != nil {
		e.log.Warn("rendering the login page", "err", err)
	}
}

// sessionCookieFor is the cookie that signs a browser in with session id (or, with an
// empty id and a negative age, out).
func sessionCookieFor(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true, MaxAge: maxAge,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}
