package security

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
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

// sessionIDBytes is the size of a session id (random bytes).
const sessionIDBytes = 32

type loginSession struct {
	token   string // the token, or (with source) what identifies the user for maxSessionsPerToken
	source  TokenSource
	expires time.Time
}

// TokenSource gives a session's current token, renewing it before it expires (single
// sign-on: an ID token refreshed with the provider); an error ends the session.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// Sessions maps session ids to the tokens they stand for.
type Sessions struct {
	mu  sync.Mutex
	ids map[string]loginSession
	now func() time.Time
}

// NewSessions is an empty table.
func NewSessions() *Sessions {
	return &Sessions{ids: map[string]loginSession{}, now: time.Now}
}

// Start records token under a new id, and returns the id.
func (ss *Sessions) Start(token string) string {
	return ss.start(loginSession{token: token})
}

// StartFrom records a session whose token src gives (renewed as it goes), for the user
// key names, under a new id, and returns the id.
func (ss *Sessions) StartFrom(src TokenSource, key string) string {
	return ss.start(loginSession{token: key, source: src})
}

func (ss *Sessions) start(session loginSession) string {
	token := session.token
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
	session.expires = now.Add(sessionLifetime)
	ss.ids[id] = session
	return id
}

// Token is the token session id stands for ("" when unknown or expired, or when its
// source cannot renew it: the session then ends).
func (ss *Sessions) Token(ctx context.Context, id string) string {
	ss.mu.Lock()
	s, ok := ss.ids[id]
	if ok && !s.expires.After(ss.now()) {
		delete(ss.ids, id)
		ok = false
	}
	ss.mu.Unlock()
	switch {
	case !ok:
		return ""
	case s.source == nil:
		return s.token
	}
	t, err := s.source.Token(ctx) // not under the lock: it may ask the provider
	if err != nil {
		ss.End(id)
		return ""
	}
	return t
}

// End forgets session id.
func (ss *Sessions) End(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.ids, id)
}

// ErrNotSignedIn: a stream's credentials are no longer accepted (the stream closes with its
// text).
var ErrNotSignedIn = errors.New("your sign-in is no longer accepted (signed out, gcscope restarted, or the token was revoked or expired): sign in again")
