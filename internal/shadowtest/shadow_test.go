// Package shadowtest checks shadow mode's self-check end to end: gcscope's engine in
// shadow mode beside kube-controller-manager's own garbage collector on one embedded
// apiserver must agree with it on every decision; and with no collector acting on the
// cluster, its decisions must turn overdue.
package shadowtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/scenario"
)

func TestMain(m *testing.M) {
	// kube-controller-manager logs through klog; its lines would drown the test's.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

var logger = testkit.Logger(slog.LevelWarn)

// startShadow runs gcscope's engine in shadow mode on c until the test ends, and tallies
// its shadow decisions' outcomes by verb from the feed.
func startShadow(t *testing.T, c *cluster.Cluster, overdue time.Duration) (*gc.GarbageCollector, *tally) {
	t.Helper()
	engine, err := gc.NewForConfig(c.RESTConfig(), gc.Options{Mode: gc.ModeShadow, ShadowOverdue: overdue, SyncTimeout: 20 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { engine.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	select {
	case <-engine.Synced():
	case <-time.After(time.Minute):
		t.Fatal("the engine did not sync")
	}
	tl := &tally{outcomes: map[string]map[gc.ShadowOutcome]int{}, confirmed: map[string]int{}}
	go tl.follow(ctx, engine.Feed())
	return engine, tl
}

// tally counts the final outcome of each shadow decision, by verb and policy.
type tally struct {
	mu        sync.Mutex
	outcomes  map[string]map[gc.ShadowOutcome]int
	confirmed map[string]int // by namespace
}

func (tl *tally) confirmedIn(ns string) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.confirmed[ns]
}

func (tl *tally) counts() map[string]map[gc.ShadowOutcome]int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := map[string]map[gc.ShadowOutcome]int{}
	for k, v := range tl.outcomes {
		out[k] = maps.Clone(v)
	}
	return out
}

func (tl *tally) follow(ctx context.Context, feed *gc.Feed) {
	var seq uint64
	for ctx.Err() == nil {
		if err := feed.Wait(ctx, seq); err != nil {
			return
		}
		events, err := feed.Since(seq, 4096)
		if errors.Is(err, gc.ErrTooOld) {
			panic("the test fell behind the feed")
		}
		for _, e := range events {
			seq = e.Seq
			if e.Type != gc.ShadowChange || e.Shadow.Outcome == gc.ShadowPending || e.Shadow.Outcome == gc.ShadowOverdue {
				continue
			}
			key := string(e.Shadow.Action.Verb) + " " + e.Shadow.Action.Policy + e.Shadow.Action.Finalizer
			tl.mu.Lock()
			if tl.outcomes[key] == nil {
				tl.outcomes[key] = map[gc.ShadowOutcome]int{}
			}
			tl.outcomes[key][e.Shadow.Outcome]++
			if e.Shadow.Outcome == gc.ShadowConfirmed {
				tl.confirmed[e.Shadow.Action.Object.Namespace]++
			}
			tl.mu.Unlock()
		}
	}
}

// waitSettled waits until no shadow decision is open, but those stillOpen accepts, and the
// report has stopped moving.
func waitSettled(t *testing.T, engine *gc.GarbageCollector, within time.Duration, stillOpen func(gc.ShadowDecision) bool) gc.ShadowReport {
	t.Helper()
	var last gc.ShadowReport
	quiet := 0
	// At a fixed pace: eight quiet checks are two quiet seconds.
	if testkit.PollEvery(context.Background(), 250*time.Millisecond, within, func() bool {
		r := engine.ShadowReport()
		open := slices.DeleteFunc(slices.Clone(r.Open), stillOpen)
		if r.Counts == last.Counts && len(open) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		last = r
		return quiet >= 8 // 2 s without a change
	}) != nil {
		t.Fatalf("shadow decisions not settled within %s (still open, or still moving): %+v\nopen: %s", within, last.Counts, describe(last.Open))
	}
	return last
}

func describe(ds []gc.ShadowDecision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  %s %s %s/%s: %s %s%s (because %s) → %s after %s: %s", d.Action.Queue, d.Action.Object.Kind, d.Action.Object.Namespace,
			d.Action.Object.Name, d.Action.Verb, d.Action.Policy, d.Action.Finalizer, d.Action.Reason, d.Outcome, d.Lag, d.Observed)
	}
	return b.String()
}

