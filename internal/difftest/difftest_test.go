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
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
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
	"github.com/gcscope/gcscope/internal/testkit"
)

// The two collectors are configured alike.
const (
	workers       = 20
	syncPeriod    = 2 * time.Second
	clientQPS     = 100
	clientBurst   = 200
	defaultSeeds  = 6
	maxConcurrent = 12
)

// side is one cluster and its collector.
type side struct {
	name    string
	cluster *cluster.Cluster
	config  *rest.Config // the collector's: limited to clientQPS and clientBurst
	// The scenario's own clients are not limited: they must never wait behind the
	// collector.
	client kubernetes.Interface
	dyn    dynamic.Interface
	ext    apiextensionsclient.Interface
	// calm, when set, holds the side's faults back until the returned func is called
	// (see the fault runs).
	calm func() (resume func())
	// looseTiming: the side's timing is perturbed on purpose; see play.looseTiming.
	looseTiming bool
}

func TestMain(m *testing.M) {
	// The upstream collector logs through klog; its lines would drown the comparison.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	testkit.Main(m)
}

// newSide makes a side of a shared control plane: the collector's configuration is limited
// to clientQPS and clientBurst, the scenario's own clients are not.
func newSide(name string, k *testkit.Env) *side {
	cfg := rest.CopyConfig(k.Config)
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	free := rest.CopyConfig(cfg)
	free.QPS = -1
	return &side{name: name, cluster: k.Cluster, config: cfg, client: kubernetes.NewForConfigOrDie(free),
		dyn: dynamic.NewForConfigOrDie(free), ext: apiextensionsclient.NewForConfigOrDie(free)}
}

// runUpstream starts kube-controller-manager's collector as the controller-manager
// does: a deferred mapper over a cached discovery client, reset every period; Run and Sync.
func runUpstream(ctx context.Context, cfg *rest.Config) (*upstream.GarbageCollector, error) {
	return runUpstreamEvery(ctx, cfg, syncPeriod)
}

// runUpstreamEvery is runUpstream with period for the mapper's reset and Sync.
func runUpstreamEvery(ctx context.Context, cfg *rest.Config, period time.Duration) (*upstream.GarbageCollector, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	shared := informers.NewSharedInformerFactory(client, 0)
	metaInformers := metadatainformer.NewSharedInformerFactory(md, 0)
	started := make(chan struct{})
	collector, err := upstream.NewGarbageCollector(ctx, client, md, mapper, upstream.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(shared, metaInformers), started)
	if err != nil {
		return nil, err
	}
	go wait.UntilWithContext(ctx, func(context.Context) { mapper.Reset() }, period)
	go collector.Run(ctx, workers, period)
	go collector.Sync(ctx, client.Discovery(), period)
	shared.Start(ctx.Done())
	metaInformers.Start(ctx.Done())
	close(started)
	return collector, nil
}

func runOurs(ctx context.Context, cfg *rest.Config) (*gc.GarbageCollector, error) {
	engine, err := gc.NewForConfig(cfg, gc.Options{Workers: workers, DiscoveryPeriod: syncPeriod, SyncTimeout: syncPeriod})
	if err != nil {
		return nil, err
	}
	go engine.Run(ctx)
	select {
	case <-engine.Started():
		return engine, nil
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("gcscope's engine did not start")
	}
}

// The two sides, each filled by its shared control plane's Setup.
var upstreamSide, ourSide *side

// env returns the two sides: kube-controller-manager's collector on one control plane,
// gcscope's engine on the other.
func env(t *testing.T) (*side, *side) {
	t.Helper()
	testkit.Shared(t, testkit.Options{Name: "upstream", Setup: func(_ context.Context, k *testkit.Env) error {
		s := newSide("upstream", k)
		if _, err := runUpstream(k.Context(), s.config); err != nil {
			return err
		}
		upstreamSide = s
		return nil
	}})
	testkit.Shared(t, testkit.Options{Name: "gcscope", Setup: func(_ context.Context, k *testkit.Env) error {
		s := newSide("gcscope", k)
		if _, err := runOurs(k.Context(), s.config); err != nil {
			return err
		}
		ourSide = s
		return nil
	}})
	return upstreamSide, ourSide
}

// seeds are the scenarios to run: GCSCOPE_DIFFTEST_SEEDS=N runs seeds 1..N (make difftest),
// a list such as 460,496 or a range such as 400-499 runs those; otherwise the fixed set of
// make test.
func seeds(t *testing.T) []int64 {
	v := os.Getenv("GCSCOPE_DIFFTEST_SEEDS")
	if v == "" {
		v = strconv.Itoa(defaultSeeds)
	}
	var out []int64
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		for i := range n {
			out = append(out, int64(i+1))
		}
		return out
	}
	for part := range strings.SplitSeq(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.ParseInt(lo, 10, 64)
		b, errB := a, error(nil)
		if isRange {
			b, errB = strconv.ParseInt(hi, 10, 64)
		}
		if errA != nil || errB != nil || a < 1 || b < a {
			t.Fatalf("GCSCOPE_DIFFTEST_SEEDS=%q: want a count, a list of seeds or ranges (460,496 or 400-499)", v)
		}
		for seed := a; seed <= b; seed++ {
			out = append(out, seed)
		}
	}
	return out
}

// TestSameOutcomeAsUpstream drives both collectors through every seed's scenario and
// compares the states after each step. A divergent scenario is minimized and written to
// testdata/, where TestRegressions replays it from then on.
func TestSameOutcomeAsUpstream(t *testing.T) {
	up, ours := env(t)
	start := time.Now()
	ss := seeds(t)
	var divergent atomic.Int64
	forEach(ss, func(seed int64) {
		ctx := context.Background()
		d, err := runScenario(ctx, up, ours, generate(seed))
		if err != nil {
			t.Error(err)
			return
		}
		if d == nil {
			return
		}
		divergent.Add(1)
		first := d.String()
		d = minimize(ctx, up, ours, d)
		path, err := writeRegression(d)
		if err != nil {
			t.Errorf("writing the regression: %v", err)
		}
		t.Errorf("seed %d: %s\nminimized (%s):\n%s", seed, first, path, d)
	})
	t.Logf("%d seeds in %v, %d divergent", len(ss), time.Since(start).Round(time.Second), divergent.Load())
}

// TestRegressions replays every scenario testdata/ holds: each once diverged.
// regressionReplays is how many times TestRegressions replays a scenario that diverged
// before it fails.
const regressionReplays = 2

func TestRegressions(t *testing.T) {
	regs := readRegressions(t)
	if len(regs) == 0 {
		return
	}
	up, ours := env(t)
	names := slices.Sorted(maps.Keys(regs))
	forEach(names, func(name string) {
		d, err := runScenario(context.Background(), up, ours, regs[name])
		// Each of these diverged every time before its fix. Seed 351's scenario also holds
		// a worker-timing race of both collectors (docs/fidelity.md: owners deleted one
		// after the other), met in about one run in six, and twice in a row on a loaded
		// machine: a fixed bug that came back diverges on every replay; the race not three
		// times in a row.
		for replay := 1; replay <= regressionReplays && err == nil && d != nil; replay++ {
			t.Logf("%s: diverged, replay %d: %s", name, replay, d)
			d, err = runScenario(context.Background(), up, ours, regs[name])
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if d != nil {
			t.Errorf("%s: %s", name, d)
		}
	})
}

// forEach runs f on every item, maxConcurrent at a time.
func forEach[T any](items []T, f func(T)) {
	sem := make(chan struct{}, maxConcurrent)
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f(it)
		})
	}
	wg.Wait()
}
