package edge

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

// unauthenticated is whom a request to a server that requires authentication is audited
// as until it has authenticated (a failed login, a refused Host, a 401): not "local".
var unauthenticated = &security.User{Name: "unauthenticated"}

// StartUnauthenticated marks every request unauthenticated until Authenticate says who
// it is, when the server requires authentication.
func (e *Edge) StartUnauthenticated(next http.Handler) http.Handler {
	if e.opts.Auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, withUser(r, unauthenticated))
	})
}

// SessionCookie carries the session id of a browser that signed in through /login
// (security.Sessions).
const SessionCookie = "gcscope_session"

// Token is the credential r's user authenticated with: requestToken's token ("" when the
// session is ambiguous). A hub hands it to the remote cluster the user asks (server/remote).
func (e *Edge) Token(r *http.Request) string { return e.bearerToken(r) }

// bearerToken is requestToken's token ("" when the session is ambiguous).
func (e *Edge) bearerToken(r *http.Request) string {
	t, _ := e.requestToken(r)
	return t
}

// requestToken reads the token from the Authorization header (the scheme in any case, as
// RFC 7235 says) or, through the session it names, the session cookie. Two session
// cookies are an error: gcscope does not guess which session is the user's (RequestCookie).
func (e *Edge) requestToken(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, t, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(t), nil
		}
		return "", nil
	}
	id, err := RequestCookie(r, SessionCookie)
	switch {
	case err == http.ErrNoCookie:
		return "", nil
	case err != nil:
		return "", err
	}
	return e.opts.Sessions.Token(r.Context(), id), nil
}

// Authenticate lets authenticated requests through (all of them without an Authenticator).
// A refusal on a write route is audited.
func (e *Edge) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.opts.Auth == nil {
			next.ServeHTTP(w, r)
			return
		}
		token, ambiguous := e.requestToken(r)
		var u *security.User
		var fail *authFailure
		if ambiguous != nil {
			fail = &authFailure{status: http.StatusUnauthorized, err: httpapi.ErrUnauthorized(ambiguous.Error())}
		} else {
			u, fail = e.authenticateToken(r, token)
		}
		if fail != nil && ambiguous == nil && fail.status == http.StatusUnauthorized && r.Method == http.MethodGet && r.URL.Path == "/" &&
			strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login", http.StatusSeeOther) // a browser without a session: the form
			return
		}
		if fail != nil {
			e.opts.Failures.Tarpit(r.Context(), fail.status)
			fail.setHeaders(w)
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				e.audit.Refuse(w, r, WriteAction(r), fail.status, fail.err)
				return
			}
			httpapi.WriteJSON(w, fail.status, fail.err)
			return
		}
		next.ServeHTTP(w, withUser(r, u))
	})
}

// Credentials returns a check of r's credentials as they are now (the session its
// cookie names, or its bearer token), for a stream to run again while it lasts; nil
// without authentication.
func (e *Edge) Credentials(r *http.Request) func(context.Context) error {
	return e.CredentialsFor(r, nil)
}

// CredentialsFor is Credentials as cluster auth reviews them (nil: the server's
// authentication): a stream of a cluster that decides who a user is ends when that
// cluster no longer accepts the user, whatever the others say.
func (e *Edge) CredentialsFor(r *http.Request, auth security.Authenticator) func(context.Context) error {
	if e.opts.Auth == nil {
		return nil
	}
	if auth == nil {
		auth = e.opts.Auth
	}
	return func(ctx context.Context) error {
		// A session signed out since stands for no token; the authenticator answers from
		// its cache while it can.
		_, err := auth.Authenticate(ctx, e.bearerToken(r))
		if errors.Is(err, security.ErrUnauthenticated) {
			return security.ErrNotSignedIn
		}
		return err
	}
}

// AsClusterSees serves r to cluster name as auth (the cluster's own review of a
// credential, registry.Cluster.Authenticator) says who its user is: the user the cluster
// names, whose reads it narrows and whose writes it impersonates. A credential the
// cluster does not accept is refused (403: the user is signed in to gcscope, and other
// clusters may accept it); one it cannot review now answers 503. False: answered.
func (e *Edge) AsClusterSees(w http.ResponseWriter, r *http.Request, name string, auth security.Authenticator) (*http.Request, bool) {
	if e.opts.Auth == nil || auth == nil {
		return r, true
	}
	refuse := func(status int, err *httpapi.Error) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			e.audit.Refuse(w, r, WriteAction(r), status, err)
			return
		}
		httpapi.WriteJSON(w, status, err)
	}
	u, err := auth.Authenticate(r.Context(), e.bearerToken(r))
	switch {
	case errors.Is(err, security.ErrUnauthenticated):
		refuse(http.StatusForbidden, httpapi.ErrForbidden(RefusedBy(name)))
		return nil, false
	case err != nil:
		refuse(http.StatusServiceUnavailable, httpapi.ErrUnavailable(fmt.Sprintf("cluster %q cannot review your credential now: %v", name, err)))
		return nil, false
	}
	return withUser(r, u), true
}

// RefusedBy says that cluster name does not accept the user's credential.
func RefusedBy(name string) string {
	return fmt.Sprintf("cluster %q does not accept your credential: its TokenReview refused it; sign in with one it accepts, or pick another cluster", name)
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
func (e *Edge) authenticateToken(r *http.Request, token string) (*security.User, *authFailure) {
	if token == "" {
		return nil, &authFailure{status: http.StatusUnauthorized, err: httpapi.ErrUnauthorized(security.ErrUnauthenticated.Error())}
	}
	if kg, ok := e.opts.Auth.(security.KnownGood); ok {
		if u, ok := kg.KnownGood(token); ok {
			return u, nil
		}
	}
	if rec, ok := e.opts.Auth.(security.Recognizer); ok && rec.AcceptedBefore(token) {
		return e.checkToken(r, token, func(bool) {})
	}
	done, throttled := e.opts.Failures.Begin(security.RemoteIP(r.RemoteAddr))
	if throttled != nil {
		e.opts.Throttled.Inc()
		wait, msg := throttledText(throttled, "authentications", " (a token accepted before still works)")
		return nil, &authFailure{status: http.StatusTooManyRequests, retryAfter: wait, err: httpapi.ErrTooManyRequests(msg)}
	}
	return e.checkToken(r, token, done)
}

// checkToken asks the Authenticator about token, and tells done whether it failed.
func (e *Edge) checkToken(r *http.Request, token string, done func(failed bool)) (*security.User, *authFailure) {
	u, err := e.opts.Auth.Authenticate(r.Context(), token)
	done(errors.Is(err, security.ErrUnauthenticated))
	switch {
	case errors.Is(err, security.ErrUnauthenticated):
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
