package gc

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// synthObjects builds add events for a realistic cluster shape: deployments own replica
// sets, which own pods (8 per replica set), spread over 100 namespaces, owners first as
// informers that sync in kind order deliver them.
func synthObjects(deployments, podsPerRS int) []*event {
	const namespaces = 100
	evs := make([]*event, 0, deployments*(2+podsPerRS))
	var rss, pods []*event
	for d := range deployments {
		ns := fmt.Sprintf("ns-%03d", d%namespaces)
		dep := deployment(ns, fmt.Sprintf("app-%d", d), types.UID(fmt.Sprintf("d-%06d", d)))
		evs = append(evs, evAdd(dep))
		rs := replicaSet(ns, fmt.Sprintf("app-%d-5d8f9c7b6", d), types.UID(fmt.Sprintf("rs-%06d", d)),
			owned(ownerRefTo(dep, blocking, controls)))
		rss = append(rss, evAdd(rs))
		for p := range podsPerRS {
			pods = append(pods, evAdd(pod(ns, fmt.Sprintf("app-%d-5d8f9c7b6-%05d", d, p), types.UID(fmt.Sprintf("p-%06d-%02d", d, p)),
				owned(ownerRefTo(rs, blocking, controls)))))
		}
	}
	evs = append(evs, rss...)
	return append(evs, pods...)
}

// benchEngine is an engine whose graph holds synthObjects of as many objects as the
// environment variable env says (def without it), each object observed; and its events.
// observe, when set, may change an event before it is observed.
func benchEngine(b *testing.B, env string, def int, observe func(*event) *event) (*GarbageCollector, []*event) {
	n := def
	if v := os.Getenv(env); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("%s=%q: want a number ≥ 100", env, v)
		}
	}
	evs := synthObjects(n/10, 8)
	gb := newBenchBuilder()
	for _, ev := range evs {
		if observe != nil {
			ev = observe(ev)
		}
		gb.graph.mu.Lock()
		gb.processGraphChanges(ev)
		gb.graph.mu.Unlock()
	}
	return &GarbageCollector{graph: gb.graph, feed: gb.feed}, evs
}

func newBenchBuilder() *GraphBuilder {
	feed := newFeed(0, time.Now)
	qm := newQueueMetrics(prometheus.NewRegistry())
	return &GraphBuilder{
		graph:            newGraph(),
		feed:             feed,
		graphChanges:     newWorkQueue(GraphChanges, feed, qm, (*event).describe),
		attemptToDelete:  newWorkQueue(AttemptToDelete, feed, qm, describeTestNode),
		attemptToOrphan:  newWorkQueue(AttemptToOrphan, feed, qm, describeTestNode),
		absentOwnerCache: NewReferenceCache(absentOwnerCacheSize),
		deletedUIDs:      newUIDSet(),
		warn:             func(objectReference, string, string) {},
	}
}

// baselineNode is the named baseline: a plain map of nodes with owner linking and nothing
// else (no feed, no queues, no identity checks).
type baselineNode struct {
	uid        types.UID
	owners     []metav1.OwnerReference
	dependents map[*baselineNode]struct{}
}

func baselineInsert(evs []*event) map[types.UID]*baselineNode {
	m := make(map[types.UID]*baselineNode)
	for _, ev := range evs {
		n, ok := m[ev.obj.UID]
		if !ok {
			n = &baselineNode{uid: ev.obj.UID, dependents: map[*baselineNode]struct{}{}}
			m[n.uid] = n
		}
		n.owners = ev.obj.OwnerReferences
		for _, ref := range n.owners {
			o, ok := m[ref.UID]
			if !ok {
				o = &baselineNode{uid: ref.UID, dependents: map[*baselineNode]struct{}{}}
				m[ref.UID] = o
			}
			o.dependents[n] = struct{}{}
		}
	}
	return m
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkGraphBuilder100k feeds 100k objects (10k Deployments → 10k ReplicaSets → 80k
// Pods) to processGraphChanges as add events, as the graph builder's goroutine does
// (taking the graph lock per event), and measures them against the named baseline
// "baseline:map-only" inserting the same objects in a plain map with owner linking.
// Reported: the engine's events/s; its retained heap per node (B/node: graph, queues and
// the feed, whose ring of DefaultFeedSize events holds the latest events' payloads); the
// baseline's heap per node; and the engine's time as a multiple of the baseline's
// (x-baseline-time), both measured in the same iteration.
func BenchmarkGraphBuilder100k(b *testing.B) {
	evs := synthObjects(10_000, 8)
	if len(evs) != 100_000 {
		b.Fatalf("synthesised %d objects, want 100000", len(evs))
	}
	var engineTime, baselineTime time.Duration
	var engineBytes, baselineBytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := heapInUse()
		gb := newBenchBuilder()
		b.StartTimer()

		start := time.Now()
		for _, ev := range evs {
			gb.graph.mu.Lock()
			gb.processGraphChanges(ev)
			gb.graph.mu.Unlock()
		}
		engineTime += time.Since(start)

		b.StopTimer()
		engineBytes += heapInUse() - before
		if n, v := len(gb.graph.uidToNode), gb.graph.virtuals; n != len(evs) || v != 0 {
			b.Fatalf("graph has %d nodes (%d virtual), want %d observed", n, v, len(evs))
		}
		if q := gb.attemptToDelete.Len(); q != 0 {
			b.Fatalf("%d items queued for a graph whose owners all exist", q)
		}
		gb.graphChanges.ShutDown()
		gb.attemptToDelete.ShutDown()
		gb.attemptToOrphan.ShutDown()
		runtime.KeepAlive(gb)
		gb = nil

		before = heapInUse()
		start = time.Now()
		m := baselineInsert(evs)
		baselineTime += time.Since(start)
		baselineBytes += heapInUse() - before
		if len(m) != len(evs) {
			b.Fatalf("baseline has %d nodes, want %d", len(m), len(evs))
		}
		runtime.KeepAlive(m)
		m = nil
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	perNode := func(bytes int64) float64 { return float64(bytes) / n / float64(len(evs)) }
	ratio := engineTime.Seconds() / baselineTime.Seconds()
	b.ReportMetric(float64(len(evs))*n/engineTime.Seconds(), "events/s")
	b.ReportMetric(perNode(engineBytes), "B/node")
	b.ReportMetric(perNode(baselineBytes), "baseline-B/node")
	b.ReportMetric(ratio, "x-baseline-time")
	b.Logf("engine: %.0f events/s, %.0f B/node; baseline:map-only: %.0f events/s, %.0f B/node; engine time = %.2fx baseline:map-only (b.N=%d)",
		float64(len(evs))*n/engineTime.Seconds(), perNode(engineBytes),
		float64(len(evs))*n/baselineTime.Seconds(), perNode(baselineBytes), ratio, b.N)
}
