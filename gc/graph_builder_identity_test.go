package gc

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/testkit"
)

// How the graph builder treats owner identities: virtual owners whose identity switches,
// observed owners a reference disagrees with, references across namespaces.

func TestGraphBuilderVirtualIdentitySwitching(t *testing.T) {
	h := newBuilderHarness(t)
	// Two dependents name owner uid-u with different kinds and names.
	asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u", BlockOwnerDeletion: ptr.To(true)}
	asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
	p1 := pod("a", "p1", "uid-p1", owned(asRS))
	p2 := pod("a", "p2", "uid-p2", owned(asDeploy))
	rsIdentity := refIdentity("apps/v1", "ReplicaSet", "a", "rs-x", "uid-u")
	deployIdentity := refIdentity("apps/v1", "Deployment", "a", "d-x", "uid-u")

	h.step(evAdd(p1))
	v := h.node("uid-u")
	if v.identity != rsIdentity || !v.virtual {
		t.Fatalf("virtual owner = %s (virtual %v), want %s", v.identity, v.virtual, rsIdentity)
	}
	expectQueued(t, "attemptToDelete after the first dependent", h.gb.attemptToDelete, "uid-u")
	h.step(evAdd(p2))
	drainQueue(h.gb.attemptToDelete) // whether p2 is queued here is checked by TestGraphBuilderQueuesDependentWhoseReferenceMismatchesOwner
	if h.node("uid-u") != v || v.identity != rsIdentity {
		t.Fatalf("the second dependent changed the owner node: %s", h.node("uid-u").identity)
	}
	expectDependents(t, v, "uid-p1", "uid-p2")

	// A worker found the ReplicaSet identity absent.
	evs := h.step(evVirtualDelete(rsIdentity))
	r := h.node("uid-u")
	if r == v {
		t.Error("the node was changed in place; its identity must change by replacement")
	}
	if r.identity != deployIdentity {
		t.Errorf("identity after the virtual delete = %s, want the alternate %s", r.identity, deployIdentity)
	}
	if !r.virtual {
		t.Error("the replacement is not virtual")
	}
	if v.identity != rsIdentity {
		t.Errorf("the replaced node's identity changed to %s", v.identity)
	}
	expectDependents(t, r, "uid-p1", "uid-p2")
	if h.gb.graph.virtuals != 1 {
		t.Errorf("virtuals = %d, want 1", h.gb.graph.virtuals)
	}
	if !h.gb.absentOwnerCache.Has(rsIdentity) {
		t.Errorf("absent-owner cache lacks %s", rsIdentity)
	}
	if h.gb.absentOwnerCache.Has(deployIdentity) {
		t.Errorf("absent-owner cache holds %s, which nobody verified", deployIdentity)
	}
	// The dependent naming the absent identity is queued now; the replacement with backoff.
	q := queueEvents(evs, AttemptToDelete)
	var p1Added, rAddedAfter, rAddedEarly bool
	for _, e := range q {
		switch {
		case e.Object.UID == "uid-p1" && e.Op == QueueAdded:
			p1Added = true
		case e.Object.UID == "uid-u" && e.Op == QueueAddedAfter:
			rAddedAfter = true
			if e.Object.Kind != "Deployment" || e.Object.Name != "d-x" || e.Delay <= 0 || e.Retries < 1 {
				t.Errorf("addedAfter event = %+v, want the Deployment identity with a positive delay and a retry count", e)
			}
		case e.Object.UID == "uid-u" && e.Op == QueueAdded && !rAddedAfter:
			rAddedEarly = true
		case e.Object.UID == "uid-p2":
			t.Errorf("the dependent naming the unverified identity was queued: %+v", e)
		}
	}
	if !p1Added {
		t.Errorf("feed: p1 was not queued to attemptToDelete: %+v", q)
	}
	if !rAddedAfter || rAddedEarly {
		t.Errorf("feed: the replacement must be queued with AddRateLimited (addedAfter, then added): %+v", q)
	}
	var upd *NodeState
	for _, e := range evs {
		if e.Type == NodeUpdated && e.Node.UID == "uid-u" {
			upd = e.Node
		}
	}
	if upd == nil || upd.Kind != "Deployment" || upd.Name != "d-x" || !upd.Virtual {
		t.Errorf("feed: node update = %+v, want the virtual Deployment identity", upd)
	}
	// p1 now; the replacement after its backoff.
	got := drainQueue(h.gb.attemptToDelete)
	if len(got) == 0 || got[0].identity.UID != "uid-p1" {
		t.Errorf("attemptToDelete = %v, want p1 first", uidsOf(got))
	}
	sawReplacement := slices.Contains(got, r)
	deadline := time.Now().Add(5 * time.Second)
	for !sawReplacement && time.Now().Before(deadline) {
		if testkit.Poll(context.Background(), time.Until(deadline), func() bool { return h.gb.attemptToDelete.Len() > 0 }) != nil {
			break
		}
		n, _ := h.gb.attemptToDelete.Get()
		h.gb.attemptToDelete.Done(n)
		if n != r {
			t.Errorf("queued %s, want only the replacement node", n.identity)
		}
		sawReplacement = n == r
	}
	if !sawReplacement {
		t.Fatal("the replacement node never reached attemptToDelete after its backoff")
	}

	// The Deployment identity is absent too: the next identity is tried (the cycle returns
	// to the ReplicaSet, which p1 still names), and p2 is queued.
	h.step(evVirtualDelete(deployIdentity))
	r2 := h.node("uid-u")
	if r2.identity != rsIdentity || !r2.virtual || r2 == r {
		t.Errorf("after the second virtual delete: %s virtual=%v replaced=%v, want a replacement with %s", r2.identity, r2.virtual, r2 != r, rsIdentity)
	}
	if !h.gb.absentOwnerCache.Has(deployIdentity) {
		t.Errorf("absent-owner cache lacks %s", deployIdentity)
	}
	if got := drainQueue(h.gb.attemptToDelete); len(got) == 0 || got[0].identity.UID != "uid-p2" {
		t.Errorf("attemptToDelete = %v, want p2 first", uidsOf(got))
	}

	// The dependents go; a virtual delete of an owner nobody names removes it.
	h.step(evDelete(p1))
	h.step(evDelete(p2))
	expectDependents(t, h.node("uid-u"))
	h.step(evVirtualDelete(rsIdentity))
	if h.hasNode("uid-u") {
		t.Error("a virtual owner without dependents survived its virtual delete")
	}
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
}

