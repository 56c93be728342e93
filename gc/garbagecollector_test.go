package gc

// Worker tests against client-go's fakes: a fake metadata client (with reactors for the
// answers a real apiserver would give in the edge cases) and a fake discovery client
// behind the engine's own deferred discovery REST mapper. Nodes are put in the graph
// through processGraphChanges; the worker functions are called directly.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakemetadata "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/gcscope/gcscope/internal/testkit"
)

func TestAttemptToOrphanConflictRequeuesAndKeepsFinalizer(t *testing.T) {
	owner := configMap("a", "owner", "uid-o", deleting(), finalized(metav1.FinalizerOrphanDependents))
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(owner, blocking)))
	p2 := pod("a", "p2", "uid-p2", owned(ownerRefTo(owner), ownerRefTo(deployment("a", "keep", "uid-keep"))))
	h := newEngineHarness(t, Options{}, owner, p1, p2)
	var conflict atomic.Bool
	conflict.Store(true)
	h.meta.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if conflict.Load() {
			name := a.(clienttesting.PatchAction).GetName()
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	h.observe(evAdd(owner), evAdd(p1), evAdd(p2))
	if h.gc.attemptToOrphan.Len() != 1 {
		t.Fatalf("attemptToOrphan holds %d items, want the owner", h.gc.attemptToOrphan.Len())
	}
	seq := h.gc.feed.LastSeq()

	h.gc.processAttemptToOrphanWorker(h.ctx)

	if got := h.actions("patch"); len(got) != 2 || got[0].GetResource() != podsGVR || got[1].GetResource() != podsGVR {
		t.Errorf("patches = %s, want one per dependent and none on the owner", describeActions(got))
	}
	if o, _ := h.stored(owner); !slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Errorf("owner finalizers = %v: the orphan finalizer was removed although orphaning failed", o.Finalizers)
	}
	acts := h.feedActions(seq)
	if rf := findActions(acts, VerbRemoveFinalizer, "uid-o"); len(rf) != 0 {
		t.Errorf("feed: finalizer removal recorded after a failed orphaning: %+v", rf)
	}
	for _, uid := range []types.UID{"uid-p1", "uid-p2"} {
		if o := findActions(acts, VerbOrphan, uid); len(o) != 1 || !strings.Contains(o[0].Error, "modified") || o[0].ErrorReason != "Conflict" || !slices.Equal(o[0].Refs, []types.UID{"uid-o"}) {
			t.Errorf("feed: orphan actions on %s = %+v, want one failed with the conflict (errorReason Conflict: the page says retried), naming the owner", uid, o)
		}
	}
	if rq := findActions(acts, VerbRequeue, "uid-o"); len(rq) != 1 || rq[0].Queue != AttemptToOrphan {
		t.Errorf("feed: requeue actions = %+v, want one on attemptToOrphan", rq)
	}
	var after []QueueEvent
	for _, e := range h.feedQueueEvents(seq, AttemptToOrphan) {
		if e.Op == QueueAddedAfter {
			after = append(after, e)
		}
	}
	if len(after) != 1 || after[0].Object.UID != "uid-o" || after[0].Delay <= 0 || after[0].Retries != 1 {
		t.Errorf("feed: addedAfter events = %+v, want the owner with a backoff, retry 1", after)
	}

	// The conflict is gone: the retry orphans both dependents and removes the finalizer.
	conflict.Store(false)
	h.meta.ClearActions()
	waitQueued(t, h.gc.attemptToOrphan, "the owner")
	seq = h.gc.feed.LastSeq()
	h.gc.processAttemptToOrphanWorker(h.ctx)

	for _, dep := range []*metav1.PartialObjectMetadata{p1, p2} {
		got, _ := h.stored(dep)
		if slices.ContainsFunc(got.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == "uid-o" }) {
			t.Errorf("%s still references the owner: %v", dep.Name, got.OwnerReferences)
		}
	}
	if got, _ := h.stored(p2); len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-keep" {
		t.Errorf("p2 owners = %v, want only its other owner left", got.OwnerReferences)
	}
	if o, _ := h.stored(owner); slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Errorf("owner finalizers = %v, want the orphan finalizer removed", o.Finalizers)
	}
	acts = h.feedActions(seq)
	if rf := findActions(acts, VerbRemoveFinalizer, "uid-o"); len(rf) != 1 || rf[0].Error != "" || rf[0].Finalizer != metav1.FinalizerOrphanDependents {
		t.Errorf("feed: finalizer removals = %+v, want one successful removal of %q", rf, metav1.FinalizerOrphanDependents)
	}
	forgotten := false
	for _, e := range h.feedQueueEvents(seq, AttemptToOrphan) {
		if e.Op == QueueAddedAfter {
			t.Errorf("feed: the owner was requeued after a successful attempt: %+v", e)
		}
		forgotten = forgotten || (e.Op == QueueForgotten && e.Object.UID == "uid-o")
	}
	if !forgotten {
		t.Error("feed: the owner's backoff was not reset after success")
	}
}

