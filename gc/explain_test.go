package gc

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// explainOf explains uid, failing the test if the graph does not hold it.
func (h *engineHarness) explainOf(uid types.UID) Explanation {
	h.t.Helper()
	ex, ok := h.gc.Explain(uid)
	if !ok {
		h.t.Fatalf("explain %s: not in the graph", uid)
	}
	return ex
}

// TestExplainSummarizesManyBlockers: a foreground deletion waiting for 25 blocking
// dependents is told in counts and the first ten, the most telling first (the one a
// finalizer holds), never one line per blocker.
func TestExplainSummarizesManyBlockers(t *testing.T) {
	owner := configMap("a", "owner", "uid-owner", deleting(), finalized(metav1.FinalizerDeleteDependents))
	var objs []*metav1.PartialObjectMetadata
	for i := range 24 {
		objs = append(objs, configMap("a", fmt.Sprintf("part-%02d", i), types.UID(fmt.Sprintf("uid-part-%02d", i)), owned(ownerRefTo(owner, blocking))))
	}
	held := configMap("a", "zz-held", "uid-held", owned(ownerRefTo(owner, blocking)), deleting(), finalized("example.com/hold"))
	h := newEngineHarness(t, Options{})
	for _, o := range append(objs, held) {
		h.observe(evAdd(o))
	}
	h.observe(evAdd(owner))
	// Three dependents are in a worker's hands.
	h.gc.feed.mu.Lock()
	for _, o := range objs[5:8] {
		h.gc.feed.queues[AttemptToDelete].items[o.UID] = &QueueItem{Object: refOf(identityOf(o)), InFlight: true}
	}
	h.gc.feed.mu.Unlock()

	ex := h.explainOf(owner.UID)
	if !ex.Object.DeletingDependents || len(ex.Blockers) != 25 {
		t.Fatalf("deletingDependents %v, %d blockers; want a foreground deletion waiting for 25", ex.Object.DeletingDependents, len(ex.Blockers))
	}
	if want := (BlockerSummary{Total: 25, InFlight: 3, Held: 1, HeldBy: []string{"example.com/hold"}}); ex.BlockerSummary == nil ||
		!slices.Equal(ex.BlockerSummary.HeldBy, want.HeldBy) || ex.BlockerSummary.Total != want.Total ||
		ex.BlockerSummary.InFlight != want.InFlight || ex.BlockerSummary.Held != want.Held || ex.BlockerSummary.BeingDeleted != 0 {
		t.Errorf("summary %+v, want %+v", ex.BlockerSummary, want)
	}
	if ex.Blockers[0].Object.Name != "zz-held" || !ex.Blockers[1].InFlight || ex.Blockers[1].Object.Name != "part-05" {
		t.Errorf("blockers start with %s, %s (in flight %v); want the held one, then those in flight", ex.Blockers[0].Object.Name, ex.Blockers[1].Object.Name, ex.Blockers[1].InFlight)
	}
	if ex.Next != "wait for 25 blocking dependents to be deleted" {
		t.Errorf("next %q", ex.Next)
	}
	want := "waiting for 25 blocking dependents, 3 in flight, 1 held by finalizer example.com/hold; first 10: " +
		"configmap zz-held (held by finalizer example.com/hold), configmap part-05 (in flight), configmap part-06 (in flight), " +
		"configmap part-07 (in flight), configmap part-00 (not deleted yet), configmap part-01 (not deleted yet), " +
		"configmap part-02 (not deleted yet), configmap part-03 (not deleted yet), configmap part-04 (not deleted yet), " +
		"configmap part-08 (not deleted yet), and 15 more"
	if len(ex.Words) == 0 || ex.Words[0] != want {
		t.Errorf("words %q\nwant first %q", ex.Words, want)
	}
	for _, w := range ex.Words {
		if strings.Contains(w, "held by finalizer foregroundDeletion") || strings.Contains(w, "part-20") {
			t.Errorf("word %q: names foregroundDeletion as a hold, or names a blocker past the first ten", w)
		}
	}
	if !slices.Contains(ex.Words, "foregroundDeletion is the garbage collector's own finalizer: it removes it once no blocking dependent remains") {
		t.Errorf("words %q do not say foregroundDeletion is the collector's own", ex.Words)
	}
	if len(ex.HeldBy) != 0 || len(ex.Holds) != 0 {
		t.Errorf("heldBy %v, holds %+v: foregroundDeletion is no other controller's hold", ex.HeldBy, ex.Holds)
	}
}

// TestExplainGrammarForOne: one blocking dependent, one dependent: singular nouns.
func TestExplainGrammarForOne(t *testing.T) {
	owner := configMap("a", "owner", "uid-owner", deleting(), finalized(metav1.FinalizerDeleteDependents))
	dep := configMap("a", "only", "uid-only", owned(ownerRefTo(owner, blocking)))
	ghost := replicaSet("a", "ghost", "uid-ghost")
	orphan := configMap("a", "child", "uid-child", owned(ownerRefTo(ghost)))
	h := newEngineHarness(t, Options{})
	h.observe(evAdd(dep), evAdd(owner), evAdd(orphan))

	ex := h.explainOf(owner.UID)
	if ex.Next != "wait for 1 blocking dependent to be deleted" || ex.BlockerSummary == nil || ex.BlockerSummary.Total != 1 {
		t.Errorf("next %q, summary %+v", ex.Next, ex.BlockerSummary)
	}
	if len(ex.Words) == 0 || ex.Words[0] != "waiting for configmap only is not deleted yet" {
		t.Errorf("words %q", ex.Words)
	}
	if ex := h.explainOf(ghost.UID); !slices.Contains(ex.Words, "ReplicaSet ghost has not been observed; 1 dependent names it as its owner") {
		t.Errorf("virtual owner's words %q", ex.Words)
	}
}

