package gc

import (
	"cmp"
	"slices"
)

// Reads for explaining deletions the collector does not own alone (a namespace's content,
// the objects stuck in deletion): each reads an index the graph builder keeps (summary.go)
// under the graph's read lock, so it costs what it returns, not the graph, and asks the
// apiserver nothing.

// InNamespace returns the observed objects of namespace, sorted by uid.
func (gc *GarbageCollector) InNamespace(namespace string) []NodeState {
	gc.graph.mu.RLock()
	var out []NodeState
	for k, g := range gc.graph.counts.groups {
		if k.namespace != namespace {
			continue
		}
		for _, n := range g.members {
			if !n.virtual {
				out = append(out, *stateOf(n))
			}
		}
	}
	gc.graph.mu.RUnlock()
	return sortedByUID(out)
}

// BeingDeleted returns the observed objects that have a deletionTimestamp, sorted by uid.
func (gc *GarbageCollector) BeingDeleted() []NodeState {
	gc.graph.mu.RLock()
	out := make([]NodeState, 0, len(gc.graph.counts.deleting))
	for _, n := range gc.graph.counts.deleting {
		if !n.virtual {
			out = append(out, *stateOf(n))
		}
	}
	gc.graph.mu.RUnlock()
	return sortedByUID(out)
}

func sortedByUID(nodes []NodeState) []NodeState {
	slices.SortFunc(nodes, func(a, b NodeState) int { return cmp.Compare(a.UID, b.UID) })
	return nodes
}
