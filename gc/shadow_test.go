package gc

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The rules of the shadow self-check, on synthetic observations: the end-to-end check
// against kube-controller-manager's collector is internal/difftest's TestShadowAgreesWithUpstream.

type shadowFixture struct {
	t      *testing.T
	now    time.Time
	events []Event
	m      *metrics
	tr     *shadowTracker
}

func newShadowFixture(t *testing.T) *shadowFixture {
	f := &shadowFixture{t: t, now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), m: newMetrics(newGraph())}
	f.tr = newShadowTracker(time.Minute, func() time.Time { return f.now }, func(e Event) { f.events = append(f.events, e) }, f.m)
	return f
}

func (f *shadowFixture) counts() ShadowCounts { return f.tr.report().Counts }

func (f *shadowFixture) outcomes() map[string]float64 {
	out := map[string]float64{}
	for _, o := range []ShadowOutcome{ShadowPending, ShadowOverdue, ShadowConfirmed, ShadowDiverged, ShadowWithdrawn} {
		out[string(o)] = testutil.ToFloat64(f.m.shadowDecisions.WithLabelValues(string(o)))
	}
	return out
}

func pom(uid types.UID, mutate ...func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid}}
	for _, m := range mutate {
		m(o)
	}
	return o
}

func deletingWith(finalizers ...string) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) {
		ts := metav1.Now()
		o.DeletionTimestamp, o.Finalizers = &ts, finalizers
	}
}

func ownedBy(uid types.UID, block bool) func(*metav1.PartialObjectMetadata) {
	return func(o *metav1.PartialObjectMetadata) {
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: string(uid), UID: uid, BlockOwnerDeletion: &block})
	}
}

func shadowWrite(uid types.UID, q QueueName, verb ActionVerb, policy string, refs ...types.UID) Action {
	a := Action{Queue: q, Verb: verb, Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: string(uid), UID: uid},
		Policy: policy, Refs: refs, Reason: "test", Shadow: true}
	if verb == VerbRemoveFinalizer {
		a.Finalizer, a.Policy = policy, ""
	}
	return a
}

func TestShadowVerdicts(t *testing.T) {
	fg, bg, orphan := string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan)
	cases := []struct {
		name string
		a    Action
		obj  *metav1.PartialObjectMetadata
		gone bool
		want ShadowOutcome
	}{
		{"delete: nothing yet", shadowWrite("x", AttemptToDelete, VerbDelete, bg), pom("x", ownedBy("o", true)), false, ""},
		{"delete Background: gone", shadowWrite("x", AttemptToDelete, VerbDelete, bg), pom("x"), true, ShadowConfirmed},
		{"delete Background: deleting, another's finalizer", shadowWrite("x", AttemptToDelete, VerbDelete, bg), pom("x", deletingWith("example.com/hold")), false, ShadowConfirmed},
		{"delete Foreground: deleting in the foreground", shadowWrite("x", AttemptToDelete, VerbDelete, fg), pom("x", deletingWith(metav1.FinalizerDeleteDependents)), false, ShadowConfirmed},
		{"delete Foreground: deleted in the background", shadowWrite("x", AttemptToDelete, VerbDelete, fg), pom("x", deletingWith("example.com/hold")), false, ShadowDiverged},
		{"delete Background: orphaned instead", shadowWrite("x", AttemptToDelete, VerbDelete, bg), pom("x", deletingWith(metav1.FinalizerOrphanDependents)), false, ShadowDiverged},
		{"delete Orphan: orphan finalizer", shadowWrite("x", AttemptToDelete, VerbDelete, orphan), pom("x", deletingWith(metav1.FinalizerOrphanDependents)), false, ShadowConfirmed},
		{"remove refs: still named", shadowWrite("x", AttemptToDelete, VerbRemoveRefs, "", "gone"), pom("x", ownedBy("gone", false), ownedBy("solid", false)), false, ""},
		{"remove refs: removed", shadowWrite("x", AttemptToDelete, VerbRemoveRefs, "", "gone"), pom("x", ownedBy("solid", false)), false, ShadowConfirmed},
		{"remove refs: deleted instead", shadowWrite("x", AttemptToDelete, VerbRemoveRefs, "", "gone"), pom("x", ownedBy("gone", false), ownedBy("solid", false)), true, ShadowDiverged},
		{"unblock: still blocking", shadowWrite("x", AttemptToDelete, VerbUnblock, "", "o"), pom("x", ownedBy("o", true)), false, ""},
		{"unblock: unblocked", shadowWrite("x", AttemptToDelete, VerbUnblock, "", "o"), pom("x", ownedBy("o", false)), false, ShadowConfirmed},
		{"unblock: deleted still blocking", shadowWrite("x", AttemptToDelete, VerbUnblock, "", "o"), pom("x", ownedBy("o", true), deletingWith(metav1.FinalizerDeleteDependents)), false, ShadowDiverged},
		{"remove finalizer: still there", shadowWrite("x", AttemptToDelete, VerbRemoveFinalizer, metav1.FinalizerDeleteDependents), pom("x", deletingWith(metav1.FinalizerDeleteDependents)), false, ""},
		{"remove finalizer: removed, another remains", shadowWrite("x", AttemptToDelete, VerbRemoveFinalizer, metav1.FinalizerDeleteDependents), pom("x", deletingWith("example.com/hold")), false, ShadowConfirmed},
		{"remove finalizer: gone", shadowWrite("x", AttemptToDelete, VerbRemoveFinalizer, metav1.FinalizerDeleteDependents), pom("x", deletingWith(metav1.FinalizerDeleteDependents)), true, ShadowConfirmed},
		{"orphan: still named", shadowWrite("x", AttemptToOrphan, VerbOrphan, "", "o"), pom("x", ownedBy("o", true)), false, ""},
		{"orphan: reference removed", shadowWrite("x", AttemptToOrphan, VerbOrphan, "", "o"), pom("x"), false, ShadowConfirmed},
		{"orphan: deleted instead", shadowWrite("x", AttemptToOrphan, VerbOrphan, "", "o"), pom("x", ownedBy("o", true)), true, ShadowDiverged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, words := verdict(c.a, c.obj, c.gone, nil)
			if got != c.want {
				t.Fatalf("verdict = %q (%s), want %q", got, words, c.want)
			}
			if got != "" && words == "" {
				t.Fatal("a verdict without words")
			}
		})
	}
}

