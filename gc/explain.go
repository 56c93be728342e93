package gc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// OwnerState classifies one ownerReference as the engine sees it from its graph.
type OwnerState string

const (
	OwnerSolid      OwnerState = "solid"      // the owner exists and keeps the object
	OwnerWaiting    OwnerState = "waiting"    // the owner is being deleted in the foreground: it waits for this object
	OwnerDangling   OwnerState = "dangling"   // the owner is verified absent
	OwnerUnverified OwnerState = "unverified" // the owner has not been observed; the engine is checking it
	OwnerInvalid    OwnerState = "invalid"    // the reference can never resolve (namespace rules)
	// OwnerUnresolvable: the reference names an apiVersion and kind the apiserver does not
	// serve (now), so the owner cannot be looked up; the engine retries, and never takes the
	// owner for absent.
	OwnerUnresolvable OwnerState = "unresolvable"
)

// OwnerStatus is one owner of an explained object.
type OwnerStatus struct {
	OwnerRef
	State  OwnerState `json:"state"`
	Reason string     `json:"reason"`
	// names is the object the reason names besides the reference itself (the object that
	// really has the uid), for redaction.
	names *ObjectRef
}

// Blocker is a dependent that blocks a foreground deletion, with what holds it.
type Blocker struct {
	Object             ObjectRef `json:"object"`
	Finalizers         []string  `json:"finalizers,omitempty"`
	BeingDeleted       bool      `json:"beingDeleted,omitempty"`
	DeletingDependents bool      `json:"deletingDependents,omitempty"`
	// Blockers are its own blocking dependents, when it waits for them too.
	Blockers []Blocker `json:"blockers,omitempty"`
	// Cycle: it waits for its dependents, but it was already listed above it in the tree
	// (it is the explained object itself, or an ownership cycle leads back to it).
	Cycle bool `json:"cycle,omitempty"`
	// Hidden counts its blocking dependents the reader may not see (left out of Blockers).
	Hidden int `json:"hidden,omitempty"`
	// InFlight: an attemptToDelete worker has it now.
	InFlight bool `json:"inFlight,omitempty"`
}

// BlockerSummary counts an object's blocking dependents (its Blockers and HiddenBlockers),
// for a reader of many.
type BlockerSummary struct {
	Total int `json:"total"`
	// Of those the reader may see: a worker has it now; its deletion has started (and it
	// is not held); held by finalizers of other controllers; waiting for its own.
	InFlight     int `json:"inFlight,omitempty"`
	BeingDeleted int `json:"beingDeleted,omitempty"`
	Held         int `json:"held,omitempty"`
	Waiting      int `json:"waiting,omitempty"`
	// HeldBy are the finalizers that hold them, most frequent first.
	HeldBy []string `json:"heldBy,omitempty"`
}

// Hold is a finalizer of another controller than the collector on the explained object:
// once the object is being deleted, it stays until that finalizer is removed.
type Hold struct {
	Finalizer string `json:"finalizer"`
	// Index is its position in metadata.finalizers, as the engine last saw them.
	Index int `json:"index"`
	// Owner says who usually removes it, and when.
	Owner string `json:"owner"`
	// Release is the kubectl command that would remove it by hand (gcscope shows it and
	// never runs it): a JSON patch that first tests that the finalizer is still at Index,
	// so that it fails rather than remove another one if the list changed.
	Release string `json:"release"`
}

// QueuePosition is where the object stands in one of the engine's queues.
type QueuePosition struct {
	Queue QueueName `json:"queue"`
	QueueItem
}

// Explanation says why an object still exists or what it waits for.
type Explanation struct {
	Object     NodeState     `json:"object"`
	Dependents []ObjectRef   `json:"dependents,omitempty"`
	Owners     []OwnerStatus `json:"owners,omitempty"`
	// Blockers: blocking dependents a foreground deletion of the object waits for.
	Blockers []Blocker `json:"blockers,omitempty"`
	// HiddenDependents and HiddenBlockers count the dependents and blockers the reader may
	// not see (ExplainFor leaves them out of Dependents and Blockers).
	HiddenDependents int `json:"hiddenDependents,omitempty"`
	HiddenBlockers   int `json:"hiddenBlockers,omitempty"`
	// HeldBy: finalizers of other controllers that keep the object after its deletion;
	// Holds says more about each.
	HeldBy []string `json:"heldBy,omitempty"`
	Holds  []Hold   `json:"holds,omitempty"`
	// BlockerSummary counts the blockers, when there are any.
	BlockerSummary *BlockerSummary `json:"blockerSummary,omitempty"`
	Queues         []QueuePosition `json:"queues,omitempty"`
	Last           *Action         `json:"lastAction,omitempty"`
	// Shadow: in shadow mode, the engine's decisions on the object the cluster's collector
	// has not followed yet, and those it did otherwise.
	Shadow []ShadowDecision `json:"shadow,omitempty"`
	Next   string           `json:"next"`
	Words  []string         `json:"words"`
}

