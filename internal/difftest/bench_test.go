package difftest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The cascade benchmark: kube-controller-manager's collector and gcscope's engine, one
// after the other on the same embedded apiserver, with the same workers, QPS and burst,
// take the same cascades; the raw limit is one DELETE per object from 20 workers on an
// unbounded client, and the watched raw limit the same while an informer watches the
// deletions (what no collector can do without). Printed: wall time per cascade, the ratio to upstream's, and the
// requests per collected object by verb, counted at each collector's client transport
// (a figure no machine changes).

// benchShape is one cascade: how to build it and how to start it.
type benchShape struct {
	name    string
	owners  int   // top-level objects, deleted by the benchmark
	fanout  []int // dependents per object at each level below
	policy  metav1.DeletionPropagation
	orphans bool // done when the dependents no longer name the owners (Orphan)
}

var benchShapes = []benchShape{
	{name: "2000 dependents, Background", owners: 1, fanout: []int{2000}, policy: metav1.DeletePropagationBackground},
	{name: "2000 dependents, Foreground", owners: 1, fanout: []int{2000}, policy: metav1.DeletePropagationForeground},
	{name: "20 owners × 100, Background", owners: 20, fanout: []int{100}, policy: metav1.DeletePropagationBackground},
	{name: "chain 50 × 4 × 10, Background", owners: 50, fanout: []int{4, 10}, policy: metav1.DeletePropagationBackground},
	{name: "2000 dependents, Orphan", owners: 1, fanout: []int{2000}, policy: metav1.DeletePropagationOrphan, orphans: true},
}

func (s benchShape) dependents() int {
	n, level := 0, s.owners
	for _, f := range s.fanout {
		level *= f
		n += level
	}
	return n
}

// requestCounter counts a collector's requests on single objects of one namespace, by verb.
type requestCounter struct {
	mu sync.Mutex
	ns string
	n  map[string]int
}

func (c *requestCounter) reset(ns string) {
	c.mu.Lock()
	c.ns, c.n = ns, map[string]int{}
	c.mu.Unlock()
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// parallel runs f(0..n-1) on at most workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

type countingTransport struct {
	next http.RoundTripper
	c    *requestCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i, p := range parts {
		// .../namespaces/NS/RESOURCE/NAME: a request on one object.
		if p == "namespaces" && i+3 < len(parts) {
			t.c.mu.Lock()
			if parts[i+1] == t.c.ns && t.c.n != nil {
				t.c.n[req.Method]++
			}
			t.c.mu.Unlock()
			break
		}
	}
	return t.next.RoundTrip(req)
}

// benchResult is one cascade under one collector (or the raw limit).
type benchResult struct {
	wall     time.Duration
	cpu      time.Duration // the process's CPU time meanwhile: apiserver, etcd and collector share it
	requests map[string]int
	objects  int
}

// cpuPerObject and cores: what the cascade cost, per object, and how busy the cores were.
func (r benchResult) cpuPerObject() time.Duration { return r.cpu / time.Duration(r.objects) }
func (r benchResult) cores() float64              { return r.cpu.Seconds() / r.wall.Seconds() }

func (r benchResult) perObject(verb string) float64 {
	return float64(r.requests[verb]) / float64(r.objects)
}

func (r benchResult) total() float64 {
	n := 0
	for _, v := range r.requests {
		n += v
	}
	return float64(n) / float64(r.objects)
}

// build creates shape's objects in ns (20 writers at once) and returns the owners.
func build(ctx context.Context, sd *side, ns string, shape benchShape) ([]*corev1.ConfigMap, error) {
	if _, err := sd.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	cms := sd.client.CoreV1().ConfigMaps(ns)
	createAll := func(prefix string, owners []*corev1.ConfigMap, each int) ([]*corev1.ConfigMap, error) {
		out := make([]*corev1.ConfigMap, max(len(owners), 1)*each)
		err := parallel(len(out), 20, func(i int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)}}
			if len(owners) > 0 {
				o := owners[i/each]
				cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID,
					BlockOwnerDeletion: ptr.To(true), Controller: ptr.To(true)}}
			}
			var err error
			out[i], err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
		return out, err
	}
	top, err := createAll("owner", nil, shape.owners)
	if err != nil {
		return nil, err
	}
	level := top
	for depth, f := range shape.fanout {
		if level, err = createAll(fmt.Sprintf("level%d", depth+1), level, f); err != nil {
			return nil, err
		}
	}
	return top, nil
}

