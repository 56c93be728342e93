package gc

import (
	"cmp"
	"slices"
)

// Reads for explaining deletions the collector does not own alone (a namespace's content,
// the objects stuck in deletion): each is one pass over the graph under its read lock,
// with no request to the apiserver.

// InNamespace returns the observed objects of namespace, sorted by uid.
func (gc *GarbageCollector) InNamespace(namespace string) []NodeState {
	return gc.observedWhere(func(n *node) bool { return n.identity.Namespace == namespace })
}

// BeingDeleted returns the observed objects that have a deletionTimestamp, sorted by uid.
func (gc *GarbageCollector) BeingDeleted() []NodeState {
	return gc.observedWhere(func(n *node) bool { return n.beingDeleted })
}

func (gc *GarbageCollector) observedWhere(keep func(*node) bool) []NodeState {
	gc.graph.mu.RLock()
	var out []NodeState
	for _, n := range gc.graph.uidToNode {
		if !n.virtual && keep(n) {
			out = append(out, *stateOf(n))
		}
	}
	gc.graph.mu.RUnlock()
	slices.SortFunc(out, func(a, b NodeState) int { return cmp.Compare(a.UID, b.UID) })
	return out
}
