package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
)

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

// bearerToken is requestToken's token ("" when the session is ambiguous).
func (s *Server) bearerToken(r *http.Request) string {
	t, _ := s.requestToken(r)
	return t
}

// requestToken reads the token from the Authorization header (the scheme in any case, as
// RFC 7235 says) or, through the session it names, the session cookie. Two session
// cookies are an error: gcscope does not guess which session is the user's (requestCookie).
func (s *Server) requestToken(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, t, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(t), nil
		}
		return "", nil
	}
	id, err := requestCookie(r, sessionCookie)
	switch {
	case err == http.ErrNoCookie:
		return "", nil
	case err != nil:
		return "", err
	}
	return s.sessions.Token(r.Context(), id), nil
}

// authenticate lets authenticated requests through (all of them without an Authenticator).
// A refusal on a write route is audited.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Auth == nil {
			next.ServeHTTP(w, r)
			return
		}
		token, ambiguous := s.requestToken(r)
		var u *User
		var fail *authFailure
		if ambiguous != nil {
			fail = &authFailure{status: http.StatusUnauthorized, err: httpapi.ErrUnauthorized(ambiguous.Error())}
		} else {
			u, fail = s.authenticateToken(r, token)
		}
		if fail != nil && ambiguous == nil && fail.status == http.StatusUnauthorized && r.Method == http.MethodGet && r.URL.Path == "/" &&
			strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login", http.StatusSeeOther) // a browser without a session: the form
			return
		}
		if fail != nil {
			s.failures.Tarpit(r.Context(), fail.status)
			fail.setHeaders(w)
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.refuse(w, r, writeAction(r), fail.status, fail.err)
				return
			}
			httpapi.WriteJSON(w, fail.status, fail.err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

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
			return security.ErrNotSignedIn
		}
		return err
	}
}

// authFailure is why a token was not accepted.
type authFailure struct {
	status     int // 401 bad token, 429 address over its budget, 503 the cluster cannot be asked
	err        *httpapi.Error
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
// of the request's address and of all addresses; a token accepted before (a signed-in
// user's) needs no budget.
func (s *Server) authenticateToken(r *http.Request, token string) (*User, *authFailure) {
	if token == "" {
		return nil, &authFailure{status: http.StatusUnauthorized, err: httpapi.ErrUnauthorized(errUnauthenticated.Error())}
	}
	if kg, ok := s.opts.Auth.(security.KnownGood); ok {
		if u, ok := kg.KnownGood(token); ok {
			return u, nil
		}
	}
	if rec, ok := s.opts.Auth.(security.Recognizer); ok && rec.AcceptedBefore(token) {
		return s.checkToken(r, token, func(bool) {})
	}
	done, throttled := s.failures.Begin(security.RemoteIP(r.RemoteAddr))
	if throttled != nil {
		s.metrics.authThrottled.Inc()
		wait, msg := throttledText(throttled, "authentications", " (a token accepted before still works)")
		return nil, &authFailure{status: http.StatusTooManyRequests, retryAfter: wait, err: httpapi.ErrTooManyRequests(msg)}
	}
	return s.checkToken(r, token, done)
}

// checkToken asks the Authenticator about token, and tells done whether it failed.
func (s *Server) checkToken(r *http.Request, token string, done func(failed bool)) (*User, *authFailure) {
	u, err := s.opts.Auth.Authenticate(r.Context(), token)
	done(errors.Is(err, errUnauthenticated))
	switch {
	case errors.Is(err, errUnauthenticated):
		return nil, &authFailure{status: http.StatusUnauthorized, err: httpapi.ErrUnauthorized(err.Error())}
	case err != nil:
		return nil, &authFailure{status: http.StatusServiceUnavailable, err: httpapi.ErrUnavailable(err.Error())}
	}
	return u, nil
}

// throttledText says how long a throttled address waits, and why, for failed whats (more
// said when every address is throttled at once).
func throttledText(t *security.Throttled, what, everyone string) (time.Duration, string) {
	wait := t.RetryAfter.Round(time.Second)
	if t.Everyone {
		return wait, fmt.Sprintf("too many failed %s from many addresses at once; try again in %v%s", what, wait, everyone)
	}
	return wait, fmt.Sprintf("too many failed %s from this address; try again in %v", what, wait)
}
