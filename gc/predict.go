package gc

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PredictedObject is one object a delete would affect, and how.
type PredictedObject struct {
	Object ObjectRef `json:"object"`
	Reason string    `json:"reason"`
	// Finalizers that would hold it after its deletion starts (other controllers').
	Finalizers []string `json:"finalizers,omitempty"`
	// Step orders the deletions when their order is known (1 goes first); 0: no order.
	Step int `json:"step,omitempty"`
}

// Prediction is what deleting an object with a propagation policy would do, computed from
// the engine's graph as the collector would act on it.
type Prediction struct {
	Target ObjectRef `json:"target"`
	// Targets, for a delete of several objects at once, are all of them (Target is the
	// first).
	Targets []ObjectRef `json:"targets,omitempty"`
	Policy  string      `json:"policy"`
	// Deleted: the target and what goes with it.
	Deleted []PredictedObject `json:"deleted"`
	// Orphaned: dependents that stay, with their reference to the target removed.
	Orphaned []PredictedObject `json:"orphaned,omitempty"`
	// Kept: dependents that stay because another owner still holds them; their
	// references to deleted owners are removed (but for those the collector leaves alone:
	// objects being deleted, and cluster-scoped objects naming a namespaced owner).
	Kept []PredictedObject `json:"kept,omitempty"`
	// Waiting: objects among Deleted that finalizers of other controllers will hold
	// (deletion starts, the object stays until they are removed), and those whose
	// foreground deletion never finishes by itself: it waits for a blocking dependent that
	// never lets go (the object itself, say), and foregroundDeletion, among Finalizers,
	// holds it until it is removed.
	Waiting []PredictedObject `json:"waiting,omitempty"`
	// TargetWaitsFor: in the foreground, the held objects the target will wait for (those
	// held for good by foregroundDeletion too).
	TargetWaitsFor []PredictedObject `json:"targetWaitsFor,omitempty"`
	// Order says in what order the deletions happen, when Deleted's steps tell it.
	Order string `json:"order,omitempty"`
}

// PredictDelete predicts the effect of deleting uid with policy. False if the graph does
// not hold an observed object of that uid.
func (gc *GarbageCollector) PredictDelete(uid types.UID, policy metav1.DeletionPropagation) (Prediction, bool) {
	p, missing := gc.PredictDeleteSet([]types.UID{uid}, policy)
	return p, len(missing) == 0
}

