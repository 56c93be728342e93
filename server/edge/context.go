package edge

// Every request-context accessor: who the request is (UserFrom), the cluster it is to
// (ClusterFrom), what its user may list (VisibilityFrom), the object its route names
// (ObjectFrom) and its audit trail (trailOf). Each is put in the context by one
// middleware, named beside it.

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/served"
)

type ctxKey int

const (
	userKey ctxKey = iota
	clusterKey
	visibilityKey
	objectKey
	trailKey
)

// anonymous is the user of a server without authentication (loopback only).
var anonymous = &security.User{Name: "local"}

// UserFrom returns the authenticated user of a request (Authenticate, or
// StartUnauthenticated until it has run).
func UserFrom(r *http.Request) *security.User {
	if u, ok := r.Context().Value(userKey).(*security.User); ok {
		return u
	}
	return anonymous
}

func withUser(r *http.Request, u *security.User) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey, u))
}

// ClusterFrom is the cluster of a request (the server's inCluster). Routes outside any
// cluster have an empty one.
func ClusterFrom(r *http.Request) *served.Cluster {
	if c, ok := r.Context().Value(clusterKey).(*served.Cluster); ok {
		return c
	}
	return &served.Cluster{}
}

// WithCluster is r to cluster c.
func WithCluster(r *http.Request, c *served.Cluster) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clusterKey, c))
}

// VisibilityFrom is what the request's user may list, as WithVisibility found it (nil:
// everything).
func VisibilityFrom(r *http.Request) *access.Visibility {
	v, _ := r.Context().Value(visibilityKey).(*access.Visibility)
	return v
}

func withVisibility(r *http.Request, v *access.Visibility) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), visibilityKey, v))
}

// ObjectFrom is the object the route names, as server/objects' objectCtx loaded it.
func ObjectFrom(r *http.Request) gc.NodeDetail { return r.Context().Value(objectKey).(gc.NodeDetail) }

// WithObject is r about object n.
func WithObject(r *http.Request, n gc.NodeDetail) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), objectKey, n))
}

// auditTrail says whether a request's audit line has been written: EntryFor carries it
// from the request's context to the entry, and Audit.Write marks it
// (AuditRefusedWrites).
type auditTrail struct {
	written atomic.Bool
	noRoute atomic.Bool            // the path is not one gcscope serves: not a write (the 404 handler says so)
	cluster atomic.Pointer[string] // the cluster the route named, once resolved
}

func trailOf(r *http.Request) *auditTrail {
	t, _ := r.Context().Value(trailKey).(*auditTrail)
	return t
}

func withTrail(r *http.Request, t *auditTrail) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), trailKey, t))
}

// MarkNoRoute tells the request's audit trail that gcscope serves no such path: a refusal
// of it is not a write's.
func MarkNoRoute(r *http.Request) {
	if t := trailOf(r); t != nil {
		t.noRoute.Store(true)
	}
}

// MarkCluster tells the request's audit trail the cluster its route named, resolved in a
// context AuditRefusedWrites does not see.
func MarkCluster(r *http.Request, name string) {
	if t := trailOf(r); t != nil {
		t.cluster.Store(&name)
	}
}
