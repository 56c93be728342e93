package server

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Login sessions. A browser that signs in through /login holds a random id in its
// session cookie, never the token itself: cookies ignore ports, so every other web app
// on the same host (any port of 127.0.0.1) receives gcscope's cookies, and a token there
// would be the user's cluster credential. The id is good only against this gcscope
// process, until it expires, the user signs out, or gcscope restarts.
const (
	// sessionLifetime is how long a sign-in lasts (the token may expire sooner: it is
	// reviewed as for any request).
	sessionLifetime = 12 * time.Hour
	// maxSessions bounds the table; past it the session closest to expiry goes.
	maxSessions = 4096
	// maxSessionsPerToken bounds one token's sessions (its browsers), so that one user
	// signing in again and again makes room only among its own, never pushes others out.
	maxSessionsPerToken = 8
)

type loginSession struct {
	token   string
	expires time.Time
}

// sessions maps session ids to the tokens they stand for.
type sessions struct {
	mu  sync.Mutex
	ids map[string]loginSession
	now func() time.Time
}

func newSessions() *sessions {
	return &sessions{ids: map[string]loginSession{}, now: time.Now}
}

// start records token under a new id, and returns the id.
func (ss *sessions) start(token string) string {
	b := make([]byte, sessionIDBytes)
	rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	mine, oldestMine := 0, ""
	for k, v := range ss.ids {
		if v.token == token {
			mine++
			if oldestMine == "" || v.expires.Before(ss.ids[oldestMine].expires) {
				oldestMine = k
			}
		}
	}
	if mine >= maxSessionsPerToken {
		delete(ss.ids, oldestMine)
	}
	if len(ss.ids) >= maxSessions {
		oldest := ""
		for k, v := range ss.ids {
			if !v.expires.After(now) {
				delete(ss.ids, k)
				continue
			}
			if oldest == "" || v.expires.Before(ss.ids[oldest].expires) {
				oldest = k
			}
		}
		if len(ss.ids) >= maxSessions {
			delete(ss.ids, oldest)
		}
	}
	ss.ids[id] = loginSession{token: token, expires: now.Add(sessionLifetime)}
	return id
}

// token is the token session id stands for ("" when unknown or expired).
func (ss *sessions) token(id string) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.ids[id]
	if !ok {
		return ""
	}
	if !s.expires.After(ss.now()) {
		delete(ss.ids, id)
		return ""
	}
	return s.token
}

// end forgets session id.
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.ids, id)
}

// sessionCookieFor is the cookie that signs a browser in with session id (or, with an
// empty id and a negative age, out).
func sessionCookieFor(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, MaxAge: maxAge,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}