// PredictDeleteSet predicts the effect of deleting all of uids at once with policy, as
// the collector acts when they are deleted together: an object goes when none of its
// owners outside everything that goes still holds it, and what the Orphan policy orphans
// is what the targets own and do not delete themselves. Target is the first of them;
// Targets lists them all. missing are the uids the graph holds no observed object of
// (left out).
func (gc *GarbageCollector) PredictDeleteSet(uids []types.UID, policy metav1.DeletionPropagation) (p Prediction, missing []types.UID) {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	// going: what goes, each with the owner it goes with (nil: a target).
	going := map[*node]*node{}
	var targets []*node
	for _, uid := range uids {
		n, ok := gc.graph.read(uid)
		if !ok || n.virtual {
			missing = append(missing, uid)
			continue
		}
		if _, dup := going[n]; !dup {
			going[n] = nil
			targets = append(targets, n)
		}
	}
	if len(targets) == 0 {
		return Prediction{}, missing
	}
	p = Prediction{Target: refOf(targets[0].identity), Policy: string(policy)}
	if len(targets) > 1 {
		for _, t := range targets {
			p.Targets = append(p.Targets, refOf(t.identity))
		}
	}
	predicted := func(n *node, reason string) PredictedObject {
		return PredictedObject{Object: refOf(n.identity), Reason: reason, Finalizers: HeldBy(n.finalizers)}
	}

	// grow adds to going, from the objects of queue, each dependent that none of its owners
	// outside going still holds, until the set is stable. Each object that joins is looked
	// at once, with its dependents: one held by an owner outside is looked at again when
	// that owner joins (it is that owner's dependent too). skip: dependents left out.
	grow := func(queue []*node, skip map[*node]bool) {
		for len(queue) > 0 {
			n := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, d := range n.dependentList() {
				if _, in := going[d]; in || skip[d] {
					continue
				}
				if held, _ := gc.solidOwnerOutside(d, going); !held {
					going[d] = n
					queue = append(queue, d)
				}
			}
		}
	}
	orphaned := map[*node]bool{}
	if policy == metav1.DeletePropagationOrphan {
		for _, t := range targets {
			for _, d := range t.dependentList() {
				if _, in := going[d]; in || orphaned[d] {
					continue
				}
				orphaned[d] = true
				p.Orphaned = append(p.Orphaned, predicted(d, "its reference to "+describeNode(t)+" is removed"))
			}
		}
	} else {
		grow(slices.Clone(targets), nil)
	}
	// Owners whose foreground deletion, already under way, waits only for objects that go
	// are unblocked by the delete: each goes once they are gone, with what it takes along.
	unblocked := map[*node]*node{}
	for {
		found := gc.unblockedOwners(going)
		if len(found) == 0 {
			break
		}
		var queue []*node
		for owner, blocker := range found {
			going[owner], unblocked[owner] = nil, blocker
			queue = append(queue, owner)
		}
		sortNodes(queue)
		grow(queue, orphaned)
	}
	if policy != metav1.DeletePropagationOrphan {
		kept := map[*node]bool{}
		for n := range going {
			for _, d := range n.dependentList() {
				if _, in := going[d]; in || kept[d] {
					continue
				}
				kept[d] = true
				_, why := gc.solidOwnerOutside(d, going)
				p.Kept = append(p.Kept, predicted(d, why))
			}
		}
	}
	// In uid order (sorted as nodes: a PredictedObject is large to move), reasons said
	// once each.
	gone := make([]*node, 0, len(going))
	for n := range going {
		gone = append(gone, n)
	}
	slices.SortFunc(gone, func(a, b *node) int { return cmp.Compare(a.identity.UID, b.identity.UID) })
	isTarget := make(map[*node]bool, len(targets))
	for _, t := range targets {
		isTarget[t] = true
	}
	stuck := gc.neverFinishing(going, isTarget, policy)
	p.Deleted = make([]PredictedObject, 0, len(gone))
	for _, n := range gone {
		reason := "the target"
		if blocker := unblocked[n]; blocker != nil {
			reason = "its foreground deletion waits only for objects that go: " + describeNode(blocker)
		} else if owner := going[n]; owner != nil {
			reason = "its owners go: " + describeNode(owner)
			if n.beingDeleted {
				reason = "already being deleted"
			}
		}
		po := predicted(n, reason)
		if why := stuck[n]; why != "" {
			po.Finalizers = append(po.Finalizers, metav1.FinalizerDeleteDependents)
			p.Deleted = append(p.Deleted, po)
			po.Reason = why
			p.Waiting = append(p.Waiting, po)
			continue
		}
		p.Deleted = append(p.Deleted, po)
		if len(po.Finalizers) > 0 {
			p.Waiting = append(p.Waiting, po)
		}
	}
	if policy == metav1.DeletePropagationForeground {
		seen := map[*node]bool{}
		for _, t := range targets {
			p.TargetWaitsFor = append(p.TargetWaitsFor, heldBlockers(t, going, stuck, seen)...)
		}
		if steps, ok := foregroundSteps(going); ok && gc.orderIsSure(going, isTarget) {
			for i := range p.Deleted {
				p.Deleted[i].Step = steps[p.Deleted[i].Object.UID]
			}
			p.Order = fmt.Sprintf("the objects nothing waits on first (step 1), then each owner once its blocking dependents are gone, %s last (step %d)", describeNode(targets[0]), steps[targets[0].identity.UID])
			if len(targets) > 1 {
				p.Order = "the objects nothing waits on first (step 1), then each owner once its blocking dependents are gone, each target once what it waits on is"
			}
		}
	}
	byStep := func(a, b PredictedObject) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Object.UID, b.Object.UID))
	}
	for _, list := range [][]PredictedObject{p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor} {
		if !slices.IsSortedFunc(list, byStep) { // Deleted and Waiting are, but for steps
			slices.SortFunc(list, byStep)
		}
	}
	return p, missing
}

// foregroundSteps orders the removals of a foreground deletion, in which every
// object that goes is deleted in the foreground (its owner waits for its dependents, as
// upstream's attemptToDeleteItem does): an object is removed once its blocking dependents
// (blockOwnerDeletion) are, so its step is one more than theirs; an object that waits for
// none goes at step 1. False on a cycle of blocking references (no order then). Requires
// graph.mu.
func foregroundSteps(going map[*node]*node) (map[types.UID]int, bool) {
	steps := make(map[types.UID]int, len(going))
	visiting := map[*node]bool{}
	var step func(n *node) (int, bool)
	step = func(n *node) (int, bool) {
		if s, ok := steps[n.identity.UID]; ok {
			return s, true
		}
		if visiting[n] {
			return 0, false
		}
		visiting[n] = true
		s := 1
		for _, d := range n.blockingDependents() {
			if _, in := going[d]; !in {
				continue
			}
			ds, ok := step(d)
			if !ok {
				return 0, false
			}
			s = max(s, ds+1)
		}
		steps[n.identity.UID] = s
		return s, true
	}
	for n := range going {
		if _, ok := step(n); !ok {
			return nil, false
		}
	}
	return steps, true
}

