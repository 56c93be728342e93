package gc

// The attemptToOrphan worker: an owner deleted with propagationPolicy=Orphan has its
// dependents' references to it removed, then its orphan finalizer.

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (gc *GarbageCollector) runAttemptToOrphanWorker(ctx context.Context) {
	for gc.processAttemptToOrphanWorker(ctx) {
	}
}

func (gc *GarbageCollector) processAttemptToOrphanWorker(ctx context.Context) bool {
	item, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(item)
	err := gc.attemptToOrphanItem(ctx, item)
	if err != nil && ctx.Err() == nil {
		gc.requeue(AttemptToOrphan, item, err.Error())
		gc.attemptToOrphan.AddRateLimited(item)
		return true
	}
	gc.attemptToOrphan.Forget(item)
	return true
}

// attemptToOrphanItem removes the owner's reference from all its dependents, then the
// orphan finalizer from the owner, which lets the apiserver delete it.
func (gc *GarbageCollector) attemptToOrphanItem(ctx context.Context, owner *node) error {
	gc.graph.mu.RLock()
	deps := owner.dependentList()
	refs := make([]objectReference, len(deps))
	for i, d := range deps {
		refs[i] = d.identity
	}
	controller := controllerOf(deps, owner.identity.UID)
	gc.graph.mu.RUnlock()
	if err := gc.orphanDependents(ctx, owner.identity, refs, controller); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, AttemptToOrphan, owner.identity, metav1.FinalizerOrphanDependents,
		fmt.Sprintf("%d dependents orphaned", len(refs)))
}

// controllerOf reports which of deps name owner as their controller. Requires graph.mu.
func controllerOf(deps []*node, owner types.UID) []bool {
	out := make([]bool, len(deps))
	for i, d := range deps {
		out[i] = slices.ContainsFunc(d.owners, func(r metav1.OwnerReference) bool { return r.UID == owner && isController(r) })
	}
	return out
}
