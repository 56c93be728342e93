package difftest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server"
)

// The churn benchmark: a busy cluster. The paced workload (churn_workload_test.go) writes
// into the embedded apiserver six times, each in a namespace of its own:
//
//  1. with no collector: the baseline, for the CPU the apiserver, etcd and the writers
//     spend on the workload itself (all in this process);
//  2. with gcscope's engine, stream off: its CPU per event, and its lag from a write's
//     answer to the graph (churn_lag_test.go);
//  3. with the same engine, its server and 50 stream clients (churn_clients_test.go, in a
//     process of their own): the stream's lag from the graph to every client, and the
//     server's CPU for it;
//  4. with the upstream collector: its CPU per event;
//  5. with no collector again;
//  6. with a bare informer on the namespace: the floor of the lag from a write's answer
//     to a watcher.
//
// A collector's CPU per event is its run's process CPU per write less the baseline's: the
// mean of runs 1 and 5, between which runs 2 and 4 sit alike; each alone gives the range
// printed beside it. A run lasts until the cascades of its writes are over. Both
// collectors run as the controller-manager runs upstream's: 20 workers, discovery every
// 30 s; and here on an unbounded client, so that no token bucket holds either back and
// all their work is counted.
//
// GCSCOPE_CHURN_RATE (writes a second, default 1000) and GCSCOPE_CHURN_SECONDS (default
// 60) size the workload; GCSCOPE_CHURN_STREAM_BATCH (a duration, default the server's 50
// ms) sets the stream's batching, and GCSCOPE_CHURN_STREAM_QUERY the clients' query
// (default encoding=deflate, as the page: everything, queues included, the stream's own
// deflate; queues=false&encoding=deflate leaves the queues out, and a query without
// encoding=deflate has permessage-deflate instead).
// GCSCOPE_CHURN_WRITERS=json has the workload write in JSON rather than protobuf.
// GCSCOPE_CHURN_RUNS=stream runs only runs 2 and 3 (the engine without and with the
// stream), for the stream's figures alone in a fraction of the time.

const (
	churnClients    = 50
	churnSyncPeriod = 30 * time.Second
)

// churnPhase is one run of the workload with what it cost.
type churnPhase struct {
	run      churnRun
	cpu      time.Duration // the process's, from the first write until the cascades are over
	wall     time.Duration // the same span
	requests map[string]int
	rt       runtimeSpan
}

// cpuPerWrite is the phase's process CPU per write of the workload.
func (p churnPhase) cpuPerWrite() time.Duration {
	return p.cpu / time.Duration(max(1, len(p.run.writes)))
}

func (p churnPhase) requestsPerWrite() float64 {
	n := 0
	for _, v := range p.requests {
		n += v
	}
	return float64(n) / float64(max(1, len(p.run.writes)))
}

