package server

// The security mechanisms live in package security; these names keep the server's
// exported API (cmd/gcscope builds its Options with them).

import (
	"k8s.io/client-go/kubernetes"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/server/security"
)

type (
	// User is who made a request.
	User = security.User
	// Authenticator checks a request's bearer token.
	Authenticator = security.Authenticator
	// TokenFile authenticates the tokens of a file (--auth-token-file).
	TokenFile = security.TokenFile
	// TokenReviewer authenticates tokens with the cluster's TokenReview API.
	TokenReviewer = security.TokenReviewer
	// Authorizer answers authorization questions about users.
	Authorizer = security.Authorizer
	// AccessReviewer is an Authorizer backed by the cluster's SubjectAccessReview.
	AccessReviewer = security.AccessReviewer
)

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) { return security.LoadTokenFile(path) }

// NewTokenReviewer checks tokens through client.
func NewTokenReviewer(client authenticationclient.TokenReviewInterface) *TokenReviewer {
	return security.NewTokenReviewer(client)
}

// NewAccessReviewer asks client.
func NewAccessReviewer(client authorizationclient.SubjectAccessReviewInterface) *AccessReviewer {
	return security.NewAccessReviewer(client)
}

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

// errUnauthenticated: no token, or a token that is not valid.
var errUnauthenticated = security.ErrUnauthenticated