// maxBlockerDepth bounds how deep Explain follows blockers of blockers.
const maxBlockerDepth = 8

// Explain describes the object of uid from the engine's graph, without asking the
// apiserver. False if the graph does not hold it.
func (gc *GarbageCollector) Explain(uid types.UID) (Explanation, bool) {
	return gc.ExplainFor(uid, nil)
}

// ExplainFor is Explain for a reader who may see only the objects visible accepts (nil:
// all): the others are left out and counted, and no word names them. visible is called
// outside the engine's locks, so it may be slow (an authorization check).
func (gc *GarbageCollector) ExplainFor(uid types.UID, visible func(ObjectRef) bool) (Explanation, bool) {
	gc.graph.mu.RLock()
	n, ok := gc.graph.read(uid)
	if !ok {
		gc.graph.mu.RUnlock()
		return Explanation{}, false
	}
	e := Explanation{Object: *stateOf(n)}
	for _, d := range n.dependentList() {
		e.Dependents = append(e.Dependents, refOf(d.identity))
	}
	for _, ref := range n.owners {
		e.Owners = append(e.Owners, gc.ownerStatus(n, ref))
	}
	if n.deletingDependents {
		e.Blockers = blockersOf(n, maxBlockerDepth, map[*node]bool{n: true})
	}
	gc.graph.mu.RUnlock()
	// Outside the graph's lock: a kind the mapper does not know sends it to discovery.
	for i := range e.Owners {
		gc.markUnresolvable(&e.Owners[i])
	}

	for i, f := range e.Object.Finalizers {
		if !isCollectorFinalizer(f) {
			e.HeldBy = append(e.HeldBy, f)
			e.Holds = append(e.Holds, Hold{Finalizer: f, Index: i, Owner: finalizerOwner(f),
				Release: gc.releaseCommand(e.Object.ObjectRef, f, i)})
		}
	}
	gc.feed.mu.Lock()
	markInFlight(e.Blockers, gc.feed.queues[AttemptToDelete].items)
	for _, q := range []QueueName{GraphChanges, AttemptToDelete, AttemptToOrphan} {
		m := gc.feed.queues[q]
		if it, ok := m.items[uid]; ok {
			e.Queues = append(e.Queues, QueuePosition{Queue: q, QueueItem: *it})
		}
		for _, a := range m.recent {
			// A look-up of an owner by this uid under other coordinates (another namespace,
			// another kind: an invalid reference of some dependent) was not about this object.
			if a.Object.UID != uid || a.Object.Namespace != e.Object.Namespace || a.Object.Kind != e.Object.Kind {
				continue
			}
			if e.Last == nil || a.Verb != VerbGet {
				c := a
				e.Last = &c
			}
		}
	}
	gc.feed.mu.Unlock()
	e.Shadow = gc.ShadowDecisionsAbout(uid)
	if visible != nil {
		e.redact(visible)
	}
	e.Narrate(gc.served, time.Now())
	return e, true
}

// lookUpOwnerOf starts the reason of an owner's look-up, which names the dependent.
const lookUpOwnerOf = "look up owner of "

// RedactedFor returns a as told to a reader who may see only what visible accepts: an
// action made for an object the reader may not see does not name it. changed reports
// whether anything was left out.
func (a Action) RedactedFor(visible func(ObjectRef) bool) (out Action, changed bool) {
	if a.For == nil || visible(*a.For) {
		return a, false
	}
	outcome := ""
	if _, rest, ok := strings.Cut(a.Reason, ": "); ok {
		outcome = ": " + rest
	}
	a.Reason, a.For = lookUpOwnerOf+"an object you may not see"+outcome, nil
	return a, true
}

// redact leaves out what visible does not accept: dependents and blockers are counted
// instead, and an owner's reason that names another object is said without it. (Owner
// references themselves are the object's own metadata, so they stay.)
func (e *Explanation) redact(visible func(ObjectRef) bool) {
	e.Object, _ = e.Object.RedactedFor(visible) // a former owner is no longer the object's metadata
	kept := e.Dependents[:0]
	for _, d := range e.Dependents {
		if visible(d) {
			kept = append(kept, d)
		} else {
			e.HiddenDependents++
		}
	}
	e.Dependents = kept
	for i := range e.Owners {
		if o := &e.Owners[i]; o.names != nil && !visible(*o.names) {
			o.Reason = "the object with this uid is not the one referenced (you may not see it)"
		}
	}
	e.Blockers, e.HiddenBlockers = redactBlockers(e.Blockers, visible)
	if e.Last != nil {
		last, _ := e.Last.RedactedFor(visible)
		e.Last = &last
	}
	for i := range e.Shadow {
		e.Shadow[i].Action, _ = e.Shadow[i].Action.RedactedFor(visible)
	}
}

func redactBlockers(bs []Blocker, visible func(ObjectRef) bool) (kept []Blocker, hidden int) {
	for _, b := range bs {
		if !visible(b.Object) {
			hidden++
			continue
		}
		b.Blockers, b.Hidden = redactBlockers(b.Blockers, visible)
		kept = append(kept, b)
	}
	return kept, hidden
}