func TestGraphBuilderVirtualDeleteOfOtherIdentityKeepsObservedOwner(t *testing.T) {
	h := newBuilderHarness(t)
	rs := replicaSet("a", "rs-x", "uid-u")
	good := pod("a", "good", "uid-good", owned(ownerRefTo(rs)))
	badRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other-name", UID: "uid-u"}
	bad := pod("a", "bad", "uid-bad", owned(badRef))
	for _, o := range []*metav1.PartialObjectMetadata{rs, good, bad} {
		h.step(evAdd(o))
	}
	drainQueue(h.gb.attemptToDelete)
	n := h.node("uid-u")

	// A worker verified the coordinates bad uses are absent.
	absent := refIdentity("apps/v1", "ReplicaSet", "a", "other-name", "uid-u")
	h.step(evVirtualDelete(absent))
	if h.node("uid-u") != n || n.virtual || n.identity != identityOf(rs) {
		t.Errorf("the observed owner changed: %s virtual=%v", h.node("uid-u").identity, h.node("uid-u").virtual)
	}
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-bad")
	if !h.gb.absentOwnerCache.Has(absent) {
		t.Errorf("absent-owner cache lacks %s", absent)
	}
	if h.gb.absentOwnerCache.Has(identityOf(rs)) {
		t.Error("absent-owner cache holds the observed owner")
	}
}

func TestGraphBuilderObservedOwnerIdentityMismatchQueuesDisagreeingDependents(t *testing.T) {
	h := newBuilderHarness(t)
	asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
	asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u"}
	p2 := pod("a", "p2", "uid-p2", owned(asDeploy)) // names the owner first, with the wrong kind
	p1 := pod("a", "p1", "uid-p1", owned(asRS))
	p3 := pod("b", "p3", "uid-p3", owned(asRS)) // right coordinates, wrong namespace
	h.step(evAdd(p2))
	h.step(evAdd(p1))
	h.step(evAdd(p3))
	v := h.node("uid-u")
	if v.identity != refIdentity("apps/v1", "Deployment", "a", "d-x", "uid-u") {
		t.Fatalf("virtual identity = %s, want the first dependent's", v.identity)
	}
	drainQueue(h.gb.attemptToDelete)
	if len(h.warnings) != 0 {
		t.Errorf("warnings before the owner is observed: %+v, want none (the owner is virtual)", h.warnings)
	}

	rs := replicaSet("a", "rs-x", "uid-u")
	h.step(evAdd(rs))
	n := h.node("uid-u")
	if n.virtual || n.identity != identityOf(rs) {
		t.Errorf("owner = %s virtual=%v, want the observed %s", n.identity, n.virtual, identityOf(rs))
	}
	if n == v {
		t.Error("the node's identity was changed in place; it must be replaced")
	}
	expectDependents(t, n, "uid-p1", "uid-p2", "uid-p3")
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
	// The dependents that disagree with the observed coordinates are checked again.
	expectQueuedSet(t, "attemptToDelete", h.gb.attemptToDelete, "uid-p2", "uid-p3")
	// p3's namespaced owner lives in another namespace: a Warning.
	if len(h.warnings) != 1 {
		t.Fatalf("warnings = %+v, want one for p3", h.warnings)
	}
	w := h.warnings[0]
	if w.obj != identityOf(p3) || w.reason != "OwnerRefInvalidNamespace" {
		t.Errorf("warning = %+v, want OwnerRefInvalidNamespace on %s", w, identityOf(p3))
	}
}