func TestShadowDecisionConfirmedWithItsLag(t *testing.T) {
	f := newShadowFixture(t)
	fg := string(metav1.DeletePropagationForeground)
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, fg), pom("x", ownedBy("o", true)), false)
	if c := f.counts(); c.Pending != 1 || c.Confirmed != 0 {
		t.Fatalf("after the decision: %+v, want 1 pending", c)
	}
	// Decided again before the cluster acts: still one decision, timed from the first.
	f.now = f.now.Add(200 * time.Millisecond)
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, fg), pom("x", ownedBy("o", true)), false)
	if c := f.counts(); c.Pending != 1 {
		t.Fatalf("decided twice: %+v, want still 1 pending", c)
	}
	// An unrelated update of the object changes nothing.
	f.now = f.now.Add(100 * time.Millisecond)
	f.tr.observed(pom("x", ownedBy("o", true), func(o *metav1.PartialObjectMetadata) { o.Labels = map[string]string{"a": "b"} }), false)
	if c := f.counts(); c.Pending != 1 {
		t.Fatalf("after an unrelated update: %+v", c)
	}
	f.now = f.now.Add(200 * time.Millisecond)
	f.tr.observed(pom("x", ownedBy("o", true), deletingWith(metav1.FinalizerDeleteDependents)), false)
	r := f.tr.report()
	if r.Counts != (ShadowCounts{Confirmed: 1}) {
		t.Fatalf("after the cluster deleted it in the foreground: %+v", r.Counts)
	}
	if r.Lag.Count != 1 || r.Lag.P50 != 500*time.Millisecond || r.Lag.Max != 500*time.Millisecond {
		t.Fatalf("lag = %+v, want one of 500ms", r.Lag)
	}
	last := f.events[len(f.events)-1]
	if last.Type != ShadowChange || last.Shadow.Outcome != ShadowConfirmed || last.Shadow.Lag != 500*time.Millisecond {
		t.Fatalf("last event = %+v", last)
	}
	if got := f.outcomes(); got["pending"] != 1 || got["confirmed"] != 1 || got["diverged"] != 0 {
		t.Fatalf("metrics = %v", got)
	}
	if n := testutil.CollectAndCount(f.m.shadowLag); n != 1 {
		t.Fatalf("lag histogram series = %d", n)
	}
	// The object's later deletion has nothing left to judge.
	f.tr.observed(pom("x"), true)
	if c := f.counts(); c != (ShadowCounts{Confirmed: 1}) {
		t.Fatalf("after the final delete: %+v", c)
	}
}

