package stream

// The per-user view: which events and nodes one client receives, given its
// subscription and what its user may see.

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/narrow"
)

// view is a client's subscription applied: which events it receives, and what it holds.
// Owned by the client's writer.
type view struct {
	sub subscription
	all bool // no namespace, kind, uid or permission filter
	// none: a summary subscription that names no namespace and no uid: the client is
	// sent no object (summary frames say what there is).
	none bool
	narrow.Filter
	// vis is what the client's user may see (nil: everything): objects it may not see
	// never leave the server.
	vis *access.Visibility
	// closure is the uid component: seeded from a snapshot, it grows as node events
	// link objects to it, and is recomputed at the next snapshot. Nil without uids.
	closure map[types.UID]bool
	// visible are the uids of the nodes the client holds (nil when all).
	visible map[types.UID]bool
	// gone, wasGone: nodes removed from the client in this batch and the previous one,
	// whose edge removals still follow.
	gone, wasGone map[types.UID]bool
	// unsure: events up to this seq follow a resume, when what the client holds is not
	// known exactly; they are filtered conservatively (extra removals).
	unsure uint64
	// unknown: uids the closure took in (as owners) whose state the client has not been
	// sent by the end of the batch; widened: an existing object joined the closure (its
	// dependents may have too). Both call for a snapshot.
	unknown map[types.UID]bool
	widened bool
}

func newView(sub subscription, vis *access.Visibility) *view {
	names := len(sub.Namespaces) > 0 || len(sub.Kinds) > 0 || len(sub.UIDs) > 0
	return &view{sub: sub, Filter: narrow.NewFilter(sub.Namespaces, sub.Kinds), vis: vis,
		all: !names && vis == nil && !sub.Summary, none: sub.Summary && len(sub.Namespaces) == 0 && len(sub.UIDs) == 0}
}

// selects: the subscription names the object. The names narrow one another (an object in
// the namespaces, of the kinds, in the uids' component), except in a summary
// subscription, where they add up, as a page asks for detail: the objects of the
// namespaces in view and the components of the objects it follows, of the kinds given.
func (v *view) selects(r *gc.ObjectRef) bool {
	switch {
	case v.none:
		return false
	case v.sub.Summary:
		return v.PassKind(r) && (v.NamesNamespace(r.Namespace) || v.closure[r.UID])
	}
	return v.Filter.Pass(r) && (v.closure == nil || v.closure[r.UID])
}

// reset starts the view over from a snapshot's nodes; it returns the nodes the client
// receives (nodes itself when all; never modified).
func (v *view) reset(nodes []gc.NodeState) []gc.NodeState {
	v.unsure, v.widened, v.unknown = 0, false, nil
	v.gone, v.wasGone = map[types.UID]bool{}, map[types.UID]bool{}
	if v.all {
		return nodes
	}
	nodes = v.vis.Nodes(nodes) // before the closure: it must not walk through hidden objects
	if len(v.sub.UIDs) > 0 {
		v.closure = narrow.Closure(nodes, v.sub.UIDs)
		for _, u := range v.sub.UIDs {
			v.closure[u] = true // an object that does not exist yet joins when it appears
		}
	}
	v.visible = map[types.UID]bool{}
	out := make([]gc.NodeState, 0, min(len(nodes), 1024))
	for i := range nodes {
		if v.passNode(&nodes[i]) {
			out = append(out, nodes[i])
			v.visible[nodes[i].UID] = true
		}
	}
	return out
}

// seedResume prepares the view for a resume: the client is assumed to hold the nodes of
// the view in nodes (a snapshot at seq at), and events up to at are filtered
// conservatively. Not for uid subscriptions.
func (v *view) seedResume(nodes []gc.NodeState, at uint64) {
	v.reset(nodes)
	v.unsure = at
}

func (v *view) passNode(n *gc.NodeState) bool {
	return v.selects(&n.ObjectRef) && v.vis.Visible(n.ObjectRef)
}

// needsSnapshot ends a batch: it reports whether the closure took in objects the client
// has not been sent. (A virtual owner's nodeAdded that the batch boundary puts in the
// next batch costs a snapshot too: rare, and the client is never left incomplete.)
func (v *view) needsSnapshot() bool {
	need := v.widened || len(v.unknown) > 0
	v.widened, v.unknown = false, nil
	v.wasGone, v.gone = v.gone, v.wasGone
	clear(v.gone)
	return need
}

// grow adds the node of e to the closure when it is linked to it, with its owners.
func (v *view) grow(e *gc.Event) {
	n := e.Node
	in := v.closure[n.UID]
	for i := 0; !in && i < len(n.Owners); i++ {
		in = v.closure[n.Owners[i].UID]
	}
	if !in {
		return
	}
	if !v.closure[n.UID] {
		v.closure[n.UID] = true
		if e.Type == gc.NodeUpdated {
			v.widened = true // an existing object: its own dependents are not known here
		}
	}
	if e.Type == gc.NodeAdded {
		// A new node (a virtual owner named by a member, say) brings no links of its own
		// besides its owners. An existing one that was unknown stays so: its other
		// dependents are not known here.
		delete(v.unknown, n.UID)
	}
	for _, o := range n.Owners {
		if !v.closure[o.UID] {
			v.closure[o.UID] = true
			if v.unknown == nil {
				v.unknown = map[types.UID]bool{}
			}
			v.unknown[o.UID] = true
		}
	}
}

