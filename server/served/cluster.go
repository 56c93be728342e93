// Package served is one cluster as the server serves it: what the registry gave
// (registry.Cluster), its name and where it is, and what is made once for it and shared by
// its requests: its REST mapper and its deleter. The server puts it in each request's
// context (server/edge: ClusterFrom); the resource handlers read it there.
package served

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/registry"
)

// Cluster is a cluster the server serves. A cluster not open yet has no Engine, and its
// Status says where it is.
type Cluster struct {
	registry.Cluster
	Name   string
	Status registry.Status // for a cluster not open yet
	// Stream serves the cluster's live stream (server/stream's hub); nil without an engine.
	Stream http.Handler

	mapper restMapper
	// deletes is the cluster's deleter, made on first use.
	deletes     *Deleter
	deletesOnce sync.Once
}

// Pending reports whether the cluster has no engine yet because it is starting or failed.
func (c *Cluster) Pending() bool {
	return c.Engine == nil && c.Status.State != "" && c.Status.State != registry.Ready
}

// NotReady answers 503 for a cluster without an engine yet, with when to ask again.
func NotReady(w http.ResponseWriter, c *Cluster) {
	msg := fmt.Sprintf("cluster %q is %s", c.Name, c.Status.State)
	if c.Status.State == registry.Failed {
		msg = fmt.Sprintf("cluster %q failed to start", c.Name)
	}
	switch {
	case c.Status.State == registry.Idle:
		msg += ": its engine starts when gcscope's page (or a client that is not a browser) opens it, not on another site's request"
	case c.Status.Reason != "":
		msg += ": " + c.Status.Reason
	}
	if c.Status.State != registry.Idle { // asked again, an idle cluster stays idle
		w.Header().Set("Retry-After", strconv.Itoa(2))
	}
	httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrClusterNotReady(msg))
}

// SlowMotionEngine is an engine whose action delay can be switched at run time
// (*gc.GarbageCollector is one).
type SlowMotionEngine interface {
	SlowMotion() bool
	SetSlowMotion(on bool) bool
}

// SlowMotion reports the engine's slow-motion switch; ok is false when it has none.
func (c *Cluster) SlowMotion() (e SlowMotionEngine, ok bool) {
	if c.Engine == nil || c.Engine.ActionDelay() <= 0 {
		return nil, false
	}
	e, ok = c.Engine.(SlowMotionEngine)
	return e, ok
}
