package gc

// Orphan marks: what the engine remembers of the ownerReferences its workers removed, so
// that an object orphaned by an Orphan delete of its owner (or stripped of a dangling or
// waiting reference) says so instead of looking like a root that never had an owner.
//
// A mark is set on the dependent's node when a patch that removes references succeeds
// (attemptToOrphan's orphaning, attemptToDelete's patchRemoveRefs), or, in shadow mode,
// when the informers show the cluster's collector carrying out such a decision of the
// engine. It lasts until the user dismisses it (DismissOrphanMarks) or it is OrphanMarkTTL
// old. Marks live in memory only: an engine that starts has none.
//
// Concurrency: marks are the one part of a node that the workers write too (the graph
// builder writes them in shadow mode). Every writer holds graph.mu for writing and
// publishes the node's new state under it, so a Snapshot stays exactly the state at its
// sequence number.

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// OrphanCause says why the collector removed a reference.
type OrphanCause string

const (
	// OrphanDelete: the owner was deleted with propagationPolicy=Orphan.
	OrphanDelete OrphanCause = "orphanDelete"
	// OwnerAbsent: the owner no longer existed (a dangling reference), and another owner
	// keeps the object.
	OwnerAbsent OrphanCause = "ownerAbsent"
	// OwnerDeletingDependents: the owner was being deleted in the foreground, and another
	// owner keeps the object, so only the reference went.
	OwnerDeletingDependents OrphanCause = "ownerDeletingDependents"
)

const (
	// OrphanMarkTTL is how long a mark lasts unless dismissed.
	OrphanMarkTTL = 24 * time.Hour
	// maxOrphanMarks bounds the marks of one node; the oldest go first.
	maxOrphanMarks = 8
	// orphanMarkSweep is how often expired marks are dropped.
	orphanMarkSweep = time.Minute
)

// Who removed a reference, as a mark says it.
const (
	byEngine  = "the garbage collector (gcscope's engine)"
	byCluster = "the cluster's garbage collector (seen by gcscope's engine in shadow mode)"
)

// OrphanMark says that the garbage collector removed one of the object's ownerReferences.
type OrphanMark struct {
	// Owner is the former owner. Zero when OwnerHidden: the reader may not see it.
	Owner       ObjectRef `json:"owner,omitzero"`
	OwnerHidden bool      `json:"ownerHidden,omitempty"`
	// Controller: the removed reference was the object's controller reference.
	Controller bool        `json:"controller,omitempty"`
	Cause      OrphanCause `json:"cause"`
	// By is who removed it, in words.
	By string `json:"by"`
	// At is when: when the engine's patch succeeded, or when the informers showed the
	// cluster's collector's.
	At time.Time `json:"at"`
	// Reason says why, in words, naming the former owner unless it is hidden.
	Reason string `json:"reason"`
}

// RedactedFor returns m as told to a reader who may see only what visible accepts: a
// former owner the reader may not see is not named. changed reports whether it was left out.
func (m OrphanMark) RedactedFor(visible func(ObjectRef) bool) (out OrphanMark, changed bool) {
	if m.OwnerHidden || visible == nil || visible(m.Owner) {
		return m, false
	}
	m.Owner, m.OwnerHidden = ObjectRef{}, true
	m.Reason = orphanReason(m.Cause, "an object you may not see")
	return m, true
}

// Sentence tells m in one sentence, without its time: "its reference to ReplicaSet web-7d9
// was removed by the garbage collector (gcscope's engine): the Orphan delete of ReplicaSet
// web-7d9".
func (m OrphanMark) Sentence() string {
	owner := "an owner you may not see"
	if !m.OwnerHidden {
		owner = m.Owner.Kind + " " + m.Owner.Name
	}
	what := "reference"
	if m.Controller {
		what = "controller reference"
	}
	return "its " + what + " to " + owner + " was removed by " + m.By + ": " + m.Reason
}

// RedactedFor returns s with its orphan marks redacted for visible (s itself when nothing
// changes; the marks slice is copied otherwise).
func (s NodeState) RedactedFor(visible func(ObjectRef) bool) (out NodeState, changed bool) {
	for i, m := range s.Orphaned {
		r, ch := m.RedactedFor(visible)
		if !ch {
			continue
		}
		if !changed {
			s.Orphaned, changed = slices.Clone(s.Orphaned), true
		}
		s.Orphaned[i] = r
	}
	return s, changed
}

func orphanReason(cause OrphanCause, owner string) string {
	switch cause {
	case OrphanDelete:
		return "the Orphan delete of " + owner + " (its dependents stay, without their reference to it)"
	case OwnerAbsent:
		return owner + " no longer exists (a dangling reference); the object's other owners keep it"
	case OwnerDeletingDependents:
		return owner + " is being deleted in the foreground; the object's other owners keep it, so only the reference goes"
	}
	return string(cause)
}

func newOrphanMark(owner ObjectRef, controller bool, cause OrphanCause, by string, at time.Time) OrphanMark {
	return OrphanMark{Owner: owner, Controller: controller, Cause: cause, By: by, At: at,
		Reason: orphanReason(cause, owner.Kind+" "+owner.Name)}
}

// formerOwner is the identity of the owner ref names, for a dependent of namespace ns.
// Requires graph.mu.
func (gc *GarbageCollector) formerOwner(ref metav1.OwnerReference, ns string) ObjectRef {
	return formerOwnerIn(gc.graph, ref, ns, ns != "" && gc.namespacedKind(ref))
}

