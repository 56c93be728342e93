package gc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// queueMetric names each queue in the workqueue metrics.
var queueMetric = map[gc.QueueName]string{
	gc.GraphChanges:    "garbage_collector_graph_changes",
	gc.AttemptToDelete: "garbage_collector_attempt_to_delete",
	gc.AttemptToOrphan: "garbage_collector_attempt_to_orphan",
}

// workqueueGauges reads the engine's workqueue gauges: name{queue} -> value.
func workqueueGauges(t *testing.T, engine *gc.GarbageCollector) map[string]float64 {
	t.Helper()
	families, err := engine.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetGauge() == nil {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					out[f.GetName()+"{"+l.GetValue()+"}"] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestQueueMirrorMatchesMetricsUnderChurn: many ConfigMaps are created, updated and
// deleted every way at once, with a few workers, so that adds, takes and dones of one
// queue race each other. Once the engine is quiet, the queues as the feed tells them (the
// engine's own mirror, which /api/v1/queues and snapshots show, and a client's replay of
// the stream) are what the workqueue metrics say: empty, nothing left queued or in flight.
func TestQueueMirrorMatchesMetricsUnderChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := ownControlPlane(t)
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 400, 800
	client := kubernetes.NewForConfigOrDie(fast)
	engine := runEngine(t, ctx, cfg, gc.Options{Workers: 4, FeedSize: 1 << 18, DiscoveryPeriod: time.Hour})
	<-engine.Synced()
	base := engine.Snapshot()

	const churners, rounds = 4, 15
	cms := client.CoreV1().ConfigMaps("default")
	policies := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}
	var wg sync.WaitGroup
	errs := make(chan error, churners)
	for c := range churners {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(7, uint64(c)))
			for i := range rounds {
				if err := churnRound(ctx, cms, r, fmt.Sprintf("c%d-%d", c, i), policies[(c+i)%len(policies)]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every owner goes and every dangling dependent with it; orphans stay.
	testkit.Eventually(t, "the engine to finish the churn's deletions", func() bool {
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "churn"})
		if err != nil {
			return false
		}
		for _, cm := range list.Items {
			if cm.DeletionTimestamp != nil || cm.Labels["churn"] != "orphan" {
				return false
			}
		}
		return true
	})
	// Quiet: every queue's depth metric 0, no work unfinished, and no event for a while.
	quiet := func() bool {
		g := workqueueGauges(t, engine)
		for _, name := range queueMetric {
			if g["workqueue_depth{"+name+"}"] != 0 || g["workqueue_unfinished_work_seconds{"+name+"}"] != 0 {
				return false
			}
		}
		return true
	}
	last, since := engine.Feed().LastSeq(), time.Now()
	testkit.Eventually(t, "the engine to be quiet for 2s", func() bool {
		if seq := engine.Feed().LastSeq(); seq != last || !quiet() {
			last, since = seq, time.Now()
			return false
		}
		return time.Since(since) > 2*time.Second
	})

	snap := engine.Snapshot()
	gauges := workqueueGauges(t, engine)
	events, err := engine.Feed().Since(base.Seq, int(snap.Seq-base.Seq))
	if err != nil {
		t.Fatalf("the feed since the first snapshot: %v", err)
	}
	replayed := replayQueues(base, events)
	adds := 0
	for _, q := range snap.Queues {
		metric := gauges["workqueue_depth{"+queueMetric[q.Name]+"}"]
		if q.Depth != int(metric) || q.InFlight != 0 {
			t.Errorf("%s: the engine's mirror says depth %d, in flight %d; workqueue_depth is %v and no work is unfinished",
				q.Name, q.Depth, q.InFlight, metric)
		}
		for _, it := range q.Items {
			if it.Queued || it.InFlight {
				t.Errorf("%s: %s/%s is told queued=%v in flight=%v, in a quiet queue", q.Name, it.Object.Kind, it.Object.Name, it.Queued, it.InFlight)
			}
		}
		r := replayed[q.Name]
		if r.depth != int(metric) || r.inFlight != 0 || r.listed != 0 {
			t.Errorf("%s: a client replaying the stream ends with depth %d, in flight %d, %d objects queued or in flight; workqueue_depth is %v",
				q.Name, r.depth, r.inFlight, r.listed, metric)
		}
		if r.counts != nil && (r.counts.Depth != int(metric) || r.counts.InFlight != 0) {
			t.Errorf("%s: the last transition told counts %+v; workqueue_depth is %v and no work is unfinished", q.Name, *r.counts, metric)
		}
		adds += int(q.Adds - baseAdds(base, q.Name))
	}
	t.Logf("%d events, %d adds over the three queues since the first snapshot", len(events), adds)
}

func baseAdds(s gc.Snapshot, name gc.QueueName) uint64 {
	for _, q := range s.Queues {
		if q.Name == name {
			return q.Adds
		}
	}
	return 0
}

// churnRound makes an owner with dependents (one blocking, two not, one also naming an
// owner that never existed, and one naming only such an owner), updates them a few times
// while the owner is deleted with policy, so that its changes, the collector's work and
// conflicts interleave.
func churnRound(ctx context.Context, cms interface {
	Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}, r *rand.Rand, name string, policy metav1.DeletionPropagation) error {
	depLabel := "dependent"
	if policy == metav1.DeletePropagationOrphan {
		depLabel = "orphan"
	}
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"churn": "owner"}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name + "-ghost", UID: uuid.NewUUID()}
	blocking := ref
	blocking.BlockOwnerDeletion = ptr.To(true)
	var deps []string
	for i, refs := range [][]metav1.OwnerReference{{blocking}, {ref}, {ref, ghost}, {ghost}} {
		label := depLabel
		if len(refs) == 1 && refs[0].UID == ghost.UID {
			label = "dangling"
		}
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-dep%d", name, i),
			Labels: map[string]string{"churn": label}, OwnerReferences: refs}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		deps = append(deps, cm.Name)
	}
	update := func(dep string, i int) error {
		cm, err := cms.Get(ctx, dep, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		cm.Data = map[string]string{"round": fmt.Sprint(i)}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	for i := range 3 {
		if i == 1 {
			if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				return err
			}
		}
		for _, dep := range deps {
			if r.IntN(2) == 0 {
				if err := update(dep, i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