// --- attemptToDelete ---

func TestAttemptToDeleteUnservedOwnerKindRequeuesWithoutDelete(t *testing.T) {
	gadget := metav1.OwnerReference{APIVersion: "unserved.example.com/v1", Kind: "Gadget", Name: "g", UID: "uid-g"}
	p := pod("a", "p", "uid-p", owned(gadget))
	h := newEngineHarness(t, Options{}, p)
	h.observe(evAdd(p))
	pn := h.node("uid-p")

	err := h.gc.attemptToDeleteItem(h.ctx, pn)
	var mappingErr *restMappingError
	if !errors.As(err, &mappingErr) {
		t.Fatalf("attemptToDeleteItem = %v, want a restMappingError", err)
	}
	if mappingErr.kind != "Gadget" || mappingErr.version != "unserved.example.com/v1" {
		t.Errorf("restMappingError = %+v, want kind Gadget version unserved.example.com/v1", mappingErr)
	}
	if got := h.gc.attemptToDeleteWorker(h.ctx, pn); got != requeueItem {
		t.Errorf("attemptToDeleteWorker(dependent) = %v, want requeueItem", verdictName(got))
	}

	// The virtual owner is retried with backoff as well, twice.
	for retry := 1; retry <= 2; retry++ {
		if retry > 1 {
			waitQueued(t, h.gc.attemptToDelete, "the virtual owner")
		}
		if h.gc.attemptToDelete.Len() != 1 {
			t.Fatalf("attemptToDelete holds %d items, want the virtual owner", h.gc.attemptToDelete.Len())
		}
		seq := h.gc.feed.LastSeq()
		h.gc.processAttemptToDeleteWorker(h.ctx)
		rq := findActions(h.feedActions(seq), VerbRequeue, "uid-g")
		if len(rq) != 1 || rq[0].Reason != mappingErr.Message() {
			t.Errorf("retry %d: requeue actions = %+v, want one saying %q", retry, rq, mappingErr.Message())
		}
		var after []QueueEvent
		for _, e := range h.feedQueueEvents(seq, AttemptToDelete) {
			if e.Op == QueueAddedAfter {
				after = append(after, e)
			}
		}
		if len(after) != 1 || after[0].Object.UID != "uid-g" || after[0].Retries != retry {
			t.Errorf("retry %d: addedAfter events = %+v, want the virtual owner at retry %d", retry, after, retry)
		}
	}
	if got := h.actions("delete", "patch"); len(got) != 0 {
		t.Errorf("writes = %s, want none for a reference to an unserved kind", describeActions(got))
	}
	// The metrics count the virtual owner as retried (gcscope_gc_retrying_items).
	if n, _ := h.gc.attemptToDelete.retrying(); n != 1 {
		t.Errorf("attemptToDelete retries %d items, want the virtual owner", n)
	}
	if h.gc.builder.graphChanges.Len() != 0 {
		t.Error("a virtual delete was enqueued for an owner of an unserved kind")
	}
	if _, ok := h.stored(p); !ok {
		t.Error("the dependent was deleted")
	}
}

