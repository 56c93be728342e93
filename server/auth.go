package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// User is who made a request.
type User struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups,omitempty"`
	// Impersonate: cluster writes are made as this user, so the cluster's RBAC decides.
	Impersonate bool `json:"impersonate,omitempty"`
	// UID and Extra are the rest of the identity the cluster gave (TokenReview), passed on
	// to SubjectAccessReviews and impersonation.
	UID   string              `json:"-"`
	Extra map[string][]string `json:"-"`
}

// extra is Extra as SubjectAccessReview takes it.
func (u *User) extra() map[string]authorizationv1.ExtraValue {
	if len(u.Extra) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		out[k] = v
	}
	return out
}

// anonymous is the user of a server without authentication (loopback only).
var anonymous = &User{Name: "local"}

// unauthenticated is whom a request to a server that requires authentication is audited
// as until it has authenticated (a failed login, a refused Host, a 401): not "local".
var unauthenticated = &User{Name: "unauthenticated"}

// startUnauthenticated marks every request unauthenticated until authenticate says who
// it is, when the server requires authentication.
func (s *Server) startUnauthenticated(next http.Handler) http.Handler {
	if s.opts.Auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, unauthenticated)))
	})
}

// Authenticator checks a request's bearer token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*User, error)
}

// errUnauthenticated: no token, or a token that is not valid.
var errUnauthenticated = errors.New("a valid bearer token is required")

// sessionCookie carries the session id of a browser that signed in through /login
// (sessions.go).
const sessionCookie = "gcscope_session"

type userKey struct{}

// userFrom returns the authenticated user of a request.
func userFrom(r *http.Request) *User {
	if u, ok := r.Context().Value(userKey{}).(*User); ok {
		return u
	}
	return anonymous
}

// bearerToken reads the token from the Authorization header (the scheme in any case, as
// RFC 7235 says) or, through the session it names, the session cookie.
func (s *Server) bearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, t, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(t)
		}
		return ""
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return s.sessions.token(c.Value)
	}
	return ""
}

// knownGood is an Authenticator that can tell a token it accepted recently without
// asking anyone (*TokenReviewer, *TokenFile).
type knownGood interface {
	KnownGood(token string) (*User, bool)
}

// authenticate lets authenticated requests through (all of them without an Authenticator).
// A refusal on a write route is audited.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Auth == nil {
			next.ServeHTTP(w, r)
			return
		}
		u, fail := s.authenticateToken(r, s.bearerToken(r))
		if fail != nil && fail.status == http.StatusUnauthorized && r.Method == http.MethodGet && r.URL.Path == "/" &&
			strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login", http.StatusSeeOther) // a browser without a session: the form
			return
		}
		if fail != nil {
			s.failures.tarpit(r.Context(), fail.status)
			fail.setHeaders(w)
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.refuse(w, r, writeAction(r), fail.status, fail.err)
				return
			}
			writeJSON(w, fail.status, fail.err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// errNotSignedIn: a stream's credentials are no longer accepted (sessions.go, stream.go).
var errNotSignedIn = errors.New("your sign-in is no longer accepted (signed out, gcscope restarted, or the token was revoked or expired): sign in again")

// credentialsOf returns a check of r's credentials as they are now (the session its
// cookie names, or its bearer token), for a stream to run again while it lasts; nil
// without authentication.
func (s *Server) credentialsOf(r *http.Request) func(context.Context) error {
	if s.opts.Auth == nil {
		return nil
	}
	return func(ctx context.Context) error {
		// A session signed out since stands for no token; the authenticator answers from
		// its cache while it can.
		_, err := s.opts.Auth.Authenticate(ctx, s.bearerToken(r))
		if errors.Is(err, errUnauthenticated) {
			return errNotSignedIn
		}
		return err
	}
}

// authFailure is why a token was not accepted.
type authFailure struct {
	status     int // 401 bad token, 429 address over its budget, 503 the cluster cannot be asked
	err        *apiError
	retryAfter time.Duration // with 429
}

func (f *authFailure) setHeaders(w http.ResponseWriter) {
	switch f.status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="gcscope"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter.Seconds())))
	}
}

// authenticateToken checks token for the request, within the budget of failed attempts
// of the request's address; a token accepted recently needs no budget.
func (s *Server) authenticateToken(r *http.Request, token string) (*User, *authFailure) {
	if token == "" {
		return nil, &authFailure{status: http.StatusUnauthorized, err: &apiError{Code: codeUnauthorized, Message: errUnauthenticated.Error()}}
	}
	if kg, ok := s.opts.Auth.(knownGood); ok {
		if u, ok := kg.KnownGood(token); ok {
			return u, nil
		}
	}
	done, wait := s.failures.begin(remoteIP(r.RemoteAddr))
	if done == nil {
		s.metrics.authThrottled.Inc()
		wait = wait.Round(time.Second)
		return nil, &authFailure{status: http.StatusTooManyRequests, retryAfter: wait, err: &apiError{Code: codeTooManyRequests,
			Message: fmt.Sprintf("too many failed authentications from this address; try again in %v", wait)}}
	}
	u, err := s.opts.Auth.Authenticate(r.Context(), token)
	done(errors.Is(err, errUnauthenticated))
	switch {
	case errors.Is(err, errUnauthenticated):
		return nil, &authFailure{status: http.StatusUnauthorized, err: &apiError{Code: codeUnauthorized, Message: err.Error()}}
	case err != nil:
		return nil, &authFailure{status: http.StatusServiceUnavailable, err: &apiError{Code: codeUnavailable, Message: err.Error()}}
	}
	return u, nil
}

// TokenFile authenticates tokens listed in a file, one per line: the token, then
// optionally a name for the audit log ("token name"). Blank lines and # comments are
// ignored. Writes are made with gcscope's own credentials.
type TokenFile struct {
	tokens map[[32]byte]string // sha256(token) -> name
}

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tf := &TokenFile{tokens: map[[32]byte]string{}}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields[0]) < 16 {
			return nil, fmt.Errorf("%s:%d: token shorter than 16 characters", path, line)
		}
		name := fmt.Sprintf("token-%d", line)
		if len(fields) > 1 {
			name = fields[1]
		}
		tf.tokens[sha256.Sum256([]byte(fields[0]))] = name
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(tf.tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return tf, nil
}

// KnownGood implements knownGood: a local file needs no outside check.
func (tf *TokenFile) KnownGood(token string) (*User, bool) {
	u, err := tf.Authenticate(context.Background(), token)
	return u, err == nil
}

// Authenticate implements Authenticator. Tokens are compared by hash in constant time.
func (tf *TokenFile) Authenticate(_ context.Context, token string) (*User, error) {
	if token == "" {
		return nil, errUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	for h, name := range tf.tokens {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return &User{Name: name}, nil
		}
	}
	return nil, errUnauthenticated
}
