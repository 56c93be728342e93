package gc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	// HeldBy: finalizers of other controllers that keep the object after its deletion.
	HeldBy []string        `json:"heldBy,omitempty"`
	Queues []QueuePosition `json:"queues,omitempty"`
	Last   *Action         `json:"lastAction,omitempty"`
	Next   string          `json:"next"`
	Words  []string        `json:"words"`
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

	for _, f := range e.Object.Finalizers {
		if f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			e.HeldBy = append(e.HeldBy, f)
		}
	}
	gc.feed.mu.Lock()
	for _, q := range []QueueName{GraphChanges, AttemptToDelete, AttemptToOrphan} {
		m := gc.feed.queues[q]
		if it, ok := m.items[uid]; ok {
			e.Queues = append(e.Queues, QueuePosition{Queue: q, QueueItem: *it})
		}
		for _, a := range m.recent {
			if a.Object.UID == uid && (e.Last == nil || a.Verb != VerbGet) {
				c := a
				e.Last = &c
			}
		}
	}
	gc.feed.mu.Unlock()
	if visible != nil {
		e.redact(visible)
	}
	e.Next, e.Words = gc.narrate(&e, time.Now())
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
		s.names = ptrTo(refOf(owner.identity))
	case ownerCoordinates(ref) != owner.identity.OwnerReference && !sameObjectOtherVersion(ref, owner.identity.OwnerReference):
		s.State, s.Reason = OwnerDangling, fmt.Sprintf("uid %s belongs to %s %s, not to the %s %s referenced", ref.UID, owner.identity.Kind, owner.identity.Name, ref.Kind, ref.Name)
		s.names = ptrTo(refOf(owner.identity))
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

// narrate puts an explanation in words: the next step, then the reasons.
func (gc *GarbageCollector) narrate(e *Explanation, now time.Time) (string, []string) {
	o := e.Object
	var words []string
	count := map[OwnerState][]string{}
	for _, s := range e.Owners {
		count[s.State] = append(count[s.State], s.Kind+" "+s.Name)
	}
	dependents := len(e.Dependents) + e.HiddenDependents
	var next string
	switch {
	case o.Virtual && !gc.served(o.APIVersion, o.Kind):
		next = fmt.Sprintf("retry later: the apiserver does not serve %s %s, so it cannot be looked up; it is never taken for absent, and its dependents stay", o.Kind, o.APIVersion)
		words = append(words, fmt.Sprintf("%s %s has not been observed; %d dependents name it as owner", o.Kind, o.Name, dependents))
	case o.Virtual:
		next = "verify whether it exists: it is only known because dependents name it as their owner"
		words = append(words, fmt.Sprintf("%s %s has not been observed; %d dependents name it as owner", o.Kind, o.Name, dependents))
	case o.DeletingDependents && slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents):
		if blockers := len(e.Blockers) + e.HiddenBlockers; blockers == 0 {
			next = "remove the foregroundDeletion finalizer: no blocking dependent remains"
		} else {
			next = fmt.Sprintf("wait for %d blocking dependents to be deleted", blockers)
			words = append(words, "waiting for "+describeBlockers(e.Blockers, e.HiddenBlockers, o.UID))
		}
	case o.BeingDeleted && slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents):
		next = fmt.Sprintf("remove its reference from %d dependents, then the orphan finalizer", dependents)
	case o.BeingDeleted:
		next = "nothing: the apiserver deletes it once its finalizers are removed"
	case len(e.Owners) == 0:
		next = "nothing: an object without owners is never collected"
	case len(count[OwnerSolid]) > 0:
		next = "keep it: owner " + strings.Join(count[OwnerSolid], ", ") + " exists"
		if stale := append(count[OwnerDangling], count[OwnerWaiting]...); len(stale) > 0 {
			next += "; remove its references to " + strings.Join(stale, ", ")
		}
	case len(count[OwnerUnresolvable]) > 0:
		next = "retry later: owner " + strings.Join(count[OwnerUnresolvable], ", ") + " is named through a version the apiserver does not serve, so it cannot be looked up (it is never taken for absent)"
	case len(count[OwnerUnverified]) > 0:
		next = "verify owner " + strings.Join(count[OwnerUnverified], ", ") + " before deciding"
	case len(count[OwnerInvalid]) == len(e.Owners) && o.Namespace == "":
		next = "nothing: its only owners are namespaced, which a cluster-scoped object cannot have"
	case len(count[OwnerWaiting]) > 0 && dependents > 0:
		next = "delete it in the foreground: its owner waits for it, and it has dependents of its own"
	case len(count[OwnerWaiting]) > 0:
		next = "delete it: its owner waits for it"
	default:
		next = "delete it: none of its owners exists"
	}
	for _, s := range e.Owners {
		words = append(words, fmt.Sprintf("owner %s %s: %s (%s)", s.Kind, s.Name, s.State, s.Reason))
	}
	if len(e.HeldBy) > 0 && o.BeingDeleted {
		words = append(words, "held by finalizer "+strings.Join(e.HeldBy, ", "))
	}
	for _, q := range e.Queues {
		switch {
		case q.InFlight:
			words = append(words, fmt.Sprintf("a %s worker is processing it", q.Queue))
		case q.Queued:
			words = append(words, fmt.Sprintf("queued in %s", q.Queue))
		}
		if q.BackoffUntil != nil {
			words = append(words, fmt.Sprintf("%s retries it in %s (retry %d)", q.Queue, q.BackoffUntil.Sub(now).Round(time.Millisecond), q.Retries))
		}
	}
	if e.Last != nil && e.Last.Error != "" {
		words = append(words, fmt.Sprintf("last %s failed: %s", e.Last.Verb, e.Last.Error))
	}
	return next, words
}

// describeBlockers puts a tree of blockers in words, with hidden more the reader may not
// see; root is the explained object.
func describeBlockers(bs []Blocker, hidden int, root types.UID) string {
	parts := make([]string, len(bs), len(bs)+1)
	for i, b := range bs {
		p := strings.ToLower(b.Object.Kind) + " " + b.Object.Name
		var held []string
		for _, f := range b.Finalizers {
			if f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
				held = append(held, f)
			}
		}
		switch {
		case len(held) > 0:
			p += " is held by finalizer " + strings.Join(held, ", ")
		case b.Cycle && b.Object.UID == root:
			p += " is the object itself: it names itself as a blocking owner, so its foreground deletion waits on its own reference"
		case b.Cycle:
			p += " waits for its own blocking dependents, which lead back here (an ownership cycle)"
		case b.DeletingDependents && len(b.Blockers) == 0 && b.Hidden > 0:
			p += " waits for " + hiddenCount(b.Hidden)
		case b.DeletingDependents && len(b.Blockers) == 0:
			p += " waits for blocking dependents of its own (not followed further)"
		case b.DeletingDependents:
			p += " waits for its blocking dependents: " + describeBlockers(b.Blockers, b.Hidden, root)
		case b.BeingDeleted:
			p += " is being deleted"
		default:
			p += " is not deleted yet"
		}
		parts[i] = p
	}
	if hidden > 0 {
		parts = append(parts, hiddenCount(hidden))
	}
	return strings.Join(parts, "; ")
}

func hiddenCount(n int) string {
	if n == 1 {
		return "1 blocking dependent you may not see"
	}
	return fmt.Sprintf("%d blocking dependents you may not see", n)
}

func ptrTo[T any](v T) *T { return &v }