func TestShadowModeRecordsDecisionsWithoutWriting(t *testing.T) {
	t.Run("delete", func(t *testing.T) {
		gone := replicaSet("a", "gone", "uid-gone")
		p := pod("a", "p", "uid-p", owned(ownerRefTo(gone, blocking, controls)))
		h := newEngineHarness(t, Options{Mode: ModeShadow}, p)
		h.observe(evAdd(p))
		seq := h.gc.feed.LastSeq()

		if got := h.gc.attemptToDeleteWorker(h.ctx, h.node("uid-p")); got != forgetItem {
			t.Errorf("attemptToDeleteWorker = %v, want forgetItem", verdictName(got))
		}
		del := findActions(h.feedActions(seq), VerbDelete, "uid-p")
		if len(del) != 1 || !del[0].Shadow || del[0].Error != "" || del[0].Policy != string(metav1.DeletePropagationBackground) || del[0].Queue != AttemptToDelete {
			t.Errorf("feed: delete actions = %+v, want one shadow background delete", del)
		}
		if got := h.actions("delete", "patch", "update", "create"); len(got) != 0 {
			t.Errorf("writes in shadow mode: %s", describeActions(got))
		}
		// The pod is observed: only its never-observed owner is read from the apiserver.
		if got := h.actions("get"); len(got) != 1 || !strings.Contains(describeActions(got), "gone") {
			t.Errorf("reads = %s, want the owner only", describeActions(got))
		}
		if _, ok := h.stored(p); !ok {
			t.Error("the pod was deleted in shadow mode")
		}
	})
	t.Run("orphan", func(t *testing.T) {
		owner := configMap("a", "owner", "uid-o", deleting(), finalized(metav1.FinalizerOrphanDependents))
		p := pod("a", "p", "uid-p", owned(ownerRefTo(owner)))
		h := newEngineHarness(t, Options{Mode: ModeShadow}, owner, p)
		h.observe(evAdd(owner), evAdd(p))
		seq := h.gc.feed.LastSeq()
		h.gc.processAttemptToOrphanWorker(h.ctx)
		acts := h.feedActions(seq)
		if o := findActions(acts, VerbOrphan, "uid-p"); len(o) != 1 || !o[0].Shadow {
			t.Errorf("feed: orphan actions = %+v, want one shadow", o)
		}
		if rf := findActions(acts, VerbRemoveFinalizer, "uid-o"); len(rf) != 1 || !rf[0].Shadow {
			t.Errorf("feed: finalizer removals = %+v, want one shadow", rf)
		}
		if got := h.actions("delete", "patch", "update", "create"); len(got) != 0 {
			t.Errorf("writes in shadow mode: %s", describeActions(got))
		}
		if o, _ := h.stored(owner); !slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) {
			t.Error("the orphan finalizer was removed in shadow mode")
		}
	})
}

// TestStaleDeleteNeverOverridesTheUsersDelete: the engine decides from its graph that a
// pod whose owner is gone goes (Background); meanwhile the user has deleted it with the
// Orphan policy, which the graph has not seen. The DELETE meets a 409; the engine reads
// the pod, sees a deletion under way, and does not delete again with its own policy: the
// item is decided anew once the graph has caught up.
func TestStaleDeleteNeverOverridesTheUsersDelete(t *testing.T) {
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone)))
	h := newEngineHarness(t, Options{}, p)
	h.observe(evAdd(p))
	orphaning := pod("a", "p", "uid-p", owned(ownerRefTo(gone)), deleting(), finalized(metav1.FinalizerOrphanDependents))
	orphaning.ResourceVersion = "999"
	h.meta.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("the object has been modified"))
	})
	h.meta.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, orphaning, nil
	})

	err := h.gc.attemptToDeleteItem(h.ctx, h.node("uid-p"))
	if !apierrors.IsConflict(err) {
		t.Fatalf("attemptToDeleteItem = %v, want the 409 (decided again later)", err)
	}
	if dels := h.actions("delete"); len(dels) != 1 {
		t.Errorf("deletes = %s, want only the refused one", describeActions(dels))
	}
}

func TestDeleteCarriesUIDPrecondition(t *testing.T) {
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone)), finalized("example.com/hold"))
	h := newEngineHarness(t, Options{}, p)
	h.observe(evAdd(p))
	live, _ := h.stored(p)

	if err := h.gc.attemptToDeleteItem(h.ctx, h.node("uid-p")); err != nil {
		t.Fatalf("attemptToDeleteItem: %v", err)
	}
	dels := h.actions("delete")
	if len(dels) != 1 {
		t.Fatalf("deletes = %s, want one", describeActions(dels))
	}
	da := dels[0].(clienttesting.DeleteAction)
	if da.GetResource() != podsGVR || da.GetNamespace() != "a" || da.GetName() != "p" {
		t.Errorf("delete of %s %s/%s, want pods a/p", da.GetResource(), da.GetNamespace(), da.GetName())
	}
	opts := da.GetDeleteOptions()
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-p" {
		t.Errorf("delete preconditions = %+v, want uid uid-p", opts.Preconditions)
	}
	if live.ResourceVersion != "" && (opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil || *opts.Preconditions.ResourceVersion != live.ResourceVersion) {
		t.Errorf("delete preconditions = %+v, want resourceVersion %q", opts.Preconditions, live.ResourceVersion)
	}
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("propagation policy = %v, want Background", opts.PropagationPolicy)
	}
	if _, ok := h.stored(p); ok {
		t.Error("the pod is still stored")
	}
	if !h.gc.absentOwners.Has(identityOf(gone)) {
		t.Errorf("absent-owner cache lacks %s", identityOf(gone))
	}
}