// cascadeDone reports whether the cascade in ns is over.
func cascadeDone(ctx context.Context, sd *side, ns string, shape benchShape, owners []*corev1.ConfigMap) (bool, error) {
	cms := sd.client.CoreV1().ConfigMaps(ns)
	if !shape.orphans {
		list, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	ownerUIDs := map[types.UID]bool{}
	for _, o := range owners {
		ownerUIDs[o.UID] = true
	}
	for _, cm := range list.Items {
		if ownerUIDs[cm.UID] {
			return false, nil // an owner is still there
		}
		for _, r := range cm.OwnerReferences {
			if ownerUIDs[r.UID] {
				return false, nil
			}
		}
	}
	return true, nil
}

// runCascade builds shape in a fresh namespace, lets the collector observe it, deletes the
// owners and times the cascade to its end.
func runCascade(ctx context.Context, sd *side, counter *requestCounter, ns string, shape benchShape) (benchResult, error) {
	owners, err := build(ctx, sd, ns, shape)
	if err != nil {
		return benchResult{}, err
	}
	time.Sleep(3 * time.Second) // the informers deliver the creations: upstream's collector cannot be asked whether they have
	counter.reset(ns)
	start, cpu0 := time.Now(), testkit.ProcessCPU()
	policy := shape.policy
	for _, o := range owners {
		if err := sd.client.CoreV1().ConfigMaps(ns).Delete(ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			return benchResult{}, err
		}
	}
	// Checked every 20 ms: the wait is what the benchmark times.
	var doneErr error
	err = testkit.PollEvery(ctx, 20*time.Millisecond, 10*time.Minute, func() bool {
		done, err := cascadeDone(ctx, sd, ns, shape, owners)
		doneErr = err
		return done || err != nil
	})
	if doneErr != nil {
		return benchResult{}, doneErr
	}
	if err != nil {
		return benchResult{}, fmt.Errorf("%s: not over after 10 minutes", shape.name)
	}
	return benchResult{wall: time.Since(start), cpu: testkit.ProcessCPU() - cpu0, requests: counter.counts(), objects: shape.dependents()}, nil
}

// rawLimit deletes n objects directly: one DELETE each, 20 workers, unbounded client.
// watched: a metadata informer watches them meanwhile, and the time runs until it has seen
// every deletion, as a collector must (the least a collector can do).
func rawLimit(ctx context.Context, sd *side, ns string, n int, watched bool) (benchResult, error) {
	shape := benchShape{owners: n}
	if _, err := build(ctx, sd, ns, shape); err != nil {
		return benchResult{}, err
	}
	var seen chan struct{}
	if watched {
		stop := make(chan struct{})
		defer close(stop)
		var err error
		if seen, err = watchDeletions(sd, ns, n, stop); err != nil {
			return benchResult{}, err
		}
	}
	start, cpu0 := time.Now(), testkit.ProcessCPU()
	err := parallel(n, 20, func(i int) error {
		err := sd.client.CoreV1().ConfigMaps(ns).Delete(ctx, fmt.Sprintf("owner-%05d", i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return benchResult{}, err
	}
	if seen != nil {
		select {
		case <-seen:
		case <-time.After(time.Minute):
			return benchResult{}, fmt.Errorf("the watch saw not all %d deletions in a minute", n)
		}
	}
	return benchResult{wall: time.Since(start), cpu: testkit.ProcessCPU() - cpu0, objects: n}, nil
}

// watchDeletions starts a metadata informer on ns's ConfigMaps, as a collector's (protobuf,
// unbounded client), synced; seen closes once it has observed n deletions.
func watchDeletions(sd *side, ns string, n int, stop chan struct{}) (seen chan struct{}, err error) {
	cfg := rest.CopyConfig(sd.config)
	cfg.QPS, cfg.Burst = -1, 0
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	inf := metadatainformer.NewFilteredMetadataInformer(client, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, 0, cache.Indexers{}, nil).Informer()
	seen = make(chan struct{})
	var deleted atomic.Int64
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
		if deleted.Add(1) == int64(n) {
			close(seen)
		}
	}}); err != nil {
		return nil, err
	}
	go inf.Run(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		return nil, fmt.Errorf("the watch of %s did not sync", ns)
	}
	return seen, nil
}

// collectorRun starts one collector on sd with the given client limits, counting its
// requests; stop ends it.
func collectorRun(ctx context.Context, sd *side, which string, qps float32, burst int, counter *requestCounter) (stop func(), err error) {
	cfg := rest.CopyConfig(sd.config)
	cfg.QPS, cfg.Burst = qps, burst
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, c: counter} }
	runCtx, cancel := context.WithCancel(ctx)
	if which == "upstream" {
		_, err = runUpstream(runCtx, cfg)
	} else {
		_, err = runOurs(runCtx, cfg)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	time.Sleep(2 * syncPeriod) // monitors synced: the same wait for both collectors, so neither starts ahead
	return func() {
		cancel()
		time.Sleep(time.Second) // the collector's goroutines end: upstream's give no signal
	}, nil
}

