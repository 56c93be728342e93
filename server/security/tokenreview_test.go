package security

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeReviews is a TokenReview API that accepts tokens starting with "good-", counts its
// calls, and can be held or made to fail.
type fakeReviews struct {
	calls atomic.Int64
	hold  chan struct{} // when set, reviews wait for it to close
	fail  atomic.Bool
}

func (f *fakeReviews) reviewer() *TokenReviewer {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		f.calls.Add(1)
		if f.hold != nil {
			<-f.hold
		}
		if f.fail.Load() {
			return true, nil, apierrors.NewServiceUnavailable("apiserver down")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if len(tr.Spec.Token) > 5 && tr.Spec.Token[:5] == "good-" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token[5:]}}
		}
		return true, tr, nil
	})
	return NewTokenReviewer(cs.AuthenticationV1().TokenReviews())
}

func TestTokenReviewCache(t *testing.T) {
	f := &fakeReviews{}
	tr := f.reviewer()
	now := time.Unix(1000, 0)
	tr.cache = newLRU[[32]byte, reviewed](3, func() time.Time { return now })
	ctx := context.Background()
	for range 3 {
		if u, err := tr.Authenticate(ctx, "good-alice"); err != nil || u.Name != "alice" {
			t.Fatalf("good token: %v %v", u, err)
		}
		if _, err := tr.Authenticate(ctx, "bad-token"); err != ErrUnauthenticated {
			t.Fatalf("bad token: %v", err)
		}
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d reviews for two tokens asked three times each, want 2", n)
	}
	// Bad answers are kept for less time than good ones.
	now = now.Add(11 * time.Second)
	tr.Authenticate(ctx, "good-alice")
	tr.Authenticate(ctx, "bad-token")
	if n := f.calls.Load(); n != 3 {
		t.Errorf("after 11 s: %d reviews, want 3 (the bad token asked again, the good one cached)", n)
	}
	now = now.Add(time.Minute)
	tr.Authenticate(ctx, "good-alice")
	if n := f.calls.Load(); n != 4 {
		t.Errorf("after a minute more: %d reviews, want 4 (the good token asked again)", n)
	}
	// Bounded: the least recently used goes.
	for _, tok := range []string{"good-b", "good-c", "good-d"} {
		tr.Authenticate(ctx, tok)
	}
	if tr.cache.len() != 3 {
		t.Errorf("cache holds %d, want its bound 3", tr.cache.len())
	}
	if _, ok := tr.KnownGood("good-alice"); ok {
		t.Error("the least recently used token is still cached past the bound")
	}
	if u, ok := tr.KnownGood("good-d"); !ok || u.Name != "d" {
		t.Error("the newest token is not known good")
	}
	// Errors talking to the cluster are not kept.
	f.fail.Store(true)
	if _, err := tr.Authenticate(ctx, "good-e"); err == nil || err == ErrUnauthenticated {
		t.Fatalf("review failure: %v, want the apiserver's error", err)
	}
	f.fail.Store(false)
	if u, err := tr.Authenticate(ctx, "good-e"); err != nil || u.Name != "e" {
		t.Errorf("after the apiserver recovered: %v %v (the failure was cached)", u, err)
	}
}

func TestTokenReviewCollapsesConcurrentReviewsOfOneToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeReviews{hold: make(chan struct{})}
		tr := f.reviewer()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if u, err := tr.Authenticate(context.Background(), "good-alice"); err != nil || u.Name != "alice" {
					t.Errorf("%v %v", u, err)
				}
			})
		}
		// Every caller is blocked: one in the review (on hold), the others waiting for it.
		synctest.Wait()
		if n := f.calls.Load(); n != 1 {
			t.Errorf("%d reviews started for 20 concurrent requests with one token, want 1", n)
		}
		close(f.hold)
		wg.Wait()
		if n := f.calls.Load(); n != 1 {
			t.Errorf("%d reviews for 20 concurrent requests with one token, want 1", n)
		}
	})
}

// TestAReviewOutlivesACallerThatLeft: two callers ask about one token at once (the door
// and the picker); the first goes away mid-review (AnyOf cancels reviews it no longer
// needs). The second still gets the answer, the review is made once, and its answer is
// kept: the first caller's cancellation is its own.
func TestAReviewOutlivesACallerThatLeft(t *testing.T) {
	var calls atomic.Int64
	hold := make(chan struct{})
	tr := NewReviewer(func(ctx context.Context, token string) (*User, error) {
		calls.Add(1)
		select { // as a request to the cluster, the review ends with its context
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &User{Name: token[len("good-"):]}, nil
	}, nil)
	first, leave := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := tr.Authenticate(first, "good-alice")
		firstDone <- err
	}()
	for calls.Load() == 0 {
		runtime.Gosched() // the review is under way
	}
	second := make(chan *User, 1)
	go func() {
		u, _ := tr.Authenticate(context.Background(), "good-alice")
		second <- u
	}()
	leave()
	if err := <-firstDone; err != context.Canceled {
		t.Errorf("the caller that left: %v; want its own cancellation", err)
	}
	close(hold)
	if u := <-second; u == nil || u.Name != "alice" {
		t.Fatalf("the caller that stayed: %+v; want alice", u)
	}
	if u, ok := tr.KnownGood("good-alice"); !ok || u.Name != "alice" {
		t.Errorf("the answer was not kept: %+v %v", u, ok)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d reviews; want 1", n)
	}
}