// filter decides whether the client receives e, by the rule for its type. A node that
// leaves the view arrives as nodeRemoved (rewritten). An event of a type without a rule
// is dropped: this server cannot tell what it names, so it cannot tell whether the user
// may see it.
func (v *view) filter(e gc.Event) (out gc.Event, keep, rewritten bool) {
	rule, ok := eventRules[e.Type]
	if !ok {
		return e, false, false
	}
	return rule(v, e)
}

// eventRule decides whether a view's client receives one event, and may rewrite it.
type eventRule func(v *view, e gc.Event) (out gc.Event, keep, rewritten bool)

// eventRules is the view's decision for each type of event the feed publishes
// (gc.EventTypes); a test fails when a type has none.
var eventRules = map[gc.EventType]eventRule{
	gc.NodeAdded:    (*view).filterNodeChange,
	gc.NodeUpdated:  (*view).filterNodeChange,
	gc.NodeRemoved:  (*view).filterNodeRemoved,
	gc.EdgeAdded:    (*view).filterEdge,
	gc.EdgeRemoved:  (*view).filterEdge,
	gc.QueueChange:  (*view).filterQueue,
	gc.ActionTaken:  (*view).filterAction,
	gc.ShadowChange: (*view).filterShadow,
	gc.SyncChange:   keepEvent, // names resources, never objects
}

func keepEvent(_ *view, e gc.Event) (gc.Event, bool, bool) { return e, true, false }

// filterNodeChange: a node added or updated is sent while it is in the view; one that
// the client holds (or may hold, after a resume) and that left the view is sent as
// removed.
func (v *view) filterNodeChange(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if v.all {
		return e, true, false
	}
	if e.Node == nil {
		return e, false, false
	}
	if v.closure != nil && v.vis.Visible(e.Node.ObjectRef) {
		v.grow(&e)
	}
	uid := e.Node.UID
	if v.passNode(e.Node) {
		v.visible[uid] = true
		if v.vis != nil {
			if n, changed := e.Node.RedactedFor(v.vis.Visible); changed { // a hidden former owner
				e.Node = &n
				return e, true, true
			}
		}
		return e, true, false
	}
	if v.visible[uid] || (e.Type == gc.NodeUpdated && e.Seq <= v.unsure) {
		delete(v.visible, uid)
		v.gone[uid] = true
		e.Type = gc.NodeRemoved
		return e, true, true
	}
	return e, false, false
}

// filterNodeRemoved: a removal is sent when the client holds the node (or may, after a
// resume).
func (v *view) filterNodeRemoved(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if v.all {
		return e, true, false
	}
	if e.Node == nil {
		return e, false, false
	}
	uid := e.Node.UID
	if v.visible[uid] || (e.Seq <= v.unsure && v.selects(&e.Node.ObjectRef)) {
		delete(v.visible, uid)
		v.gone[uid] = true
		return e, true, false
	}
	return e, false, false
}

// filterEdge: an edge follows its dependent, including one just removed from the client.
func (v *view) filterEdge(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if v.all {
		return e, true, false
	}
	if e.Edge == nil {
		return e, false, false
	}
	d := e.Edge.Dependent
	return e, v.visible[d] || v.gone[d] || v.wasGone[d], false
}

// filterQueue: a queue transition is sent to a client that takes queues, when its object
// is in the view.
func (v *view) filterQueue(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if !v.sub.Queues {
		return e, false, false
	}
	return e, v.all || (e.Queue != nil && v.passObject(&e.Queue.Object)), false
}

// filterAction: an action is sent to a client that takes queues, when its object is in
// the view, with the objects its user may not see redacted.
func (v *view) filterAction(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if !v.sub.Queues {
		return e, false, false
	}
	if v.all {
		return e, true, false
	}
	if e.Action == nil || !v.passObject(&e.Action.Object) {
		return e, false, false
	}
	if v.vis != nil {
		if a, changed := e.Action.RedactedFor(v.vis.Visible); changed {
			e.Action = &a
			return e, true, true
		}
	}
	return e, true, false
}

// filterShadow: a shadow decision is sent as an action is.
func (v *view) filterShadow(e gc.Event) (out gc.Event, keep, rewritten bool) {
	if !v.sub.Queues || e.Shadow == nil {
		return e, false, false
	}
	if v.all {
		return e, true, false
	}
	if !v.passObject(&e.Shadow.Action.Object) {
		return e, false, false
	}
	if v.vis != nil {
		if a, changed := e.Shadow.Action.RedactedFor(v.vis.Visible); changed {
			d := *e.Shadow
			d.Action = a
			e.Shadow = &d
			return e, true, true
		}
	}
	return e, true, false
}

// passObject: an object named by a queue transition or an action is in the view.
func (v *view) passObject(r *gc.ObjectRef) bool {
	return v.selects(r) && v.vis.Visible(*r)
}

// queues narrows the queues' items and recent actions to the view; the counters stay
// the whole queue's.
func (v *view) queues(qs []gc.QueueState) []gc.QueueState {
	if v.all {
		return qs
	}
	out := make([]gc.QueueState, len(qs))
	for i, q := range qs {
		q.Items = slices.DeleteFunc(slices.Clone(q.Items), func(it gc.QueueItem) bool { return !v.passObject(&it.Object) })
		q.Recent = slices.DeleteFunc(slices.Clone(q.Recent), func(a gc.Action) bool { return !v.passObject(&a.Object) })
		if v.vis != nil {
			for j := range q.Recent {
				q.Recent[j], _ = q.Recent[j].RedactedFor(v.vis.Visible)
			}
		}
		out[i] = q
	}
	return out
}