// BenchmarkCascades prints the side-by-side table (make bench). It runs once whatever
// b.N asks: each cascade takes seconds to minutes.
func BenchmarkCascades(b *testing.B) {
	ctx := context.Background()
	sd := newSide("bench", testkit.NewCluster(b, testkit.Options{}))
	// Unbounded, a cascade lasts about a second and one run is noise on a loaded machine:
	// those cases run in rounds (each round: upstream, gcscope, raw limit) and the median
	// wall time of each is printed.
	limits := []struct {
		name   string
		qps    float32
		burst  int
		rounds int
	}{{"QPS 100 / burst 200", clientQPS, clientBurst, 1}, {"unbounded", -1, 0, 3}}
	// GCSCOPE_BENCH_CASES (a regexp on "client/cascade") runs only the matching cases:
	// to profile one of them.
	only, err := regexp.Compile(os.Getenv("GCSCOPE_BENCH_CASES"))
	if err != nil {
		b.Fatalf("GCSCOPE_BENCH_CASES: %v", err)
	}
	out := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(out, "\nclient\tcascade\trounds\tupstream\tgcscope\tgcscope/upstream\traw limit\tgcscope/raw\trequests per object, upstream\trequests per object, gcscope\tCPU per object: upstream, gcscope, raw\tcores busy: gcscope, raw\traw limit, watched\tgcscope/watched\tCPU per object, watched")
	run := 0
	nextNamespace := func() string { run++; return fmt.Sprintf("bench-%d", run) }
	for _, l := range limits {
		shapes := slices.DeleteFunc(slices.Clone(benchShapes), func(s benchShape) bool { return !only.MatchString(l.name + "/" + s.name) })
		if len(shapes) == 0 {
			continue
		}
		// results[side][shape] holds one result per round.
		results := map[string][][]benchResult{"upstream": make([][]benchResult, len(shapes)), "gcscope": make([][]benchResult, len(shapes))}
		raw, watched := make([][]benchResult, len(shapes)), make([][]benchResult, len(shapes))
		for range l.rounds {
			for _, which := range []string{"upstream", "gcscope"} {
				counter := &requestCounter{}
				stop, err := collectorRun(ctx, sd, which, l.qps, l.burst, counter)
				if err != nil {
					b.Fatal(err)
				}
				for i, shape := range shapes {
					r, err := runCascade(ctx, sd, counter, nextNamespace(), shape)
					if err != nil {
						stop()
						b.Fatal(err)
					}
					results[which][i] = append(results[which][i], r)
				}
				stop()
			}
			for i, shape := range shapes {
				d, err := rawLimit(ctx, sd, nextNamespace(), shape.dependents(), false)
				if err != nil {
					b.Fatal(err)
				}
				raw[i] = append(raw[i], d)
				if d, err = rawLimit(ctx, sd, nextNamespace(), shape.dependents(), true); err != nil {
					b.Fatal(err)
				}
				watched[i] = append(watched[i], d)
			}
		}
		for i, shape := range shapes {
			up, ours, rawRun := medianResult(results["upstream"][i]), medianResult(results["gcscope"][i]), medianResult(raw[i])
			rawWall, seenRun := rawRun.wall, medianResult(watched[i])
			fmt.Fprintf(out, "%s\t%s\t%d\t%.2f s\t%.2f s\t%.2f\t%.2f s\t%.2f\t%s\t%s\t%s, %s, %s\t%.2f, %.2f\t%.2f s\t%.2f\t%s\n", l.name, shape.name, l.rounds,
				up.wall.Seconds(), ours.wall.Seconds(), ours.wall.Seconds()/up.wall.Seconds(),
				rawWall.Seconds(), ours.wall.Seconds()/rawWall.Seconds(), perVerb(up), perVerb(ours),
				micros(up.cpuPerObject()), micros(ours.cpuPerObject()), micros(rawRun.cpuPerObject()), ours.cores(), rawRun.cores(),
				seenRun.wall.Seconds(), ours.wall.Seconds()/seenRun.wall.Seconds(), micros(seenRun.cpuPerObject()))
			b.ReportMetric(ours.wall.Seconds()/up.wall.Seconds(), "gcscope/upstream:"+metricName(l.name, shape.name))
			b.ReportMetric(ours.wall.Seconds()/rawWall.Seconds(), "gcscope/raw:"+metricName(l.name, shape.name))
			b.ReportMetric(ours.wall.Seconds()/seenRun.wall.Seconds(), "gcscope/watched:"+metricName(l.name, shape.name))
		}
	}
	out.Flush()
}

// medianResult is the round with the median wall time.
func medianResult(rs []benchResult) benchResult {
	rs = slices.SortedFunc(slices.Values(rs), func(a, b benchResult) int { return cmp.Compare(a.wall, b.wall) })
	return rs[len(rs)/2]
}

func micros(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }

func perVerb(r benchResult) string {
	return fmt.Sprintf("%.2f (GET %.2f, DELETE %.2f, PATCH %.2f)", r.total(), r.perObject(http.MethodGet), r.perObject(http.MethodDelete), r.perObject(http.MethodPatch))
}

func metricName(parts ...string) string {
	return strings.NewReplacer(" ", "", "/", "", "×", "x", ",", "-").Replace(strings.Join(parts, "-"))
}