// ownerStatus classifies ref from the graph. Requires graph.mu.
func (gc *GarbageCollector) ownerStatus(dep *node, ref metav1.OwnerReference) OwnerStatus {
	s := OwnerStatus{OwnerRef: ownerRefOf(ref)}
	absentKey := objectReference{OwnerReference: ownerCoordinates(ref), Namespace: dep.identity.Namespace}
	clusterKey := objectReference{OwnerReference: ownerCoordinates(ref)}
	owner, inGraph := gc.graph.read(ref.UID)
	switch {
	case dep.identity.Namespace == "" && gc.namespacedKind(ref):
		s.State, s.Reason = OwnerInvalid, "a cluster-scoped object cannot have a namespaced owner; the reference is ignored"
	case gc.absentOwners.Has(absentKey) || gc.absentOwners.Has(clusterKey):
		s.State, s.Reason = OwnerDangling, reasonVerifiedAbsent
	case !inGraph:
		s.State, s.Reason = OwnerUnverified, "not observed yet"
	case owner.virtual:
		s.State, s.Reason = OwnerUnverified, "not observed yet; the engine is verifying it exists"
	case owner.identity.Namespace != "" && owner.identity.Namespace != dep.identity.Namespace:
		s.State, s.Reason = OwnerInvalid, fmt.Sprintf("the owner is in namespace %s; a reference resolves only in the dependent's own namespace, so it counts as absent", owner.identity.Namespace)
		s.names = ptr.To(refOf(owner.identity))
	case ownerCoordinates(ref) != owner.identity.OwnerReference && !sameObjectOtherVersion(ref, owner.identity.OwnerReference):
		s.State, s.Reason = OwnerDangling, fmt.Sprintf("uid %s belongs to %s %s, not to the %s %s referenced", ref.UID, owner.identity.Kind, owner.identity.Name, ref.Kind, ref.Name)
		s.names = ptr.To(refOf(owner.identity))
	case owner.deletingDependents:
		s.State, s.Reason = OwnerWaiting, "being deleted in the foreground, waiting for its dependents"
	case owner.beingDeleted:
		s.State, s.Reason = OwnerSolid, "exists (being deleted, not waiting for dependents)"
	default:
		s.State, s.Reason = OwnerSolid, "exists"
	}
	return s
}

// markUnresolvable turns an owner whose apiVersion and kind do not map to a served
// resource into OwnerUnresolvable, unless it is known absent: the engine cannot look such
// an owner up, so it requeues the dependent with backoff, and a reference it cannot check
// is neither solid nor dangling.
func (gc *GarbageCollector) markUnresolvable(s *OwnerStatus) {
	if s.State == OwnerDangling && s.Reason == reasonVerifiedAbsent {
		return
	}
	if !gc.served(s.APIVersion, s.Kind) {
		s.State = OwnerUnresolvable
		s.Reason = fmt.Sprintf("the apiserver does not serve %s %s (now), so the owner cannot be looked up; the engine retries with backoff and never treats it as absent until that version is served again or the reference changes",
			s.Kind, s.APIVersion)
	}
}

// served reports whether apiVersion and kind map to a resource the apiserver serves.
func (gc *GarbageCollector) served(apiVersion, kind string) bool {
	_, _, err := gc.apiResource(apiVersion, kind)
	return err == nil
}

// reasonVerifiedAbsent is the reason of an owner found in the absent-owner cache.
const reasonVerifiedAbsent = "verified absent"

// sameObjectOtherVersion: ref names the owner through another version of its group (the
// engine looks it up through that version and finds the same object).
func sameObjectOtherVersion(ref, observed metav1.OwnerReference) bool {
	rgv, err1 := schema.ParseGroupVersion(ref.APIVersion)
	ogv, err2 := schema.ParseGroupVersion(observed.APIVersion)
	return err1 == nil && err2 == nil && rgv.Group == ogv.Group &&
		ref.Kind == observed.Kind && ref.Name == observed.Name && ref.UID == observed.UID
}

// namespacedKind reports whether ref's kind is namespaced, per the REST mapper (false if
// unknown).
func (gc *GarbageCollector) namespacedKind(ref metav1.OwnerReference) bool {
	_, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	return err == nil && namespaced
}

// blockersOf lists n's blocking dependents and, for those deleting their own dependents,
// theirs. Requires graph.mu.
func blockersOf(n *node, depth int, seen map[*node]bool) []Blocker {
	var out []Blocker
	for _, d := range n.blockingDependents() {
		b := Blocker{Object: refOf(d.identity), Finalizers: slices.Clone(d.finalizers),
			BeingDeleted: d.beingDeleted, DeletingDependents: d.deletingDependents}
		switch {
		case d.deletingDependents && seen[d]:
			b.Cycle = true
		case d.deletingDependents && depth > 1:
			seen[d] = true
			b.Blockers = blockersOf(d, depth-1, seen)
		}
		out = append(out, b)
	}
	return out
}