func TestShadowDecisionOverdueThenLate(t *testing.T) {
	f := newShadowFixture(t)
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, "Background"), pom("x", ownedBy("o", false)), false)
	f.now = f.now.Add(59 * time.Second)
	f.tr.markOverdue()
	if c := f.counts(); c.Pending != 1 || c.Overdue != 0 {
		t.Fatalf("before the threshold: %+v", c)
	}
	f.now = f.now.Add(time.Second)
	f.tr.markOverdue()
	r := f.tr.report()
	if r.Counts.Pending != 0 || r.Counts.Overdue != 1 || len(r.Open) != 1 || r.Open[0].Outcome != ShadowOverdue || r.Open[0].Lag != time.Minute {
		t.Fatalf("at the threshold: %+v", r)
	}
	if about := f.tr.about("x"); len(about) != 1 || !strings.Contains(shadowWords(about[0]), "has not acted on this for 1m0s (overdue") {
		t.Fatalf("explain words for the overdue decision: %+v", about)
	}
	f.now = f.now.Add(30 * time.Second)
	f.tr.observed(pom("x"), true)
	r = f.tr.report()
	if r.Counts != (ShadowCounts{Confirmed: 1}) || r.Lag.Max != 90*time.Second {
		t.Fatalf("confirmed late: %+v", r)
	}
	if got := f.outcomes(); got["overdue"] != 1 || got["confirmed"] != 1 {
		t.Fatalf("metrics = %v", got)
	}
}

func TestShadowDecisionDiverged(t *testing.T) {
	f := newShadowFixture(t)
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, "Foreground"), pom("x", ownedBy("o", true)), false)
	f.now = f.now.Add(time.Second)
	f.tr.observed(pom("x", ownedBy("o", true), deletingWith(metav1.FinalizerOrphanDependents)), false)
	r := f.tr.report()
	if r.Counts != (ShadowCounts{Diverged: 1}) || len(r.Diverged) != 1 {
		t.Fatalf("report: %+v", r)
	}
	d := r.Diverged[0]
	if d.Observed != "deleted with the Orphan policy, where gcscope would have used Foreground" || d.Lag != time.Second {
		t.Fatalf("diverged decision: %+v", d)
	}
	about := f.tr.about("x")
	if len(about) != 1 || !strings.HasPrefix(shadowWords(about[0]), "the cluster's collector did otherwise: deleted with the Orphan policy") {
		t.Fatalf("about: %+v", about)
	}
}

// A dependent whose owner was deleting in the foreground: one collector saw the owner still
// waiting (Foreground), the other saw it gone (Background). The same rule, looked at at two
// moments, is not a divergence; without that owner seen deleting in the foreground, it is.
// (The ownership cycle under kube-controller-manager's collector, as CI once saw it.)
func TestShadowDecisionPolicyFromAnOwnersForegroundDeletion(t *testing.T) {
	bg, fg := string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationForeground)
	for _, c := range []struct {
		name              string
		chosen            string
		observedFinalizer string
		ownerSeenDeleting bool
		want              ShadowOutcome
	}{
		{"gcscope Background, collector Foreground, owner was deleting in the foreground", bg, metav1.FinalizerDeleteDependents, true, ShadowConfirmed},
		{"gcscope Foreground, collector Background, owner was deleting in the foreground", fg, "example.com/hold", true, ShadowConfirmed},
		{"gcscope Background, collector Foreground, owner never seen deleting", bg, metav1.FinalizerDeleteDependents, false, ShadowDiverged},
		{"gcscope Background, collector Orphan, owner was deleting in the foreground", bg, metav1.FinalizerOrphanDependents, true, ShadowDiverged},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newShadowFixture(t)
			if c.ownerSeenDeleting {
				f.tr.observed(pom("b", ownedBy("a", true), deletingWith(metav1.FinalizerDeleteDependents)), false)
				f.now = f.now.Add(time.Second)
				f.tr.observed(pom("b", ownedBy("a", true), deletingWith(metav1.FinalizerDeleteDependents)), true)
			}
			f.tr.decided(shadowWrite("c", AttemptToDelete, VerbDelete, c.chosen), pom("c", ownedBy("b", false)), false)
			f.now = f.now.Add(80 * time.Millisecond)
			f.tr.observed(pom("c", ownedBy("b", false), deletingWith(c.observedFinalizer)), false)
			counts := f.counts()
			if got := map[ShadowOutcome]int{ShadowConfirmed: counts.Confirmed, ShadowDiverged: counts.Diverged}; got[c.want] != 1 || counts.Pending != 0 {
				t.Fatalf("counts %+v, want one %s", counts, c.want)
			}
			if c.want == ShadowConfirmed {
				last := f.events[len(f.events)-1].Shadow
				if !strings.Contains(last.Observed, "owner ConfigMap b was deleting in the foreground") {
					t.Fatalf("confirmed without saying why the policies differ: %q", last.Observed)
				}
			}
		})
	}
}

