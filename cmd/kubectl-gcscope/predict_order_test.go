package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// shopTree is a Deployment with a ConfigMap and two ReplicaSets of two Pods each, as the
// engine's graph would give it: dependents, and owners' uids.
func shopTree() (objects map[string]gc.ObjectRef, graph func(types.UID) ([]gc.ObjectRef, []types.UID)) {
	ref := func(kind, name string) gc.ObjectRef {
		return gc.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: "shop", Name: name, UID: types.UID("uid-" + name)}
	}
	objects = map[string]gc.ObjectRef{}
	for _, o := range []gc.ObjectRef{ref("Deployment", "web"), ref("ConfigMap", "web-config"), ref("ReplicaSet", "web-a"), ref("ReplicaSet", "web-b"),
		ref("Pod", "web-a-1"), ref("Pod", "web-a-2"), ref("Pod", "web-b-1"), ref("Pod", "web-b-2")} {
		objects[o.Name] = o
	}
	owner := map[string]string{"web-config": "web", "web-a": "web", "web-b": "web", "web-a-1": "web-a", "web-a-2": "web-a", "web-b-1": "web-b", "web-b-2": "web-b"}
	return objects, func(uid types.UID) (deps []gc.ObjectRef, owners []types.UID) {
		name := strings.TrimPrefix(string(uid), "uid-")
		for dep, o := range owner {
			if o == name {
				deps = append(deps, objects[dep])
			}
		}
		if o, ok := owner[name]; ok {
			owners = append(owners, objects[o].UID)
		}
		return deps, owners
	}
}

// TestTreeRankGroupsByOwner: the prediction's lists read as the tree: the target, then
// each owner followed by its dependents (issue 36, item 7: the Background preview listed
// target, Pod, Pod, ReplicaSet, Pod, Pod); a list no target reaches (a namespace's
// content) starts from its topmost objects; a Foreground step keeps each ReplicaSet's Pods
// together.
func TestTreeRankGroupsByOwner(t *testing.T) {
	objects, graph := shopTree()
	byUID := func(names ...string) []gc.ObjectRef {
		var out []gc.ObjectRef
		for _, n := range names {
			out = append(out, objects[n])
		}
		return out
	}
	names := func(rank map[types.UID]int, list []gc.ObjectRef) []string {
		list = slices.Clone(list)
		slices.SortFunc(list, func(a, b gc.ObjectRef) int { return rank[a.UID] - rank[b.UID] })
		var out []string
		for _, o := range list {
			out = append(out, o.Name)
		}
		return out
	}
	// In uid order, as the engine lists them: the Pods of both ReplicaSets mixed.
	listed := byUID("web-b-1", "web-a-2", "web", "web-b", "web-config", "web-a-1", "web-b-2", "web-a")
	want := []string{"web", "web-config", "web-a", "web-a-1", "web-a-2", "web-b", "web-b-1", "web-b-2"}
	if got := names(rankOnly(treeRank(byUID("web"), listed, graph)), listed); !slices.Equal(got, want) {
		t.Errorf("from the Deployment: %v, want %v", got, want)
	}
	// A namespace's content: nothing reaches it from the Namespace; each tree from its top.
	ns := gc.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "uid-ns"}
	withNS := func(uid types.UID) ([]gc.ObjectRef, []types.UID) {
		if uid == ns.UID {
			return nil, nil
		}
		return graph(uid)
	}
	if got := names(rankOnly(treeRank([]gc.ObjectRef{ns}, listed, withNS)), listed); !slices.Equal(got, want) {
		t.Errorf("a namespace's content: %v, want %v", got, want)
	}

	// The order in a prediction: by step, then by the tree.
	p := gc.Prediction{Target: objects["web"], Policy: "Foreground"}
	for _, o := range listed {
		step := 1
		switch o.Kind {
		case "ReplicaSet":
			step = 2
		case "Deployment":
			step = 3
		}
		p.Deleted = append(p.Deleted, gc.PredictedObject{Object: o, Step: step})
	}
	rank, parents := treeRank([]gc.ObjectRef{p.Target}, listed, graph)
	slices.SortStableFunc(p.Deleted, func(a, b gc.PredictedObject) int {
		if a.Step != b.Step {
			return a.Step - b.Step
		}
		return rank[a.Object.UID] - rank[b.Object.UID]
	})
	var got []string
	for _, po := range p.Deleted {
		got = append(got, po.Object.Name)
	}
	if want := []string{"web-config", "web-a-1", "web-a-2", "web-b-1", "web-b-2", "web-a", "web-b", "web"}; !slices.Equal(got, want) {
		t.Errorf("in the foreground, by step and then by the tree: %v, want %v", got, want)
	}
	// In text, a dependent is indented under its owner when it is listed above it.
	p.Policy, p.Order = "Background", ""
	for i := range p.Deleted {
		p.Deleted[i].Step = 0
	}
	slices.SortStableFunc(p.Deleted, func(a, b gc.PredictedObject) int { return rank[a.Object.UID] - rank[b.Object.UID] })
	out := renderPrediction(p, deletion.Consequences{}, parents, "background", false)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	out = strings.Join(lines, "\n")
	if !strings.Contains(out, "  Deployment/web\n    ConfigMap/web-config\n    ReplicaSet/web-a\n      Pod/web-a-1\n      Pod/web-a-2\n    ReplicaSet/web-b\n      Pod/web-b-1") {
		t.Errorf("want each owner's dependents under it:\n%s", out)
	}
}

