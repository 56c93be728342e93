package gc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakemetadata "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The engine's test harness: a collector over fake discovery and a fake metadata client
// that stores what it is given, and readers of the actions it took.

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pvsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgetsV1GVR   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsBetaGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
)

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// testAPIResources is what the fake discovery serves.
func testAPIResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, Verbs: allVerbs},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs},
			{Name: "persistentvolumes", SingularName: "persistentvolume", Kind: "PersistentVolume", Namespaced: false, Verbs: allVerbs},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Namespaced: false, Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, Verbs: allVerbs},
			{Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "componentstatuses", SingularName: "componentstatus", Kind: "ComponentStatus", Verbs: metav1.Verbs{"get", "list"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, Verbs: allVerbs},
			{Name: "replicasets", SingularName: "replicaset", Kind: "ReplicaSet", Namespaced: true, Verbs: allVerbs},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, Verbs: allVerbs},
		}},
		// A custom resource served in two versions, v1 preferred.
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: allVerbs},
		}},
		{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: allVerbs},
		}},
	}
}

// gvrOf maps the kinds the tests store to their resources.
func gvrOf(apiVersion, kind string) schema.GroupVersionResource {
	switch apiVersion + " " + kind {
	case "v1 Pod":
		return podsGVR
	case "v1 ConfigMap":
		return configMapsGVR
	case "v1 PersistentVolume":
		return pvsGVR
	case "apps/v1 ReplicaSet":
		return replicaSetsGVR
	case "apps/v1 Deployment":
		return deploymentsGVR
	case "example.com/v1 Widget":
		return widgetsV1GVR
	case "example.com/v1beta1 Widget":
		return widgetsBetaGVR
	}
	panic("no resource for " + apiVersion + " " + kind)
}

// engineHarness is an engine built by New over fakes, its workers driven by hand.
type engineHarness struct {
	t    *testing.T
	ctx  context.Context
	gc   *GarbageCollector
	meta *fakemetadata.FakeMetadataClient
	disc *fakediscovery.FakeDiscovery
}

func newEngineHarness(t *testing.T, opts Options, objs ...*metav1.PartialObjectMetadata) *engineHarness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &engineHarness{
		t:    t,
		ctx:  context.Background(),
		meta: fakemetadata.NewSimpleMetadataClient(scheme),
		disc: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}},
	}
	h.disc.Resources = testAPIResources()
	for _, o := range objs {
		h.store(o)
	}
	gc, err := New(Clients{Metadata: h.meta, Discovery: h.disc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.gc = gc
	t.Cleanup(func() {
		gc.builder.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
	})
	return h
}

// store puts obj in the fake apiserver.
func (h *engineHarness) store(obj *metav1.PartialObjectMetadata) {
	h.t.Helper()
	h.storeAs(gvrOf(obj.APIVersion, obj.Kind), obj)
}

func (h *engineHarness) storeAs(gvr schema.GroupVersionResource, obj *metav1.PartialObjectMetadata) {
	h.t.Helper()
	if err := h.meta.Tracker().Create(gvr, obj.DeepCopy(), obj.Namespace); err != nil {
		h.t.Fatalf("storing %s %s: %v", obj.Kind, obj.Name, err)
	}
}

// stored reads obj back from the fake apiserver.
func (h *engineHarness) stored(obj *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, bool) {
	h.t.Helper()
	o, err := h.meta.Tracker().Get(gvrOf(obj.APIVersion, obj.Kind), obj.Namespace, obj.Name)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return o.(*metav1.PartialObjectMetadata), true
}

// observe processes events as the graph builder does, checking the graph after each.
func (h *engineHarness) observe(evs ...*event) {
	h.t.Helper()
	for _, ev := range evs {
		h.gc.graph.mu.Lock()
		h.gc.builder.processGraphChanges(ev)
		h.gc.graph.mu.Unlock()
		verifyGraphInvariants(h.t, h.gc.graph)
	}
}

func (h *engineHarness) node(uid types.UID) *node {
	h.t.Helper()
	h.gc.graph.mu.RLock()
	defer h.gc.graph.mu.RUnlock()
	n, ok := h.gc.graph.read(uid)
	if !ok {
		h.t.Fatalf("no node %s in the graph", uid)
	}
	return n
}

// runUntilIdle processes the graph changes and attempts to delete that are queued now (not
// those waiting for a backoff), until none is left.
func (h *engineHarness) runUntilIdle() {
	h.t.Helper()
	for range 100 {
		progressed := false
		for h.gc.builder.graphChanges.Len() > 0 {
			ev, _ := h.gc.builder.graphChanges.Get()
			h.observe(ev)
			h.gc.builder.graphChanges.Done(ev)
			progressed = true
		}
		if h.gc.attemptToDelete.Len() > 0 {
			h.gc.processAttemptToDeleteWorker(h.ctx)
			progressed = true
		}
		if !progressed {
			return
		}
	}
	h.t.Fatal("the engine did not settle after 100 rounds")
}

// waitQueued waits until q holds an item (one added after its backoff).
func waitQueued(t *testing.T, q *workQueue[*node], what string) {
	t.Helper()
	testkit.EventuallyWithin(t, 5*time.Second, what+": something is queued again", func() bool { return q.Len() > 0 })
}

// actions returns the fake client's actions with one of verbs.
func (h *engineHarness) actions(verbs ...string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range h.meta.Actions() {
		if slices.Contains(verbs, a.GetVerb()) {
			out = append(out, a)
		}
	}
	return out
}

func describeActions(as []clienttesting.Action) string {
	var parts []string
	for _, a := range as {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if n, ok := a.(interface{ GetName() string }); ok {
			s += " " + a.GetNamespace() + "/" + n.GetName()
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// feedActions returns the actions published after seq.
func (h *engineHarness) feedActions(seq uint64) []Action {
	h.t.Helper()
	evs, err := h.gc.feed.Since(seq, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []Action
	for _, e := range evs {
		if e.Type == ActionTaken {
			out = append(out, *e.Action)
		}
	}
	return out
}

func (h *engineHarness) feedQueueEvents(seq uint64, q QueueName) []QueueEvent {
	h.t.Helper()
	evs, err := h.gc.feed.Since(seq, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return queueEvents(evs, q)
}

func findActions(as []Action, verb ActionVerb, uid types.UID) []Action {
	var out []Action
	for _, a := range as {
		if a.Verb == verb && a.Object.UID == uid {
			out = append(out, a)
		}
	}
	return out
}