func BenchmarkChurn(b *testing.B) {
	w := churnSettings(b)
	batch := time.Duration(0)
	if v := os.Getenv("GCSCOPE_CHURN_STREAM_BATCH"); v != "" {
		var err error
		if batch, err = time.ParseDuration(v); err != nil || batch <= 0 {
			b.Fatalf("GCSCOPE_CHURN_STREAM_BATCH=%q: want a positive duration", v)
		}
	}
	streamOnly := false
	switch v := os.Getenv("GCSCOPE_CHURN_RUNS"); v {
	case "", "all":
	case "stream":
		streamOnly = true
	default:
		b.Fatalf("GCSCOPE_CHURN_RUNS=%q: want all or stream", v)
	}
	ctx := context.Background()
	sd := newSide("churn", testkit.NewCluster(b, testkit.Options{}))
	counter := &requestCounter{}
	cfg := rest.CopyConfig(sd.config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, c: counter} }
	writers, err := churnWriters(sd.config)
	if err != nil {
		b.Fatal(err)
	}
	phase := func(ns string, settle bool) churnPhase {
		if _, err := sd.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitIdle(ctx, time.Minute)
		counter.reset(ns)
		start, cpu0, rt0 := time.Now(), testkit.ProcessCPU(), readRuntime()
		p := churnPhase{run: w.run(ctx, writers, ns)}
		if p.run.failed*100 > len(p.run.writes) {
			b.Fatalf("%s: %d of %d writes failed", ns, p.run.failed, len(p.run.writes)+p.run.failed)
		}
		if settle {
			if err := cascadesOver(ctx, sd.client, ns); err != nil {
				b.Fatalf("%s: %v", ns, err)
			}
		}
		p.cpu, p.wall, p.requests = testkit.ProcessCPU()-cpu0, time.Since(start), counter.counts()
		p.rt = rt0.until(readRuntime(), p.wall, runtime.NumCPU())
		b.Logf("%s: %d writes in %v (%.0f/s, %d groups, %d failed), %v to the cascades' end; CPU %v (%.2f cores; the machine's %d cores: %.2f busy); "+
			"Go scheduler latency p99 %v, GC %.0f%% of the CPU, GC pauses p99 %v, max %v", ns,
			len(p.run.writes), p.run.wall.Round(time.Millisecond), p.run.rate(), p.run.groups, p.run.failed,
			(p.wall - p.run.wall).Round(time.Millisecond), p.cpu.Round(time.Millisecond), p.cpu.Seconds()/p.wall.Seconds(),
			runtime.NumCPU(), p.rt.machineCores, p.rt.schedP99, 100*p.rt.gcShare, p.rt.pauseP99, p.rt.pauseMax)
		return p
	}

	// 1. No collector; then its leftovers go, so that no collector starts with work.
	var none1 churnPhase
	if !streamOnly {
		none1 = phase("churn-none-1", false)
		if err := clearNamespace(ctx, sd.client, "churn-none-1"); err != nil {
			b.Fatal(err)
		}
	}

	// 2. gcscope's engine, the stream off.
	engineCtx, stopEngine := context.WithCancel(ctx)
	engine, err := gc.NewForConfig(cfg, gc.Options{Workers: workers, DiscoveryPeriod: churnSyncPeriod})
	if err != nil {
		b.Fatal(err)
	}
	engineDone := make(chan struct{})
	go func() { defer close(engineDone); engine.Run(engineCtx) }()
	select {
	case <-engine.Synced():
	case <-time.After(time.Minute):
		b.Fatal("gcscope's engine did not sync in a minute")
	}
	rec := recordFeed(ctx, engine.Feed(), "churn-gcscope")
	ours := phase("churn-gcscope", true)
	rec.close()
	lags := rec.lags(ours.run.writes)

	// 3. The same engine with its server and the stream's clients.
	srv := server.New(server.Options{Engine: engine, Version: "bench", Ready: func() error { return nil },
		MaxStreams: 2 * churnClients, MaxStreamsPerUser: 2 * churnClients, StreamBatch: batch})
	hubCtx, stopHub := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); srv.Run(hubCtx) }()
	ts := httptest.NewServer(srv) // 127.0.0.1
	clientsCtx, stopClients := context.WithTimeout(ctx, 30*time.Minute)
	defer stopClients()
	url := "ws://" + ts.Listener.Addr().String() + "/api/v1/stream?" + churnStreamQuery()
	clients, err := startStreamClients(clientsCtx, url, churnClients, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	recStream := recordFeed(ctx, engine.Feed(), "churn-stream")
	streamed := phase("churn-stream", true)
	recStream.close()
	streamLags := recStream.lags(streamed.run.writes)
	// A last write gives every client a frame to end on, whatever it has received already
	// (a stream sends nothing while the feed is quiet).
	from := engine.Feed().LastSeq()
	end, err := sd.client.CoreV1().ConfigMaps("churn-stream").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "churn-end"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	endSeq, err := seqOf(ctx, engine.Feed(), from, end.UID)
	if err != nil {
		b.Fatal(err)
	}
	cr, err := clients.finish(endSeq)
	if err != nil {
		b.Fatal(err)
	}
	stopHub()
	<-hubDone
	ts.Close()
	stopEngine()
	<-engineDone
	if len(cr.Failures) > 0 {
		b.Fatalf("%d stream clients failed: %s", len(cr.Failures), strings.Join(cr.Failures, "; "))
	}
	if streamOnly {
		reportStream(b, w, batch, ours, streamed, lags, streamLags, cr)
		return
	}

	// 4. The upstream collector (last: its goroutines outlive their context).
	upCtx, stopUp := context.WithCancel(ctx)
	collector, err := runUpstreamEvery(upCtx, cfg, churnSyncPeriod)
	if err != nil {
		b.Fatal(err)
	}
	testkit.EventuallyEvery(b, 100*time.Millisecond, "upstream's collector syncs", func() bool { return collector.IsSynced(klog.Background()) })
	up := phase("churn-upstream", true)
	stopUp()

	// 5. No collector again: the baseline is the mean of the runs around the collectors'
	// (which sit alike between them), and their difference says how much the machine
	// moved meanwhile.
	none2 := phase("churn-none-2", false)

	// 6. A bare informer on the namespace: the lag's floor.
	watch, err := recordWatch(ctx, cfg, "churn-watch")
	if err != nil {
		b.Fatal(err)
	}
	watched := phase("churn-watch", false)
	watch.close()
	floor := watch.lags(watched.run.writes)

	// The figures.
	baseline := (none1.cpuPerWrite() + none2.cpuPerWrite()) / 2
	perEvent := func(p churnPhase) time.Duration { return p.cpuPerWrite() - baseline }
	ratio := float64(perEvent(ours)) / float64(perEvent(up))
	ratioWith := func(base churnPhase) float64 {
		return float64(ours.cpuPerWrite()-base.cpuPerWrite()) / float64(up.cpuPerWrite()-base.cpuPerWrite())
	}

	out := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(out, "\nchurn: %d writes/s asked for %v; %d clients on the stream (batch %v, query %q)\n", w.rate, w.duration, churnClients,
		cmpOr(batch, 50*time.Millisecond), churnStreamQuery())
	fmt.Fprintln(out, "run\twrites\twrites/s\tcascades over after\tprocess CPU\tCPU per write\tcollector's CPU per write\tcollector's requests per write")
	for _, r := range []struct {
		name string
		p    churnPhase
	}{{"no collector, before", none1}, {"gcscope", ours}, {"gcscope + stream", streamed}, {"upstream", up}, {"no collector, after", none2}, {"bare informer", watched}} {
		collectorCPU := "—"
		if r.name != "bare informer" && !strings.HasPrefix(r.name, "no collector") {
			collectorCPU = micros(perEvent(r.p))
		}
		fmt.Fprintf(out, "%s\t%d\t%.0f\t%v\t%v\t%s\t%s\t%.2f %s\n", r.name, len(r.p.run.writes), r.p.run.rate(),
			(r.p.wall - r.p.run.wall).Round(time.Millisecond), r.p.cpu.Round(time.Millisecond), micros(r.p.cpuPerWrite()),
			collectorCPU, r.p.requestsPerWrite(), verbs(r.p.requests))
	}
	out.Flush()
	fmt.Printf("collector's CPU per write, gcscope/upstream: %.2f (%.2f against the baseline before alone, %.2f against the one after)\n",
		ratio, ratioWith(none1), ratioWith(none2))
	fmt.Printf("watch lag (write answered → a bare informer's handler; the floor): %v\n", floor)
	fmt.Printf("engine lag (write answered → in gcscope's graph), stream off: %v\n", lags)
	printStream(streamed, ours, streamLags, cr)

	b.ReportMetric(quantileMs(lags.all, 0.99), "engine-lag-p99-ms")
	b.ReportMetric(quantileMs(lags.all, 0.99)/quantileMs(floor.all, 0.99), "engine-lag-p99/watch-lag-p99")
	b.ReportMetric(cr.P99Ms, "stream-lag-p99-ms")
	b.ReportMetric(ratio, "cpu-per-event-gcscope/upstream")
	b.ReportMetric(streamCPUPerClientSecond(ours, streamed), "stream-cpu-ms-per-client-s")
	b.ReportMetric(ours.run.rate(), "events/s")
}

