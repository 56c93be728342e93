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
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// User is who made a request.
type User struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups,omitempty"`
	// Impersonate: cluster writes are made as this user, so the cluster's RBAC decides.
	Impersonate bool `json:"impersonate,omitempty"`
}

// anonymous is the user of a server without authentication (loopback only).
var anonymous = &User{Name: "local"}

// Authenticator checks a request's bearer token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*User, error)
}

// errUnauthenticated: no token, or a token that is not valid.
var errUnauthenticated = errors.New("a valid bearer token is required")

// sessionCookie carries the token of a browser that logged in through /login.
const sessionCookie = "gcscope_session"

type userKey struct{}

// userFrom returns the authenticated user of a request.
func userFrom(r *http.Request) *User {
	if u, ok := r.Context().Value(userKey{}).(*User); ok {
		return u
	}
	return anonymous
}

// bearerToken reads the token from the Authorization header or the session cookie.
func bearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return c.Value
	}
	return ""
}

// authenticate lets authenticated requests through (all of them without an Authenticator).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Auth == nil {
			next.ServeHTTP(w, r)
			return
		}
		u, err := s.opts.Auth.Authenticate(r.Context(), bearerToken(r))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gcscope"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
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

// TokenReviewer authenticates bearer tokens with the cluster's TokenReview API and has
// writes made as the authenticated user (impersonation). Results are cached briefly.
type TokenReviewer struct {
	client authenticationclient.TokenReviewInterface
	ttl    time.Duration

	mu    sync.Mutex
	cache map[[32]byte]reviewed
}

type reviewed struct {
	user *User
	err  error
	at   time.Time
}

// NewTokenReviewer checks tokens through client.
func NewTokenReviewer(client authenticationclient.TokenReviewInterface) *TokenReviewer {
	return &TokenReviewer{client: client, ttl: time.Minute, cache: map[[32]byte]reviewed{}}
}

// Authenticate implements Authenticator.
func (tr *TokenReviewer) Authenticate(ctx context.Context, token string) (*User, error) {
	if token == "" {
		return nil, errUnauthenticated
	}
	key := sha256.Sum256([]byte(token))
	tr.mu.Lock()
	if c, ok := tr.cache[key]; ok && time.Since(c.at) < tr.ttl {
		tr.mu.Unlock()
		return c.user, c.err
	}
	tr.mu.Unlock()

	review, err := tr.client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("checking the token with the cluster: %w", err)
	}
	r := reviewed{at: time.Now()}
	if review.Status.Authenticated {
		r.user = &User{Name: review.Status.User.Username, Groups: review.Status.User.Groups, Impersonate: true}
	} else {
		r.err = errUnauthenticated
	}
	tr.mu.Lock()
	for k, c := range tr.cache { // keep the cache from growing without bound
		if time.Since(c.at) >= tr.ttl {
			delete(tr.cache, k)
		}
	}
	tr.cache[key] = r
	tr.mu.Unlock()
	return r.user, r.err
}
