package gc

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSummary: the graph counted as the engine keeps it (Summary) against the named
// baseline "baseline:scan", counting every node of the same graph under the same lock, as
// a summary without kept counts must. GCSCOPE_UI_OBJECTS sets the objects (default
// 100,000; Deployments, ReplicaSets and 8 Pods each, in 100 namespaces).
func BenchmarkSummary(b *testing.B) {
	n := 100_000
	if v := os.Getenv("GCSCOPE_UI_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("GCSCOPE_UI_OBJECTS=%q: want a number ≥ 10", v)
		}
	}
	evs := synthObjects(n/10, 8)
	gb := newBenchBuilder()
	for _, ev := range evs {
		gb.graph.mu.Lock()
		gb.processGraphChanges(ev)
		gb.graph.mu.Unlock()
	}
	gc := &GarbageCollector{graph: gb.graph, feed: gb.feed}
	var kept, scan time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		sum := gc.Summary()
		kept += time.Since(start)

		start = time.Now()
		gc.graph.mu.RLock()
		var s Summarizer
		for _, n := range gc.graph.uidToNode {
			s.add(refOf(n.identity), n.beingDeleted, n.deletingDependents, n.virtual)
		}
		gc.graph.mu.RUnlock()
		counted := s.Summary(sum.Seq)
		scan += time.Since(start)
		if len(counted.Groups) != len(sum.Groups) {
			b.Fatalf("kept %d groups, the scan counted %d", len(sum.Groups), len(counted.Groups))
		}
	}
	b.ReportMetric(float64(len(evs)), "objects")
	b.ReportMetric(float64(kept.Microseconds())/float64(b.N), "summary-us")
	b.ReportMetric(float64(scan.Microseconds())/float64(b.N), "baseline:scan-us")
	b.ReportMetric(float64(kept)/float64(scan), "x-baseline-time")
}
