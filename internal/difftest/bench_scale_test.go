package difftest

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The scale benchmark: a cluster at the Kubernetes scalability envelope (150,000 Pods,
// with their ReplicaSets and Deployments, and a ConfigMap and a Secret per Deployment),
// loaded into an embedded apiserver; then, one after the other on the same data, the
// upstream collector and gcscope's engine start and each is measured: time from start to
// every monitor synced, and the heap it added (live heap after a GC, from the Go runtime
// metrics, per object). For gcscope also: the snapshot the UI receives, its size and
// encoding time, raw and deflated.
//
// Before the first window the apiserver serves the namespace once to a throwaway metadata
// informer (warmUp), as it serves each collector's; GCSCOPE_SCALE_WARMUP=false leaves that out.
//
// GCSCOPE_SCALE_PODS sets the Pods (default 150000; 30 per ReplicaSet);
// GCSCOPE_SCALE_NO_TOKEN=1 leaves their service account token volume out (see load).
// GCSCOPE_SCALE_PROFILE=prefix writes CPU profiles of the load (prefix-load.prof) and of each
// collector's sync, from its start to its monitors synced (prefix-gcscope.prof,
// prefix-upstream.prof), not with -cpuprofile; and the heap once each has synced
// (prefix-gcscope-heap.prof, prefix-upstream-heap.prof).

const podsPerReplicaSet = 30

func scalePods(b *testing.B) int {
	if v := os.Getenv("GCSCOPE_SCALE_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < podsPerReplicaSet {
			b.Fatalf("GCSCOPE_SCALE_PODS=%q: want a number ≥ %d", v, podsPerReplicaSet)
		}
		return n
	}
	return 150_000
}

// loadedFile, in a kept data dir (GCSCOPE_SCALE_DATA), says that the load completed: its
// Pods, then its line.
const loadedFile = "scale-loaded"

// loadedBefore returns the line of a load of pods Pods that completed in dataDir, or "".
func loadedBefore(dataDir string, pods int) string {
	if dataDir == "" {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(dataDir, loadedFile))
	if err != nil {
		return ""
	}
	n, line, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if n != strconv.Itoa(pods) {
		return ""
	}
	return line
}

// objectsFor is how many objects load creates for pods Pods: per ReplicaSet, its Pods, a
// Deployment, a ConfigMap and a Secret.
func objectsFor(pods int) int {
	apps := pods / podsPerReplicaSet
	return apps*4 + apps*podsPerReplicaSet
}

// loadWriters is the loader's concurrency: enough to keep the apiserver's cores busy.
const loadWriters = 64

