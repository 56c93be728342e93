package gc_test

// Scenarios against a real kube-apiserver (embedded, with kube-controller-manager's
// controllers but not its collector) and gcscope's engine running active. Each scenario
// works in its own namespace and asserts the exact final state of every object involved.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// testEnv is one embedded control plane and one active engine, shared by the package's
// scenarios and started by the first test that needs it.
type testEnv struct {
	cluster *cluster.Cluster
	config  *rest.Config
	client  kubernetes.Interface
	meta    metadata.Interface
	dyn     dynamic.Interface
	ext     apiextensionsclient.Interface
	engine  *gc.GarbageCollector
}

// env is filled by the shared control plane's Setup.
var env *testEnv

func TestMain(m *testing.M) { testkit.Main(m) }

// discoveryPeriod is short so that new custom resources are monitored within seconds.
const discoveryPeriod = 2 * time.Second

func setup(t *testing.T) *testEnv {
	t.Helper()
	testkit.Shared(t, testkit.Options{Controllers: true, Setup: startEngine})
	return env
}

// startEngine runs the shared engine, active, on the shared control plane.
func startEngine(_ context.Context, k *testkit.Env) error {
	e := &testEnv{cluster: k.Cluster, config: k.Config, client: k.Client, meta: k.Meta, dyn: k.Dyn, ext: k.Ext}
	var err error
	e.engine, err = gc.NewForConfig(e.config, gc.Options{DiscoveryPeriod: discoveryPeriod, SyncTimeout: 20 * time.Second, Logger: k.Log})
	if err != nil {
		return err
	}
	if err := k.GoReady(e.engine.Started(), e.engine.Run); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	env = e
	return nil
}

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// --- helpers ---

func (e *testEnv) namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns, err := e.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

type ownerOpt func(*metav1.OwnerReference)

func nonBlocking(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(false) }

// refTo builds a blocking, non-controller reference to obj of apiVersion/kind.
func refTo(apiVersion, kind string, obj metav1.Object, opts ...ownerOpt) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: ptr.To(true)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func cmRef(cm *corev1.ConfigMap, opts ...ownerOpt) metav1.OwnerReference {
	return refTo("v1", "ConfigMap", cm, opts...)
}

// configMap creates a ConfigMap with owners and finalizers.
func (e *testEnv) configMap(t *testing.T, ns, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, Finalizers: finalizers},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s: %v", name, err)
	}
	testkit.Eventually(t, "the engine observes "+name, func() bool {
		n, ok := e.engine.Node(cm.UID)
		return (ok && n.Observed) || e.getCM(t, cm) == nil // or has already collected it
	})
	return cm
}

// waitObserved waits until the engine has observed uid: a delete that follows at once
// must find its dependents in the graph, as upstream's tests also wait for.
func (e *testEnv) waitObserved(t *testing.T, uid types.UID) {
	t.Helper()
	testkit.Eventually(t, "the engine observes "+string(uid), func() bool {
		n, ok := e.engine.Node(uid)
		return ok && n.Observed
	})
}

func (e *testEnv) deleteCM(t *testing.T, cm *corev1.ConfigMap, policy metav1.DeletionPropagation) {
	t.Helper()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if err := e.client.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, opts); err != nil {
		t.Fatalf("delete %s with %q: %v", cm.Name, policy, err)
	}
}

// get reads an object's metadata; nil if it does not exist (or has another uid).
func (e *testEnv) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string, uid types.UID) *metav1.PartialObjectMetadata {
	t.Helper()
	var c metadata.ResourceInterface = e.meta.Resource(gvr)
	if ns != "" {
		c = e.meta.Resource(gvr).Namespace(ns)
	}
	obj, err := c.Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	if uid != "" && obj.UID != uid {
		return nil
	}
	return obj
}

func (e *testEnv) getCM(t *testing.T, cm *corev1.ConfigMap) *metav1.PartialObjectMetadata {
	t.Helper()
	return e.get(t, configMaps, cm.Namespace, cm.Name, cm.UID)
}

func (e *testEnv) waitGone(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return e.getCM(t, cm) == nil, nil })
	if err != nil {
		t.Fatalf("timed out waiting until %s is deleted; it is %+v\nengine: %s", cm.Name, e.getCM(t, cm), e.explain(cm.UID))
	}
}

// explain renders the engine's view of uid for failure messages.
func (e *testEnv) explain(uid types.UID) string {
	ex, ok := e.engine.Explain(uid)
	if !ok {
		return "not in the graph"
	}
	b, _ := json.MarshalIndent(ex, "", "  ")
	out := string(b)
	// And every action the feed still holds about it.
	events, _ := e.engine.Feed().Since(e.engine.Feed().LastSeq()-min(e.engine.Feed().LastSeq(), gc.DefaultFeedSize-1), 0)
	for _, ev := range events {
		if ev.Action != nil && ev.Action.Object.UID == uid {
			out += fmt.Sprintf("\n%s %s %s %s %v %s", ev.Time.Format("15:04:05.000"), ev.Action.Queue, ev.Action.Verb, ev.Action.Policy, ev.Action.Refs, ev.Action.Reason)
			if ev.Action.Error != "" {
				out += " error: " + ev.Action.Error
			}
		}
	}
	return out
}