// unblockedOwners finds the owners, outside going, whose foreground deletion is under
// way (being deleted with foregroundDeletion) and whose blocking dependents all go (one of
// them at least): each with one of them. It looks at the objects being deleted, which the
// graph keeps counted (few, against what a delete of many takes along). Requires graph.mu.
func (gc *GarbageCollector) unblockedOwners(going map[*node]*node) map[*node]*node {
	found := map[*node]*node{}
	for _, o := range gc.graph.counts.deleting {
		if o.virtual || !slices.Contains(o.finalizers, metav1.FinalizerDeleteDependents) {
			continue
		}
		if _, in := going[o]; in {
			continue
		}
		blockers := o.blockingDependents()
		if len(blockers) > 0 && !slices.ContainsFunc(blockers, func(b *node) bool { _, in := going[b]; return !in }) {
			found[o] = blockers[0]
		}
	}
	return found
}

// orderIsSure reports whether, in a Foreground delete, every owner that goes surely waits
// for each of its blocking dependents that go, so that foregroundSteps' order holds. The
// collector decides a dependent when an owner's deletion starts; it deletes it in the
// foreground, and the owner waits for it, only if no owner of it still stands then, and
// the owner is itself deleted in the foreground. So each such dependent must have that
// owner as its only observed owner (another one that goes may still stand when it is
// decided: it would drop its reference to the waiting owner), and the owner must surely be
// deleted in the foreground: already so, a target that nothing else deletes first (a
// target with an owner that goes may be collected in the background before its own delete
// arrives), or a dependent that surely blocks such an owner. Requires graph.mu.
func (gc *GarbageCollector) orderIsSure(going map[*node]*node, isTarget map[*node]bool) bool {
	// onlyOwner is n's only observed owner other than itself, if it has exactly one.
	onlyOwner := func(n *node) *node {
		var only *node
		for _, ref := range n.owners {
			o, ok := gc.graph.read(ref.UID)
			if !ok || o.virtual || o == n || o == only {
				continue
			}
			if only != nil {
				return nil
			}
			only = o
		}
		return only
	}
	sure := map[*node]bool{}
	visiting := map[*node]bool{}
	var foreground func(n *node) bool
	foreground = func(n *node) bool {
		if v, ok := sure[n]; ok {
			return v
		}
		if visiting[n] {
			return false
		}
		visiting[n] = true
		v := false
		switch {
		case n.beingDeleted && slices.Contains(n.finalizers, metav1.FinalizerDeleteDependents):
			v = true
		case isTarget[n] && !slices.ContainsFunc(n.owners, func(ref metav1.OwnerReference) bool {
			o, ok := gc.graph.read(ref.UID)
			_, goes := going[o]
			return ok && o != n && goes
		}):
			v = true
		default:
			if o := onlyOwner(n); o != nil && n.blocks(o) {
				_, goes := going[o]
				v = goes && foreground(o)
			}
		}
		sure[n] = v
		return v
	}
	for n := range going {
		for _, d := range n.blockingDependents() {
			if _, goes := going[d]; !goes || d == n {
				continue
			}
			if onlyOwner(d) != n || !foreground(n) {
				return false
			}
		}
	}
	return true
}

// blocks reports whether n names owner with blockOwnerDeletion.
func (n *node) blocks(owner *node) bool {
	return slices.ContainsFunc(n.owners, func(ref metav1.OwnerReference) bool {
		return ref.UID == owner.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
	})
}

// solidOwnerOutside reports whether an owner of n, outside going, keeps n (observed, in
// n's namespace if namespaced, and not deleting its dependents in the foreground: one being
// deleted otherwise still holds n until it is gone), or an invalid reference does; and why
// n stays. Requires graph.mu.
func (gc *GarbageCollector) solidOwnerOutside(n *node, going map[*node]*node) (held bool, why string) {
	if n.identity.Namespace == "" {
		// A cluster-scoped object naming a namespaced owner is never collected: the
		// collector refuses the reference as invalid, whatever its other owners do.
		for _, ref := range n.owners {
			if gc.namesNamespacedKind(ref) {
				return true, "its reference to " + ref.Kind + " " + ref.Name + " is invalid (a cluster-scoped object cannot have a namespaced owner): the collector never collects it"
			}
		}
	}
	for _, ref := range n.owners {
		o, ok := gc.graph.read(ref.UID)
		if !ok || o.virtual {
			continue
		}
		if o.beingDeleted && slices.Contains(o.finalizers, metav1.FinalizerDeleteDependents) {
			continue // its foreground deletion waits for its dependents to go
		}
		if _, in := going[o]; in {
			continue
		}
		if o.identity.Namespace != "" && o.identity.Namespace != n.identity.Namespace {
			continue // a reference across namespaces counts as absent
		}
		if o.beingDeleted {
			if o == n {
				continue // it goes with its own deletion, which holds nothing
			}
			// The collector takes an owner for solid until it is gone.
			return true, "owner " + describeNode(o) + " still holds it: being deleted, it stays until its finalizers are removed (then this goes too)"
		}
		return true, "owner " + describeNode(o) + " still holds it"
	}
	return false, ""
}

