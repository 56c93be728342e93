// Package graph is the routes that read the engine's state, narrowed to what the user may
// list: the graph filtered and paged (graph.go), the work queues (queues.go), the graph
// counted (summary.go), the shadow-mode self-check (shadow.go) and upstream's DOT debug
// graph (dot.go).
package graph

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/narrow"
)

// Deps are what the graph routes need of the server.
type Deps struct {
	Edge *edge.Edge // preconditions
	Log  *slog.Logger
}

// Resource serves the graph routes.
type Resource struct{ Deps }

// New is the graph routes with d.
func New(d Deps) *Resource { return &Resource{d} }

// Routes are the engine's state, on a cluster's router; the DOT graph (HandleDOT) the
// server mounts where upstream serves it.
func (rs *Resource) Routes(r chi.Router) {
	e := rs.Edge
	r.With(e.RequireEngine, httpapi.CompressJSON, e.VisibleReads).Get("/graph", rs.handleGraph) // nodes and edges, filtered, paged
	r.With(httpapi.NoQuery).Group(func(r chi.Router) {
		r.Use(e.RequireEngine, httpapi.CompressJSON, e.VisibleReads)
		r.Get("/queues", rs.handleQueues)   // the three work queues
		r.Get("/summary", rs.handleSummary) // the graph counted per namespace and kind
		r.Get("/shadow", rs.handleShadow)   // shadow mode: the cluster's collector against the engine's decisions
	})
}

// Graph paging: pages hold at most maxGraphLimit nodes; without limit, defaultGraphLimit.
const (
	defaultGraphLimit = 10000
	maxGraphLimit     = 100000
)

// GET /api/v1/graph's query parameters: those that take one value, and the repeatable ones.
var (
	graphSingle = []string{"q", "limit", "cursor"}
	graphMulti  = []string{"namespace", "kind", "uid"}
)

// GraphResponse is one page of the graph.
type GraphResponse struct {
	Seq   uint64         `json:"seq"`
	Nodes []gc.NodeState `json:"nodes"`
	// Edges are the ownerReferences of the page's nodes (owners may be on other pages,
	// or missing).
	Edges []gc.Edge `json:"edges"`
	// Total is how many nodes match the filters, across pages.
	Total int `json:"total"`
	// NextCursor, when set, fetches the next page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// graphFilter selects nodes.
type graphFilter struct {
	narrow.Filter
	text   string      // lower-case substring of kind, namespace, name or uid
	uids   []types.UID // the closure of these
	limit  int
	cursor types.UID // nodes after this uid
}

func parseGraphFilter(r *http.Request) (graphFilter, *httpapi.Error) {
	q, perr := httpapi.StrictQuery(r, graphSingle, graphMulti)
	if perr != nil {
		return graphFilter{}, perr
	}
	f := graphFilter{Filter: narrow.NewFilter(q["namespace"], q["kind"]),
		limit: defaultGraphLimit, text: strings.ToLower(q.Get("q")), cursor: types.UID(q.Get("cursor"))}
	for _, u := range q["uid"] {
		f.uids = append(f.uids, types.UID(u))
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxGraphLimit {
			return graphFilter{}, httpapi.ErrBadRequest(fmt.Sprintf("limit %q: want a number from 1 to %d", l, maxGraphLimit))
		}
		f.limit = n
	}
	return f, nil
}

func (f *graphFilter) match(n *gc.NodeState, inClosure map[types.UID]bool) bool {
	if !f.Pass(&n.ObjectRef) {
		return false
	}
	if inClosure != nil && !inClosure[n.UID] {
		return false
	}
	if f.text != "" {
		hay := strings.ToLower(n.Kind + "\x00" + n.Namespace + "\x00" + n.Name + "\x00" + string(n.UID))
		if !strings.Contains(hay, f.text) {
			return false
		}
	}
	return true
}

func (rs *Resource) handleGraph(w http.ResponseWriter, r *http.Request) {
	f, perr := parseGraphFilter(r)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	snap := edge.ClusterFrom(r).Engine.Snapshot()
	if len(f.uids) == 0 && f.Narrows() {
		// The namespace and kind filter first: a user's permissions are then asked for
		// those namespaces and kinds only, not for every one in the cluster.
		snap.Nodes = slices.DeleteFunc(snap.Nodes, func(n gc.NodeState) bool { return !f.Pass(&n.ObjectRef) })
	}
	snap.Nodes = edge.VisibilityFrom(r).Nodes(snap.Nodes) // before the closure: it must not walk through hidden objects
	var inClosure map[types.UID]bool
	if len(f.uids) > 0 {
		inClosure = narrow.Closure(snap.Nodes, f.uids)
	}
	resp := GraphResponse{Seq: snap.Seq, Nodes: []gc.NodeState{}, Edges: []gc.Edge{}}
	for i := range snap.Nodes { // sorted by uid: the cursor is the last uid of a page
		n := &snap.Nodes[i]
		if !f.match(n, inClosure) {
			continue
		}
		resp.Total++
		switch {
		case n.UID <= f.cursor: // on an earlier page
			continue
		case len(resp.Nodes) == f.limit: // on a later page
			resp.NextCursor = string(resp.Nodes[len(resp.Nodes)-1].UID)
			continue
		}
		resp.Nodes = append(resp.Nodes, *n)
		for _, o := range n.Owners {
			resp.Edges = append(resp.Edges, gc.Edge{Dependent: n.UID, Owner: o.UID, Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
