package difftest

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// GCSCOPE_SCALE_PODS sets the Pods (default 150000; 30 per ReplicaSet).

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

// load creates the objects (an unbounded client, 64 writers) and returns how many.
func load(ctx context.Context, sd *side, ns string, pods int) (int, error) {
	apps := pods / podsPerReplicaSet
	if _, err := sd.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	// No controller creates the namespace's default ServiceAccount, which admission wants.
	if _, err := sd.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}
	template := func(i int) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
		l := map[string]string{"app": fmt.Sprintf("app-%05d", i)}
		return &metav1.LabelSelector{MatchLabels: l}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: spec}
	}
	controlledBy := func(apiVersion, kind string, o metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
	replicaSets := make([]*appsv1.ReplicaSet, apps)
	err := parallel(apps, 64, func(i int) error {
		name := fmt.Sprintf("app-%05d", i)
		sel, tmpl := template(i)
		d, err := sd.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		replicaSets[i], err = sd.client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", OwnerReferences: controlledBy("apps/v1", "Deployment", d)},
			Spec:       appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if _, err := sd.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err = sd.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	err = parallel(apps*podsPerReplicaSet, 64, func(i int) error {
		rs := replicaSets[i/podsPerReplicaSet]
		_, tmpl := template(i / podsPerReplicaSet)
		_, err := sd.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%02d", rs.Name, i%podsPerReplicaSet), Labels: tmpl.Labels,
			OwnerReferences: controlledBy("apps/v1", "ReplicaSet", rs)}, Spec: spec}, metav1.CreateOptions{})
		return err
	})
	return apps*4 + apps*podsPerReplicaSet, err
}

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
	sd := newSide("scale", testkit.NewCluster(b, testkit.Options{}))
	pods := scalePods(b)
	start := time.Now()
	objects, err := load(ctx, sd, "scale", pods)
	if err != nil {
		b.Fatal(err)
	}
	loadTime := time.Since(start)

	results := map[string]scaleResult{}
	baseline := liveHeap()
	// gcscope first: once stopped, its engine lets go of its memory (checked below), so the
	// upstream collector starts from the same heap; the reverse does not hold (upstream's
	// collector keeps goroutines, and its graph, after its context ends).
	for _, which := range []string{"gcscope", "upstream"} {
		if which == "upstream" {
			if testkit.PollEvery(ctx, time.Second, time.Minute, func() bool { return liveHeap() <= baseline+baseline/20 }) != nil {
				b.Fatalf("the heap did not come back to its baseline after gcscope's engine stopped: %d MiB, was %d MiB", liveHeap()>>20, baseline>>20)
			}
		}
		runCtx, stop := context.WithCancel(ctx)
		before := liveHeap()
		var r scaleResult
		start := time.Now()
		if which == "upstream" {
			collector, err := runUpstream(runCtx, sd.config)
			if err != nil {
				b.Fatal(err)
			}
			// Checked every 10 ms: the wait is what the benchmark times.
			testkit.EventuallyEvery(b, 10*time.Millisecond, "upstream's collector syncs", func() bool { return collector.IsSynced(klog.Background()) })
			r.sync = time.Since(start)
			r.heapPerObj = float64(int64(liveHeap())-int64(before)) / float64(objects)
			r.rssAfter = rssBytes()
		} else {
			engine, err := runOurs(runCtx, sd.config)
			if err != nil {
				b.Fatal(err)
			}
			<-engine.Synced()
			r.sync = time.Since(start)
			r.heapPerObj = float64(int64(liveHeap())-int64(before)) / float64(objects)
			r.rssAfter = rssBytes()
			r.snapshot, r.encode, r.deflated, r.deflateTime = measureSnapshot(b, engine)
		}
		results[which] = r
		stop()
		time.Sleep(2 * time.Second) // the collector's goroutines end: upstream's give no signal of it
	}
	up, ours := results["upstream"], results["gcscope"]
	out := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(out, "\n%d objects (%d Pods) loaded in %v (%.0f objects/s)\n", objects, pods, loadTime.Round(time.Second), float64(objects)/loadTime.Seconds())
	fmt.Fprintln(out, "measure\tupstream\tgcscope\tgcscope/upstream")
	fmt.Fprintf(out, "start to monitors synced\t%.2f s\t%.2f s\t%.2f\n", up.sync.Seconds(), ours.sync.Seconds(), ours.sync.Seconds()/up.sync.Seconds())
	fmt.Fprintf(out, "heap added per object\t%.0f B\t%.0f B\t%.2f\n", up.heapPerObj, ours.heapPerObj, ours.heapPerObj/up.heapPerObj)
	fmt.Fprintf(out, "process RSS after sync (cumulative)\t%d MiB\t%d MiB\t\n", up.rssAfter>>20, ours.rssAfter>>20)
	fmt.Fprintf(out, "snapshot, JSON\t\t%.1f MiB in %v\t\n", float64(ours.snapshot)/(1<<20), ours.encode.Round(time.Millisecond))
	fmt.Fprintf(out, "snapshot, deflated (level 1)\t\t%.1f MiB in %v more\t\n", float64(ours.deflated)/(1<<20), ours.deflateTime.Round(time.Millisecond))
	out.Flush()
	b.ReportMetric(ours.sync.Seconds()/up.sync.Seconds(), "sync-gcscope/upstream")
	b.ReportMetric(ours.heapPerObj/up.heapPerObj, "heap-gcscope/upstream")
	b.ReportMetric(ours.heapPerObj, "gcscope-heap-B/object")
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
