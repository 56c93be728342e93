package enginetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
)

// BenchmarkCascadeRecording: the real engine (20 workers, an unbounded client, as
// internal/difftest's "unbounded" cascades) collects 2,000 dependents of one owner deleted
// in the background, with the recording off and on in turn, 12 pairs (each pair's order
// alternating) on one embedded apiserver. Printed: the median ratio of the cascade's wall
// time on/off (the bound: at most 1.05), the ratio of the total times, and what
// the recording took in meanwhile. A pair's ratio varies by ±15% on this machine: fewer
// pairs cannot tell 5% apart.
//
//	go test -run '^$' -bench CascadeRecording -benchtime 1x -timeout 30m ./history/enginetest/
//
// GCSCOPE_HISTORY_BENCH_DIR puts the recording elsewhere than the etcd's disk (tmpfs:
// /dev/shm), to tell its disk traffic apart from its CPU; GCSCOPE_HISTORY_BENCH_PAIRS sets
// the number of pairs.
func BenchmarkCascadeRecording(b *testing.B) {
	const dependents = 2000
	ctx := context.Background()
	k := testkit.NewCluster(b, testkit.Options{Logger: logger})
	cfg := rest.CopyConfig(k.Config)
	cfg.QPS = -1
	engine, err := gc.NewForConfig(cfg, gc.Options{SyncTimeout: 20 * time.Second, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	if err := k.GoReady(engine.Synced(), engine.Run); err != nil {
		b.Fatalf("the engine did not sync: %v", err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	run := 0
	cascade := func(recording bool) (took, cpu time.Duration, recorded int64, missed float64) {
		run++
		ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cascade-%d", run)}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		owner, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		uids := make([]types.UID, 0, dependents)
		var g errgroup.Group
		g.SetLimit(20)
		for i := range dependents {
			g.Go(func() error {
				cm, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name:            fmt.Sprintf("dep-%04d", i),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
				}}, metav1.CreateOptions{})
				if err == nil {
					mu.Lock()
					uids = append(uids, cm.UID)
					mu.Unlock()
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		observed := func(want bool) bool {
			for _, u := range uids {
				if _, ok := engine.Node(u); ok != want {
					return false
				}
			}
			return true
		}
		testkit.EventuallyEvery(b, 10*time.Millisecond, "the engine observes the tree", func() bool { return observed(true) })

		var store *history.Store
		stopRecorder := func() {}
		if recording {
			dir := b.TempDir()
			if d := os.Getenv("GCSCOPE_HISTORY_BENCH_DIR"); d != "" {
				// Another disk (or tmpfs) than the embedded etcd's: tells the recording's
				// disk traffic apart from its CPU.
				if dir, err = os.MkdirTemp(d, "history-"); err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
			}
			if store, err = history.Open(history.Options{Dir: dir, Logger: logger}); err != nil {
				b.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			rdone := make(chan error, 1)
			go func() { rdone <- history.NewRecorder(store, engine, history.RecorderOptions{}).Run(rctx) }()
			stopRecorder = func() { cancel(); <-rdone }
			testkit.EventuallyEvery(b, time.Millisecond, "the recorder records", func() bool { return store.Status().State == history.StateRecording })
		}
		from := engine.Feed().LastSeq()
		cpu0 := testkit.ProcessCPU()
		start := time.Now()
		if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		// Checked every 5 ms: the wait is what the benchmark times.
		testkit.EventuallyEvery(b, 5*time.Millisecond, "the engine observes the cascade's end", func() bool { return observed(false) })
		took = time.Since(start)
		if recording {
			// The recorder's last writes belong to the cascade's cost.

			end := engine.Feed().LastSeq()
			testkit.EventuallyEvery(b, 5*time.Millisecond, "the recorder writes the cascade", func() bool {
				st := store.Status()
				return st.Seq >= end || st.State != history.StateRecording
			})
			stopRecorder()
			st := store.Status()
			recorded = st.Events
			missed = 1 - float64(st.Events)/float64(end-from)
			store.Close()
		}
		cpu = testkit.ProcessCPU() - cpu0
		return took, cpu, recorded, missed
	}

	pairs := 12
	if v := os.Getenv("GCSCOPE_HISTORY_BENCH_PAIRS"); v != "" {
		if pairs, err = strconv.Atoi(v); err != nil || pairs < 1 {
			b.Fatalf("GCSCOPE_HISTORY_BENCH_PAIRS=%q: want a number of pairs", v)
		}
	}
	cascade(false) // warm-up: the first cascade of a fresh apiserver is slower
	var ratios, cpuRatios []float64
	var offs, ons []time.Duration
	var recorded int64
	var missed float64
	for range b.N {
		for pair := range pairs {
			var off, on, offCPU, onCPU time.Duration
			var n int64
			var m float64
			if pair%2 == 0 { // alternate which goes first
				off, offCPU, _, _ = cascade(false)
				on, onCPU, n, m = cascade(true)
			} else {
				on, onCPU, n, m = cascade(true)
				off, offCPU, _, _ = cascade(false)
			}
			offs, ons = append(offs, off), append(ons, on)
			ratios = append(ratios, on.Seconds()/off.Seconds())
			cpuRatios = append(cpuRatios, onCPU.Seconds()/offCPU.Seconds())
			recorded, missed = max(recorded, n), max(missed, m)
		}
	}
	medianOf := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	b.ReportMetric(medianOf(cpuRatios), "x-cpu-recording-off")
	median := medianOf(ratios)
	b.ReportMetric(median, "x-recording-off")
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	total := sum(ons).Seconds() / sum(offs).Seconds()
	b.ReportMetric(total, "x-total-recording-off")
	b.ReportMetric(float64(recorded), "events-recorded")
	b.ReportMetric(missed*100, "%-missed")
	b.Logf("2,000-dependent background cascade: off %v, on %v; wall time on/off %.3f (pairs %.3f; total %.3f), process CPU on/off %.3f (pairs %.3f); the recording took %d events of the cascade, %.2f%% missed",
		offs, ons, median, ratios, total, medianOf(cpuRatios), cpuRatios, recorded, missed*100)
}
