package gc

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
			if a.Object.UID == uid && (e.Last == nil || a.Verb != VerbGet) {
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

// Narrate finishes an explanation from the rest of it, as ExplainFor does: it orders the
// blockers (the most telling first), counts them in BlockerSummary and sets Next and
// Words. For explanations assembled elsewhere too (the UI benchmark's synthetic engine);
// served reports whether the apiserver serves an apiVersion and kind.
func (e *Explanation) Narrate(served func(apiVersion, kind string) bool, now time.Time) {
	sortBlockers(e.Blockers)
	e.BlockerSummary = nil
	if len(e.Blockers)+e.HiddenBlockers > 0 {
		e.BlockerSummary = summarize(e.Blockers, e.HiddenBlockers)
	}
	e.Next, e.Words = narrate(e, served, now)
}

// narrate puts an explanation in words: the next step, then the reasons.
func narrate(e *Explanation, served func(apiVersion, kind string) bool, now time.Time) (string, []string) {
	o := e.Object
	var words []string
	count := map[OwnerState][]string{}
	for _, s := range e.Owners {
		count[s.State] = append(count[s.State], s.Kind+" "+s.Name)
	}
	dependents := len(e.Dependents) + e.HiddenDependents
	foreground := slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents)
	var next string
	switch {
	case o.Virtual && !served(o.APIVersion, o.Kind):
		next = fmt.Sprintf("retry later: the apiserver does not serve %s %s, so it cannot be looked up; it is never taken for absent, and its dependents stay", o.Kind, o.APIVersion)
		words = append(words, fmt.Sprintf("%s %s has not been observed; %s", o.Kind, o.Name, nameItsOwner(dependents)))
	case o.Virtual:
		next = "verify whether it exists: it is only known because dependents name it as their owner"
		words = append(words, fmt.Sprintf("%s %s has not been observed; %s", o.Kind, o.Name, nameItsOwner(dependents)))
	case o.DeletingDependents && foreground:
		if blockers := len(e.Blockers) + e.HiddenBlockers; blockers == 0 {
			next = "remove the foregroundDeletion finalizer: no blocking dependent remains"
		} else {
			next = fmt.Sprintf("wait for %s to be deleted", counted(blockers, "blocking dependent"))
			words = append(words, "waiting for "+describeWaitingFor(e.Blockers, e.HiddenBlockers, e.BlockerSummary, o.UID))
		}
	case o.BeingDeleted && foreground:
		next = "start the foreground deletion: delete its blocking dependents, then remove the foregroundDeletion finalizer"
	case o.BeingDeleted && slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents):
		next = fmt.Sprintf("remove its reference from %s, then the orphan finalizer", counted(dependents, "dependent"))
	case o.BeingDeleted && len(e.HeldBy) > 0:
		next = fmt.Sprintf("nothing the collector can do: %s %s of another controller holds it; the apiserver deletes it once that is removed",
			plural(len(e.HeldBy), "finalizer", "finalizers"), strings.Join(e.HeldBy, ", "))
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
	if o.BeingDeleted {
		for _, f := range e.HeldBy {
			words = append(words, fmt.Sprintf("held by finalizer %s: %s", f, finalizerOwner(f)))
		}
	}
	// The collector's own finalizers are steps of its work, never another's hold.
	if foreground && o.BeingDeleted {
		words = append(words, "foregroundDeletion is the garbage collector's own finalizer: it removes it once no blocking dependent remains")
	}
	if slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) && o.BeingDeleted {
		words = append(words, "orphan is the garbage collector's own finalizer: it removes it once no dependent names this object as owner any more")
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
	for _, d := range e.Shadow {
		words = append(words, shadowWords(d))
	}
	return next, words
}

// shadowWords tells a shadow decision the cluster's collector has not followed.
func shadowWords(d ShadowDecision) string {
	would := fmt.Sprintf("gcscope would have chosen to %s at %s because %s", decisionWords(d.Action),
		d.DecidedAt.Format(time.TimeOnly), d.Action.Reason)
	switch d.Outcome {
	case ShadowDiverged:
		return fmt.Sprintf("the cluster's collector did otherwise: %s; %s", d.Observed, would)
	case ShadowOverdue:
		return fmt.Sprintf("the cluster's collector has not acted on this for %s (overdue: it is behind or stuck); %s", d.Lag.Round(time.Second), would)
	}
	return fmt.Sprintf("the cluster's collector has not acted on this yet (%s); %s", d.Lag.Round(time.Millisecond), would)
}

// blockersNamed is how many blockers of one object the words name; the others are
// counted.
const blockersNamed = 10

