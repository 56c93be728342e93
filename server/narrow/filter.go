// Package narrow narrows the engine's graph to what a reader asked for and may see: by
// namespace and kind (Filter), to the component of some objects (Closure), and counted
// per namespace and kind (Summarize), as /api/v1/graph, the DOT graph, /summary and the
// stream all do.
package narrow

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// Closure returns the objects connected to uids through ownerReferences in either
// direction, transitively: the weakly connected component, as upstream's ?uid= debug
// graph walks owners and dependents. Owners named but not in nodes are included (they
// are drawn as missing). Unknown uids contribute nothing.
func Closure(nodes []gc.NodeState, uids []types.UID) map[types.UID]bool {
	byUID := make(map[types.UID]*gc.NodeState, len(nodes))
	dependents := map[types.UID][]types.UID{}
	for i := range nodes {
		n := &nodes[i]
		byUID[n.UID] = n
		for _, o := range n.Owners {
			dependents[o.UID] = append(dependents[o.UID], n.UID)
		}
	}
	seen := map[types.UID]bool{}
	var queue []types.UID
	for _, uid := range uids {
		if _, ok := byUID[uid]; ok && !seen[uid] {
			seen[uid] = true
			queue = append(queue, uid)
		}
	}
	for len(queue) > 0 {
		uid := queue[0]
		queue = queue[1:]
		var next []types.UID
		if n, ok := byUID[uid]; ok {
			for _, o := range n.Owners {
				next = append(next, o.UID)
			}
		}
		next = append(next, dependents[uid]...)
		for _, u := range next {
			if !seen[u] {
				seen[u] = true
				queue = append(queue, u)
			}
		}
	}
	return seen
}

// Filter selects objects by namespace and kind, as /api/v1/graph and the stream do:
// nil sets select everything, "" selects cluster-scoped objects, kinds ignore case.
type Filter struct {
	namespaces map[string]bool
	kinds      map[string]bool // lower-case
}

// NewFilter selects namespaces and kinds (none: all).
func NewFilter(namespaces, kinds []string) Filter {
	var f Filter
	if len(namespaces) > 0 {
		f.namespaces = map[string]bool{}
		for _, ns := range namespaces {
			f.namespaces[ns] = true
		}
	}
	if len(kinds) > 0 {
		f.kinds = map[string]bool{}
		for _, k := range kinds {
			f.kinds[strings.ToLower(k)] = true
		}
	}
	return f
}

// Pass reports whether f selects r.
func (f Filter) Pass(r *gc.ObjectRef) bool {
	return (f.namespaces == nil || f.namespaces[r.Namespace]) && f.PassKind(r)
}

// PassKind reports whether f selects r's kind.
func (f Filter) PassKind(r *gc.ObjectRef) bool {
	return f.kinds == nil || f.kinds[strings.ToLower(r.Kind)]
}

// Narrows reports whether f selects less than everything.
func (f Filter) Narrows() bool { return f.namespaces != nil || f.kinds != nil }

// NamesNamespace reports whether f names namespace ns (none named: false).
func (f Filter) NamesNamespace(ns string) bool { return f.namespaces[ns] }
