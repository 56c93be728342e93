package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/httpapi"
)

// maxStuckThreshold bounds ?olderThan= (a year: anything longer lists nothing anyway).
const maxStuckThreshold = 365 * 24 * time.Hour

// handleStuck lists the objects whose deletion started more than ?olderThan= ago (default
// 5m), by cause.
func (s *Server) handleStuck(w http.ResponseWriter, r *http.Request) {
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
	report := clusterFrom(r).Deletions.Stuck(r.Context(), olderThan, visibilityFrom(r).Func())
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

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	st := clusterFrom(r).Engine.SyncState()
	resp := healthResponse{Discovery: st.Discovery, DiscoveryFailures: st.DiscoveryFailures, FailingResources: st.Failing}
	if vis := visibilityFrom(r); vis != nil && len(st.Failing) > 0 && !vis.Everything() {
		// The apiserver's errors can name what the user may not see (a webhook's Service,
		// a namespace): the resources failing are said, their errors only to those who may
		// list everything.
		resp.FailingResources = map[string]string{}
		for res := range st.Failing {
			resp.FailingResources[res] = failingUnsaid
		}
	}
	resp.Healthy = st.Discovery == "" && len(st.DiscoveryFailures) == 0 && len(st.Failing) == 0
	if clusterFrom(r).Deletions != nil {
		vis := visibilityFrom(r)
		resp.APIServices = clusterFrom(r).Deletions.APIServices(r.Context(), st.DiscoveryFailures, vis.Func())
		resp.Stuck = &stuckCount{OlderThan: deletion.DefaultStuckAfter.String(), Total: clusterFrom(r).Deletions.CountStuck(deletion.DefaultStuckAfter, vis.Func())}
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
