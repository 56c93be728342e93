package server

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"

	"github.com/gcscope/gcscope/server/httpapi"
)

// summaryEngine counts its graph without copying it (*gc.GarbageCollector).
type summaryEngine interface {
	Summary() gc.Summary
}

// summaryResponse is the graph counted, of what the user may list: per namespace (its
// totals, not its kinds: a page draws a namespace it does not show in detail as a box
// with counts) and per kind cluster-wide (for the kind filter). Its size follows the
// namespaces, not the objects (docs/api.md).
type summaryResponse struct {
	Seq        uint64           `json:"seq"`
	Objects    int              `json:"objects"`
	Namespaces []namespaceCount `json:"namespaces"` // by name; "" is cluster-scoped
	Kinds      []kindCount      `json:"kinds"`      // by apiVersion and kind
}

type namespaceCount struct {
	Name               string `json:"name"`
	Objects            int    `json:"objects"`
	BeingDeleted       int    `json:"beingDeleted,omitempty"`
	DeletingDependents int    `json:"deletingDependents,omitempty"`
	Virtual            int    `json:"virtual,omitempty"`
}

type kindCount struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Objects    int    `json:"objects"`
}

// handleSummary answers the graph counted (gc.Summary), narrowed to what the user may
// list before it is added up.
func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, summarize(summaryOf(clusterFrom(r).Engine)(), visibilityFrom(r)))
}

// summaryOf is how e's graph is counted: its own kept counts, else its snapshot counted.
func summaryOf(e registry.Engine) func() gc.Summary {
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

// summarize adds up the groups vis may see (nil: all) per namespace and per kind.
func summarize(sum gc.Summary, vis *visibility) summaryResponse {
	resp := summaryResponse{Seq: sum.Seq, Namespaces: []namespaceCount{}, Kinds: []kindCount{}}
	kinds := map[[2]string]int{}
	for _, g := range sum.Groups { // sorted by namespace
		if !vis.visible(gc.ObjectRef{Namespace: g.Namespace, APIVersion: g.APIVersion, Kind: g.Kind}) {
			continue
		}
		if n := len(resp.Namespaces); n == 0 || resp.Namespaces[n-1].Name != g.Namespace {
			resp.Namespaces = append(resp.Namespaces, namespaceCount{Name: g.Namespace})
		}
		ns := &resp.Namespaces[len(resp.Namespaces)-1]
		ns.Objects += g.Objects
		ns.BeingDeleted += g.BeingDeleted
		ns.DeletingDependents += g.DeletingDependents
		ns.Virtual += g.Virtual
		resp.Objects += g.Objects
		kinds[[2]string{g.APIVersion, g.Kind}] += g.Objects
	}
	for k, n := range kinds {
		resp.Kinds = append(resp.Kinds, kindCount{APIVersion: k[0], Kind: k[1], Objects: n})
	}
	slices.SortFunc(resp.Kinds, func(a, b kindCount) int {
		return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return resp
}