// describeWaitingFor says what a foreground deletion waits for: every blocker when there
// are few, else their counts and the first few.
func describeWaitingFor(bs []Blocker, hidden int, sum *BlockerSummary, root types.UID) string {
	if sum == nil || sum.Total <= blockersNamed {
		return describeBlockers(bs, hidden, root)
	}
	head := counted(sum.Total, "blocking dependent")
	var parts []string
	if sum.InFlight > 0 {
		parts = append(parts, thousands(sum.InFlight)+" in flight")
	}
	if sum.Held > 0 {
		parts = append(parts, fmt.Sprintf("%s held by %s %s", thousands(sum.Held),
			plural(len(sum.HeldBy), "finalizer", "finalizers"), strings.Join(sum.HeldBy, ", ")))
	}
	if sum.Waiting > 0 {
		parts = append(parts, thousands(sum.Waiting)+" waiting for their own")
	}
	if hidden > 0 {
		parts = append(parts, thousands(hidden)+" you may not see")
	}
	if len(parts) > 0 {
		head += ", " + strings.Join(parts, ", ")
	}
	if len(bs) == 0 {
		return head
	}
	named := bs[:min(len(bs), blockersNamed)]
	brief := make([]string, len(named), len(named)+1)
	for i, b := range named {
		brief[i] = strings.ToLower(b.Object.Kind) + " " + b.Object.Name + " (" + blockerState(b, root) + ")"
	}
	if more := len(bs) - len(named); more > 0 {
		brief = append(brief, "and "+thousands(more)+" more")
	}
	return head + "; first " + strconv.Itoa(len(named)) + ": " + strings.Join(brief, ", ")
}

// blockerState is where one blocker stands, in a few words.
func blockerState(b Blocker, root types.UID) string {
	held := HeldBy(b.Finalizers)
	switch {
	case len(held) > 0:
		return plural(len(held), "held by finalizer ", "held by finalizers ") + strings.Join(held, ", ")
	case b.Cycle && b.Object.UID == root:
		return "the object itself"
	case b.Cycle:
		return "an ownership cycle"
	case b.DeletingDependents:
		return "waits for " + counted(len(b.Blockers)+b.Hidden, "blocking dependent") + " of its own"
	case b.InFlight:
		return "in flight"
	case b.BeingDeleted:
		return "being deleted"
	}
	return "not deleted yet"
}

// describeBlockers puts a tree of blockers in words, with hidden more the reader may not
// see; root is the explained object. Past blockersNamed on one level, the rest are
// counted.
func describeBlockers(bs []Blocker, hidden int, root types.UID) string {
	named := bs[:min(len(bs), blockersNamed)]
	parts := make([]string, len(named), len(named)+2)
	for i, b := range named {
		p := strings.ToLower(b.Object.Kind) + " " + b.Object.Name
		held := HeldBy(b.Finalizers)
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
		case b.InFlight:
			p += " is being deleted by a worker now"
		case b.BeingDeleted:
			p += " is being deleted"
		default:
			p += " is not deleted yet"
		}
		parts[i] = p
	}
	if more := len(bs) - len(named); more > 0 {
		parts = append(parts, "and "+thousands(more)+" more")
	}
	if hidden > 0 {
		parts = append(parts, hiddenCount(hidden))
	}
	return strings.Join(parts, "; ")
}

// sortBlockers puts the most telling blockers first, on every level: held by another
// controller's finalizer, waiting for their own, being deleted by a worker, being deleted,
// the rest; each group by namespace, kind and name.
func sortBlockers(bs []Blocker) {
	rank := func(b *Blocker) int {
		switch {
		case len(HeldBy(b.Finalizers)) > 0:
			return 0
		case b.DeletingDependents:
			return 1
		case b.InFlight:
			return 2
		case b.BeingDeleted:
			return 3
		}
		return 4
	}
	slices.SortStableFunc(bs, func(a, b Blocker) int {
		return cmp.Or(cmp.Compare(rank(&a), rank(&b)), cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name))
	})
	for i := range bs {
		sortBlockers(bs[i].Blockers)
	}
}

// summarize counts the first level of blockers.
func summarize(bs []Blocker, hidden int) *BlockerSummary {
	s := &BlockerSummary{Total: len(bs) + hidden}
	byFinalizer := map[string]int{}
	for _, b := range bs {
		held := HeldBy(b.Finalizers)
		switch {
		case len(held) > 0:
			s.Held++
			for _, f := range held {
				byFinalizer[f]++
			}
		case b.DeletingDependents:
			s.Waiting++
		case b.InFlight:
			s.InFlight++
		case b.BeingDeleted:
			s.BeingDeleted++
		}
	}
	for f := range byFinalizer {
		s.HeldBy = append(s.HeldBy, f)
	}
	slices.SortFunc(s.HeldBy, func(a, b string) int { return cmp.Or(cmp.Compare(byFinalizer[b], byFinalizer[a]), cmp.Compare(a, b)) })
	return s
}

