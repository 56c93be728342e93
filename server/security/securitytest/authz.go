// Package securitytest holds fakes of package security's interfaces for the server's
// tests.
package securitytest

import (
	"context"
	"slices"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/server/security"
)

// SwitchableAuthz allows listing pods in the namespaces of its set, which a test changes.
type SwitchableAuthz struct {
	mu  sync.Mutex
	nss []string
}

// Set makes nss the namespaces allowed.
func (a *SwitchableAuthz) Set(nss ...string) { a.mu.Lock(); a.nss = nss; a.mu.Unlock() }

func (a *SwitchableAuthz) Allowed(_ context.Context, _ *security.User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return res != nil && res.Namespace != "" && slices.Contains(a.nss, res.Namespace), nil
}
