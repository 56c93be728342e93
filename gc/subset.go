package gc

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// SnapshotOf is Snapshot narrowed to the nodes of some namespaces ("": cluster-scoped)
// and the components of some uids (the objects linked to them through ownerReferences
// in either direction, transitively): what a summary-first page asks for. It reads the
// namespaces' kept groups (summary.go) and walks the components, so its cost follows
// what it returns, not the graph.
func (gc *GarbageCollector) SnapshotOf(namespaces []string, uids []types.UID) Snapshot {
	gc.graph.mu.RLock()
	s := gc.SnapshotWithoutNodes()
	picked := map[types.UID]*node{}
	if len(namespaces) > 0 {
		wanted := make(map[string]bool, len(namespaces))
		for _, ns := range namespaces {
			wanted[ns] = true
		}
		for k, g := range gc.graph.counts.groups {
			if !wanted[k.namespace] {
				continue
			}
			for _, n := range g.members {
				picked[n.identity.UID] = n
			}
		}
	}
	gc.graph.component(uids, picked)
	s.Nodes = make([]NodeState, 0, len(picked))
	for _, n := range picked {
		s.Nodes = append(s.Nodes, *stateOf(n))
	}
	gc.graph.mu.RUnlock()
	slices.SortFunc(s.Nodes, func(a, b NodeState) int { return cmp.Compare(a.UID, b.UID) })
	return s
}

// component adds to picked the nodes linked to uids through owners and dependents,
// transitively. The caller holds g.mu.
func (g *graph) component(uids []types.UID, picked map[types.UID]*node) {
	seen := map[types.UID]bool{}
	var queue []*node
	visit := func(uid types.UID) {
		if seen[uid] {
			return
		}
		seen[uid] = true
		if n, ok := g.uidToNode[uid]; ok {
			picked[uid] = n
			queue = append(queue, n)
		}
	}
	for _, uid := range uids {
		visit(uid)
	}
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, o := range n.owners {
			visit(o.UID)
		}
		for d := range n.dependents {
			visit(d.identity.UID)
		}
	}
}