// heldBlockers lists the objects a foreground deletion of n would wait on: blocking
// dependents that go but are held by other finalizers, or whose own foreground deletion
// never finishes (stuck), down the blocking chain.
func heldBlockers(n *node, going map[*node]*node, stuck map[*node]string, seen map[*node]bool) []PredictedObject {
	var out []PredictedObject
	for _, d := range n.blockingDependents() {
		if _, in := going[d]; !in || seen[d] || d == n {
			continue
		}
		seen[d] = true
		f := HeldBy(d.finalizers)
		switch {
		case stuck[d] != "":
			out = append(out, PredictedObject{Object: refOf(d.identity), Finalizers: append(f, metav1.FinalizerDeleteDependents),
				Reason: describeNode(d) + " never finishes its foreground deletion: " + stuck[d]})
		case len(f) > 0:
			out = append(out, PredictedObject{Object: refOf(d.identity), Finalizers: f,
				Reason: fmt.Sprintf("%s is held by %s %s", describeNode(d), plural(len(f), "finalizer", "finalizers"), strings.Join(f, ", "))})
		}
		out = append(out, heldBlockers(d, going, stuck, seen)...)
	}
	return out
}

// neverFinishing finds the objects of going whose foreground deletion would wait for a
// blocking dependent that keeps its reference for good, with why: the object itself (it
// names itself as a blocking owner), a cluster-scoped dependent naming a namespaced owner
// (the collector never acts on it), or a dependent that stays and is being deleted, held
// by its own finalizers (the collector leaves it alone until it is gone). Such an object
// stays, foregroundDeletion on it, until that finalizer is removed. An object is deleted
// in the foreground when it is a target of a Foreground delete, when it is already being
// deleted so, or, in a Foreground delete, when it goes with its owners (its owner waits for
// its dependents). Requires graph.mu.
func (gc *GarbageCollector) neverFinishing(going map[*node]*node, isTarget map[*node]bool, policy metav1.DeletionPropagation) map[*node]string {
	stuck := map[*node]string{}
	// Outside a Foreground delete, only objects already being deleted can be deleted in
	// the foreground: the graph keeps them counted.
	candidates := gc.graph.counts.deleting
	if policy == metav1.DeletePropagationForeground {
		candidates = make(map[types.UID]*node, len(going))
		for n := range going {
			candidates[n.identity.UID] = n
		}
	}
	for _, n := range candidates {
		if _, goes := going[n]; !goes {
			continue
		}
		foreground := policy == metav1.DeletePropagationForeground
		if n.beingDeleted && !isTarget[n] {
			foreground = slices.Contains(n.finalizers, metav1.FinalizerDeleteDependents)
		}
		if !foreground {
			continue
		}
		for _, d := range n.blockingDependents() {
			_, goes := going[d]
			switch {
			case d == n:
				stuck[n] = "it names itself as a blocking owner, so its foreground deletion waits for itself"
			case goes:
				continue
			case d.beingDeleted && !d.deletingDependents:
				stuck[n] = "its foreground deletion waits for " + describeNode(d) + ", which stays (another owner holds it) until its own finalizers let it go"
			case d.identity.Namespace == "" && gc.namesNamespacedOwner(d):
				stuck[n] = "its foreground deletion waits for " + describeNode(d) + ", a cluster-scoped object naming a namespaced owner, which the collector never acts on"
			default:
				continue
			}
			break
		}
	}
	return stuck
}

// namesNamespacedOwner reports whether n names an owner of a namespaced kind. Requires
// graph.mu.
func (gc *GarbageCollector) namesNamespacedOwner(n *node) bool {
	return slices.ContainsFunc(n.owners, gc.namesNamespacedKind)
}

// namesNamespacedKind reports whether ref names a namespaced kind: per the REST mapper, as
// the collector decides, whether the owner exists or not; for a kind it cannot map, per
// the owner the graph observed. Requires graph.mu.
func (gc *GarbageCollector) namesNamespacedKind(ref metav1.OwnerReference) bool {
	if _, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind); err == nil {
		return namespaced
	}
	o, ok := gc.graph.read(ref.UID)
	return ok && !o.virtual && o.identity.Namespace != ""
}

// HeldBy keeps the finalizers of other controllers than the collector (not
// foregroundDeletion or orphan).
func HeldBy(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if !isCollectorFinalizer(f) {
			out = append(out, f)
		}
	}
	return out
}

func describeNode(n *node) string {
	if n == nil {
		return "?"
	}
	return n.identity.Kind + " " + n.identity.Name
}