func TestDeleteHonoursItsOwnFinalizers(t *testing.T) {
	for _, tc := range []struct {
		finalizer string
		want      metav1.DeletionPropagation
	}{
		{metav1.FinalizerOrphanDependents, metav1.DeletePropagationOrphan},
		{metav1.FinalizerDeleteDependents, metav1.DeletePropagationForeground},
	} {
		t.Run(tc.finalizer, func(t *testing.T) {
			gone := replicaSet("a", "gone", "uid-gone")
			p := pod("a", "p", "uid-p", owned(ownerRefTo(gone)), finalized(tc.finalizer))
			h := newEngineHarness(t, Options{}, p)
			h.observe(evAdd(p))
			if err := h.gc.attemptToDeleteItem(h.ctx, h.node("uid-p")); err != nil {
				t.Fatal(err)
			}
			dels := h.actions("delete")
			if len(dels) != 1 {
				t.Fatalf("deletes = %s, want one", describeActions(dels))
			}
			if pp := dels[0].(clienttesting.DeleteAction).GetDeleteOptions().PropagationPolicy; pp == nil || *pp != tc.want {
				t.Errorf("policy = %v, want %s", pp, tc.want)
			}
		})
	}
}

func TestDanglingReferencePatchedAwayKeepingSolidOwner(t *testing.T) {
	solid := replicaSet("a", "solid", "uid-solid")
	gone := replicaSet("a", "gone", "uid-gone")
	// recreated: the name exists, but with another uid.
	recreated := replicaSet("a", "recreated", "uid-recreated-new")
	staleRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "recreated", UID: "uid-recreated-old"}
	p := pod("a", "p", "uid-p", owned(ownerRefTo(solid, controls), ownerRefTo(gone), staleRef))
	h := newEngineHarness(t, Options{}, solid, recreated, p)
	h.observe(evAdd(solid), evAdd(recreated), evAdd(p))
	h.meta.ClearActions()
	seq := h.gc.feed.LastSeq()

	if got := h.gc.attemptToDeleteWorker(h.ctx, h.node("uid-p")); got != forgetItem {
		t.Errorf("attemptToDeleteWorker = %v, want forgetItem", verdictName(got))
	}
	if dels := h.actions("delete"); len(dels) != 0 {
		t.Errorf("deletes = %s, want none: the pod has a solid owner", describeActions(dels))
	}
	patches := h.actions("patch")
	if len(patches) != 1 {
		t.Fatalf("patches = %s, want one", describeActions(patches))
	}
	pa := patches[0].(clienttesting.PatchAction)
	if pa.GetResource() != podsGVR || pa.GetName() != "p" || pa.GetNamespace() != "a" {
		t.Errorf("patched %s %s/%s, want pods a/p", pa.GetResource(), pa.GetNamespace(), pa.GetName())
	}
	if pa.GetPatchType() != types.StrategicMergePatchType {
		t.Errorf("patch type = %s, want a strategic merge patch", pa.GetPatchType())
	}
	var body struct {
		Metadata struct {
			UID             types.UID           `json:"uid"`
			OwnerReferences []map[string]string `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
		t.Fatalf("patch %s: %v", pa.GetPatch(), err)
	}
	if body.Metadata.UID != "uid-p" {
		t.Errorf("patch names uid %q, want the pod's uid-p: %s", body.Metadata.UID, pa.GetPatch())
	}
	wantRefs := []map[string]string{{"$patch": "delete", "uid": "uid-gone"}, {"$patch": "delete", "uid": "uid-recreated-old"}}
	if !reflect.DeepEqual(body.Metadata.OwnerReferences, wantRefs) {
		t.Errorf("patch ownerReferences = %v, want %v", body.Metadata.OwnerReferences, wantRefs)
	}
	got, _ := h.stored(p)
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-solid" {
		t.Errorf("stored owners = %v, want only the solid one", got.OwnerReferences)
	}
	ra := findActions(h.feedActions(seq), VerbRemoveRefs, "uid-p")
	if len(ra) != 1 || !slices.Equal(ra[0].Refs, []types.UID{"uid-gone", "uid-recreated-old"}) || ra[0].Error != "" {
		t.Errorf("feed: removeRefs actions = %+v, want one naming the dangling owners", ra)
	}
	if !h.gc.absentOwners.Has(identityOf(gone)) {
		t.Errorf("absent-owner cache lacks %s", identityOf(gone))
	}
	if h.gc.absentOwners.Has(identityOf(solid)) {
		t.Error("absent-owner cache holds the solid owner")
	}
}

func TestIsDanglingUsesAbsentOwnerCache(t *testing.T) {
	rsRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs"}
	for _, tc := range []struct {
		name      string
		cached    objectReference
		wantGet   bool // the owner is looked up at the apiserver
		wantGone  bool
		ownerKept bool // the owner exists at the apiserver
	}{
		{name: "absent in the dependent's namespace", cached: refIdentity("apps/v1", "ReplicaSet", "a", "rs", "uid-rs"), wantGone: true},
		{name: "absent cluster-wide", cached: refIdentity("apps/v1", "ReplicaSet", "", "rs", "uid-rs"), wantGone: true},
		{name: "absent in another namespace", cached: refIdentity("apps/v1", "ReplicaSet", "b", "rs", "uid-rs"), wantGet: true, ownerKept: true},
		{name: "another identity absent", cached: refIdentity("apps/v1", "Deployment", "a", "rs", "uid-rs"), wantGet: true, ownerKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("a", "p", "uid-p", owned(rsRef))
			h := newEngineHarness(t, Options{}, replicaSet("a", "rs", "uid-rs"), p)
			h.observe(evAdd(p))
			h.gc.absentOwners.Add(tc.cached)
			dangling, owner, err := h.gc.isDangling(h.ctx, rsRef, h.node("uid-p"), true)
			if err != nil {
				t.Fatal(err)
			}
			if dangling != tc.wantGone {
				t.Errorf("dangling = %v, want %v", dangling, tc.wantGone)
			}
			if tc.ownerKept && (owner == nil || owner.UID != "uid-rs") {
				t.Errorf("owner = %v, want the live ReplicaSet", owner)
			}
			if gets := h.actions("get"); (len(gets) > 0) != tc.wantGet {
				t.Errorf("lookups = %s, want a lookup: %v", describeActions(gets), tc.wantGet)
			}
		})
	}
}

// A cluster-scoped object naming a namespaced owner (invalid: upstream never collects it
// for that reference) must not make the engine conclude that the owner is absent, and
// so must not get the object, or a namespaced dependent of the same owner, deleted.
// Upstream's getObject refuses to look a namespaced kind up without a namespace
// (namespacedOwnerOfClusterScopedObjectErr) and the virtual owner is left alone.
func TestNamespacedOwnerNamedByClusterScopedObjectIsNeverTreatedAbsent(t *testing.T) {
	cm := configMap("a", "cm", "uid-cm")
	pvOf := func() *metav1.PartialObjectMetadata {
		return testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(ownerRefTo(cm)))
	}
	t.Run("cluster-scoped dependent alone", func(t *testing.T) {
		pv := pvOf()
		h := newEngineHarness(t, Options{}, pv)
		h.observe(evAdd(pv))
		h.runUntilIdle()
		if dels := h.actions("delete"); len(dels) != 0 {
			t.Errorf("deletes = %s, want none: a cluster-scoped object is never collected for a namespaced owner", describeActions(dels))
		}
		if _, ok := h.stored(pv); !ok {
			t.Error("the PersistentVolume was deleted")
		}
		// As upstream, processing it records no Warning (the graph builder records the
		// one upstream records, when it links the dependent to an observed owner).
		for _, a := range h.feedActions(0) {
			if a.Verb == VerbWarn && a.Queue == AttemptToDelete {
				t.Errorf("a Warning from processing the item: %+v", a)
			}
		}
	})
	t.Run("with a namespaced dependent of the existing owner", func(t *testing.T) {
		pv := pvOf()
		p := pod("a", "p", "uid-p", owned(ownerRefTo(cm)))
		h := newEngineHarness(t, Options{}, cm, pv, p)
		h.observe(evAdd(pv), evAdd(p))
		h.runUntilIdle()
		if dels := h.actions("delete"); len(dels) != 0 {
			t.Errorf("deletes = %s, want none: the pod's owner exists in its namespace", describeActions(dels))
		}
		if _, ok := h.stored(p); !ok {
			t.Error("the pod, whose owner exists, was deleted")
		}
	})
}

// Upstream's attemptToDeleteWorker skips a virtual item whose uid the graph now holds as
// an observed node (or no longer holds): the item is a stale node replaced when the real
// object was observed under other coordinates, and must not be retried forever.
func TestAttemptToDeleteWorkerForgetsReplacedVirtualNode(t *testing.T) {
	w := testObject("example.com/v1", "Widget", "a", "w", "uid-w")
	wBeta := testObject("example.com/v1beta1", "Widget", "a", "w", "uid-w")
	// The dependent names its owner by the older version the custom resource still serves.
	p := pod("a", "p", "uid-p", owned(ownerRefTo(wBeta)))
	h := newEngineHarness(t, Options{}, w, p)
	h.storeAs(widgetsBetaGVR, wBeta)
	h.observe(evAdd(p))
	stale := h.node("uid-w")
	if !stale.virtual || stale.identity != identityOf(wBeta) {
		t.Fatalf("virtual owner = %s virtual=%v, want the v1beta1 identity", stale.identity, stale.virtual)
	}
	// It exists, but no monitor has seen it: retried.
	if got := h.gc.attemptToDeleteWorker(h.ctx, stale); got != requeueItem {
		t.Fatalf("attemptToDeleteWorker(virtual owner) = %v, want requeueItem", verdictName(got))
	}
	// The monitor observes it through v1, the preferred version: the node is replaced.
	h.observe(evAdd(w))
	if n := h.node("uid-w"); n == stale || n.virtual || n.identity != identityOf(w) {
		t.Fatalf("after observing the owner: %s virtual=%v replaced=%v", n.identity, n.virtual, n != stale)
	}
	h.meta.ClearActions()
	// The requeued stale node comes back from its backoff.
	if got := h.gc.attemptToDeleteWorker(h.ctx, stale); got != forgetItem {
		t.Errorf("attemptToDeleteWorker(replaced virtual node) = %v, want forgetItem: the graph holds uid-w observed now, so the stale node is requeued forever otherwise", verdictName(got))
	}
	if got := h.actions("get", "delete", "patch"); len(got) != 0 {
		t.Errorf("API calls for a replaced node = %s, want none", describeActions(got))
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []Options{{Workers: -1}, {Mode: "loud"}, {ActionDelay: -time.Second}} {
		if _, err := New(Clients{}, opts); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", opts)
		}
	}
	gc, err := New(Clients{Metadata: fakemetadata.NewSimpleMetadataClient(runtime.NewScheme()), Discovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.attemptToDelete.ShutDown()
	defer gc.attemptToOrphan.ShutDown()
	defer gc.builder.graphChanges.ShutDown()
	if gc.Mode() != ModeActive || gc.opts.Workers != 20 || gc.opts.DiscoveryPeriod != 30*time.Second {
		t.Errorf("defaults: mode %s workers %d period %v, want active, 20, 30s", gc.Mode(), gc.opts.Workers, gc.opts.DiscoveryPeriod)
	}
	for _, gr := range DefaultIgnoredResources {
		if !gc.ignored[gr] {
			t.Errorf("%v is not ignored by default", gr)
		}
	}
	// The engine's absent-owner cache holds upstream's 500.
	for i := range absentOwnerCacheSize + 1 {
		gc.absentOwners.Add(absentRef(i, "a"))
	}
	if n := gc.absentOwners.Len(); n != absentOwnerCacheSize {
		t.Errorf("absent-owner cache holds %d after %d adds, want %d", n, absentOwnerCacheSize+1, absentOwnerCacheSize)
	}
}

// verdict names a worker's verdict in failure messages.
func verdictName(a workQueueItemAction) string {
	switch a {
	case forgetItem:
		return "forgetItem"
	case requeueItem:
		return "requeueItem"
	}
	return fmt.Sprintf("workQueueItemAction(%d)", int(a))
}

// TestActionDelayHoldsWritesUntilItElapses: with a slow-motion delay, the decision is made
// (the owner is looked up) but the DELETE waits; cancelling during the wait writes nothing.
func TestActionDelayHoldsWritesUntilItElapses(t *testing.T) {
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone, blocking, controls)))
	h := newEngineHarness(t, Options{ActionDelay: time.Hour}, p)
	h.observe(evAdd(p))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan workQueueItemAction, 1)
	go func() { done <- h.gc.attemptToDeleteWorker(ctx, h.node("uid-p")) }()
	if testkit.Poll(context.Background(), 10*time.Second, func() bool { return len(h.actions("get")) >= 1 }) != nil {
		t.Fatalf("the worker did not look up the owner: %s", describeActions(h.meta.Actions()))
	}
	select {
	case v := <-done:
		t.Fatalf("the worker returned (%s) before its action delay elapsed", verdictName(v))
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if v := <-done; v != forgetItem {
		t.Errorf("after cancel: %s, want forgetItem", verdictName(v))
	}
	if got := h.actions("delete", "patch"); len(got) != 0 {
		t.Errorf("writes despite the pending delay: %s", describeActions(got))
	}
	if _, ok := h.stored(p); !ok {
		t.Error("the pod was deleted")
	}
}

// TestSlowMotionOffWritesAtOnce: with slow motion switched off, an hour's action delay
// no longer holds the write back; switched on again it does.
func TestSlowMotionOffWritesAtOnce(t *testing.T) {
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone, blocking, controls)))
	h := newEngineHarness(t, Options{ActionDelay: time.Hour}, p)
	if !h.gc.SlowMotion() {
		t.Fatal("slow motion is off with an action delay configured")
	}
	if h.gc.SetSlowMotion(false) {
		t.Fatal("SetSlowMotion(false) reports slow motion on")
	}
	h.observe(evAdd(p))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if v := h.gc.attemptToDeleteWorker(ctx, h.node("uid-p")); v != forgetItem {
		t.Fatalf("worker: %s, want forgetItem", verdictName(v))
	}
	if got := h.actions("delete"); len(got) != 1 {
		t.Fatalf("deletes with slow motion off: %s, want one", describeActions(h.meta.Actions()))
	}
	if !h.gc.SetSlowMotion(true) || !h.gc.SlowMotion() {
		t.Error("slow motion did not switch back on")
	}
	none := newEngineHarness(t, Options{})
	if none.gc.SetSlowMotion(true) {
		t.Error("slow motion switched on without an action delay")
	}
}

// TestRemoveFinalizerChecksTheUID: deliberately safer than upstream (docs/fidelity.md):
// the finalizer is removed only from the object of the uid decided on, never from a new
// object that has taken the name since.
func TestRemoveFinalizerChecksTheUID(t *testing.T) {
	newer := configMap("a", "x", "uid-new", deleting(), finalized(metav1.FinalizerDeleteDependents))
	h := newEngineHarness(t, Options{}, newer)
	old := objectReference{OwnerReference: metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "uid-old"}, Namespace: "a"}
	if err := h.gc.removeFinalizer(context.Background(), AttemptToDelete, old, metav1.FinalizerDeleteDependents, "test"); err != nil {
		t.Fatal(err)
	}
	if got := h.actions("patch", "update"); len(got) != 0 {
		t.Errorf("writes to the object that took the name: %s", describeActions(got))
	}
	if o, _ := h.stored(newer); !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Error("the newer object lost its finalizer")
	}
}

// TestDeleteOfAnObjectAlreadyGoneQueuesAVirtualDelete: as upstream, a DELETE answered 404
// lets the graph go of the object at once (a virtual delete event), even if its informer
// never tells, and the item is forgotten.
func TestDeleteOfAnObjectAlreadyGoneQueuesAVirtualDelete(t *testing.T) {
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone, blocking, controls)))
	h := newEngineHarness(t, Options{}, p)
	h.observe(evAdd(p))
	h.meta.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(podsGVR.GroupResource(), "p") // someone else deleted it first
	})
	if v := h.gc.attemptToDeleteWorker(context.Background(), h.node("uid-p")); v != forgetItem {
		t.Fatalf("verdict %s, want forgetItem", verdictName(v))
	}
	item, _ := h.gc.builder.graphChanges.Get()
	if item.eventType != deleteEvent || !item.virtual || item.identity().UID != "uid-p" {
		t.Fatalf("graphChanges holds %+v, want a virtual delete of the pod", item)
	}
}
