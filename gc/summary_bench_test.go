package gc

import (
	"testing"
	"time"
)

// BenchmarkSummary: the graph counted as the engine keeps it (Summary) against the named
// baseline "baseline:scan", counting every node of the same graph under the same lock, as
// a summary without kept counts must. GCSCOPE_UI_OBJECTS sets the objects (default
// 100,000; Deployments, ReplicaSets and 8 Pods each, in 100 namespaces).
func BenchmarkSummary(b *testing.B) {
	gc, evs := benchEngine(b, "GCSCOPE_UI_OBJECTS", 100_000, nil)
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

// BenchmarkDeletingReads: the stuck list's and the namespace report's reads (BeingDeleted,
// InNamespace) from the indexes the graph builder keeps, against the named baseline
// "baseline:walk", the same answers from a walk of every node under the same lock (what
// they were). GCSCOPE_UI_OBJECTS sets the objects as for BenchmarkSummary; 20 Pods are
// being deleted.
func BenchmarkDeletingReads(b *testing.B) {
	var marked int
	gc, evs := benchEngine(b, "GCSCOPE_UI_OBJECTS", 100_000, func(ev *event) *event {
		if ev.obj.Kind == "Pod" && marked < 20 && len(ev.obj.Name)%7 == 0 {
			marked++
			return evAdd(changed(ev.obj, deleting()))
		}
		return ev
	})
	walk := func(keep func(*node) bool) int {
		gc.graph.mu.RLock()
		var out []NodeState
		for _, n := range gc.graph.uidToNode {
			if !n.virtual && keep(n) {
				out = append(out, *stateOf(n))
			}
		}
		gc.graph.mu.RUnlock()
		return len(sortedByUID(out))
	}
	var kept, walked time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		d, in := len(gc.BeingDeleted()), len(gc.InNamespace("ns-007"))
		kept += time.Since(start)

		start = time.Now()
		wd := walk(func(n *node) bool { return n.beingDeleted })
		win := walk(func(n *node) bool { return n.identity.Namespace == "ns-007" })
		walked += time.Since(start)
		if d != wd || in != win || d != marked {
			b.Fatalf("the indexes answer %d being deleted and %d in ns-007, the walk %d and %d (%d made)", d, in, wd, win, marked)
		}
	}
	b.ReportMetric(float64(len(evs)), "objects")
	b.ReportMetric(float64(kept.Microseconds())/float64(b.N), "indexed-us")
	b.ReportMetric(float64(walked.Microseconds())/float64(b.N), "baseline:walk-us")
	b.ReportMetric(float64(kept)/float64(walked), "x-baseline-time")
}
