package gc

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The summary counts what the snapshot lists: per namespace and kind, the objects, those
// being deleted, those waiting for dependents (foreground) and owners only named; at the
// snapshot's seq.
func TestSummaryCountsTheGraph(t *testing.T) {
	dep := deployment("a", "web", "uid-dep", deleting(), finalized(metav1.FinalizerDeleteDependents))
	rs := replicaSet("a", "web-1", "uid-rs", owned(ownerRefTo(dep, blocking)))
	h := newEngineHarness(t, Options{})
	h.observe(evAdd(rs), evAdd(dep),
		evAdd(pod("a", "web-1-x", "uid-p1", owned(ownerRefTo(rs)))),
		evAdd(pod("a", "web-1-y", "uid-p2", owned(ownerRefTo(rs)), deleting())),
		evAdd(pod("b", "solo", "uid-p3")),
		evAdd(configMap("b", "cm", "uid-cm", owned(ownerRefTo(configMap("b", "gone", "uid-gone")))))) // owner never seen: virtual

	snap := h.gc.Snapshot()
	sum := h.gc.Summary()
	if sum.Seq != snap.Seq {
		t.Errorf("summary at seq %d, snapshot at %d", sum.Seq, snap.Seq)
	}
	var counted Summarizer
	for i := range snap.Nodes {
		counted.Add(&snap.Nodes[i])
	}
	want := []SummaryGroup{
		{Namespace: "a", APIVersion: "apps/v1", Kind: "Deployment", Objects: 1, BeingDeleted: 1, DeletingDependents: 1},
		{Namespace: "a", APIVersion: "apps/v1", Kind: "ReplicaSet", Objects: 1},
		{Namespace: "a", APIVersion: "v1", Kind: "Pod", Objects: 2, BeingDeleted: 1},
		{Namespace: "b", APIVersion: "v1", Kind: "ConfigMap", Objects: 2, Virtual: 1},
		{Namespace: "b", APIVersion: "v1", Kind: "Pod", Objects: 1},
	}
	for name, got := range map[string]Summary{"Summary": sum, "the snapshot counted": counted.Summary(snap.Seq)} {
		if len(got.Groups) != len(want) {
			t.Errorf("%s: %+v, want %+v", name, got.Groups, want)
			continue
		}
		for i := range want {
			if got.Groups[i] != want[i] {
				t.Errorf("%s group %d: %+v, want %+v", name, i, got.Groups[i], want[i])
			}
		}
	}
}