// streamCPUPerClientSecond is the server's CPU for the stream, over the stream-off run's,
// in ms per client and second of the stream's run.
func streamCPUPerClientSecond(ours, streamed churnPhase) float64 {
	streamCPU := (streamed.cpuPerWrite() - ours.cpuPerWrite()) * time.Duration(len(streamed.run.writes))
	return streamCPU.Seconds() * 1000 / churnClients / streamed.wall.Seconds()
}

// printStream prints the stream's figures.
func printStream(streamed, ours churnPhase, streamLags churnLags, cr clientsResult) {
	streamCPU := (streamed.cpuPerWrite() - ours.cpuPerWrite()) * time.Duration(len(streamed.run.writes))
	fmt.Printf("engine lag with the stream's %d clients: %v\n", churnClients, streamLags)
	fmt.Printf("stream lag (in the graph → received by every client): p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d graph events (%d not received by every client as deltas; %d resyncs, %d frames, %.1f MiB inflated)\n",
		cr.P50Ms, cr.P99Ms, cr.MaxMs, cr.Events, cr.Partial, cr.Resyncs, cr.Frames, float64(cr.Bytes)/(1<<20))
	fmt.Printf("stream lag p99 in each sixth of the run: %.1f ms\n", cr.SixthsP99Ms)
	fmt.Printf("the same events' earliest receipt by a client: p50 %.1f ms, p99 %.1f ms\n", cr.FirstP50Ms, cr.FirstP99Ms)
	fmt.Printf("one client's deltas by event type: %s\n", typeTally(cr))
	fmt.Printf("stream CPU: server %.2f ms per client per second (%s per write per client); the clients' own process %.2f ms per client per second\n",
		streamCPUPerClientSecond(ours, streamed), micros(streamCPU/time.Duration(max(1, len(streamed.run.writes)*churnClients))),
		cr.CPU.Seconds()*1000/churnClients/streamed.wall.Seconds())
}

