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
	// references to deleted owners are removed.
	Kept []PredictedObject `json:"kept,omitempty"`
	// Waiting: objects among Deleted that finalizers of other controllers will hold
	// (deletion starts, the object stays until they are removed).
	Waiting []PredictedObject `json:"waiting,omitempty"`
	// TargetWaitsFor: in the foreground, the held objects the target will wait for.
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

	if policy == metav1.DeletePropagationOrphan {
		orphaned := map[*node]bool{}
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
		// Grow the set of objects that go until it is stable: a dependent goes when none
		// of its owners outside the set still holds it. Each object that joins is looked
		// at once, with its dependents: one held by an owner outside is looked at again
		// when that owner joins (it is that owner's dependent too).
		queue := slices.Clone(targets)
		for len(queue) > 0 {
			n := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, d := range n.dependentList() {
				if _, in := going[d]; in {
					continue
				}
				if holder, _ := gc.solidOwnerOutside(d, going); holder == nil {
					going[d] = n
					queue = append(queue, d)
				}
			}
		}
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
	p.Deleted = make([]PredictedObject, 0, len(gone))
	for _, n := range gone {
		reason := "the target"
		if owner := going[n]; owner != nil {
			reason = "its owners go: " + describeNode(owner)
			if n.beingDeleted {
				reason = "already being deleted"
			}
		}
		po := predicted(n, reason)
		p.Deleted = append(p.Deleted, po)
		if len(po.Finalizers) > 0 {
			p.Waiting = append(p.Waiting, po)
		}
	}
	if policy == metav1.DeletePropagationForeground {
		seen := map[*node]bool{}
		for _, t := range targets {
			p.TargetWaitsFor = append(p.TargetWaitsFor, heldBlockers(t, going, seen)...)
		}
		if steps, ok := foregroundSteps(going); ok {
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

// solidOwnerOutside returns an owner of n, outside going, that keeps n: observed, in n's
// namespace if namespaced, and not being deleted; and why n stays. Requires graph.mu.
func (gc *GarbageCollector) solidOwnerOutside(n *node, going map[*node]*node) (*node, string) {
	if n.identity.Namespace == "" {
		// A cluster-scoped object naming a namespaced owner is never collected: the
		// collector refuses the reference as invalid, whatever its other owners do.
		for _, ref := range n.owners {
			if o, ok := gc.graph.read(ref.UID); ok && o.identity.Namespace != "" {
				return o, "its reference to " + describeNode(o) + " is invalid (a cluster-scoped object cannot have a namespaced owner): the collector never collects it"
			}
		}
	}
	for _, ref := range n.owners {
		o, ok := gc.graph.read(ref.UID)
		if !ok || o.virtual || o.beingDeleted {
			continue
		}
		if _, in := going[o]; in {
			continue
		}
		if o.identity.Namespace != "" && o.identity.Namespace != n.identity.Namespace {
			continue // a reference across namespaces counts as absent
		}
		return o, "owner " + describeNode(o) + " still holds it"
	}
	return nil, ""
}

// heldBlockers lists the objects a foreground deletion of n would wait on: blocking
// dependents that go but are held by other finalizers, down the blocking chain.
func heldBlockers(n *node, going map[*node]*node, seen map[*node]bool) []PredictedObject {
	var out []PredictedObject
	for _, d := range n.blockingDependents() {
		if _, in := going[d]; !in || seen[d] {
			continue
		}
		seen[d] = true
		if f := HeldBy(d.finalizers); len(f) > 0 {
			out = append(out, PredictedObject{Object: refOf(d.identity), Finalizers: f,
				Reason: fmt.Sprintf("%s is held by %s %s", describeNode(d), plural(len(f), "finalizer", "finalizers"), strings.Join(f, ", "))})
		}
		out = append(out, heldBlockers(d, going, seen)...)
	}
	return out
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