// The memory of owners deleting in the foreground is bounded in time.
func TestShadowForgetsForegroundOwners(t *testing.T) {
	f := newShadowFixture(t)
	f.tr.observed(pom("b", deletingWith(metav1.FinalizerDeleteDependents)), false)
	if !f.tr.sawForeground("b") {
		t.Fatal("owner deleting in the foreground not remembered")
	}
	f.now = f.now.Add(foregroundMemory)
	f.tr.markOverdue()
	if f.tr.sawForeground("b") {
		t.Fatalf("still remembered after %s", foregroundMemory)
	}
}

func TestShadowDecisionWithdrawn(t *testing.T) {
	f := newShadowFixture(t)
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, "Background"), pom("x", ownedBy("o", false)), false)
	f.tr.decided(shadowWrite("y", AttemptToOrphan, VerbOrphan, "", "o"), pom("y", ownedBy("o", false)), false)
	// The engine keeps both now (their owners came back, say): only the decision of the
	// same queue is withdrawn; an orphaning is not undone by an attemptToDelete keep.
	keep := func(uid types.UID) Action {
		return Action{Queue: AttemptToDelete, Verb: VerbKeep, Object: ObjectRef{Kind: "ConfigMap", Name: string(uid), UID: uid}, Reason: "owner exists"}
	}
	f.tr.decided(keep("x"), pom("x", ownedBy("o", false)), false)
	f.tr.decided(keep("y"), pom("y", ownedBy("o", false)), false)
	if c := f.counts(); c != (ShadowCounts{Pending: 1, Withdrawn: 1}) {
		t.Fatalf("after the keeps: %+v", c)
	}
	// A different write from the same queue replaces the first; a foreground delete after
	// an unblock is its next step, and both stand.
	f.tr.decided(shadowWrite("z", AttemptToDelete, VerbRemoveRefs, "", "a"), pom("z", ownedBy("a", true), ownedBy("b", true)), false)
	f.tr.decided(shadowWrite("z", AttemptToDelete, VerbUnblock, "", "a", "b"), pom("z", ownedBy("a", true), ownedBy("b", true)), false)
	f.tr.decided(shadowWrite("z", AttemptToDelete, VerbDelete, "Foreground"), pom("z", ownedBy("a", true), ownedBy("b", true)), false)
	if c := f.counts(); c != (ShadowCounts{Pending: 3, Withdrawn: 2}) {
		t.Fatalf("after z's decisions: %+v", c)
	}
	f.tr.observed(pom("z", ownedBy("a", false), ownedBy("b", false)), false)
	f.tr.observed(pom("z", ownedBy("a", false), ownedBy("b", false), deletingWith(metav1.FinalizerDeleteDependents)), false)
	if c := f.counts(); c != (ShadowCounts{Pending: 1, Confirmed: 2, Withdrawn: 2}) {
		t.Fatalf("after the cluster unblocked and deleted z: %+v", c)
	}
}

func TestShadowDecisionOnAViewAlreadyOvertaken(t *testing.T) {
	f := newShadowFixture(t)
	// The graph already shows the cluster's act when the decision is recorded: confirmed at
	// once, with no lag.
	f.tr.decided(shadowWrite("x", AttemptToDelete, VerbDelete, "Background"), nil, true)
	// It shows something else done: too late to compare, so withdrawn, never diverged.
	f.tr.decided(shadowWrite("y", AttemptToDelete, VerbDelete, "Foreground"), pom("y", deletingWith(metav1.FinalizerOrphanDependents)), false)
	// Not observed yet (a virtual node): pending until its observation.
	f.tr.decided(shadowWrite("z", AttemptToDelete, VerbDelete, "Background"), nil, false)
	r := f.tr.report()
	if r.Counts != (ShadowCounts{Pending: 1, Confirmed: 1, Withdrawn: 1}) || r.Lag.Max != 0 {
		t.Fatalf("report: %+v", r)
	}
}
