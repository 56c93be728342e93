package security

import (
	"context"
	"errors"
)

// AnyOf is the door of several clusters that each decide who a user is (--auth=kubernetes
// with several contexts): a credential signs in when one of them accepts it. Each cluster
// then reviews it again for its own requests, under the name it gives (the server's
// per-cluster check), so whom AnyOf says is only the door's: the session, the login's
// audit line.
//
// The clusters are asked together, and the first to accept answers: a cluster that cannot
// be reached holds no one back. A credential none accepts is ErrUnauthenticated when every
// cluster said so, else the first other error (a cluster could not be asked: 503, not 401).
type AnyOf []Authenticator

// Authenticate implements Authenticator.
func (a AnyOf) Authenticate(ctx context.Context, token string) (*User, error) {
	if len(a) == 0 {
		return nil, ErrUnauthenticated
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the others, once one accepted
	type answer struct {
		u   *User
		err error
	}
	answers := make(chan answer, len(a))
	for _, auth := range a {
		go func() {
			u, err := auth.Authenticate(ctx, token)
			answers <- answer{u, err}
		}()
	}
	var failed error
	for range a {
		ans := <-answers
		switch {
		case ans.err == nil:
			return ans.u, nil
		case !errors.Is(ans.err, ErrUnauthenticated) && failed == nil:
			failed = ans.err
		}
	}
	if failed != nil {
		return nil, failed
	}
	return nil, ErrUnauthenticated
}

// KnownGood implements KnownGood: a token one of them accepted recently.
func (a AnyOf) KnownGood(token string) (*User, bool) {
	for _, auth := range a {
		if kg, ok := auth.(KnownGood); ok {
			if u, ok := kg.KnownGood(token); ok {
				return u, true
			}
		}
	}
	return nil, false
}

// AcceptedBefore implements Recognizer: a token one of them accepted before.
func (a AnyOf) AcceptedBefore(token string) bool {
	for _, auth := range a {
		if rec, ok := auth.(Recognizer); ok && rec.AcceptedBefore(token) {
			return true
		}
	}
	return false
}
