package gc

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
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
	sortGroups(out.Groups)
	return out
}

func sortGroups(gs []SummaryGroup) {
	slices.SortFunc(gs, func(a, b SummaryGroup) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
}

// Summary is the graph counted, consistent with the feed's sequence number as Snapshot
// is: the counts kept as the graph changes, copied (their cost follows the namespaces and
// kinds, not the objects).
func (gc *GarbageCollector) Summary() Summary {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	gc.feed.mu.Lock()
	seq := gc.feed.seq
	gc.feed.mu.Unlock()
	out := Summary{Seq: seq, Groups: make([]SummaryGroup, 0, len(gc.graph.counts.groups))}
	for _, g := range gc.graph.counts.groups {
		out.Groups = append(out.Groups, g.SummaryGroup)
	}
	sortGroups(out.Groups)
	return out
}

// summaryCounts are the graph's nodes counted per namespace and kind, kept by the graph
// builder as it publishes each change of a node (publishNode), under the graph's lock.
// Each node remembers the group and the marks it is counted with, so a change moves it.
// A group knows its members too: the index a snapshot of some namespaces reads
// (SnapshotOf), so that it costs what those namespaces hold.
type summaryCounts struct {
	groups map[summaryKey]*countGroup
	// deleting are the nodes counted as being deleted, by uid: the stuck list and the
	// health poll read them without walking the graph.
	deleting map[types.UID]*node
}

// countGroup is one kept group and the nodes counted in it, each at its node's
// countedAt. A node whose identity changes is replaced by a clone, which is published
// next: track puts it in its slot.
type countGroup struct {
	SummaryGroup
	members []*node
}

// The marks a node is counted with (node.countedAs).
const (
	countedBeingDeleted uint8 = 1 << iota
	countedDeletingDependents
	countedVirtual
)

// track moves n's count after a change of type t.
func (c *summaryCounts) track(t EventType, n *node) {
	if g := n.counted; t != NodeRemoved && g != nil && g.Namespace == n.identity.Namespace && g.APIVersion == n.identity.APIVersion && g.Kind == n.identity.Kind {
		// The usual update: the same group, the marks moved (no map lookup).
		g.Objects--
		c.unmark(g, n)
		c.add(g, n)
		g.members[n.countedAt] = n // a clone takes its original's slot
		return
	}
	c.uncount(n)
	if t != NodeRemoved {
		c.count(n)
	}
}

func (c *summaryCounts) count(n *node) {
	k := summaryKey{n.identity.Namespace, n.identity.APIVersion, n.identity.Kind}
	g := c.groups[k]
	if g == nil {
		g = &countGroup{SummaryGroup: SummaryGroup{Namespace: k.namespace, APIVersion: k.apiVersion, Kind: k.kind}}
		c.groups[k] = g
	}
	n.countedAt = int32(len(g.members))
	g.members = append(g.members, n)
	c.add(g, n)
}

// add counts n in g (a member already).
func (c *summaryCounts) add(g *countGroup, n *node) {
	var marks uint8
	g.Objects++
	if n.beingDeleted {
		g.BeingDeleted++
		marks |= countedBeingDeleted
		c.deleting[n.identity.UID] = n
	}
	if n.deletingDependents {
		g.DeletingDependents++
		marks |= countedDeletingDependents
	}
	if n.virtual {
		g.Virtual++
		marks |= countedVirtual
	}
	n.counted, n.countedAs = g, marks
}

func (c *summaryCounts) uncount(n *node) {
	g := n.counted
	if g == nil {
		return
	}
	g.Objects--
	c.unmark(g, n)
	last := g.members[len(g.members)-1]
	g.members[n.countedAt], last.countedAt = last, n.countedAt
	g.members[len(g.members)-1] = nil
	g.members = g.members[:len(g.members)-1]
	if g.Objects == 0 { // no node points at it any more
		delete(c.groups, summaryKey{g.Namespace, g.APIVersion, g.Kind})
	}
	n.counted, n.countedAs = nil, 0
}

// unmark takes back the marks n was counted with in g.
func (c *summaryCounts) unmark(g *countGroup, n *node) {
	if n.countedAs&countedBeingDeleted != 0 {
		delete(c.deleting, n.identity.UID)
	}
	g.unmark(n.countedAs)
}

// unmark takes back the marks a node was counted with.
func (g *SummaryGroup) unmark(marks uint8) {
	if marks&countedBeingDeleted != 0 {
		g.BeingDeleted--
	}
	if marks&countedDeletingDependents != 0 {
		g.DeletingDependents--
	}
	if marks&countedVirtual != 0 {
		g.Virtual--
	}
}
