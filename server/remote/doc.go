// Package remote is the hub's side of the gcscopes that run in other clusters: a cluster
// served here by another gcscope (--remote NAME=URL), reached over HTTP. The hub holds no
// engine and no graph for it: its API is reverse-proxied (proxy.go, write.go), its stream
// relayed frame by frame (relay.go), and where it is (ready, syncing, failed, refused to
// this user) is probed on its own clock so that a slow or dead remote costs the others
// nothing (probe.go, set.go).
//
// What the hub forwards is the signed-in user's own credential (credential.go), only to
// the URL the operator configured, never the hub's cookies or its own credential; the
// hub's security (Host, Origin, CSRF, authentication, its audit line) runs before the
// proxy, and the remote's (authentication, RBAC, its audit) after it.
package remote