// load creates objectsFor(pods) objects from loadWriters writers on an unbounded protobuf
// client. It prints its progress to stderr every tenth of the Pods.
//
// The embedded apiserver and etcd run in this process, so the load is bounded by their CPU:
// the client speaks protobuf (no JSON to decode and encode on either side), and the Go
// collector runs less often during the load (gcPercentLoad, below a memory limit:
// GOMEMLIMIT, or memoryLimitLoad without it), then goes back to its settings before any
// collector is measured.
func load(ctx context.Context, cfg *rest.Config, ns string, pods int) (created int, err error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = cfg.ContentType
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	gcPercent, limit := debug.SetGCPercent(gcPercentLoad), debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		debug.SetMemoryLimit(memoryLimitLoad)
	}
	defer func() {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(limit)
	}()

	// A kept data dir may hold part of an interrupted load: what is there is kept, and the
	// load goes on from it.
	have, err := existing(ctx, cfg, ns)
	if err != nil {
		return 0, err
	}
	var made atomic.Int64
	ignoreExists := func(_ any, err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	apps := pods / podsPerReplicaSet
	if err := ignoreExists(client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})); err != nil {
		return 0, err
	}
	// No controller creates the namespace's default ServiceAccount, which admission wants.
	if err := ignoreExists(client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})); err != nil {
		return 0, err
	}
	// The Pods mount the service account token, as Pods do by default: upstream's collector
	// caches whole Pods, so their size is part of what it is compared on. Unless
	// GCSCOPE_SCALE_NO_TOKEN is set: the apiserver and etcd keep about 15 KB per object
	// live with it, 10 KB without, and a million Pods with it leave no room for a collector
	// on a 23 GiB machine.
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}
	if os.Getenv("GCSCOPE_SCALE_NO_TOKEN") != "" {
		spec.AutomountServiceAccountToken = ptr.To(false)
	}
	template := func(i int) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
		l := map[string]string{"app": fmt.Sprintf("app-%05d", i)}
		return &metav1.LabelSelector{MatchLabels: l}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: spec}
	}
	controlledBy := func(apiVersion, kind string, o metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
	replicaSets := make([]metav1.Object, apps)
	err = parallel(apps, loadWriters, func(i int) error {
		var err error // this writer's own
		name := fmt.Sprintf("app-%05d", i)
		sel, tmpl := template(i)
		// Looked up with ok: a nil *PartialObjectMetadata in an interface is not nil.
		var d metav1.Object
		if m, ok := have["deployments"][name]; ok {
			d = m
		} else {
			if d, err = client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			made.Add(1)
		}
		if m, ok := have["replicasets"][name+"-rs"]; ok {
			replicaSets[i] = m
		} else {
			if replicaSets[i], err = client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", OwnerReferences: controlledBy("apps/v1", "Deployment", d)},
				Spec:       appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			made.Add(1)
		}
		if have["configmaps"][name] == nil {
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			made.Add(1)
		}
		if have["secrets"][name] == nil {
			if _, err = client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err == nil {
				made.Add(1)
			}
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	start, tenth, already := time.Now(), max(apps*podsPerReplicaSet/10, 1), len(have["pods"])
	err = parallel(apps*podsPerReplicaSet, loadWriters, func(i int) error {
		if i > 0 && i%tenth == 0 {
			progress(i, apps*podsPerReplicaSet, already, start)
		}
		rs := replicaSets[i/podsPerReplicaSet]
		name := fmt.Sprintf("%s-%02d", rs.GetName(), i%podsPerReplicaSet)
		if have["pods"][name] != nil {
			return nil
		}
		_, tmpl := template(i / podsPerReplicaSet)
		_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: tmpl.Labels, OwnerReferences: controlledBy("apps/v1", "ReplicaSet", rs)}, Spec: spec}, metav1.CreateOptions{})
		if err == nil {
			made.Add(1)
		}
		return err
	})
	return int(made.Load()), err
}

// existing lists, by resource, the objects of ns there are already (metadata only).
func existing(ctx context.Context, cfg *rest.Config, ns string) (map[string]map[string]*metav1.PartialObjectMetadata, error) {
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	have := map[string]map[string]*metav1.PartialObjectMetadata{}
	for _, gvr := range scaleResources {
		// In pages: a million Pods in one answer outlast the apiserver's minute.
		have[gvr.Resource] = map[string]*metav1.PartialObjectMetadata{}
		for next := ""; ; {
			list, err := md.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 10000, Continue: next})
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				have[gvr.Resource][list.Items[i].Name] = &list.Items[i]
			}
			if next = list.Continue; next == "" {
				break
			}
		}
	}
	return have, nil
}

// scaleResources are the resources the scale benchmark loads.
var scaleResources = []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"}, {Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "replicasets"}}

// warmUp has the apiserver serve namespace ns to a metadata informer of each of
// scaleResources, as it serves each collector's (a watch and its initial events), then
// lets it go. The apiserver shares this process: without it, the first collector's window
// also paid for the heap growing into memory the OS had not given the process yet (at a
// million objects gcscope's window, the first, spent 21.6 µs a Pod in the apiserver's
// copies of the initial events, upstream's 12.7), which a long-running apiserver has, and
// the second collector found ready.
func warmUp(ctx context.Context, cfg *rest.Config, ns string) error {
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := metadatainformer.NewFilteredSharedInformerFactory(md, 0, ns, nil)
	defer func() {
		cancel() // the informers stop, then Shutdown waits for them
		f.Shutdown()
	}()
	for _, gvr := range scaleResources {
		f.ForResource(gvr).Informer()
	}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("warming up: %s did not sync: %w", gvr.Resource, ctx.Err())
		}
	}
	return nil
}

