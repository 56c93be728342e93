// Package security holds the server's security mechanisms, apart from the HTTP handlers
// and middleware that use them (those stay in package server):
//
//   - who a request is: User, the Authenticator interface, TokenFile (--auth-token-file)
//     and TokenReviewer (--auth=kubernetes), with ErrUnauthenticated;
//   - what a user may do: the Authorizer interface and AccessReviewer
//     (SubjectAccessReviews, cached for AccessCacheTTL);
//   - what an attacker may cost: FailureLimiter (failed authentications per address);
//   - which Host headers the server answers: HostPolicy (the DNS-rebinding defence);
//   - browser sign-ins: Sessions (session ids for the tokens behind them).
//
// Each is safe for concurrent use.
package security
