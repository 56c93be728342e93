package graph

import (
	"net/http"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// shadowEngine is an engine that checks its shadow-mode decisions against the cluster's
// own collector (*gc.GarbageCollector is one).
type shadowEngine interface {
	ShadowReport() gc.ShadowReport
}

// handleShadow serves the shadow self-check: counts by outcome and the lag distribution
// (cluster-wide figures, as /metrics has them), and the open and diverged decisions on
// objects the reader may see.
func (rs *Resource) handleShadow(w http.ResponseWriter, r *http.Request) {
	e, ok := edge.ClusterFrom(r).Engine.(shadowEngine)
	if !ok {
		httpapi.WriteJSON(w, http.StatusOK, gc.ShadowReport{})
		return
	}
	report := e.ShadowReport()
	vis := edge.VisibilityFrom(r)
	report.Open = visibleDecisions(report.Open, vis)
	report.Diverged = visibleDecisions(report.Diverged, vis)
	httpapi.WriteJSON(w, http.StatusOK, report)
}

// visibleDecisions keeps the decisions on objects vis lets the reader see, with owner
// look-ups for objects it may not see told without naming them.
func visibleDecisions(ds []gc.ShadowDecision, vis *access.Visibility) []gc.ShadowDecision {
	if vis == nil {
		return ds
	}
	kept := ds[:0]
	for _, d := range ds {
		if vis.Visible(d.Action.Object) {
			d.Action, _ = d.Action.RedactedFor(vis.Visible)
			kept = append(kept, d)
		}
	}
	return kept
}
