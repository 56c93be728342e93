package server

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// closure returns the objects connected to uids through ownerReferences in either
// direction, transitively: the weakly connected component, as upstream's ?uid= debug
// graph walks owners and dependents. Owners named but not in nodes are included (they
// are drawn as missing). Unknown uids contribute nothing.
func closure(nodes []gc.NodeState, uids []types.UID) map[types.UID]bool {
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

// objectFilter selects objects by namespace and kind, as /api/v1/graph and the stream do:
// nil sets select everything, "" selects cluster-scoped objects, kinds ignore case.
type objectFilter struct {
	namespaces map[string]bool
	kinds      map[string]bool // lower-case
}

func newObjectFilter(namespaces, kinds []string) objectFilter {
	var f objectFilter
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

func (f objectFilter) pass(r *gc.ObjectRef) bool {
	return (f.namespaces == nil || f.namespaces[r.Namespace]) && f.passKind(r)
}

func (f objectFilter) passKind(r *gc.ObjectRef) bool {
	return f.kinds == nil || f.kinds[strings.ToLower(r.Kind)]
}