// formerOwnerIn is the graph's node of ref's owner when it has one (observed), else the
// reference, in ns when the owner's kind is namespaced. Requires g.mu.
func formerOwnerIn(g *graph, ref metav1.OwnerReference, ns string, namespaced bool) ObjectRef {
	if n, ok := g.read(ref.UID); ok && !n.virtual {
		return refOf(n.identity)
	}
	o := ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	if namespaced {
		o.Namespace = ns
	}
	return o
}

// markRemovedRefs records, after a successful patch, that the references of dep to each
// of removed went for cause. It takes graph.mu for writing.
func (gc *GarbageCollector) markRemovedRefs(dep types.UID, removed []metav1.OwnerReference, cause func(metav1.OwnerReference) OrphanCause) {
	if len(removed) == 0 {
		return
	}
	at := gc.now()
	namespaced := make([]bool, len(removed)) // asked before the lock: the mapper may ask discovery
	for i, ref := range removed {
		namespaced[i] = gc.namespacedKind(ref)
	}
	gc.graph.mu.Lock()
	defer gc.graph.mu.Unlock()
	n, ok := gc.graph.read(dep)
	if !ok || n.virtual {
		return // gone meanwhile: nothing left to mark
	}
	marks := make([]OrphanMark, len(removed))
	for i, ref := range removed {
		ns := n.identity.Namespace
		owner := formerOwnerIn(gc.graph, ref, ns, ns != "" && namespaced[i])
		marks[i] = newOrphanMark(owner, isController(ref), cause(ref), byEngine, at)
	}
	gc.builder.addOrphanMarks(n, marks)
}

// markSeenRemoved records, in shadow mode, the references to owners that the cluster's
// collector was seen removing from the object of uid as the engine had decided (decisions);
// before are the object's references before the observation. Requires graph.mu held for
// writing (the graph builder's).
func (gb *GraphBuilder) markSeenRemoved(uid types.UID, before []metav1.OwnerReference, decisions []Action) {
	n, ok := gb.graph.read(uid)
	if !ok || n.virtual {
		return
	}
	at := gb.now()
	var marks []OrphanMark
	for _, a := range decisions {
		for _, ownerUID := range a.Refs {
			i := slices.IndexFunc(before, func(r metav1.OwnerReference) bool { return r.UID == ownerUID })
			if i < 0 {
				continue // not a reference this observation removed
			}
			ref := before[i]
			cause := OrphanDelete
			if a.Verb == VerbRemoveRefs {
				cause = OwnerAbsent
				if owner, ok := gb.graph.read(ownerUID); ok && owner.deletingDependents {
					cause = OwnerDeletingDependents
				}
			}
			marks = append(marks, newOrphanMark(gb.formerOwner(ref, n.identity.Namespace), isController(ref), cause, byCluster, at))
		}
	}
	if len(marks) > 0 {
		gb.addOrphanMarks(n, marks)
	}
}

// addOrphanMarks adds marks to n (a mark about the same former owner replaces the
// earlier one), keeps the newest maxOrphanMarks and publishes n. Requires graph.mu held
// for writing.
func (gb *GraphBuilder) addOrphanMarks(n *node, marks []OrphanMark) {
	for _, m := range marks {
		n.orphaned = slices.DeleteFunc(n.orphaned, func(old OrphanMark) bool { return old.Owner.UID == m.Owner.UID })
		n.orphaned = append(n.orphaned, m)
	}
	if extra := len(n.orphaned) - maxOrphanMarks; extra > 0 {
		n.orphaned = slices.Delete(n.orphaned, 0, extra)
	}
	gb.graph.marked[n.identity.UID] = struct{}{}
	gb.publishNode(NodeUpdated, n)
}

// DismissOrphanMarks forgets the orphan marks of uid (the user has read them) and
// publishes the node. It reports whether the graph has the node, and how many marks it
// dropped.
func (gc *GarbageCollector) DismissOrphanMarks(uid types.UID) (found bool, dismissed int) {
	gc.graph.mu.Lock()
	defer gc.graph.mu.Unlock()
	n, ok := gc.graph.read(uid)
	if !ok {
		return false, 0
	}
	dismissed = len(n.orphaned)
	if dismissed > 0 {
		n.orphaned = nil
		delete(gc.graph.marked, uid)
		gc.builder.publishNode(NodeUpdated, n)
	}
	return true, dismissed
}

// expireOrphanMarks drops the marks older than OrphanMarkTTL, publishing each node that
// lost some, and forgets the nodes that left the graph. It returns how many it dropped.
func (gc *GarbageCollector) expireOrphanMarks() int {
	cutoff := gc.now().Add(-OrphanMarkTTL)
	gc.graph.mu.Lock()
	defer gc.graph.mu.Unlock()
	dropped := 0
	for uid := range gc.graph.marked {
		n, ok := gc.graph.read(uid)
		if !ok {
			delete(gc.graph.marked, uid)
			continue
		}
		before := len(n.orphaned)
		n.orphaned = slices.DeleteFunc(n.orphaned, func(m OrphanMark) bool { return !m.At.After(cutoff) })
		if len(n.orphaned) == before {
			continue
		}
		dropped += before - len(n.orphaned)
		if len(n.orphaned) == 0 {
			n.orphaned = nil
			delete(gc.graph.marked, uid)
		}
		gc.builder.publishNode(NodeUpdated, n)
	}
	return dropped
}

// expireOrphanMarksEvery expires marks every period until ctx ends.
func (gc *GarbageCollector) expireOrphanMarksEvery(ctx context.Context, period time.Duration) {
	wait.UntilWithContext(ctx, func(context.Context) { gc.expireOrphanMarks() }, period)
}

func isController(ref metav1.OwnerReference) bool {
	return ref.Controller != nil && *ref.Controller
}
