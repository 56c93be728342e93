package gc_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// marks are the orphan marks the engine's node of uid carries.
func (e *testEnv) marks(uid types.UID) []gc.OrphanMark {
	n, _ := e.engine.Node(uid)
	return n.Orphaned
}

// updatesOf are the nodeUpdated events of uid that the feed published after seq.
func (e *testEnv) updatesOf(t *testing.T, seq uint64, uid types.UID) []gc.NodeState {
	t.Helper()
	evs, err := e.engine.Feed().Since(seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []gc.NodeState
	for _, ev := range evs {
		if ev.Type == gc.NodeUpdated && ev.Node.UID == uid {
			out = append(out, *ev.Node)
		}
	}
	return out
}

// An Orphan delete of an owner leaves its dependent marked with the former owner and the
// time the collector removed the reference, on the node and on the feed, until dismissed.
func TestOrphanDeleteMarksTheDependent(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "search", nil)
	dep := e.configMap(t, ns, "search-data", nil, cmRef(owner))
	e.waitObserved(t, dep.UID)
	seq := e.engine.Feed().LastSeq()
	before := time.Now()

	e.deleteCM(t, owner, metav1.DeletePropagationOrphan)
	e.waitGone(t, owner)
	testkit.Eventually(t, "the dependent is marked orphaned", func() bool { return len(e.marks(dep.UID)) > 0 })

	if live := e.getCM(t, dep); live == nil || len(live.OwnerReferences) != 0 {
		t.Fatalf("dependent = %+v, want it kept without owner references", live)
	}
	marks := e.marks(dep.UID)
	wantOwner := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "search", UID: owner.UID}
	if len(marks) != 1 {
		t.Fatalf("marks = %+v, want one", marks)
	}
	m := marks[0]
	if m.Owner != wantOwner || m.Cause != gc.OrphanDelete || m.OwnerHidden || m.By == "" {
		t.Errorf("mark = %+v, want the former owner %+v, cause %s", m, wantOwner, gc.OrphanDelete)
	}
	if m.At.Before(before) || m.At.After(time.Now()) {
		t.Errorf("mark time %v is not between the delete (%v) and now", m.At, before)
	}
	if want := "the Orphan delete of ConfigMap search (its dependents stay, without their reference to it)"; m.Reason != want {
		t.Errorf("reason = %q, want %q", m.Reason, want)
	}
	published := false
	for _, u := range e.updatesOf(t, seq, dep.UID) {
		published = published || (len(u.Orphaned) == 1 && u.Orphaned[0] == m)
	}
	if !published {
		t.Errorf("no nodeUpdated event of the dependent carries the mark: %+v", e.updatesOf(t, seq, dep.UID))
	}
	if ex, _ := e.engine.Explain(dep.UID); len(ex.Object.Orphaned) != 1 {
		t.Errorf("explanation's object marks = %+v, want the mark", ex.Object.Orphaned)
	}

	seq = e.engine.Feed().LastSeq()
	if found, n := e.engine.DismissOrphanMarks(dep.UID); !found || n != 1 {
		t.Errorf("DismissOrphanMarks = %v, %d; want true, 1", found, n)
	}
	if got := e.marks(dep.UID); len(got) != 0 {
		t.Errorf("marks after dismissal = %+v", got)
	}
	if ups := e.updatesOf(t, seq, dep.UID); len(ups) == 0 || len(ups[len(ups)-1].Orphaned) != 0 {
		t.Errorf("nodeUpdated events after dismissal = %+v, want the node without marks", ups)
	}
}

// A dependent kept by another owner loses its reference to an owner deleted in the
// background, and says so.
func TestDanglingReferenceRemovalMarksTheDependent(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	keeper := e.configMap(t, ns, "keeper", nil)
	gone := e.configMap(t, ns, "gone", nil)
	dep := e.configMap(t, ns, "shared", nil, cmRef(keeper), cmRef(gone))
	e.waitObserved(t, dep.UID)

	e.deleteCM(t, gone, metav1.DeletePropagationBackground)
	testkit.Eventually(t, "the dependent is marked", func() bool { return len(e.marks(dep.UID)) > 0 })
	m := e.marks(dep.UID)[0]
	if m.Owner.UID != gone.UID || m.Owner.Name != "gone" || m.Owner.Namespace != ns || m.Cause != gc.OwnerAbsent {
		t.Errorf("mark = %+v, want the absent owner gone", m)
	}
	live := e.getCM(t, dep)
	if live == nil || len(live.OwnerReferences) != 1 || live.OwnerReferences[0].UID != keeper.UID {
		t.Errorf("dependent = %+v, want it kept with its reference to keeper only", live)
	}
}
