package graph

import (
	"bufio"
	"cmp"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/narrow"
)

// The Graphviz view of the dependency graph, byte for byte as kube-controller-manager
// serves it at /debug/controllers/garbagecollector/graph (upstream's
// pkg/controller/garbagecollector/dump.go), so tools written for upstream's output read
// ours:
//
//	strict digraph full {
//	  // Node definitions.
//	  "<uid>" [
//	    label="uid=<uid>\nnamespace=<ns>\n<Kind>.<version>[.<group>]/<name>\n[<conditions>\n]"
//	    group="…"
//	    version="…"
//	    kind="…"
//	    namespace="…"
//	    name="…"
//	    uid="…"
//	    missing="false"
//	    beingDeleted="false"
//	    deletingDependents="false"
//	    virtual="false"
//	  ];
//	  // Edge definitions.
//	  "<dependent uid>" -> "<owner uid>";
//	}
//
// Vertices are sorted by uid, edges by (dependent, owner); a section's comment line is
// written only when the section has entries. One departure from upstream, a bug there:
// a missing owner named by several dependents is drawn once. Upstream files it under the
// dependent's uid, so it can be drawn twice and, depending on map order, an edge meant
// for that dependent can be pointed at it.

// writeDOT writes nodes as upstream's garbage collector debug graph does
// (GET /debug/controllers/garbagecollector/graph). If uids is non-empty only the
// objects connected to them (narrow.Closure(nodes, uids), server/closure.go) are drawn.
func writeDOT(w io.Writer, nodes []gc.NodeState, uids []types.UID) error {
	vertices, edges := dotGraph(nodes, uids)
	// bufio's first write error sticks and comes back from Flush.
	bw := bufio.NewWriter(w)
	bw.WriteString("strict digraph full {\n")
	if len(vertices) > 0 {
		bw.WriteString("  // Node definitions.\n")
		for _, v := range vertices {
			v.write(bw)
		}
	}
	if len(edges) > 0 {
		bw.WriteString("  // Edge definitions.\n")
		for _, e := range edges {
			bw.WriteString("  " + dotQuote(string(e.dependent)) + " -> " + dotQuote(string(e.owner)) + ";\n")
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// dotVertex is one object as upstream's debug graph describes it.
type dotVertex struct {
	uid                types.UID
	gv                 schema.GroupVersion
	kind               string
	namespace          string
	name               string
	missing            bool // named as an owner but not in the graph
	beingDeleted       bool
	deletingDependents bool
	virtual            bool
}

// dotEdge is one ownerReference, drawn from the dependent to its owner.
type dotEdge struct {
	dependent, owner types.UID
}

// dotGraph picks the vertices and edges to draw: every object that has an owner or a
// dependent (restricted to the closure of uids when uids is non-empty), one edge per
// ownerReference, and a missing vertex for each owner that is not among nodes.
func dotGraph(nodes []gc.NodeState, uids []types.UID) ([]dotVertex, []dotEdge) {
	var keep map[types.UID]bool
	if len(uids) > 0 {
		keep = narrow.Closure(nodes, uids)
	}
	hasDependents := map[types.UID]bool{}
	for _, n := range nodes {
		for _, o := range n.Owners {
			hasDependents[o.UID] = true
		}
	}

	drawn := map[types.UID]dotVertex{}
	var dependents []*gc.NodeState
	for i := range nodes {
		n := &nodes[i]
		if keep != nil && !keep[n.UID] {
			continue
		}
		if len(n.Owners) == 0 && !hasDependents[n.UID] {
			continue // isolated: upstream leaves these out
		}
		drawn[n.UID] = dotVertex{
			uid:                n.UID,
			gv:                 parseGroupVersion(n.APIVersion),
			kind:               n.Kind,
			namespace:          n.Namespace,
			name:               n.Name,
			beingDeleted:       n.BeingDeleted,
			deletingDependents: n.DeletingDependents,
			virtual:            n.Virtual,
		}
		if len(n.Owners) > 0 {
			dependents = append(dependents, n)
		}
	}

	var edges []dotEdge
	for _, n := range dependents {
		for _, o := range n.Owners {
			if _, ok := drawn[o.UID]; !ok {
				// Only the ownerReference is known: no namespace, as upstream (an owner
				// of a namespaced object may be cluster-scoped).
				drawn[o.UID] = dotVertex{
					uid:     o.UID,
					gv:      parseGroupVersion(o.APIVersion),
					kind:    o.Kind,
					name:    o.Name,
					missing: true,
				}
			}
			edges = append(edges, dotEdge{dependent: n.UID, owner: o.UID})
		}
	}

	vertices := make([]dotVertex, 0, len(drawn))
	for _, v := range drawn {
		vertices = append(vertices, v)
	}
	slices.SortFunc(vertices, func(a, b dotVertex) int { return cmp.Compare(a.uid, b.uid) })
	slices.SortFunc(edges, func(a, b dotEdge) int {
		return cmp.Or(cmp.Compare(a.dependent, b.dependent), cmp.Compare(a.owner, b.owner))
	})
	return vertices, edges
}

// parseGroupVersion splits an apiVersion; like upstream, an unparsable one (the API
// server admits none) yields an empty group and version.
func parseGroupVersion(apiVersion string) schema.GroupVersion {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersion{}
	}
	return gv
}

// label is upstream's multi-line vertex label: uid, namespace, kubectl-style
// Kind.version.group/name (no ".group" for the core group), then the conditions that
// hold, comma-separated, if any.
func (v dotVertex) label() string {
	var b strings.Builder
	b.WriteString("uid=" + string(v.uid) + "\n")
	b.WriteString("namespace=" + v.namespace + "\n")
	b.WriteString(v.kind + "." + v.gv.Version)
	if v.gv.Group != "" {
		b.WriteString("." + v.gv.Group)
	}
	b.WriteString("/" + v.name + "\n")
	var conditions []string
	for _, c := range []struct {
		holds bool
		name  string
	}{
		{v.beingDeleted, "beingDeleted"},
		{v.deletingDependents, "deletingDependents"},
		{v.virtual, "virtual"},
		{v.missing, "missingFromGraph"},
	} {
		if c.holds {
			conditions = append(conditions, c.name)
		}
	}
	if len(conditions) > 0 {
		b.WriteString(strings.Join(conditions, ",") + "\n")
	}
	return b.String()
}

// write writes the vertex's node statement, attributes in upstream's order.
func (v dotVertex) write(w *bufio.Writer) {
	w.WriteString("  " + dotQuote(string(v.uid)) + " [\n")
	for _, a := range [...]struct{ key, value string }{
		{"label", v.label()},
		{"group", v.gv.Group},
		{"version", v.gv.Version},
		{"kind", v.kind},
		{"namespace", v.namespace},
		{"name", v.name},
		{"uid", string(v.uid)},
		{"missing", strconv.FormatBool(v.missing)},
		{"beingDeleted", strconv.FormatBool(v.beingDeleted)},
		{"deletingDependents", strconv.FormatBool(v.deletingDependents)},
		{"virtual", strconv.FormatBool(v.virtual)},
	} {
		w.WriteString("    " + a.key + "=" + dotQuote(a.value) + "\n")
	}
	w.WriteString("  ];\n")
}

// dotQuote makes s a DOT double-quoted string, as upstream does (Go's %q). Whatever s
// holds, the result is one valid DOT ID on one line: quotes and backslashes come out
// escaped (\" \\), newlines as \n (a line break in a Graphviz label), other control
// characters and invalid UTF-8 as \t, \x.., \u...; printable Unicode stays as it is.
// strconv.Unquote of the quoted text gives s back.
func dotQuote(s string) string {
	return strconv.Quote(s)
}

// HandleDOT serves upstream's debug graph format; ?uid= (repeatable) narrows it to the
// objects connected to those.
func (rs *Resource) HandleDOT(w http.ResponseWriter, r *http.Request) {
	q, perr := httpapi.StrictQuery(r, nil, []string{"uid"})
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	var uids []types.UID
	for _, u := range q["uid"] {
		uids = append(uids, types.UID(u))
	}
	snap := edge.ClusterFrom(r).Engine.Snapshot()
	nodes := edge.VisibilityFrom(r).Nodes(snap.Nodes)
	w.Header().Set("Content-Type", "text/vnd.graphviz")
	if err := writeDOT(w, nodes, uids); err != nil {
		rs.Log.Warn("writing the DOT graph", "err", err)
	}
}
