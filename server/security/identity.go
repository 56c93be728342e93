package security

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"

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

// Authenticator checks a request's bearer token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*User, error)
}

// ErrUnauthenticated: no token, or a token that is not valid.
var ErrUnauthenticated = errors.New("a valid bearer token is required")

// KnownGood is an Authenticator that can tell a token it accepted recently without
// asking anyone (*TokenReviewer, *TokenFile).
type KnownGood interface {
	KnownGood(token string) (*User, bool)
}

// Recognizer is an Authenticator that can tell a token it accepted before, whose answer
// it no longer keeps (*TokenReviewer): checking it again spends no failure budget.
type Recognizer interface {
	AcceptedBefore(token string) bool
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

// KnownGood implements KnownGood: a local file needs no outside check.
func (tf *TokenFile) KnownGood(token string) (*User, bool) {
	u, err := tf.Authenticate(context.Background(), token)
	return u, err == nil
}

// Authenticate implements Authenticator. Tokens are compared by hash in constant time.
func (tf *TokenFile) Authenticate(_ context.Context, token string) (*User, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	for h, name := range tf.tokens {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return &User{Name: name}, nil
		}
	}
	return nil, ErrUnauthenticated
}