// TestExplainFinalizerHold: a finalizer of another controller says which one, who
// usually removes it, and the kubectl command that would remove it by hand; the
// collector's own finalizers get none.
func TestExplainFinalizerHold(t *testing.T) {
	pv := testObject("v1", "PersistentVolume", "", "pv-1", "uid-pv", deleting(),
		finalized(metav1.FinalizerOrphanDependents, "kubernetes.io/pv-protection"))
	rs := replicaSet("a", "web-7d4b8f", "uid-rs", deleting(), finalized("example.com/hold"))
	h := newEngineHarness(t, Options{})
	h.observe(evAdd(pv), evAdd(rs))

	ex := h.explainOf(pv.UID)
	if len(ex.Holds) != 1 {
		t.Fatalf("holds %+v, want the pv-protection finalizer only", ex.Holds)
	}
	hold := ex.Holds[0]
	if hold.Finalizer != "kubernetes.io/pv-protection" || hold.Index != 1 ||
		!strings.Contains(hold.Owner, "pv-protection controller in kube-controller-manager") {
		t.Errorf("hold %+v", hold)
	}
	wantCmd := `kubectl patch persistentvolumes pv-1 --type=json -p '[{"op":"test","path":"/metadata/finalizers/1","value":"kubernetes.io/pv-protection"},{"op":"remove","path":"/metadata/finalizers/1"}]'`
	if hold.Release != wantCmd {
		t.Errorf("release\n%s\nwant\n%s", hold.Release, wantCmd)
	}
	if !slices.Contains(ex.Words, "held by finalizer kubernetes.io/pv-protection: "+knownFinalizers["kubernetes.io/pv-protection"]) {
		t.Errorf("words %q do not say who holds it", ex.Words)
	}
	if !strings.HasPrefix(ex.Next, "remove its reference from 0 dependents, then the orphan finalizer") {
		t.Errorf("next %q", ex.Next)
	}

	ex = h.explainOf(rs.UID)
	wantCmd = `kubectl patch replicasets.apps web-7d4b8f -n a --type=json -p '[{"op":"test","path":"/metadata/finalizers/0","value":"example.com/hold"},{"op":"remove","path":"/metadata/finalizers/0"}]'`
	if len(ex.Holds) != 1 || ex.Holds[0].Release != wantCmd || !strings.Contains(ex.Holds[0].Owner, "example.com") {
		t.Errorf("holds %+v\nwant release %s", ex.Holds, wantCmd)
	}
	if ex.Next != "nothing the collector can do: finalizer example.com/hold of another controller holds it; the apiserver deletes it once that is removed" {
		t.Errorf("next %q", ex.Next)
	}
}

func TestFinalizerOwners(t *testing.T) {
	for f, want := range map[string]string{
		"kubernetes.io/pvc-protection":               "pvc-protection controller in kube-controller-manager",
		"customresourcecleanup.apiextensions.k8s.io": "apiextensions-apiserver",
		"foregroundDeletion":                         "garbage collector itself",
		"orphan":                                     "garbage collector itself",
		"external-attacher/csi.example.com":          "external-attacher",
		"example.com/hold":                           "its prefix, example.com,",
		"nodomain":                                   "no domain prefix",
	} {
		if got := finalizerOwner(f); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to mention %q", f, got, want)
		}
	}
}

func TestReleaseCommandQuotes(t *testing.T) {
	h := newEngineHarness(t, Options{})
	got := h.gc.releaseCommand(ObjectRef{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "team a", Name: "it's"}, "example.com/x", 2)
	want := `kubectl patch widgets.example.com 'it'\''s' -n 'team a' --type=json -p '[{"op":"test","path":"/metadata/finalizers/2","value":"example.com/x"},{"op":"remove","path":"/metadata/finalizers/2"}]'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A kind the apiserver does not serve: its lower-cased kind, with its group.
	got = h.gc.releaseCommand(ObjectRef{APIVersion: "gone.example.com/v1", Kind: "Thing", Name: "t"}, "x/y", 0)
	if !strings.HasPrefix(got, "kubectl patch thing.gone.example.com t --type=json") {
		t.Errorf("unserved kind: %s", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1560: "1,560", 1234567: "1,234,567", -2000: "-2,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := counted(1, "blocking dependent"); got != "1 blocking dependent" {
		t.Errorf("counted(1) = %q", got)
	}
	if got := counted(1560, "blocking dependent"); got != "1,560 blocking dependents" {
		t.Errorf("counted(1560) = %q", got)
	}
}

// TestOwnersExistSaysItInEnglish: the reason the collector keeps an object names its
// owners as a sentence does ("owner Widget alpha, Widget beta exists" was seen).
func TestOwnersExistSaysItInEnglish(t *testing.T) {
	for want, names := range map[string][]string{
		"owner Widget alpha exists":                               {"Widget alpha"},
		"owners Widget alpha and Widget beta exist":               {"Widget alpha", "Widget beta"},
		"owners Widget alpha, Widget beta and Widget gamma exist": {"Widget alpha", "Widget beta", "Widget gamma"},
	} {
		if got := ownersExist(names); got != want {
			t.Errorf("ownersExist(%q) = %q, want %q", names, got, want)
		}
	}
}