// markInFlight marks the blockers a worker has now. Requires feed.mu.
func markInFlight(bs []Blocker, items map[types.UID]*QueueItem) {
	for i := range bs {
		if it, ok := items[bs[i].Object.UID]; ok && it.InFlight {
			bs[i].InFlight = true
		}
		markInFlight(bs[i].Blockers, items)
	}
}

func hiddenCount(n int) string {
	return counted(n, "blocking dependent") + " you may not see"
}

// counted is n and the noun, "1 blocking dependent" or "1,560 blocking dependents".
func counted(n int, noun string) string {
	return thousands(n) + " " + plural(n, noun, noun+"s")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// nameItsOwner says how many dependents name a virtual object as their owner.
func nameItsOwner(n int) string {
	if n == 1 {
		return "1 dependent names it as its owner"
	}
	return thousands(n) + " dependents name it as their owner"
}

// thousands writes n with thousands separators: 1,560.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isCollectorFinalizer: foregroundDeletion and orphan are the collector's own steps,
// never another controller's hold.
func isCollectorFinalizer(f string) bool {
	return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
}

// knownFinalizers are the finalizers of Kubernetes' own components: who removes each, and
// when.
var knownFinalizers = map[string]string{
	metav1.FinalizerDeleteDependents:              "the garbage collector itself removes it once no blocking dependent remains (a foreground deletion, not a hold)",
	metav1.FinalizerOrphanDependents:              "the garbage collector itself removes it once it has taken this owner out of every dependent (not a hold)",
	"kubernetes.io/pv-protection":                 "the pv-protection controller in kube-controller-manager removes it once no PersistentVolumeClaim is bound to the volume",
	"kubernetes.io/pvc-protection":                "the pvc-protection controller in kube-controller-manager removes it once no Pod uses the claim",
	"customresourcecleanup.apiextensions.k8s.io":  "the apiextensions-apiserver (in kube-apiserver) removes it once every custom resource of this definition is deleted",
	"batch.kubernetes.io/job-tracking":            "the Job controller in kube-controller-manager removes it once it has counted the Pod's outcome",
	"service.kubernetes.io/load-balancer-cleanup": "the service controller (in the cloud-controller-manager) removes it once the cloud load balancer is deleted",
}

// finalizerOwner says who usually removes finalizer f, and when.
func finalizerOwner(f string) string {
	if s, ok := knownFinalizers[f]; ok {
		return s
	}
	prefix, _, ok := strings.Cut(f, "/")
	switch {
	case strings.HasPrefix(f, "external-attacher/"):
		return "the CSI external-attacher of the volume's driver removes it once the volume is detached"
	case strings.HasPrefix(f, "snapshot.storage.kubernetes.io/"):
		return "the CSI snapshot-controller removes it once the snapshot is no longer in use"
	case ok && (prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io")):
		return "a Kubernetes component (" + prefix + ") removes it when its own work on the object is done"
	case ok:
		return "the controller that added it removes it when its own clean-up is done; by convention its prefix, " + prefix + ", names who that is"
	}
	return "the controller that added it removes it when its own clean-up is done (the name has no domain prefix to tell which)"
}

// releaseCommand is the kubectl command that removes finalizer f at index i of o by hand.
// The JSON patch tests the value before removing it, so it fails if the list changed
// instead of removing another finalizer.
func (gc *GarbageCollector) releaseCommand(o ObjectRef, f string, i int) string {
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value,omitempty"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode([]op{{Op: "test", Path: path, Value: f}, {Op: "remove", Path: path}})
	resource := strings.ToLower(o.Kind)
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	if gvr, _, err := gc.apiResource(o.APIVersion, o.Kind); err == nil {
		resource = gvr.Resource
	}
	if gv.Group != "" {
		resource += "." + gv.Group // resource.group: unambiguous across API groups
	}
	cmd := "kubectl patch " + shellQuote(resource) + " " + shellQuote(o.Name)
	if o.Namespace != "" {
		cmd += " -n " + shellQuote(o.Namespace)
	}
	return cmd + " --type=json -p " + shellQuote(strings.TrimSpace(buf.String()))
}

// shellQuote quotes s for a POSIX shell, unless it needs none.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
