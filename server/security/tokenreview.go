package security

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// TokenReviewer authenticates bearer tokens by asking who holds them (the cluster's
// TokenReview API, or a remote gcscope's /session) and has writes made as the
// authenticated user (impersonation).
//
// A flood of bad tokens must not starve good users or the one asked: results are kept in
// a bounded LRU keyed by the token's hash (good ones for goodTTL, bad ones for badTTL;
// errors asking are not kept), concurrent reviews of one token are one call, and at most
// maxReviews calls are in flight. Give it a client of its own (its own QPS), so it never
// spends the engine's budget. It also remembers, for as long as a session lasts, which
// tokens it accepted (AcceptedBefore): a signed-in user's token is reviewed again when
// its answer expires, and that review must not wait behind a flood.
type TokenReviewer struct {
	review   Review
	goodTTL  time.Duration
	badTTL   time.Duration
	cache    *lru[[32]byte, reviewed]
	accepted *lru[[32]byte, struct{}]
	group    singleflight.Group
	slots    chan struct{} // reviews in flight
}

// Review asks who holds token: their identity, an error wrapping ErrUnauthenticated
// (with why) when the token is refused, or any other error when it could not be asked.
type Review func(ctx context.Context, token string) (*User, error)

type reviewed struct {
	user *User
	err  error
}

// Token review bounds.
const (
	reviewCacheSize = 4096
	maxReviews      = 16
	// reviewTimeout bounds one review, the wait for a slot included.
	reviewTimeout = 10 * time.Second
)

// NewTokenReviewer checks tokens through client.
func NewTokenReviewer(client authenticationclient.TokenReviewInterface) *TokenReviewer {
	return NewTokenReviewerAt(client, nil)
}

// NewTokenReviewerAt is NewTokenReviewer with answers kept as time goes by now (nil: the
// wall clock).
func NewTokenReviewerAt(client authenticationclient.TokenReviewInterface, now func() time.Time) *TokenReviewer {
	return NewReviewer(tokenReview(client), now)
}

// NewReviewer keeps review's answers as TokenReviewer does (now nil: the wall clock).
func NewReviewer(review Review, now func() time.Time) *TokenReviewer {
	return &TokenReviewer{review: review, goodTTL: time.Minute, badTTL: 10 * time.Second,
		cache: newLRU[[32]byte, reviewed](reviewCacheSize, now), accepted: newLRU[[32]byte, struct{}](reviewCacheSize, now),
		slots: make(chan struct{}, maxReviews)}
}

// tokenReview asks the cluster with a TokenReview.
func tokenReview(client authenticationclient.TokenReviewInterface) Review {
	return func(ctx context.Context, token string) (*User, error) {
		review, err := client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("checking the token with the cluster: %w", err)
		}
		if !review.Status.Authenticated {
			return nil, ErrUnauthenticated
		}
		u := review.Status.User
		user := &User{Name: u.Username, Groups: u.Groups, UID: u.UID, Impersonate: true}
		if len(u.Extra) > 0 {
			user.Extra = map[string][]string{}
			for k, v := range u.Extra {
				user.Extra[k] = v
			}
		}
		return user, nil
	}
}

// Authenticate implements Authenticator.
func (tr *TokenReviewer) Authenticate(ctx context.Context, token string) (*User, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	key := sha256.Sum256([]byte(token))
	if r, ok := tr.cache.get(key); ok {
		return r.user, r.err
	}
	// One review of a token is shared by all who ask at once (the door, the picker, a
	// stream's re-check): it runs to its end, bounded by reviewTimeout, whichever of them
	// goes away first (AnyOf cancels the reviews it no longer needs), so a caller that
	// left never hands the others its cancellation, and the answer is kept.
	ch := tr.group.DoChan(string(key[:]), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		select {
		case tr.slots <- struct{}{}:
			defer func() { <-tr.slots }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		user, err := tr.review(ctx, token)
		if errors.Is(err, ErrUnauthenticated) {
			r := reviewed{err: err}
			tr.cache.put(key, r, tr.badTTL)
			tr.accepted.remove(key) // revoked or expired: a stranger again
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		r := reviewed{user: user}
		tr.cache.put(key, r, tr.goodTTL)
		tr.accepted.put(key, struct{}{}, sessionLifetime)
		return r, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		r := res.Val.(reviewed)
		return r.user, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// KnownGood reports the user of a token the cluster accepted recently, without asking it.
func (tr *TokenReviewer) KnownGood(token string) (*User, bool) {
	r, ok := tr.cache.get(sha256.Sum256([]byte(token)))
	return r.user, ok && r.user != nil
}

// AcceptedBefore reports whether the cluster accepted token within the last
// sessionLifetime (and has not refused it since): the token of a signed-in user, not a
// guess.
func (tr *TokenReviewer) AcceptedBefore(token string) bool {
	_, ok := tr.accepted.get(sha256.Sum256([]byte(token)))
	return ok
}