func TestGraphBuilderDependentInOtherNamespaceThanObservedOwnerWarns(t *testing.T) {
	h := newBuilderHarness(t)
	rs := replicaSet("a", "rs", "uid-rs")
	h.step(evAdd(rs))
	p := pod("b", "p", "uid-p", owned(ownerRefTo(rs)))
	h.step(evAdd(p))
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-p")
	if len(h.warnings) != 1 || h.warnings[0].obj != identityOf(p) || h.warnings[0].reason != "OwnerRefInvalidNamespace" {
		t.Errorf("warnings = %+v, want one OwnerRefInvalidNamespace on %s", h.warnings, identityOf(p))
	}
	// A cluster-scoped owner may own objects of any namespace.
	h2 := newBuilderHarness(t)
	ns := testObject("v1", "Namespace", "", "team", "uid-ns")
	h2.step(evAdd(ns))
	h2.step(evAdd(pod("b", "p", "uid-p", owned(ownerRefTo(ns)))))
	expectQueued(t, "attemptToDelete for a cluster-scoped owner", h2.gb.attemptToDelete)
	if len(h2.warnings) != 0 {
		t.Errorf("warnings for a cluster-scoped owner = %+v, want none", h2.warnings)
	}
}

// Upstream's addDependentToOwners queues a dependent whose reference to a node already in
// the graph disagrees with that node's coordinates (the "good parent, then bad child"
// order; the opposite order is handled when the owner is observed), and one whose
// cluster-scoped virtual owner was named from another namespace (issue #98040): the
// collector verifies such references, and collects the dependent if they are dangling.
func TestGraphBuilderQueuesDependentWhoseReferenceMismatchesOwner(t *testing.T) {
	t.Run("observed owner", func(t *testing.T) {
		h := newBuilderHarness(t)
		rs := replicaSet("a", "rs-x", "uid-u")
		h.step(evAdd(rs))
		wrongName := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "not-rs-x", UID: "uid-u"}
		h.step(evAdd(pod("a", "bad", "uid-bad", owned(wrongName))))
		expectQueued(t, "attemptToDelete after a dependent naming uid-u with another name", h.gb.attemptToDelete, "uid-bad")
	})
	t.Run("virtual owner", func(t *testing.T) {
		h := newBuilderHarness(t)
		asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u"}
		asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
		var queued []types.UID
		h.step(evAdd(pod("a", "good", "uid-good", owned(asRS))))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		h.step(evAdd(pod("a", "bad", "uid-bad", owned(asDeploy))))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		// The owner turns out to be the ReplicaSet the node was named after: observing it
		// changes no identity, so only the add above could have queued the bad dependent.
		h.step(evAdd(replicaSet("a", "rs-x", "uid-u")))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		if !slices.Contains(queued, "uid-bad") {
			t.Errorf("the dependent naming uid-u as Deployment d-x (it is ReplicaSet rs-x) was never queued for verification; queued %v", queued)
		}
	})
	t.Run("cluster-scoped virtual owner named from another namespace", func(t *testing.T) {
		h := newBuilderHarness(t)
		cmRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "uid-cm"}
		// A cluster-scoped object names a ConfigMap: the virtual owner has no namespace.
		h.step(evAdd(testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(cmRef))))
		expectQueued(t, "attemptToDelete after the cluster-scoped dependent", h.gb.attemptToDelete, "uid-cm")
		h.step(evAdd(pod("a", "p", "uid-p", owned(cmRef))))
		expectQueued(t, "attemptToDelete after the namespaced dependent", h.gb.attemptToDelete, "uid-p")
	})
}

func TestAlternateOwnerIdentityCyclesThroughAllIdentities(t *testing.T) {
	mk := func(name, ns string, refs ...metav1.OwnerReference) *node {
		return &node{identity: refIdentity("v1", "Pod", ns, name, types.UID("uid-"+name)), owners: refs}
	}
	ref := func(kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: "uid-u"}
	}
	deps := []*node{
		mk("p1", "a", ref("ReplicaSet", "x")),
		mk("p2", "a", ref("Deployment", "y")),
		mk("p3", "a", ref("StatefulSet", "z")),
	}
	start := refIdentity("apps/v1", "ReplicaSet", "a", "x", "uid-u")
	seen := map[objectReference]bool{start: true}
	cur := start
	for i := range 3 {
		alt := alternateOwnerIdentity(deps, cur)
		if alt == nil {
			t.Fatalf("step %d: no alternate for %s", i, cur)
		}
		if i < 2 && seen[*alt] {
			t.Fatalf("step %d: alternate %s repeats before every identity had a turn", i, alt)
		}
		seen[*alt] = true
		cur = *alt
	}
	if len(seen) != 3 {
		t.Errorf("identities tried = %d, want all 3", len(seen))
	}
	if alternateOwnerIdentity(deps[:1], start) != nil {
		t.Error("an alternate was found where every dependent names the absent identity")
	}
	// A cluster-scoped absent identity: the namespace of namespaced dependents naming the
	// same kind does not make another identity.
	cs := refIdentity("apps/v1", "ReplicaSet", "", "x", "uid-u")
	if alt := alternateOwnerIdentity(deps[:1], cs); alt != nil {
		t.Errorf("alternate for a cluster-scoped absent identity = %s, want none", alt)
	}
}
