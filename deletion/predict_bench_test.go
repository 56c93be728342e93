package deletion

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// namespaceGraph is a graph of one namespace's content: what the engine's InNamespace
// answers (a fresh copy each call, as it copies from its index), and the namespace.
type namespaceGraph struct {
	ns      gc.ObjectRef
	content []gc.NodeState
}

func (g *namespaceGraph) Node(types.UID) (gc.NodeDetail, bool) { return gc.NodeDetail{}, false }
func (g *namespaceGraph) InNamespace(string) []gc.NodeState    { return slices.Clone(g.content) }
func (g *namespaceGraph) BeingDeleted() []gc.NodeState         { return nil }
func (g *namespaceGraph) SyncState() gc.SyncState              { return gc.SyncState{} }
func (g *namespaceGraph) PredictDelete(uid types.UID, _ metav1.DeletionPropagation) (gc.Prediction, bool) {
	return gc.Prediction{Target: g.ns, Deleted: []gc.PredictedObject{{Object: g.ns, Reason: "the target"}}}, uid == g.ns.UID
}

// BenchmarkPredictNamespace: the prediction of a delete of a namespace holding 200,000
// objects (GCSCOPE_PREDICT_OBJECTS; Deployments, ReplicaSets and 8 Pods each, 20 Pods held
// by a finalizer), in the namespace controller's order, against the named baseline
// "baseline:copy", the engine's answer it is built from (InNamespace's copy of the
// namespace's nodes) alone. The engine's InNamespace itself reads an index
// (BenchmarkDeletingReads in gc/).
func BenchmarkPredictNamespace(b *testing.B) {
	n := 200_000
	if v := os.Getenv("GCSCOPE_PREDICT_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("GCSCOPE_PREDICT_OBJECTS=%q: want a number ≥ 100", v)
		}
	}
	g := &namespaceGraph{ns: gc.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "big", UID: "ns-big"}}
	for d := 0; len(g.content) < n; d++ {
		add := func(apiVersion, kind, name string, finalizers ...string) {
			g.content = append(g.content, gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: "big", Name: name,
				UID: types.UID(fmt.Sprintf("%s-%d", name, len(g.content)))}, Observed: true, Finalizers: finalizers})
		}
		add("apps/v1", "Deployment", fmt.Sprintf("app-%d", d))
		add("apps/v1", "ReplicaSet", fmt.Sprintf("app-%d-5d8f9c7b6", d))
		for p := range 8 {
			if d < 20 && p == 0 {
				add("v1", "Pod", fmt.Sprintf("app-%d-5d8f9c7b6-%02d", d, p), "example.com/hold")
			} else {
				add("v1", "Pod", fmt.Sprintf("app-%d-5d8f9c7b6-%02d", d, p))
			}
		}
	}
	x := &Explainer{graph: g}
	var predicted, copied time.Duration
	var p gc.Prediction
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var ok bool
		if p, ok = x.PredictNamespace(g.ns.UID, metav1.DeletePropagationBackground); !ok {
			b.Fatal("the namespace is not in the graph")
		}
		predicted += time.Since(start)

		start = time.Now()
		if len(g.InNamespace("big")) != len(g.content) {
			b.Fatal("short copy")
		}
		copied += time.Since(start)
	}
	if len(p.Deleted) != len(g.content)+1 || len(p.Waiting) != 20 || p.Deleted[0].Step != stepPods {
		b.Fatalf("predicted %d deleted (%d waiting), want %d (20), Pods first", len(p.Deleted), len(p.Waiting), len(g.content)+1)
	}
	b.ReportMetric(float64(len(g.content)), "objects")
	b.ReportMetric(float64(predicted.Milliseconds())/float64(b.N), "predict-ms")
	b.ReportMetric(float64(copied.Milliseconds())/float64(b.N), "baseline:copy-ms")
	b.ReportMetric(float64(predicted)/float64(copied), "x-baseline-time")
}
