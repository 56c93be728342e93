package gc

import (
	"cmp"
	"slices"
)

// Summary is the graph counted rather than copied: what a page needs to draw a cluster
// before it has the objects (the summary-first stream, docs/stream.md). A million objects
// in a few hundred namespaces are a few thousand groups.
type Summary struct {
	Seq    uint64         `json:"seq"`
	Groups []SummaryGroup `json:"groups"` // by namespace, apiVersion, kind
}

// SummaryGroup counts the objects of one kind in one namespace ("": cluster-scoped).
type SummaryGroup struct {
	Namespace  string `json:"namespace,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Objects    int    `json:"objects"`
	// BeingDeleted have a deletionTimestamp; DeletingDependents, of those, wait for a
	// foreground deletion's blocking dependents; Virtual are only named as owners.
	BeingDeleted       int `json:"beingDeleted,omitempty"`
	DeletingDependents int `json:"deletingDependents,omitempty"`
	Virtual            int `json:"virtual,omitempty"`
}

// Summarizer counts nodes into a Summary.
type Summarizer struct {
	groups map[summaryKey]*SummaryGroup
}

type summaryKey struct{ namespace, apiVersion, kind string }

// Add counts one node.
func (s *Summarizer) Add(n *NodeState) {
	s.add(n.ObjectRef, n.BeingDeleted, n.DeletingDependents, n.Virtual)
}

func (s *Summarizer) add(ref ObjectRef, beingDeleted, deletingDependents, virtual bool) {
	if s.groups == nil {
		s.groups = map[summaryKey]*SummaryGroup{}
	}
	k := summaryKey{ref.Namespace, ref.APIVersion, ref.Kind}
	g := s.groups[k]
	if g == nil {
		g = &SummaryGroup{Namespace: k.namespace, APIVersion: k.apiVersion, Kind: k.kind}
		s.groups[k] = g
	}
	g.Objects++
	if beingDeleted {
		g.BeingDeleted++
	}
	if deletingDependents {
		g.DeletingDependents++
	}
	if virtual {
		g.Virtual++
	}
}

// Summary is what was counted, at seq.
func (s *Summarizer) Summary(seq uint64) Summary {
	out := Summary{Seq: seq, Groups: make([]SummaryGroup, 0, len(s.groups))}
	for _, g := range s.groups {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b SummaryGroup) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}

// Summary counts the graph, consistent with the feed's sequence number as Snapshot is,
// without copying a node.
func (gc *GarbageCollector) Summary() Summary {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	gc.feed.mu.Lock()
	seq := gc.feed.seq
	gc.feed.mu.Unlock()
	var s Summarizer
	for _, n := range gc.graph.uidToNode {
		s.add(refOf(n.identity), n.beingDeleted, n.deletingDependents, n.virtual)
	}
	return s.Summary(seq)
}
