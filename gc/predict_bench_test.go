package gc

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPredictSet: a delete of many objects at once (kubectl delete -l matching 50,000
// of a cluster of 200,000, by default) predicted together on the engine's graph
// (PredictDeleteSet), against the named baseline "baseline:each", the same targets
// predicted one at a time as a single-object preview would. GCSCOPE_PREDICT_OBJECTS sets
// the cluster's size (Deployments, ReplicaSets and 8 Pods each, in 100 namespaces); the
// set is a quarter of the objects.
func BenchmarkPredictSet(b *testing.B) {
	gc, evs := benchEngine(b, "GCSCOPE_PREDICT_OBJECTS", 200_000, nil)
	// A quarter of the objects: Deployments first, then their ReplicaSets and Pods, as a
	// selector on an app label spanning many releases would match.
	var set []types.UID
	for _, ev := range evs {
		if len(set) == len(evs)/4 {
			break
		}
		set = append(set, ev.obj.UID)
	}
	var together, each time.Duration
	deleted := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		p, missing := gc.PredictDeleteSet(set, metav1.DeletePropagationBackground)
		together += time.Since(start)
		if len(missing) != 0 {
			b.Fatalf("%d uids missing", len(missing))
		}
		deleted = len(p.Deleted)

		start = time.Now()
		for _, uid := range set {
			gc.PredictDelete(uid, metav1.DeletePropagationBackground)
		}
		each += time.Since(start)
	}
	b.ReportMetric(float64(len(evs)), "objects")
	b.ReportMetric(float64(len(set)), "targets")
	b.ReportMetric(float64(deleted), "deleted")
	b.ReportMetric(float64(together.Milliseconds())/float64(b.N), "set-ms")
	b.ReportMetric(float64(each.Milliseconds())/float64(b.N), "baseline:each-ms")
	b.ReportMetric(float64(together)/float64(each), "x-baseline-time")
}
