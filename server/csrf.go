package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Writes must come from gcscope's own pages: same-origin (Origin, or Sec-Fetch-Site,
// matches the host or an allowed origin) and carrying the CSRF token of the session
// cookie in the X-CSRF-Token header (double submit). The token is handed out by
// GET /api/v1/session, which also sets the cookie.

const (
	csrfCookie = "gcscope_csrf"
	csrfHeader = "X-CSRF-Token"
)

// csrfToken returns the request's CSRF token, issuing a cookie with a new one if it has none.
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 32)
	rand.Read(b)
	t := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return t
}

// csrfCheck reports why a write request fails the CSRF rules, or "".
func csrfCheck(r *http.Request, allowedOrigins []string) string {
	if o := r.Header.Get("Origin"); o != "" {
		if !originAllowed(o, r.Host, allowedOrigins) {
			return "cross-origin request from " + o
		}
	} else if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request (Sec-Fetch-Site: " + site + ")"
	}
	c, err := r.Cookie(csrfCookie)
	h := r.Header.Get(csrfHeader)
	if err != nil || h == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(h)) != 1 {
		return "missing or wrong CSRF token: get one from GET /api/v1/session and send it back in the " + csrfHeader + " header with its cookie"
	}
	return ""
}

// originAllowed: the Origin's host is the request's host or matches an allowed pattern.
func originAllowed(origin, host string, patterns []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

// guardWrite applies the CSRF rules to a write.
func (s *Server) guardWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := csrfCheck(r, s.opts.AllowedOrigins); why != "" {
			writeError(w, http.StatusForbidden, "csrf", why)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sessionResponse tells a page who it is and how it may act.
type sessionResponse struct {
	User        *User  `json:"user"`
	CSRFToken   string `json:"csrfToken"`
	ReadOnly    bool   `json:"readOnly"`
	Mode        string `json:"mode,omitempty"`
	ActionDelay string `json:"actionDelay,omitempty"`
	SlowMotion  bool   `json:"slowMotion"`
	Version     string `json:"version"`
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	resp := sessionResponse{User: userFrom(r), CSRFToken: csrfToken(w, r), ReadOnly: s.opts.ReadOnly, Version: s.opts.Version}
	if s.opts.Engine != nil {
		resp.Mode = string(s.opts.Engine.Mode())
		if d := s.opts.Engine.ActionDelay(); d > 0 {
			resp.ActionDelay = d.String()
		}
		if e, ok := s.slowMotion(); ok {
			resp.SlowMotion = e.SlowMotion()
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