// TestShadowAgreesWithUpstream plays every scenario of the page's scenario player, and
// foreground and background cascades, on a cluster whose collector is
// kube-controller-manager's own: every decision gcscope's engine makes in shadow mode must
// be confirmed by what that collector does, none diverged, none left open.
func TestShadowAgreesWithUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := testkit.NewCluster(t, testkit.Options{Controllers: true, UpstreamCollector: true, Logger: logger}).Cluster
	engine, tl := startShadow(t, c, 2*time.Minute)
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	// The controllers are up once the service-account controller has made the default
	// namespace's ServiceAccount. Before that, Pods cannot be created, and the ReplicaSet
	// controller's retries back off for minutes.
	testkit.EventuallyWithin(t, time.Minute, "kube-controller-manager's controllers to start (the default ServiceAccount to appear)", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})

	player, err := scenario.NewPlayer(c.RESTConfig(), scenario.Options{Engine: engine, Logger: logger, StepTimeout: 2 * time.Minute, MaxActive: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer player.Close()
	var runs []string
	crdRun := ""
	for _, s := range player.Scenarios() {
		if s.ID == scenario.NamespaceBlocked {
			// Its APIService stops every namespace deletion of the cluster until released:
			// played alone, once the others are done.
			continue
		}
		run, err := player.Play(ctx, s.ID)
		if err != nil {
			t.Fatalf("play %s: %v", s.ID, err)
		}
		if s.ID == scenario.CRDDeleted {
			crdRun = run.ID
			continue
		}
		runs = append(runs, run.ID)
	}
	cascade(t, client, "shadow-foreground", metav1.DeletePropagationForeground)
	cascade(t, client, "shadow-background", metav1.DeletePropagationBackground)
	cascade(t, client, "shadow-orphan", metav1.DeletePropagationOrphan)

	finish := func(id string) {
		t.Helper()
		released := false
		var failure error // the run cannot be done: stop waiting
		err := testkit.Poll(ctx, 2*time.Minute, func() bool {
			run, _ := player.Status(id)
			switch {
			case run.State == scenario.RunWaiting && !released: // a hold for the user to release
				released = true
				_, failure = player.Release(ctx, id)
				return failure != nil
			case run.State == scenario.RunFailed:
				failure = errors.New(run.Error)
				return true
			}
			return run.State == scenario.RunDone
		})
		if failure != nil {
			err = failure
		}
		if err != nil {
			run, _ := player.Status(id)
			t.Fatalf("scenario run %s under the upstream collector not done: %v (%+v)", id, err, run.Steps)
		}
	}
	for _, id := range runs {
		finish(id)
	}
	blocked, err := player.Play(ctx, scenario.NamespaceBlocked)
	if err != nil {
		t.Fatalf("play %s: %v", scenario.NamespaceBlocked, err)
	}
	finish(blocked.ID)

	// A CRD deleted two seconds after its creation: kube-controller-manager's collector
	// finds new resources every 30 s, so it never watched the Gears, and the owner of the
	// ConfigMap and the Secret stays, for it, of a kind it cannot look up: it keeps them
	// (and retries) for ever. gcscope's engine was told of the CRD (the player asks it to
	// rediscover, as the page does), saw the Gear deleted, and would delete both. Those
	// decisions stay open, never diverged: the cluster's collector is stuck on them. (Once in
	// a while its 30 s discovery falls within the CRD's life; then both are confirmed.)
	inCRDRun := func(d gc.ShadowDecision) bool { return d.Action.Object.Namespace == crdRun }
	if testkit.Poll(ctx, time.Minute, func() bool {
		r := engine.ShadowReport()
		open := slices.DeleteFunc(slices.Clone(r.Open), func(d gc.ShadowDecision) bool { return !inCRDRun(d) })
		confirmed := tl.confirmedIn(crdRun)
		return len(open)+confirmed == 2
	}) != nil {
		t.Fatalf("gcscope's two decisions on the ConfigMap and Secret of the deleted CRD's Gear, open or confirmed, not there within 1m: %s", describe(engine.ShadowReport().Open))
	}
	for _, d := range engine.ShadowReport().Open {
		if inCRDRun(d) && (d.Action.Verb != gc.VerbDelete || d.Action.Policy != "Background") {
			t.Errorf("decision on an object of the deleted CRD's Gear: %s", describe([]gc.ShadowDecision{d}))
		}
	}

	r := waitSettled(t, engine, time.Minute, inCRDRun)
	t.Logf("shadow decisions: %+v; lag p50 %s, p90 %s, max %s over %d", r.Counts, r.Lag.P50, r.Lag.P90, r.Lag.Max, r.Lag.Count)
	outcomes := tl.counts()
	t.Logf("outcomes by verb: %v", outcomes)
	if r.Counts.Diverged != 0 {
		t.Errorf("%d decisions diverged from kube-controller-manager's collector:%s", r.Counts.Diverged, describe(r.Diverged))
	}
	if r.Lag.Count != r.Counts.Confirmed {
		t.Errorf("lag distribution over %d confirmations, want %d", r.Lag.Count, r.Counts.Confirmed)
	}
	// Each kind of decision was made and confirmed at least once.
	for _, want := range []string{"delete Background", "delete Foreground", "removeFinalizer foregroundDeletion", "removeFinalizer orphan", "orphan "} {
		if outcomes[want][gc.ShadowConfirmed] == 0 {
			t.Errorf("no %q decision confirmed; outcomes: %v", want, outcomes)
		}
	}
	if got := decisionsTotal(t, engine, "diverged"); got != 0 {
		t.Errorf("gcscope_shadow_decisions_total{outcome=diverged} = %v", got)
	}
	if got := decisionsTotal(t, engine, "confirmed"); int(got) != r.Counts.Confirmed {
		t.Errorf("gcscope_shadow_decisions_total{outcome=confirmed} = %v, report %d", got, r.Counts.Confirmed)
	}
}

// cascade builds an owner ConfigMap with 20 dependents, each with 2 of its own, all
// blocking, and deletes the owner with policy.
func cascade(t *testing.T, client kubernetes.Interface, ns string, policy metav1.DeletionPropagation) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps(ns)
	create := func(name string, owner *corev1.ConfigMap) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if owner != nil {
			yes := true
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &yes, Controller: &yes}}
		}
		out, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	owner := create("owner", nil)
	for i := range 20 {
		mid := create(fmt.Sprintf("mid-%02d", i), owner)
		for j := range 2 {
			create(fmt.Sprintf("leaf-%02d-%d", i, j), mid)
		}
	}
	time.Sleep(time.Second) // both collectors observe the objects: upstream's cannot be asked whether it has
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, time.Minute, fmt.Sprintf("the %s cascade in %s to delete its owner", policy, ns), func() bool {
		_, err := cms.Get(ctx, owner.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// decisionsTotal reads gcscope_shadow_decisions_total{outcome} from the engine's registry.
func decisionsTotal(t *testing.T, engine *gc.GarbageCollector, outcome string) float64 {
	t.Helper()
	families, err := engine.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gcscope_shadow_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestShadowOverdueWithoutACollector runs the engine in shadow mode on a cluster where no
// collector acts: its decisions turn overdue at the threshold, Explain says so, and a
// decision carried out late (here by hand) is confirmed with its whole lag.
func TestShadowOverdueWithoutACollector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testkit.NewCluster(t, testkit.Options{Logger: logger}).Cluster // no controllers: no collector
	const overdue = 2 * time.Second
	engine, _ := startShadow(t, c, overdue)
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	cms := client.CoreV1().ConfigMaps("default")
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "4f1c3c7e-0000-4000-8000-000000000001"}
	orphan, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dangling", OwnerReferences: []metav1.OwnerReference{ghost}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var r gc.ShadowReport
	if testkit.Poll(ctx, 30*time.Second, func() bool {
		r = engine.ShadowReport()
		return r.Counts.Pending == 1
	}) != nil {
		t.Fatalf("no pending decision for the dangling ConfigMap: %+v", r)
	}
	if d := r.Open[0]; d.Action.Object.UID != orphan.UID || d.Action.Verb != gc.VerbDelete || d.Action.Policy != "Background" {
		t.Fatalf("the open decision: %s", describe(r.Open))
	}
	decided := r.Open[0].DecidedAt
	if testkit.Poll(ctx, 30*time.Second, func() bool {
		r = engine.ShadowReport()
		return r.Counts.Overdue == 1
	}) != nil {
		t.Fatalf("the decision did not turn overdue: %+v", r)
	}
	if since := time.Since(decided); since < overdue {
		t.Fatalf("overdue %s after the decision, before the %s threshold", since, overdue)
	}
	if got := decisionsTotal(t, engine, "overdue"); got != 1 {
		t.Errorf("gcscope_shadow_decisions_total{outcome=overdue} = %v", got)
	}
	e, ok := engine.Explain(orphan.UID)
	if !ok || !slices.ContainsFunc(e.Words, func(w string) bool {
		return strings.Contains(w, "has not acted on this for") && strings.Contains(w, "overdue") &&
			strings.Contains(w, "delete it with the Background policy") && strings.Contains(w, "ghost")
	}) {
		t.Errorf("Explain does not tell the overdue decision: %q", e.Words)
	}

	// The cluster catches up.
	if err := cms.Delete(ctx, orphan.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = waitSettled(t, engine, 30*time.Second, func(gc.ShadowDecision) bool { return false })
	if r.Counts != (gc.ShadowCounts{Confirmed: 1}) || r.Lag.Max < overdue {
		t.Fatalf("after the late delete: %+v, lag %+v", r.Counts, r.Lag)
	}
}
