package edge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
)

// Writes must come from gcscope's own pages: same-origin (Origin, or Sec-Fetch-Site,
// names gcscope's own scheme and host, or an allowed origin) and carrying a CSRF token
// the server issued for this browser session in the X-CSRF-Token header. The session is
// a random cookie; the token is an HMAC of it (and of the bearer token, with auth) under
// a key that never leaves the process. A page that plants a cookie (another app on
// localhost can: cookies ignore ports) still cannot forge the matching token.

const (
	CSRFCookie = "gcscope_csrf"
	CSRFHeader = "X-CSRF-Token"
	// SessionIDBytes is the size of the random session id of the CSRF cookie.
	SessionIDBytes = 32
)

// csrfMAC is the token of a session id: HMAC-SHA256 over the id and the request's
// bearer token (so a token is good only for the user it was issued to).
func (e *Edge) csrfMAC(sessionID string, r *http.Request) string {
	m := hmac.New(sha256.New, e.opts.ProcessKey)
	m.Write([]byte("gcscope-csrf\x00"))
	m.Write([]byte(sessionID))
	if e.opts.Auth != nil {
		bearer := sha256.Sum256([]byte(e.bearerToken(r)))
		m.Write([]byte{0})
		m.Write(bearer[:])
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CSRFToken returns the request's CSRF token, setting a new session cookie if it has none.
func (e *Edge) CSRFToken(w http.ResponseWriter, r *http.Request) string {
	id, err := RequestCookie(r, CSRFCookie)
	if err == nil && validSessionID(id) {
		return e.csrfMAC(id, r)
	}
	if err != nil && err != http.ErrNoCookie {
		return "" // ambiguous: a new cookie would not replace the other; the write says why
	}
	b := make([]byte, SessionIDBytes)
	rand.Read(b)
	id = base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: CSRFCookie, Value: id, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return e.csrfMAC(id, r)
}

func validSessionID(id string) bool {
	b, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(b) == SessionIDBytes
}

// csrfCheck reports why a write request fails the CSRF rules, or "".
func (e *Edge) csrfCheck(r *http.Request) string {
	if why := security.CrossSite(r, e.opts.AllowedOrigins); why != "" {
		return why
	}
	id, err := RequestCookie(r, CSRFCookie)
	if err != nil && err != http.ErrNoCookie {
		return err.Error()
	}
	h := r.Header.Get(CSRFHeader)
	if err != nil || h == "" || !validSessionID(id) ||
		!hmac.Equal([]byte(h), []byte(e.csrfMAC(id, r))) {
		return "missing or wrong CSRF token: get one from GET /api/v1/session and send it back in the " + CSRFHeader + " header with its cookie"
	}
	return ""
}

// GuardWrite applies the CSRF rules to a write.
func (e *Edge) GuardWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := e.csrfCheck(r); why != "" {
			e.audit.Refuse(w, r, WriteAction(r), http.StatusForbidden, httpapi.ErrCSRF(why))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// GuardRead refuses reads that another site makes the browser send: gcscope's API has no
// use for another site, and every read costs the apiserver (access reviews for each user;
// managedFields, Services and listings for explanations and the stuck list), so a page
// that makes its visitors' browsers poll gcscope must not turn them into load. Clients that
// are not browsers send neither Origin nor Sec-Fetch-Site and pass.
func (e *Edge) GuardRead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The stream's handshake checks its own Origin (server/stream/upgrade.go), and audits a
		// refusal as the stream's.
		upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !upgrade {
			if why := security.CrossSite(r, e.opts.AllowedOrigins); why != "" {
				e.audit.Refuse(w, r, "read", http.StatusForbidden, httpapi.ErrForbidden("read gcscope's API from gcscope's own page: "+why))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// WriteAction names a write route for the audit log.
func WriteAction(r *http.Request) string {
	switch {
	case strings.HasSuffix(r.URL.Path, "/delete"):
		return "delete"
	case strings.HasSuffix(r.URL.Path, "/deletions"):
		return "deleteSet"
	case strings.HasSuffix(r.URL.Path, "/orphan-marks/dismiss"):
		return "dismissOrphanMarks"
	case strings.HasSuffix(r.URL.Path, "/slow-motion"):
		return "slowMotion"
	case strings.HasSuffix(r.URL.Path, "/play"):
		return "scenarioPlay"
	case strings.HasSuffix(r.URL.Path, "/release"):
		return "scenarioRelease"
	case strings.HasSuffix(r.URL.Path, "/cleanup"):
		return "scenarioCleanup"
	}
	return "write"
}

// SessionResponse tells a page who it is and how it may act.
type SessionResponse struct {
	User *security.User `json:"user"`
	// Authenticated: the server checked who the user is (authentication is on); a hub
	// signs users in through this server only then (server/remote).
	Authenticated bool   `json:"authenticated"`
	CSRFToken     string `json:"csrfToken"`
	ReadOnly      bool   `json:"readOnly"`
	Mode          string `json:"mode,omitempty"`
	ActionDelay   string `json:"actionDelay,omitempty"`
	SlowMotion    bool   `json:"slowMotion"`
	Version       string `json:"version"`
}

// HandleSession answers GET /session: who the request is, the mode, and a CSRF token.
func (e *Edge) HandleSession(w http.ResponseWriter, r *http.Request) {
	resp := SessionResponse{User: UserFrom(r), Authenticated: e.opts.Auth != nil, CSRFToken: e.CSRFToken(w, r), ReadOnly: e.opts.ReadOnly, Version: e.opts.Version}
	if c := ClusterFrom(r); c.Engine != nil {
		resp.Mode = string(c.Engine.Mode())
		if d := c.Engine.ActionDelay(); d > 0 {
			resp.ActionDelay = d.String()
		}
		if e, ok := c.SlowMotion(); ok {
			resp.SlowMotion = e.SlowMotion()
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// CSRFTokenFor is the CSRF token of the session id for r's user: the page's, checked by
// the server's tests against its cookie.
func (e *Edge) CSRFTokenFor(sessionID string, r *http.Request) string { return e.csrfMAC(sessionID, r) }
