package server

import (
	"net/http"
	"net/url"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/web"
)

// maxLoginBytes bounds the login form (a token is a few kilobytes at most).
const maxLoginBytes = 16 << 10

// handleLoginForm shows the login form. A token in the URL (the old /login?token=) is
// refused: URLs end up in history, proxy logs and Referer headers.
func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	status, msg := http.StatusOK, ""
	if r.URL.Query().Has("token") {
		status, msg = http.StatusBadRequest, "A token in the URL is not accepted: paste it here (it is sent in the request body)."
	}
	s.renderLogin(w, r, status, msg)
}

// handleLogin trades a token from the form body for a session cookie, so a browser (and
// its websocket, which cannot send headers) is authenticated; then it goes to the UI.
// Cross-site posts are refused: a page elsewhere must not log a browser in as someone
// else (login CSRF).
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if why := crossSiteLogin(r, s.opts.AllowedOrigins); why != "" {
		s.refuse(w, r, "login", http.StatusForbidden, httpapi.ErrCSRF(why))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, "login", http.StatusBadRequest, httpapi.ErrBadRequest("unparsable login form: "+err.Error()))
		return
	}
	token := r.PostForm.Get("token")
	u, fail := s.authenticateToken(r, token)
	if fail != nil {
		entry := entryFor(r, "login")
		entry.Result, entry.Status, entry.Error = "denied", fail.status, fail.err.Message
		s.audit.write(entry)
		s.failures.Tarpit(r.Context(), fail.status)
		fail.setHeaders(w)
		s.renderLogin(w, r, fail.status, "That token was not accepted: "+fail.err.Message+".")
		return
	}
	s.endSessions(r)                                                   // a browser signing in again leaves no older session behind
	http.SetCookie(w, sessionCookieFor(r, s.sessions.Start(token), 0)) // until the browser closes, or the session ends
	entry := entryFor(r, "login")
	entry.User, entry.Groups = u.Name, u.Groups
	entry.Result, entry.Status = "ok", http.StatusSeeOther
	s.audit.write(entry)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLogout ends the browser's session and goes to the form. Only from gcscope's own
// page: a page elsewhere must not sign a browser out.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if why := crossSiteLogin(r, s.opts.AllowedOrigins); why != "" {
		s.refuse(w, r, "logout", http.StatusForbidden, httpapi.ErrCSRF(why))
		return
	}
	s.endSessions(r)
	http.SetCookie(w, sessionCookieFor(r, "", -1))
	to := "/login"
	if s.opts.Auth == nil {
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

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p := web.LoginPage{Page: web.Page{Title: "sign in", Version: s.opts.Version, Asset: assetURL}, Error: msg}
	if s.opts.SSO != nil {
		p.SSO = s.opts.SSO.cfg.Name
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	if err := web.Login(p).Render(r.Context(), w); err != nil {
		s.log.Warn("rendering the login page", "err", err)
	}
}

// sessionCookieFor is the cookie that signs a browser in with session id (or, with an
// empty id and a negative age, out).
func sessionCookieFor(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, MaxAge: maxAge,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}
