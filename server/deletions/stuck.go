// Package deletions is the routes about deleting beyond one object: the objects stuck in
// deletion (/stuck) and the health of the API deletions depend on (/health), both
// explained by package deletion, and several objects predicted together and deleted with
// one confirmation (/deletions: set.go, with sets named as tools name them, resolve.go).
// One object's delete is server/objects'.
package deletions

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// Deps are what the deletion routes need of the server.
type Deps struct {
	Edge     *edge.Edge // preconditions and the write guard
	Audit    *edge.Audit
	ReadOnly bool
}

// Resource serves the deletion routes.
type Resource struct{ Deps }

// New is the deletion routes with d.
func New(d Deps) *Resource { return &Resource{d} }

// Routes are /stuck, /health and /deletions, on a cluster's router.
func (rs *Resource) Routes(r chi.Router) {
	e := rs.Edge
	r.With(e.RequireEngine, httpapi.CompressJSON, e.VisibleReads, e.RequireDeletions).
		Get("/stuck", rs.handleStuck) // objects stuck in deletion (?olderThan=), by cause
	r.With(httpapi.NoQuery, e.RequireEngine, httpapi.CompressJSON, e.VisibleReads).
		Get("/health", rs.handleHealth) // API groups discovery cannot read, APIServices at fault, stuck count
	r.With(httpapi.NoQuery, e.RequireEngine, e.WithVisibility, middleware.RequestSize(maxSetBodyBytes), e.GuardWrite).
		Post("/deletions", rs.handleDeleteSet) // {uids, propagationPolicy, dryRun} (set.go)
}

// maxStuckThreshold bounds ?olderThan= (a year: anything longer lists nothing anyway).
const maxStuckThreshold = 365 * 24 * time.Hour

// handleStuck lists the objects whose deletion started more than ?olderThan= ago (default
// 5m), by cause.
func (rs *Resource) handleStuck(w http.ResponseWriter, r *http.Request) {
	q, perr := httpapi.StrictQuery(r, []string{"olderThan"}, nil)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	olderThan := deletion.DefaultStuckAfter
	if v := q.Get("olderThan"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxStuckThreshold {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("olderThan %s is not a duration between 0s and 8760h (say 30s, 5m or 2h)", httpapi.QuoteClip(v))))
			return
		}
		olderThan = d
	}
	report := edge.ClusterFrom(r).Deletions.Stuck(r.Context(), olderThan, edge.VisibilityFrom(r).Func())
	httpapi.WriteJSON(w, http.StatusOK, report)
}

// healthResponse is the engine's view of the cluster's API: what it cannot discover or
// list, the APIServices at fault, and how many deletions are stuck.
type healthResponse struct {
	// Healthy: discovery reads every group and every monitor lists.
	Healthy bool `json:"healthy"`
	// Discovery, when set, says why the engine monitors nothing yet.
	Discovery string `json:"discovery,omitempty"`
	// DiscoveryFailures are the group versions discovery cannot read now, since when.
	DiscoveryFailures map[string]gc.GroupFailure `json:"discoveryFailures,omitempty"`
	// APIServices are the aggregated APIs that are not available.
	APIServices []deletion.APIServiceReport `json:"apiServices,omitempty"`
	// FailingResources are the monitored resources whose list or watch keeps failing
	// (a conversion webhook that is down, a forbidden list), with the last error.
	FailingResources map[string]string `json:"failingResources,omitempty"`
	// Stuck counts the objects stuck in deletion past the default threshold.
	Stuck *stuckCount `json:"stuck,omitempty"`
}

// failingUnsaid stands for a failing resource's error to a user who may not list everything.
const failingUnsaid = "its list or watch keeps failing (the apiserver's error is shown to users who may list every resource)"

type stuckCount struct {
	OlderThan string `json:"olderThan"`
	Total     int    `json:"total"`
}

func (rs *Resource) handleHealth(w http.ResponseWriter, r *http.Request) {
	st := edge.ClusterFrom(r).Engine.SyncState()
	resp := healthResponse{Discovery: st.Discovery, DiscoveryFailures: st.DiscoveryFailures, FailingResources: st.Failing}
	if vis := edge.VisibilityFrom(r); vis != nil && len(st.Failing) > 0 && !vis.Everything() {
		// The apiserver's errors can name what the user may not see (a webhook's Service,
		// a namespace): the resources failing are said, their errors only to those who may
		// list everything.
		resp.FailingResources = map[string]string{}
		for res := range st.Failing {
			resp.FailingResources[res] = failingUnsaid
		}
	}
	resp.Healthy = st.Discovery == "" && len(st.DiscoveryFailures) == 0 && len(st.Failing) == 0
	if edge.ClusterFrom(r).Deletions != nil {
		vis := edge.VisibilityFrom(r)
		resp.APIServices = edge.ClusterFrom(r).Deletions.APIServices(r.Context(), st.DiscoveryFailures, vis.Func())
		resp.Stuck = &stuckCount{OlderThan: deletion.DefaultStuckAfter.String(), Total: edge.ClusterFrom(r).Deletions.CountStuck(deletion.DefaultStuckAfter, vis.Func())}
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
