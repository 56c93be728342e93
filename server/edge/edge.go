// Package edge is the request edge: what every request passes before a resource handler
// sees it, and what records it. Who the request is (auth.go: bearer tokens and the
// sessions of /login and single sign-on), whether it may come (host.go: the Host it names;
// csrf.go: the Origin of reads, the CSRF token of writes), what its user may read
// (authz.go, preconditions.go), and the audit log of writes and refusals (audit.go,
// audit_refused.go). context.go holds every request-context accessor. The mechanisms
// behind it (token reviews, sessions, rate limits, OIDC) are package security's; the
// server (server/routes.go) composes the edge's middleware and handlers.
package edge

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gcscope/gcscope/server/security"
)

// Options are what the edge needs from the server.
type Options struct {
	Logger  *slog.Logger
	Version string
	// ReadOnly and Replay are the server's modes (server.Options says what each is).
	ReadOnly, Replay bool
	// Auth authenticates requests; nil means none (loopback only).
	Auth security.Authenticator
	// SSO, with Auth, signs users in through an OpenID provider (sso.go).
	SSO *security.SSO
	// AllowedOrigins are extra origins allowed for websockets and writes.
	AllowedOrigins []string
	Hosts          *security.HostPolicy
	// Failures bounds failed authentications per remote address.
	Failures *security.FailureLimiter
	// Sessions are the browsers signed in through /login.
	Sessions *security.Sessions
	// ProcessKey signs what gcscope hands the browser and must get back unchanged.
	ProcessKey []byte
	Audit      *Audit
	// Asset names an embedded asset, for the login page.
	Asset func(string) string
	// Throttled counts requests refused because their address spent its budget of failed
	// authentications; Observe counts each request (the server's metrics).
	Throttled prometheus.Counter
	Observe   func(method, route string, status int, d time.Duration)
}

// Edge is the request edge of one server.
type Edge struct {
	opts  Options
	log   *slog.Logger
	audit *Audit
}

// New is the edge with o.
func New(o Options) *Edge {
	return &Edge{opts: o, log: o.Logger, audit: o.Audit}
}
