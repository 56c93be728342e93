package gc

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The summary counts what the snapshot lists: per namespace and kind, the objects, those
// being deleted, those waiting for dependents (foreground) and owners only named; at the
// snapshot's seq. The counts are kept as the graph changes, so they are checked after
// every step: adds, a deletion starting, a virtual owner observed, a virtual owner's
// identity replaced, removals.
func TestSummaryCountsTheGraph(t *testing.T) {
	h := newEngineHarness(t, Options{})
	check := func(step string, want []SummaryGroup) {
		t.Helper()
		snap, sum := h.gc.Snapshot(), h.gc.Summary()
		if sum.Seq != snap.Seq {
			t.Errorf("%s: summary at seq %d, snapshot at %d", step, sum.Seq, snap.Seq)
		}
		var counted Summarizer
		for i := range snap.Nodes {
			counted.Add(&snap.Nodes[i])
		}
		if got := counted.Summary(snap.Seq).Groups; !slices.Equal(sum.Groups, got) {
			t.Errorf("%s: the counts kept %+v, the snapshot counted %+v", step, sum.Groups, got)
		}
		if want != nil && !slices.Equal(sum.Groups, want) {
			t.Errorf("%s: %+v, want %+v", step, sum.Groups, want)
		}
		// The kept indexes answer what a walk of the snapshot does: the objects being
		// deleted (the stuck list's) and each namespace's observed objects.
		observed := slices.DeleteFunc(slices.Clone(snap.Nodes), func(n NodeState) bool { return n.Virtual })
		walked := slices.DeleteFunc(slices.Clone(observed), func(n NodeState) bool { return !n.BeingDeleted })
		if got := h.gc.BeingDeleted(); !sameStates(got, walked) {
			t.Errorf("%s: BeingDeleted() = %v, the snapshot has %v", step, stateUIDs(got), stateUIDs(walked))
		}
		// The groups' members are the index SnapshotOf reads: each namespace's nodes.
		for _, ns := range []string{"a", "b", "c", "d", ""} {
			inNS := slices.DeleteFunc(slices.Clone(observed), func(n NodeState) bool { return n.Namespace != ns })
			if got := h.gc.InNamespace(ns); !sameStates(got, inNS) {
				t.Errorf("%s: InNamespace(%q) = %v, the snapshot has %v", step, ns, stateUIDs(got), stateUIDs(inNS))
			}
			// The engine's workers may publish (a queue transition) between two reads: compare
			// reads made at one seq.
			at, of := snap, h.gc.SnapshotOf([]string{ns}, nil)
			for tries := 0; of.Seq != at.Seq && tries < 100; tries++ {
				at, of = h.gc.Snapshot(), h.gc.SnapshotOf([]string{ns}, nil)
			}
			in := slices.DeleteFunc(slices.Clone(at.Nodes), func(n NodeState) bool { return n.Namespace != ns })
			if of.Seq != at.Seq || !reflect.DeepEqual(of.Nodes, in) {
				t.Errorf("%s: SnapshotOf(%q) at %d has %v, the snapshot at %d %v", step, ns, of.Seq, stateUIDs(of.Nodes), at.Seq, stateUIDs(in))
			}
		}
	}
	dep := deployment("a", "web", "uid-dep", deleting(), finalized(metav1.FinalizerDeleteDependents))
	rs := replicaSet("a", "web-1", "uid-rs", owned(ownerRefTo(dep, blocking)))
	p1 := pod("a", "web-1-x", "uid-p1", owned(ownerRefTo(rs)))
	p2 := pod("a", "web-1-y", "uid-p2", owned(ownerRefTo(rs)))
	gone := configMap("b", "gone", "uid-gone")
	cm := configMap("b", "cm", "uid-cm", owned(ownerRefTo(gone)))
	h.observe(evAdd(rs), evAdd(dep), evAdd(p1), evAdd(p2), evAdd(pod("b", "solo", "uid-p3")), evAdd(cm))
	// A uid's component: its owners and dependents, transitively, whatever the namespace.
	if got := stateUIDs(h.gc.SnapshotOf(nil, []types.UID{"uid-p1"}).Nodes); !slices.Equal(got, []types.UID{"uid-dep", "uid-p1", "uid-p2", "uid-rs"}) {
		t.Errorf("SnapshotOf(uid-p1) = %v, want its Deployment, ReplicaSet and both Pods", got)
	}
	check("added", []SummaryGroup{
		{Namespace: "a", APIVersion: "apps/v1", Kind: "Deployment", Objects: 1, BeingDeleted: 1, DeletingDependents: 1},
		{Namespace: "a", APIVersion: "apps/v1", Kind: "ReplicaSet", Objects: 1},
		{Namespace: "a", APIVersion: "v1", Kind: "Pod", Objects: 2},
		{Namespace: "b", APIVersion: "v1", Kind: "ConfigMap", Objects: 2, Virtual: 1}, // gone: only named
		{Namespace: "b", APIVersion: "v1", Kind: "Pod", Objects: 1},
	})
	h.observe(evUpdate(p2, changed(p2, deleting())))
	check("a Pod's deletion started", nil)
	h.observe(evAdd(gone))
	check("the virtual owner observed", nil)
	h.observe(evDelete(p1), evDelete(changed(p2, deleting())), evDelete(dep))
	check("removed", nil)
	// A virtual owner named by two identities: the one it has is proven absent, so it
	// takes the other (a replacement node).
	lost := deployment("c", "lost", "uid-lost")
	byDeployment := configMap("c", "one", "uid-one", owned(ownerRefTo(lost)))
	byReplicaSet := configMap("c", "two", "uid-two", owned(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "lost", UID: "uid-lost"}))
	h.observe(evAdd(byDeployment), evAdd(byReplicaSet))
	check("a virtual owner named twice", nil)
	h.gc.graph.mu.RLock()
	first := h.gc.graph.uidToNode["uid-lost"].identity
	h.gc.graph.mu.RUnlock()
	h.observe(evVirtualDelete(first))
	h.gc.graph.mu.RLock()
	then := h.gc.graph.uidToNode["uid-lost"].identity
	h.gc.graph.mu.RUnlock()
	if then == first {
		t.Fatalf("the virtual owner kept the identity %v proven absent", first)
	}
	check("its identity replaced", nil)
	h.observe(evDelete(byDeployment), evDelete(byReplicaSet))
	check("its dependents removed", nil)
	// The same with two names of one kind: the replacement stays in its group.
	misnamed := deployment("d", "right", "uid-misnamed")
	byWrong := configMap("d", "one", "uid-d1", owned(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "wrong", UID: "uid-misnamed"}))
	byRight := configMap("d", "two", "uid-d2", owned(ownerRefTo(misnamed)))
	h.observe(evAdd(byWrong), evAdd(byRight))
	h.gc.graph.mu.RLock()
	first = h.gc.graph.uidToNode["uid-misnamed"].identity
	h.gc.graph.mu.RUnlock()
	h.observe(evVirtualDelete(first))
	check("a virtual owner renamed in its group", nil)
}

// sameStates: the same nodes in the same order (nil and empty alike).
func sameStates(a, b []NodeState) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func stateUIDs(nodes []NodeState) []types.UID {
	out := make([]types.UID, len(nodes))
	for i := range nodes {
		out[i] = nodes[i].UID
	}
	return out
}
