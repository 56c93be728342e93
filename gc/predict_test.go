package gc

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPredictDeleteSet: objects deleted together are predicted as the collector acts on
// them together, not as each alone: a ConfigMap two Deployments own stays when one goes
// and goes when both do; under Orphan, a target's dependent that is itself a target is
// deleted, not orphaned; a uid the graph lacks is said missing; one target predicts what
// PredictDelete does.
func TestPredictDeleteSet(t *testing.T) {
	h := newEngineHarness(t, Options{})
	a := deployment("shop", "a", "uid-a")
	b := deployment("shop", "b", "uid-b")
	rsA := replicaSet("shop", "a-1", "uid-rs-a", owned(ownerRefTo(a, blocking, controls)))
	podA := pod("shop", "a-1-x", "uid-pod-a", owned(ownerRefTo(rsA, blocking, controls)))
	shared := configMap("shop", "shared", "uid-shared", owned(ownerRefTo(a), ownerRefTo(b)))
	h.observe(evAdd(a), evAdd(b), evAdd(rsA), evAdd(podA), evAdd(shared))
	uids := func(l []PredictedObject) []types.UID {
		var out []types.UID
		for _, p := range l {
			out = append(out, p.Object.UID)
		}
		slices.Sort(out)
		return out
	}

	one, ok := h.gc.PredictDelete("uid-a", metav1.DeletePropagationBackground)
	if !ok || !slices.Equal(uids(one.Deleted), []types.UID{"uid-a", "uid-pod-a", "uid-rs-a"}) || !slices.Equal(uids(one.Kept), []types.UID{"uid-shared"}) || one.Targets != nil {
		t.Errorf("a alone: deleted %v, kept %v, targets %v; want a, its ReplicaSet and Pod, shared kept by b, no target list", uids(one.Deleted), uids(one.Kept), one.Targets)
	}
	set, missing := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-b", "uid-gone", "uid-a"}, metav1.DeletePropagationBackground)
	if !slices.Equal(uids(set.Deleted), []types.UID{"uid-a", "uid-b", "uid-pod-a", "uid-rs-a", "uid-shared"}) || len(set.Kept) != 0 {
		t.Errorf("a and b together: deleted %v, kept %v; want shared deleted with them", uids(set.Deleted), uids(set.Kept))
	}
	if !slices.Equal(missing, []types.UID{"uid-gone"}) || len(set.Targets) != 2 || set.Target.UID != "uid-a" {
		t.Errorf("missing %v, targets %v (target %s); want uid-gone missing, a and b the targets once each", missing, set.Targets, set.Target.UID)
	}
	orphan, _ := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-rs-a"}, metav1.DeletePropagationOrphan)
	if !slices.Equal(uids(orphan.Deleted), []types.UID{"uid-a", "uid-rs-a"}) || !slices.Equal(uids(orphan.Orphaned), []types.UID{"uid-pod-a", "uid-shared"}) {
		t.Errorf("orphan a and its ReplicaSet: deleted %v, orphaned %v; want the two deleted, the Pod and shared orphaned", uids(orphan.Deleted), uids(orphan.Orphaned))
	}
	fg, _ := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-b"}, metav1.DeletePropagationForeground)
	steps := map[types.UID]int{}
	for _, d := range fg.Deleted {
		steps[d.Object.UID] = d.Step
	}
	if steps["uid-pod-a"] != 1 || steps["uid-rs-a"] != 2 || steps["uid-a"] != 3 || steps["uid-b"] < 1 {
		t.Errorf("foreground steps %v: want the Pod, then its ReplicaSet, then a", steps)
	}
	if _, missing := h.gc.PredictDeleteSet([]types.UID{"uid-gone"}, metav1.DeletePropagationBackground); len(missing) != 1 {
		t.Errorf("only a missing uid: missing %v", missing)
	}
}