// reportStream reports the runs with and without the stream alone (GCSCOPE_CHURN_RUNS=stream).
func reportStream(b *testing.B, w churnWorkload, batch time.Duration, ours, streamed churnPhase, lags, streamLags churnLags, cr clientsResult) {
	fmt.Printf("\nchurn (stream runs only): %d writes/s asked for %v; %d clients on the stream (batch %v, query %q)\n", w.rate, w.duration, churnClients,
		cmpOr(batch, 50*time.Millisecond), churnStreamQuery())
	fmt.Printf("writes/s: gcscope %.0f, gcscope + stream %.0f; CPU per write %s, %s\n", ours.run.rate(), streamed.run.rate(), micros(ours.cpuPerWrite()), micros(streamed.cpuPerWrite()))
	fmt.Printf("engine lag (write answered → in gcscope's graph), stream off: %v\n", lags)
	printStream(streamed, ours, streamLags, cr)
	b.ReportMetric(quantileMs(lags.all, 0.99), "engine-lag-p99-ms")
	b.ReportMetric(cr.P99Ms, "stream-lag-p99-ms")
	b.ReportMetric(streamCPUPerClientSecond(ours, streamed), "stream-cpu-ms-per-client-s")
	b.ReportMetric(streamed.run.rate(), "stream-run-events/s")
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func verbs(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// cascadesOver waits until no object of ns is being deleted and none names an owner that
// is gone: the collector has done what the writes asked of it.
func cascadesOver(ctx context.Context, client kubernetes.Interface, ns string) error {
	var listErr error
	err := testkit.PollEvery(ctx, 250*time.Millisecond, 5*time.Minute, func() bool {
		cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			listErr = err
			return true
		}
		secrets, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			listErr = err
			return true
		}
		var metas []metav1.ObjectMeta
		for _, o := range cms.Items {
			metas = append(metas, o.ObjectMeta)
		}
		for _, o := range secrets.Items {
			metas = append(metas, o.ObjectMeta)
		}
		exists := map[types.UID]bool{}
		for _, m := range metas {
			exists[m.UID] = true
		}
		for _, m := range metas {
			if m.DeletionTimestamp != nil {
				return false
			}
			for _, r := range m.OwnerReferences {
				if !exists[r.UID] {
					return false
				}
			}
		}
		return true
	})
	if listErr != nil {
		return listErr
	}
	if err != nil {
		return fmt.Errorf("the cascades were not over in 5 minutes")
	}
	return nil
}

