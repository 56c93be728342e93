package graph

import (
	"net/http"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/narrow"
	"github.com/gcscope/gcscope/server/registry"
)

// summaryEngine counts its graph without copying it (*gc.GarbageCollector).
type summaryEngine interface {
	Summary() gc.Summary
}

// handleSummary answers the graph counted (gc.Summary), narrowed to what the user may
// list before it is added up.
func (rs *Resource) handleSummary(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, narrow.Summarize(SummaryOf(edge.ClusterFrom(r).Engine)(), edge.VisibilityFrom(r)))
}

// SummaryOf is how e's graph is counted: its own kept counts, else its snapshot counted.
func SummaryOf(e registry.Engine) func() gc.Summary {
	if se, ok := e.(summaryEngine); ok {
		return se.Summary
	}
	return func() gc.Summary {
		snap := e.Snapshot()
		var z gc.Summarizer
		for i := range snap.Nodes {
			z.Add(&snap.Nodes[i])
		}
		return z.Summary(snap.Seq)
	}
}
