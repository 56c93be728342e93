// Package enginetest checks the recording against gcscope's real engine on an embedded
// kube-apiserver: a foreground cascade is recorded, and the state rebuilt for the moment
// it was half done must be exactly what the engine's live snapshot said then. (A package
// of its own: its test binary links the control plane, history's own tests do not.)
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
)

var logger = testkit.Logger(slog.LevelWarn)

const dependents = 30

// startEngine starts an embedded control plane and the real engine on it, with two
// workers waiting delay before each write (time enough to see a cascade part done), and
// waits for the engine to sync; both stop when the test ends.
func startEngine(ctx context.Context, t *testing.T, delay time.Duration) (*cluster.Cluster, *gc.GarbageCollector) {
	t.Helper()
	k := testkit.NewCluster(t, testkit.Options{Logger: logger})
	engine, err := gc.NewForConfig(k.Config, gc.Options{Workers: 2, ActionDelay: delay, SyncTimeout: 20 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// The engine stops before the control plane does, when the test ends.
	if err := k.GoReady(engine.Synced(), engine.Run); err != nil {
		t.Fatalf("the engine did not sync: %v", err)
	}
	return k.Cluster, engine
}

// recordInto records engine with o into a fresh store until the test ends.
func recordInto(t *testing.T, engine *gc.GarbageCollector, o history.RecorderOptions) *history.Store {
	t.Helper()
	store, err := history.Open(history.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- history.NewRecorder(store, engine, o).Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return store
}

func TestRecordedForegroundCascadeRebuildsTheLiveState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// In slow motion: the cascade takes a second or two, time enough to see it half done.
	c, engine := startEngine(ctx, t, 60*time.Millisecond)

	dir := t.TempDir()
	store, err := history.Open(history.Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recCtx, stopRecorder := context.WithCancel(context.Background())
	recDone := make(chan error, 1)
	// Checkpoints every 200 events: the half-done moment is rebuilt from one of them and
	// the events after it, not from the start.
	go func() {
		recDone <- history.NewRecorder(store, engine, history.RecorderOptions{FlushInterval: 20 * time.Millisecond, CheckpointEvents: 200}).Run(recCtx)
	}()

	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cascade"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[types.UID]string{}
	for i := range dependents {
		cm, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dep-%02d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
				BlockOwnerDeletion: ptr.To(true)}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deps[cm.UID] = cm.Name
	}
	testkit.EventuallyEvery(t, 5*time.Millisecond, "the engine to observe the objects", func() bool {
		for uid := range deps {
			if _, ok := engine.Node(uid); !ok {
				return false
			}
		}
		return true
	})

	fg := metav1.DeletePropagationForeground
	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	// The moment the cascade is half done, as the engine's live snapshot says it.
	var live gc.Snapshot
	testkit.EventuallyEvery(t, 5*time.Millisecond, "the cascade to be half done", func() bool {
		live = gc.Snapshot{}
		s := engine.Snapshot()
		left := 0
		ownerWaits := false
		for _, n := range s.Nodes {
			if _, ok := deps[n.UID]; ok {
				left++
			}
			ownerWaits = ownerWaits || n.UID == owner.UID && n.DeletingDependents
		}
		if ownerWaits && left > 0 && left <= dependents/2 {
			live = s
			return true
		}
		return false
	})
	liveAt, err := engine.Feed().Since(live.Seq-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyEvery(t, 5*time.Millisecond, "the cascade to finish", func() bool { _, ok := engine.Node(owner.UID); return !ok })
	end := engine.Feed().LastSeq()
	testkit.EventuallyEvery(t, 5*time.Millisecond, "the recorder to catch up", func() bool { return store.Status().Seq >= end })

	st, err := store.StateAtSeq(ctx, store.Status().Session, live.Seq)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "the state at the half-done seq", st.Snapshot, live)
	items := 0
	for _, q := range live.Queues {
		items += len(q.Items)
	}
	t.Logf("half done at seq %d: %d nodes, %d queue items; rebuilt with %d events replayed on a checkpoint", live.Seq, len(live.Nodes), items, st.Replayed)
	st, err = store.StateAt(ctx, liveAt[0].Time)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "the state at the half-done time", st.Snapshot, live)

	// What the collector did, and why: a delete of every dependent, then the owner's
	// foregroundDeletion finalizer removed.
	decisions := func(s *history.Store) []history.Record {
		var out []history.Record
		q := history.Query{Namespaces: []string{ns.Name}, Types: []string{"action"}, Verbs: []string{"delete", "removeFinalizer"}, Limit: history.MaxLimit}
		for {
			p, err := s.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Events...)
			if p.Next == 0 {
				return out
			}
			q.Cursor = p.Next
		}
	}
	// The recorder stops first: the engine goes on (a worker can act on the owner once
	// more after it is gone), and what the store holds must be compared whole.
	stopRecorder()
	if err := <-recDone; err != nil {
		t.Fatal(err)
	}
	before := decisions(store)
	deleted := map[types.UID]bool{}
	for _, r := range before {
		switch a := r.Action; {
		case a.Verb == gc.VerbDelete && a.Error == "" && deps[a.Object.UID] != "":
			deleted[a.Object.UID] = true
			if a.Reason == "" {
				t.Errorf("a delete without its reason: %+v", a)
			}
		case a.Verb == gc.VerbRemoveFinalizer && a.Object.UID == owner.UID && a.Finalizer == metav1.FinalizerDeleteDependents:
		case a.Error != "":
		default:
			t.Errorf("an unexpected decision: %+v", a)
		}
	}
	if len(deleted) != dependents || !slices.ContainsFunc(before, func(r history.Record) bool { return r.Action.Verb == gc.VerbRemoveFinalizer }) {
		t.Fatalf("recorded deletes of %d of %d dependents, and the finalizer's removal: %v", len(deleted), dependents,
			slices.ContainsFunc(before, func(r history.Record) bool { return r.Action.Verb == gc.VerbRemoveFinalizer }))
	}

	// Restart: the same directory opened again answers the same.
	store.Close()
	reopened, err := history.Open(history.Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if got, want := jsonOf(t, decisions(reopened)), jsonOf(t, before); got != want {
		t.Fatalf("after reopening the recording, its decisions differ:\n got %s\nwant %s", got, want)
	}
	st, err = reopened.StateAtSeq(ctx, 1, live.Seq)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "the half-done state after reopening", st.Snapshot, live)
}

func same(t *testing.T, what string, got, want gc.Snapshot) {
	t.Helper()
	g, w := jsonOf(t, got), jsonOf(t, want)
	if g == w {
		return
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	lo := max(0, i-200)
	t.Fatalf("%s differs from the live snapshot at byte %d:\n got …%s…\nwant …%s…", what, i, g[lo:min(len(g), i+200)], w[lo:min(len(w), i+200)])
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