// progress prints how far the Pods' load is, with the Go collector's share of the CPU so far.
func progress(i, pods, already int, start time.Time) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	fmt.Fprintf(os.Stderr, "scale: %d Pods of %d (%d there before), %.0f Pods/s; live heap %d MiB, Go collector %.0f%% of the CPU so far\n",
		i, pods, already, float64(max(i-already, 0))/time.Since(start).Seconds(), s[0].Value.Uint64()>>20,
		100*s[1].Value.Float64()/s[2].Value.Float64())
}

// During the load the Go collector runs when the heap has grown by gcPercentLoad percent
// (the default is 100), or nears the memory limit: the apiserver's watch cache and etcd's
// index make a large live heap, which the default would mark again every time it doubles.
// The apiserver and etcd keep about 10 KB per object: at a million objects, give GOMEMLIMIT
// well above 12 GiB, or the collector runs all the time near the end of the load.
const (
	gcPercentLoad   = 400
	memoryLimitLoad = 12 << 30
)

// liveHeap is the heap in use after a full collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func rssBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

type scaleResult struct {
	sync        time.Duration
	syncCPU     time.Duration // the process's CPU meanwhile: the collector's and the apiserver's
	heapPerObj  float64
	rssAfter    uint64
	snapshot    int           // bytes, JSON
	encode      time.Duration // JSON
	deflated    int
	deflateTime time.Duration
}

