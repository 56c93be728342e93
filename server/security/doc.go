// Package security holds the server's security mechanisms, apart from the HTTP handlers
// and middleware that use them (those are server/edge's):
//
//   - who a request is: User, the Authenticator interface, TokenFile (--auth-token-file)
//     and TokenReviewer (--auth=kubernetes), with ErrUnauthenticated;
//   - what a user may do: the Authorizer interface and AccessReviewer
//     (SubjectAccessReviews, cached for AccessCacheTTL);
//   - what an attacker may cost: FailureLimiter (failed authentications per address);
//   - which Host headers the server answers: HostPolicy (the DNS-rebinding defence);
//   - browser sign-ins: Sessions (session ids for the tokens behind them);
//   - single sign-on: SSO (oidc.go: the provider's discovery, the code traded for tokens,
//     the ID token checked and renewed) and SSOFlow (ssoflow.go: one sign-in in progress,
//     sealed under the process key and bound to its browser);
//   - --auth=kubernetes's two reviewers, each with a client of its own (ClusterReviewers).
//
// Each is safe for concurrent use.
package security
