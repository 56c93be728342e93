package server

// The security mechanisms live in package security; these names keep the server's
// exported API (cmd/gcscope builds its Options with them).

import (
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

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

// errUnauthenticated: no token, or a token that is not valid.
var errUnauthenticated = security.ErrUnauthenticated
