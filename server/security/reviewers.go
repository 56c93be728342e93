package security

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The rate limits of each of ClusterReviewers' two clients.
const (
	reviewQPS   = 50
	reviewBurst = 100
)

// ClusterReviewers is --auth=kubernetes: tokens checked with TokenReview, reads narrowed
// with SubjectAccessReview. Each has a client of its own rate limiter, apart from the
// engine's: a flood of bad tokens (bounded in total by the server's FailureLimiter) then
// spends neither the engine's budget nor that of the permission checks of users who are
// signed in already.
func ClusterReviewers(config *rest.Config) (*TokenReviewer, *AccessReviewer, error) {
	client := func() (*kubernetes.Clientset, error) {
		c := rest.CopyConfig(config)
		c.QPS, c.Burst, c.RateLimiter = reviewQPS, reviewBurst, nil
		return kubernetes.NewForConfig(c)
	}
	tokens, err := client()
	if err != nil {
		return nil, nil, err
	}
	access, err := client()
	if err != nil {
		return nil, nil, err
	}
	return NewTokenReviewer(tokens.AuthenticationV1().TokenReviews()), NewAccessReviewer(access.AuthorizationV1().SubjectAccessReviews()), nil
}