// assertState checks an existing object's exact owners (by uid), finalizers and whether it
// is being deleted.
func assertState(t *testing.T, obj *metav1.PartialObjectMetadata, name string, owners []types.UID, finalizers []string, beingDeleted bool) {
	t.Helper()
	if obj == nil {
		t.Fatalf("%s: gone, want it to exist", name)
	}
	var got []types.UID
	for _, r := range obj.OwnerReferences {
		got = append(got, r.UID)
	}
	if !slices.Equal(got, owners) {
		t.Errorf("%s: owners %v, want %v", name, got, owners)
	}
	if !slices.Equal(obj.Finalizers, finalizers) {
		t.Errorf("%s: finalizers %v, want %v", name, obj.Finalizers, finalizers)
	}
	if (obj.DeletionTimestamp != nil) != beingDeleted {
		t.Errorf("%s: deletionTimestamp %v, want being deleted = %t", name, obj.DeletionTimestamp, beingDeleted)
	}
}

func (e *testEnv) removeFinalizers(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	var c metadata.ResourceInterface = e.meta.Resource(gvr)
	if ns != "" {
		c = e.meta.Resource(gvr).Namespace(ns)
	}
	_, err := c.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("remove finalizers of %s: %v", name, err)
	}
}

const holdFinalizer = "test.gcscope.io/hold"

// --- scenarios ---

// TestShadowModeAgainstRealAPIServer: on a control plane of its own, with no other
// collector, an engine in shadow mode decides to delete a dependent whose owner never
// existed, records the decision, and leaves the object alone.
func TestShadowModeAgainstRealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := ownControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	engine := runEngine(t, ctx, cfg, gc.Options{Mode: gc.ModeShadow})
	<-engine.Started()

	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()}
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "dangling", OwnerReferences: []metav1.OwnerReference{ghost}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var decision *gc.Action
	var seq uint64
	testkit.Eventually(t, "the shadow engine decides to delete the dangling ConfigMap", func() bool {
		events, err := engine.Feed().Since(seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			seq = ev.Seq
			if a := ev.Action; a != nil && a.Object.UID == cm.UID && a.Verb == gc.VerbDelete {
				decision = a
			}
		}
		return decision != nil
	})
	if !decision.Shadow || decision.Policy != string(metav1.DeletePropagationBackground) || decision.Error != "" {
		t.Errorf("decision %+v: want a shadow Background delete", decision)
	}
	testkit.Consistently(t, "the ConfigMap stays, untouched", time.Second, func() bool {
		got, err := client.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp == nil && got.ResourceVersion == cm.ResourceVersion
	})
}

// TestMetricsUnderUpstreamNames: the engine's registry carries the work-queue metrics of
// its three queues under upstream's names, the graph size and the sync error counter.
func TestMetricsUnderUpstreamNames(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", nil, cmRef(owner))
	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, dep)

	families, err := e.engine.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{} // name{queue} -> value
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					key += "{" + l.GetValue() + "}"
				}
			}
			switch {
			case m.GetCounter() != nil:
				values[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				values[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				values[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for _, q := range []string{"garbage_collector_graph_changes", "garbage_collector_attempt_to_delete"} {
		for _, m := range []string{"workqueue_adds_total", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
			if values[m+"{"+q+"}"] <= 0 {
				t.Errorf("%s{name=%q} = %v, want > 0", m, q, values[m+"{"+q+"}"])
			}
		}
	}
	for _, key := range []string{
		"workqueue_depth{garbage_collector_attempt_to_orphan}", "workqueue_retries_total{garbage_collector_attempt_to_delete}",
		"garbagecollector_controller_resources_sync_error_total", "gcscope_gc_graph_virtual_nodes",
	} {
		if _, ok := values[key]; !ok {
			t.Errorf("metric %s missing", key)
		}
	}
	if values["gcscope_gc_graph_nodes"] < 10 {
		t.Errorf("gcscope_gc_graph_nodes = %v, want the cluster's objects", values["gcscope_gc_graph_nodes"])
	}
}

// ownControlPlane starts a control plane for one test, with no controllers and no engine
// of the shared environment, stopped when the test ends.
func ownControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	return testkit.NewCluster(t, testkit.Options{}).Config
}

// runEngine runs an engine on cfg until the test ends.
func runEngine(t *testing.T, ctx context.Context, cfg *rest.Config, opts gc.Options) *gc.GarbageCollector {
	t.Helper()
	engine, err := gc.NewForConfig(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- engine.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	return engine
}