func rankOnly(rank map[types.UID]int, _ map[types.UID]types.UID) map[types.UID]int { return rank }

// TestStepsAreNumberedAsTheyCome: a namespace without Pods skips the namespace
// controller's first step; what predict lists starts at step 1 all the same (issue 36,
// item 9: "predict ns/X" without Pods started at "step 2").
func TestStepsAreNumberedAsTheyCome(t *testing.T) {
	ns := gc.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "empty-ish", UID: "uid-ns"}
	cm := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "empty-ish", Name: "settings", UID: "uid-cm"}
	p := gc.Prediction{Target: ns, Policy: "Background", Order: deletion.NamespaceOrder, Deleted: []gc.PredictedObject{
		{Object: cm, Reason: "its content", Step: 2}, {Object: ns, Reason: "the target", Step: 3}}}
	out := renderPrediction(p, deletion.Consequences{}, nil, "background", false)
	if !strings.Contains(out, "\nstep 1: delete 1 object:\n  ConfigMap/settings") || !strings.Contains(out, "\nstep 2: delete 1 object:\n  Namespace/empty-ish") || strings.Contains(out, "step 3") {
		t.Errorf("want the steps present numbered 1 and 2:\n%s", out)
	}
}

// TestDiscoveryWarningSaysSinceWhenAsTheClusterKnows: the engine of a plugin's run started
// with the command, so the time it first saw a group version fail is no "since": the
// warning says the APIService's own time when it has one, and otherwise that the failure
// was there when the command started (issue 36, item 6).
func TestDiscoveryWarningSaysSinceWhenAsTheClusterKnows(t *testing.T) {
	started := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	now := started.Add(3 * time.Second)
	failures := map[string]gc.GroupFailure{
		"metrics.k8s.io/v1beta1": {Error: "the server is currently unable to handle the request", Since: started.Add(200 * time.Millisecond)},
		"example.com/v1":         {Error: "the server is currently unable to handle the request", Since: started.Add(200 * time.Millisecond)},
	}
	down := started.Add(-2 * time.Hour)
	apis := []deletion.APIServiceReport{{Name: "v1beta1.metrics.k8s.io", GroupVersion: "metrics.k8s.io/v1beta1", Available: "False", Since: &down}}
	got := discoveryWarnings(failures, apis, started, now)
	if len(got) != 2 {
		t.Fatalf("warnings %q: want one per group version", got)
	}
	if !strings.HasPrefix(got[0], "API discovery fails for example.com/v1: ") || strings.Contains(got[0], "2026-11-29T10:00:00") ||
		!strings.Contains(got[0], "failing already when this command started") {
		t.Errorf("without an APIService time: %q; want no since of the command's own start, and that it failed when the command started", got[0])
	}
	if !strings.HasPrefix(got[1], "API discovery fails for metrics.k8s.io/v1beta1: ") ||
		!strings.Contains(got[1], "APIService v1beta1.metrics.k8s.io not available since 2026-11-29T08:00:00Z, 2h0m3s ago") {
		t.Errorf("with the APIService's Available condition: %q; want its time", got[1])
	}
	// An engine that ran before the command (not the plugin's, but the words hold): its since.
	long := map[string]gc.GroupFailure{"example.com/v1": {Error: "down", Since: started.Add(-time.Hour)}}
	if got := discoveryWarnings(long, nil, started, now); len(got) != 1 || !strings.Contains(got[0], "failing since 2026-11-29T09:00:00Z, 1h0m3s ago") {
		t.Errorf("an engine that knew before: %q", got)
	}
}
