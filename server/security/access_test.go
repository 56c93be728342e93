package security

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAccessReviewerCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		hold := make(chan struct{})
		cs := fake.NewClientset()
		cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			calls.Add(1)
			<-hold
			sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
			sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Namespace == "a"
			return true, sar, nil
		})
		ar := NewAccessReviewer(cs.AuthorizationV1().SubjectAccessReviews())
		now := time.Unix(1000, 0)
		ar.cache = newLRU[string, bool](2, func() time.Time { return now })
		alice, bob := &User{Name: "alice"}, &User{Name: "bob"}
		list := func(ns string) *authorizationv1.ResourceAttributes {
			return &authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps", Namespace: ns}
		}
		// Twenty concurrent questions of one key are one review.
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if ok, err := ar.Allowed(context.Background(), alice, list("a"), nil); !ok || err != nil {
					t.Errorf("alice in a: %v %v", ok, err)
				}
			})
		}
		// Every caller is blocked: one in the review (on hold), the others waiting for it.
		synctest.Wait()
		close(hold)
		wg.Wait()
		if calls.Load() != 1 {
			t.Errorf("%d reviews for one question asked 20 times at once, want 1", calls.Load())
		}
		if ok, _ := ar.Allowed(context.Background(), bob, list("a"), nil); ok {
			t.Error("bob is allowed what only alice is")
		}
		ar.Allowed(context.Background(), alice, list("a"), nil)
		if calls.Load() != 2 {
			t.Errorf("cached answers were asked again: %d reviews, want 2", calls.Load())
		}
		// Answers expire, and the cache is bounded.
		now = now.Add(AccessCacheTTL)
		ar.Allowed(context.Background(), alice, list("a"), nil)
		if calls.Load() != 3 {
			t.Errorf("after the TTL: %d reviews, want 3", calls.Load())
		}
		ar.Allowed(context.Background(), alice, list("b"), nil)
		ar.Allowed(context.Background(), alice, list("c"), nil)
		if n := ar.cache.len(); n != 2 {
			t.Errorf("cache holds %d answers, want its bound 2", n)
		}
	})
}