// clearNamespace deletes every ConfigMap and Secret of ns, releasing those a deletion
// left waiting for a collector (foreground and orphan finalizers).
func clearNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	cms, secrets := client.CoreV1().ConfigMaps(ns), client.CoreV1().Secrets(ns)
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := secrets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	release := []byte(`{"metadata":{"finalizers":null}}`)
	cmList, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	secretList, err := secrets.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, o := range cmList.Items {
		if _, err := cms.Patch(ctx, o.Name, types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	for _, o := range secretList.Items {
		if _, err := secrets.Patch(ctx, o.Name, types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// typeTally lists the event types of one client's deltas, most bytes first.
func typeTally(r clientsResult) string {
	var total int64
	for _, v := range r.TypeBytes {
		total += v
	}
	types := slices.SortedFunc(maps.Keys(r.TypeBytes), func(a, b string) int { return cmp.Compare(r.TypeBytes[b], r.TypeBytes[a]) })
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %d events, %.1f MiB (%.0f%%)", t, r.TypeEvents[t], float64(r.TypeBytes[t])/(1<<20), 100*float64(r.TypeBytes[t])/float64(max(1, total)))
	}
	return strings.Join(parts, "; ")
}

// seqOf waits, for at most a minute, for the feed event after from that adds uid's node,
// and returns its seq.
func seqOf(ctx context.Context, feed *gc.Feed, from uint64, uid types.UID) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var seq uint64
	found := errors.New("found")
	err := feed.Follow(ctx, from, gc.Follower{
		Events: func(_ context.Context, events []gc.Event) error {
			for _, e := range events {
				if e.Node != nil && e.Node.UID == uid && e.Node.Observed {
					seq = e.Seq
					return found
				}
			}
			return nil
		},
		Resync: func(context.Context) (uint64, error) { return 0, errors.New("the feed no longer holds the events") },
	})
	if errors.Is(err, found) {
		return seq, nil
	}
	return 0, fmt.Errorf("the engine's feed did not show %s: %v", uid, err)
}

// churnWriters is the workload's client. It writes in protobuf, as controllers do (their
// clients ask for it), unless GCSCOPE_CHURN_WRITERS=json: JSON cost the apiserver, which
// shares this process and its two cores with the collectors measured, more to decode and
// encode every write.
func churnWriters(base *rest.Config) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	switch v := cmp.Or(os.Getenv("GCSCOPE_CHURN_WRITERS"), "protobuf"); v {
	case "protobuf":
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	case "json":
	default:
		return nil, fmt.Errorf("GCSCOPE_CHURN_WRITERS=%q: want protobuf or json", v)
	}
	return kubernetes.NewForConfig(cfg)
}

// churnStreamQuery is the stream clients' query: GCSCOPE_CHURN_STREAM_QUERY, or the page's.
func churnStreamQuery() string {
	return cmp.Or(os.Getenv("GCSCOPE_CHURN_STREAM_QUERY"), "encoding=deflate")
}
