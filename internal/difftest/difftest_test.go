// Package difftest runs gcscope's engine and kube-controller-manager's own collector
// (k8s.io/kubernetes/pkg/controller/garbagecollector, v1.37.1) side by side, each on its
// own embedded apiserver with no other controllers, drives both with the same seeded
// scenarios and compares what is left after every step. It is test-only: nothing here is
// linked into the gcscope binary.
//
// make test runs a fixed set of seeds; make difftest N=1000 runs N.
package difftest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/garbagecollector"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/gc"
)

// The two collectors are configured alike.
const (
	workers       = 20
	syncPeriod    = 2 * time.Second
	clientQPS     = 100
	clientBurst   = 200
	defaultSeeds  = 6
	maxConcurrent = 6
)

// side is one cluster and its collector.
type side struct {
	name    string
	cluster *cluster.Cluster
	config  *rest.Config
	client  kubernetes.Interface
}

var (
	envOnce               sync.Once
	upstreamSide, ourSide *side
	envErr                error
	stopAll               func()
)

func TestMain(m *testing.M) {
	// The upstream collector logs through klog; its lines would drown the comparison.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	code := m.Run()
	if stopAll != nil {
		stopAll()
	}
	os.Exit(code)
}

func startSide(ctx context.Context, name string) (*side, error) {
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s cluster: %w", name, err)
	}
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	return &side{name: name, cluster: c, config: cfg, client: kubernetes.NewForConfigOrDie(cfg)}, nil
}

// runUpstream starts kube-controller-manager's collector as the controller-manager
// does: a deferred mapper over a cached discovery client, reset every period; Run and Sync.
func runUpstream(ctx context.Context, s *side) error {
	md, err := metadata.NewForConfig(s.config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(s.client.Discovery()))
	shared := informers.NewSharedInformerFactory(s.client, 0)
	metaInformers := metadatainformer.NewSharedInformerFactory(md, 0)
	started := make(chan struct{})
	collector, err := upstream.NewGarbageCollector(ctx, s.client, md, mapper, upstream.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(shared, metaInformers), started)
	if err != nil {
		return err
	}
	go wait.UntilWithContext(ctx, func(context.Context) { mapper.Reset() }, syncPeriod)
	go collector.Run(ctx, workers, syncPeriod)
	go collector.Sync(ctx, s.client.Discovery(), syncPeriod)
	shared.Start(ctx.Done())
	metaInformers.Start(ctx.Done())
	close(started)
	return nil
}

func runOurs(ctx context.Context, s *side) error {
	engine, err := gc.NewForConfig(s.config, gc.Options{Workers: workers, DiscoveryPeriod: syncPeriod, SyncTimeout: syncPeriod})
	if err != nil {
		return err
	}
	go engine.Run(ctx)
	select {
	case <-engine.Started():
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("gcscope's engine did not start")
	}
}

func env(t *testing.T) (*side, *side) {
	t.Helper()
	envOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if upstreamSide, envErr = startSide(ctx, "upstream"); envErr != nil {
			return
		}
		if ourSide, envErr = startSide(ctx, "gcscope"); envErr != nil {
			upstreamSide.cluster.Stop()
			return
		}
		runCtx, stop := context.WithCancel(context.Background())
		stopAll = func() { stop(); upstreamSide.cluster.Stop(); ourSide.cluster.Stop() }
		if envErr = runUpstream(runCtx, upstreamSide); envErr != nil {
			return
		}
		envErr = runOurs(runCtx, ourSide)
	})
	if envErr != nil {
		t.Fatalf("difftest environment: %v", envErr)
	}
	return upstreamSide, ourSide
}

// seeds are the scenarios to run: GCSCOPE_DIFFTEST_SEEDS=N runs seeds 1..N (make difftest),
// otherwise the fixed set of make test.
func seeds(t *testing.T) []int64 {
	n := defaultSeeds
	if v := os.Getenv("GCSCOPE_DIFFTEST_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GCSCOPE_DIFFTEST_SEEDS=%q: want a positive number", v)
		}
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestSameOutcomeAsUpstream drives both collectors through every seed's scenario and
// compares the states after each step.
func TestSameOutcomeAsUpstream(t *testing.T) {
	up, ours := env(t)
	start := time.Now()
	sem := make(chan struct{}, maxConcurrent)
	var mu sync.Mutex
	var divergent []string
	ss := seeds(t)
	var wg sync.WaitGroup
	for _, seed := range ss {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if d := runScenario(t, up, ours, seed); d != "" {
				mu.Lock()
				divergent = append(divergent, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d seeds in %v, %d divergent", len(ss), time.Since(start).Round(time.Second), len(divergent))
	for _, d := range divergent {
		t.Error(d)
	}
}
