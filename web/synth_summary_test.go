package web_test

// The synthetic engine's summary-first reads: its per-namespace index, Summary and SnapshotOf.

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// index and unindex keep the namespaces' nodes and the owners' dependents. Require e.mu.
func (e *synthEngine) index(n *gc.NodeState) {
	m := e.byNS[n.Namespace]
	if m == nil {
		m = map[types.UID]*gc.NodeState{}
		e.byNS[n.Namespace] = m
	}
	m[n.UID] = n
	e.recount[n.Namespace] = true
	for _, o := range n.Owners {
		if e.deps[o.UID] == nil {
			e.deps[o.UID] = map[types.UID]bool{}
		}
		e.deps[o.UID][n.UID] = true
	}
}

func (e *synthEngine) unindex(uid types.UID) {
	n := e.nodes[uid]
	if n == nil {
		return
	}
	delete(e.byNS[n.Namespace], uid)
	e.recount[n.Namespace] = true
	for _, o := range n.Owners {
		delete(e.deps[o.UID], uid)
	}
}

// Summary counts the graph under the engine's lock, as the real engine does: the
// namespaces that changed are counted again.
func (e *synthEngine) Summary() gc.Summary {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ns := range e.recount {
		var s gc.Summarizer
		for _, n := range e.byNS[ns] {
			s.Add(n)
		}
		e.counted[ns] = s.Summary(0).Groups
	}
	clear(e.recount)
	out := gc.Summary{Seq: e.feed.LastSeq()}
	for _, gs := range e.counted {
		out.Groups = append(out.Groups, gs...)
	}
	slices.SortFunc(out.Groups, func(a, b gc.SummaryGroup) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}

// SnapshotOf is the engine's snapshot of some namespaces and the components of some uids.
func (e *synthEngine) SnapshotOf(namespaces []string, uids []types.UID) gc.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.bare()
	picked := map[types.UID]*gc.NodeState{}
	for _, ns := range namespaces {
		maps.Copy(picked, e.byNS[ns])
	}
	queue := slices.Clone(uids)
	seen := map[types.UID]bool{}
	for len(queue) > 0 {
		u := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[u] {
			continue
		}
		seen[u] = true
		n := e.nodes[u]
		if n == nil {
			continue
		}
		picked[u] = n
		for _, o := range n.Owners {
			queue = append(queue, o.UID)
		}
		for d := range e.deps[u] {
			queue = append(queue, d)
		}
	}
	for _, n := range picked {
		s.Nodes = append(s.Nodes, *n)
	}
	slices.SortFunc(s.Nodes, func(a, b gc.NodeState) int { return strings.Compare(string(a.UID), string(b.UID)) })
	return s
}
