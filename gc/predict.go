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
	Policy string    `json:"policy"`
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
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	target, ok := gc.graph.read(uid)
	if !ok || target.virtual {
		return Prediction{}, false
	}
	p := Prediction{Target: refOf(target.identity), Policy: string(policy)}
	predicted := func(n *node, reason string) PredictedObject {
		return PredictedObject{Object: refOf(n.identity), Reason: reason, Finalizers: HeldBy(n.finalizers)}
	}

	going := map[*node]string{target: "the target"}
	if policy == metav1.DeletePropagationOrphan {
		for _, d := range target.dependentList() {
			p.Orphaned = append(p.Orphaned, predicted(d, "its reference to "+describeNode(target)+" is removed"))
		}
	} else {
		// Grow the set of objects that go until it is stable: a dependent goes when none
		// of its owners outside the set still holds it.
		for changed := true; changed; {
			changed = false
			for n := range going {
				for _, d := range n.dependentList() {
					if _, in := going[d]; in {
						continue
					}
					if holder := gc.solidOwnerOutside(d, going); holder == nil {
						going[d] = "its owners go: " + describeNode(n)
						if d.beingDeleted {
							going[d] = "already being deleted"
						}
						changed = true
					}
				}
			}
		}
		for n := range going {
			for _, d := range n.dependentList() {
				if _, in := going[d]; in || slices.ContainsFunc(p.Kept, func(k PredictedObject) bool { return k.Object.UID == d.identity.UID }) {
					continue
				}
				holder := gc.solidOwnerOutside(d, going)
				p.Kept = append(p.Kept, predicted(d, "owner "+describeNode(holder)+" still holds it"))
			}
		}
	}
	for n, reason := range going {
		po := predicted(n, reason)
		p.Deleted = append(p.Deleted, po)
		if len(po.Finalizers) > 0 {
			p.Waiting = append(p.Waiting, po)
		}
	}
	if policy == metav1.DeletePropagationForeground {
		p.TargetWaitsFor = heldBlockers(target, going, map[*node]bool{})
	}
	for _, list := range [][]PredictedObject{p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor} {
		slices.SortFunc(list, func(a, b PredictedObject) int { return cmp.Compare(a.Object.UID, b.Object.UID) })
	}
	return p, true
}

// solidOwnerOutside returns an owner of n, outside going, that keeps n: observed, in n's
// namespace if namespaced, and not being deleted. Requires graph.mu.
func (gc *GarbageCollector) solidOwnerOutside(n *node, going map[*node]string) *node {
	if n.identity.Namespace == "" {
		// A cluster-scoped object naming namespaced owners only is never collected.
		for _, ref := range n.owners {
			if o, ok := gc.graph.read(ref.UID); ok && o.identity.Namespace != "" {
				return o
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
		return o
	}
	return nil
}

// heldBlockers lists the objects a foreground deletion of n would wait on: blocking
// dependents that go but are held by other finalizers, down the blocking chain.
func heldBlockers(n *node, going map[*node]string, seen map[*node]bool) []PredictedObject {
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