// BenchmarkScale prints the side-by-side table (make bench). It runs once whatever b.N
// asks. The heap figures are differences in this process, which also runs the apiserver:
// each collector is measured from a collected heap, the second once the first's memory
// has been given back.
func BenchmarkScale(b *testing.B) {
	ctx := context.Background()
	dataDir := os.Getenv("GCSCOPE_SCALE_DATA")
	// The apiserver's cache consistency check lists every object from etcd every 5 to 7.5
	// minutes: at a million objects, 10 s and more of CPU in whichever collector's window
	// it falls. It is the apiserver's work, not a collector's: off for both.
	if err := utilfeature.DefaultMutableFeatureGate.Set(string(features.DetectCacheInconsistency) + "=false"); err != nil {
		b.Fatal(err)
	}
	sd := newSide("scale", testkit.NewCluster(b, testkit.Options{DataDir: dataDir}))
	// The check reads the process's gate (storage/cacher/delegator.go): still off once the
	// control plane has applied its options?
	if utilfeature.DefaultFeatureGate.Enabled(features.DetectCacheInconsistency) {
		b.Fatalf("the apiserver's %s is on again", features.DetectCacheInconsistency)
	}
	pods := scalePods(b)
	// The load's line: read back from a kept data dir that holds these objects already.
	loaded := loadedBefore(dataDir, pods)
	if loaded == "" {
		stopProfile := startProfile(b, "load")
		start, cpuStart := time.Now(), testkit.ProcessCPU()
		created, err := load(ctx, sd.config, "scale", pods)
		if err != nil {
			b.Fatal(err)
		}
		loadTime, loadCPU := time.Since(start), testkit.ProcessCPU()-cpuStart
		stopProfile()
		loaded = fmt.Sprintf("load of %d Pods with their owners: %d objects created in %v (%.0f objects/s, %.0f µs of CPU per object, %.2f cores busy)",
			pods, created, loadTime.Round(time.Second), float64(created)/loadTime.Seconds(),
			float64(loadCPU.Microseconds())/float64(max(created, 1)), loadCPU.Seconds()/loadTime.Seconds())
		if dataDir != "" {
			if err := os.WriteFile(filepath.Join(dataDir, loadedFile), fmt.Appendf(nil, "%d\n%s\n", pods, loaded), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		loaded += ", in an earlier run: this one reused its data dir"
	}

	// The objects measured are those the namespace holds: a kept data dir may hold more
	// than these Pods ask for (an interrupted larger load).
	have, err := existing(ctx, sd.config, "scale")
	if err != nil {
		b.Fatal(err)
	}
	objects := 0
	for _, names := range have {
		objects += len(names)
	}
	have = nil
	// A restarted apiserver answers before its watch caches hold the kept objects.
	if err := testkit.PollEvery(ctx, time.Second, 30*time.Minute, func() bool { return watchCachesReady(ctx, sd) }); err != nil {
		b.Fatalf("the apiserver's watch caches did not initialize: %v", err)
	}

	warm := os.Getenv("GCSCOPE_SCALE_WARMUP") != "false"
	if warm {
		start := time.Now()
		if err := warmUp(ctx, sd.config, "scale"); err != nil {
			b.Fatal(err)
		}
		b.Logf("warm-up: the apiserver served the namespace to a metadata informer in %v", time.Since(start).Round(time.Millisecond))
	}
	results := map[string]scaleResult{}
	baseline := liveHeap()
	// gcscope first: once stopped, its engine lets go of its memory (checked below), so the
	// upstream collector starts from the same heap; the reverse does not hold (upstream's
	// collector keeps goroutines, and its graph, after its context ends).
	for _, which := range []string{"gcscope", "upstream"} {
		if which == "upstream" {
			if testkit.PollEvery(ctx, time.Second, 5*time.Minute, func() bool { return liveHeap() <= baseline+baseline/20 }) != nil {
				b.Fatalf("the heap did not come back to its baseline after gcscope's engine stopped: %d MiB, was %d MiB", liveHeap()>>20, baseline>>20)
			}
		}
		// Each collector starts on a quiet apiserver: one restarted on a kept data dir
		// spends minutes catching up (its own Pod informer, its caches), which must fall in
		// neither window.
		if !waitIdle(ctx, 10*time.Minute) {
			b.Logf("the process was still busy after 10 minutes when %s started", which)
		}
		runCtx, stop := context.WithCancel(ctx)
		before := liveHeap()
		var r scaleResult
		stopProfile := startProfile(b, which)
		start, cpuStart := time.Now(), testkit.ProcessCPU()
		if which == "upstream" {
			collector, err := runUpstream(runCtx, sd.config)
			if err != nil {
				b.Fatal(err)
			}
			// Checked every 10 ms: the wait is what the benchmark times.
			if err := testkit.PollEvery(ctx, 10*time.Millisecond, syncLimit, func() bool { return collector.IsSynced(klog.Background()) }); err != nil {
				b.Fatalf("upstream's collector did not sync within %v", syncLimit)
			}
			r.sync, r.syncCPU = time.Since(start), testkit.ProcessCPU()-cpuStart
			stopProfile()
			r.heapPerObj = float64(int64(liveHeap())-int64(before)) / float64(objects)
			r.rssAfter = rssBytes()
			writeHeapProfile(b, which)
		} else {
			engine, err := runOurs(runCtx, sd.config)
			if err != nil {
				b.Fatal(err)
			}
			<-engine.Synced()
			r.sync, r.syncCPU = time.Since(start), testkit.ProcessCPU()-cpuStart
			stopProfile()
			r.heapPerObj = float64(int64(liveHeap())-int64(before)) / float64(objects)
			r.rssAfter = rssBytes()
			writeHeapProfile(b, which)
			r.snapshot, r.encode, r.deflated, r.deflateTime = measureSnapshot(b, engine)
		}
		results[which] = r
		stop()
		time.Sleep(2 * time.Second) // the collector's goroutines end: upstream's give no signal of it
	}
	up, ours := results["upstream"], results["gcscope"]
	out := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(out, "\n%d objects in the namespace; %s; warm-up %v; live heap then (apiserver, etcd): %d MiB\n", objects, loaded, warm, baseline>>20)
	fmt.Fprintln(out, "measure\tupstream\tgcscope\tgcscope/upstream")
	fmt.Fprintf(out, "start to monitors synced\t%.2f s\t%.2f s\t%.2f\n", up.sync.Seconds(), ours.sync.Seconds(), ours.sync.Seconds()/up.sync.Seconds())
	fmt.Fprintf(out, "CPU meanwhile (collector and apiserver)\t%.2f s\t%.2f s\t%.2f\n", up.syncCPU.Seconds(), ours.syncCPU.Seconds(), ours.syncCPU.Seconds()/up.syncCPU.Seconds())
	fmt.Fprintf(out, "heap added per object\t%.0f B\t%.0f B\t%.2f\n", up.heapPerObj, ours.heapPerObj, ours.heapPerObj/up.heapPerObj)
	fmt.Fprintf(out, "process RSS after sync (cumulative)\t%d MiB\t%d MiB\t\n", up.rssAfter>>20, ours.rssAfter>>20)
	fmt.Fprintf(out, "snapshot, JSON\t\t%.1f MiB in %v\t\n", float64(ours.snapshot)/(1<<20), ours.encode.Round(time.Millisecond))
	fmt.Fprintf(out, "snapshot, deflated (level 1)\t\t%.1f MiB in %v more\t\n", float64(ours.deflated)/(1<<20), ours.deflateTime.Round(time.Millisecond))
	out.Flush()
	b.ReportMetric(ours.sync.Seconds()/up.sync.Seconds(), "sync-gcscope/upstream")
	b.ReportMetric(ours.syncCPU.Seconds()/up.syncCPU.Seconds(), "sync-cpu-gcscope/upstream")
	b.ReportMetric(ours.heapPerObj/up.heapPerObj, "heap-gcscope/upstream")
	b.ReportMetric(ours.heapPerObj, "gcscope-heap-B/object")
}

// syncLimit bounds a collector's sync: minutes at a million objects on two busy cores.
const syncLimit = 30 * time.Minute

// watchCachesReady says whether the apiserver's watch caches of the loaded resources have
// initialized, from its metrics.
func watchCachesReady(ctx context.Context, sd *side) bool {
	data, err := sd.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return false
	}
	for _, r := range []string{"pods", "replicasets", "deployments", "configmaps", "secrets"} {
		ready := false
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "apiserver_watch_cache_initializations_total{"); ok && strings.Contains(rest, `resource="`+r+`"`) {
				ready = true
				break
			}
		}
		if !ready {
			return false
		}
	}
	return true
}

// startProfile starts a CPU profile of which's sync if GCSCOPE_SCALE_PROFILE names a
// prefix, and returns what stops it.
func startProfile(b *testing.B, which string) (stop func()) {
	prefix := os.Getenv("GCSCOPE_SCALE_PROFILE")
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + "-" + which + ".prof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// writeHeapProfile writes the heap in use after which's sync, if GCSCOPE_SCALE_PROFILE names a
// prefix: prefix-which-heap.prof.
func writeHeapProfile(b *testing.B, which string) {
	prefix := os.Getenv("GCSCOPE_SCALE_PROFILE")
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "-" + which + "-heap.prof")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// measureSnapshot encodes the engine's snapshot as the stream does (JSON) and deflates it
// as permessage-deflate would.
func measureSnapshot(b *testing.B, engine *gc.GarbageCollector) (size int, encode time.Duration, deflated int, deflateTime time.Duration) {
	snap := engine.Snapshot()
	start := time.Now()
	data, err := json.Marshal(snap.Nodes)
	if err != nil {
		b.Fatal(err)
	}
	encode = time.Since(start)
	start = time.Now()
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	w.Write(data)
	w.Close()
	return len(data), encode, buf.Len(), time.Since(start)
}
