package gc_test

// Scenarios against a real kube-apiserver (embedded, with kube-controller-manager's
// controllers but not its collector) and gcscope's engine running active. Each scenario
// works in its own namespace and asserts the exact final state of every object involved.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

func TestBackgroundCascadeKeepsDependentWithSecondSolidOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	other := e.configMap(t, ns, "other-owner", nil)
	only := e.configMap(t, ns, "only-child", nil, cmRef(owner))
	shared := e.configMap(t, ns, "shared-child", nil, cmRef(owner), cmRef(other))

	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, owner)
	e.waitGone(t, only)
	testkit.Eventually(t, "shared-child keeps only its second owner", func() bool {
		obj := e.getCM(t, shared)
		return obj != nil && len(obj.OwnerReferences) == 1
	})
	assertState(t, e.getCM(t, shared), "shared-child", []types.UID{other.UID}, nil, false)
	assertState(t, e.getCM(t, other), "other-owner", nil, nil, false)
}

// TestTwoReferencesWithOneUIDBothGoAndTheReasonSaysSo: a dependent names its live owner
// and, under the same uid, an owner of another kind that does not exist. The dangling
// reference is removed by uid, as upstream removes it, so the solid one goes with it; the
// recorded reason must say that both go, and why.
func TestTwoReferencesWithOneUIDBothGoAndTheReasonSaysSo(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "ghost", UID: owner.UID}
	start := e.engine.Feed().LastSeq()
	dep := e.configMap(t, ns, "dependent", nil, cmRef(owner), ghost)
	testkit.Eventually(t, "the dependent loses both references", func() bool {
		obj := e.getCM(t, dep)
		return obj != nil && len(obj.OwnerReferences) == 0
	})
	assertState(t, e.getCM(t, owner), "owner", nil, nil, false)
	var reason string
	events, err := e.engine.Feed().Since(start, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if a := ev.Action; a != nil && a.Object.UID == dep.UID && a.Verb == gc.VerbRemoveRefs && a.Error == "" {
			reason = a.Reason
		}
	}
	for _, want := range []string{"Secret ghost", "ConfigMap owner goes too", "same uid " + string(owner.UID), "both references"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if strings.Contains(reason, "owner ConfigMap owner exists") {
		t.Errorf("reason %q claims the removed reference's owner keeps the object", reason)
	}
}

// TestExplainOwnerOfUnservedVersionSaysTheEngineRetries: an owner named through an
// apiVersion the apiserver does not serve cannot be looked up. The engine retries and
// never deletes for it, and Explain says exactly that.
func TestExplainOwnerOfUnservedVersionSaysTheEngineRetries(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	unserved := metav1.OwnerReference{APIVersion: "gadgets.example.com/v9", Kind: "Gadget", Name: "g", UID: "0d5c3b1e-unserved-owner"}
	dep := e.configMap(t, ns, "dependent", nil, unserved)
	// The owner is a virtual node: the engine tries to verify it, cannot, and retries.
	testkit.Eventually(t, "the engine to try the unserved owner and requeue it", func() bool {
		ex, _ := e.engine.Explain(unserved.UID)
		return ex.Last != nil && ex.Last.Verb == gc.VerbRequeue
	})
	ex, _ := e.engine.Explain(dep.UID)
	if len(ex.Owners) != 1 || ex.Owners[0].State != gc.OwnerUnresolvable || !strings.Contains(ex.Owners[0].Reason, "never treats it as absent") {
		t.Errorf("owner status %+v; want unresolvable, saying it is never treated as absent", ex.Owners)
	}
	if !strings.HasPrefix(ex.Next, "retry later") || strings.Contains(ex.Next, "delete") {
		t.Errorf("next step %q; want a retry, and no delete", ex.Next)
	}
	if owner, _ := e.engine.Explain(unserved.UID); !strings.HasPrefix(owner.Next, "retry later") {
		t.Errorf("the owner's next step %q; want a retry", owner.Next)
	}
	testkit.Consistently(t, "the dependent stays", 2*time.Second, func() bool { return e.getCM(t, dep) != nil })
}

// TestExplainObjectThatOwnsItself: an object naming itself as a blocking owner, deleted in
// the foreground, is among its own blockers; the words say so instead of an empty list.
func TestExplainObjectThatOwnsItself(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	self := e.configMap(t, ns, "selfish", nil)
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"selfish","uid":%q,"blockOwnerDeletion":true}]}}`, self.UID)
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "selfish", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine sees the self reference", func() bool {
		n, ok := e.engine.Node(self.UID)
		return ok && len(n.Owners) == 1
	})
	e.deleteCM(t, self, metav1.DeletePropagationForeground)
	var ex gc.Explanation
	testkit.Eventually(t, "the engine marks it deleting its dependents", func() bool {
		ex, _ = e.engine.Explain(self.UID)
		return ex.Object.DeletingDependents && len(ex.Blockers) > 0
	})
	text := strings.Join(ex.Words, ". ")
	if !strings.Contains(text, "is the object itself") || strings.Contains(text, "dependents: ;") || strings.HasSuffix(text, ": ") || strings.Contains(text, "dependents: .") {
		t.Errorf("words %q; want them to say it is its own blocker, with no empty list", ex.Words)
	}
	e.removeFinalizers(t, configMaps, ns, "selfish")
}

// TestUnblockThenDeleteIsDecidedAgainAsUpstream: D waits on its foreground-deleted owner O
// and has a dependent E that is itself deleting its dependents, so D first unblocks its
// references (breaking a possible cycle). As upstream, the delete that follows carries the
// resourceVersion the decision was made on: the patch moved it, so that delete earns a
// 409 and D is decided again on the patched object; in the end D and O are gone.
func TestUnblockThenDeleteIsDecidedAgainAsUpstream(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	o := e.configMap(t, ns, "o", nil)
	d := e.configMap(t, ns, "d", nil, cmRef(o))
	eDep := e.configMap(t, ns, "e", nil, cmRef(d))
	f := e.configMap(t, ns, "f", []string{holdFinalizer}, cmRef(eDep))
	e.deleteCM(t, eDep, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "e waits for f", func() bool { n, _ := e.engine.Node(eDep.UID); return n.DeletingDependents })
	start := e.engine.Feed().LastSeq()
	e.deleteCM(t, o, metav1.DeletePropagationForeground)
	e.waitGone(t, o) // d no longer blocks it
	e.removeFinalizers(t, configMaps, ns, f.Name)
	for _, cm := range []*corev1.ConfigMap{f, eDep, d} {
		e.waitGone(t, cm)
	}
	events, err := e.engine.Feed().Since(start, 0)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, ev := range events {
		if a := ev.Action; a != nil && a.Object.UID == d.UID && (a.Verb == gc.VerbUnblock || a.Verb == gc.VerbDelete) {
			v := string(a.Verb)
			if a.Error != "" {
				v += "!"
			}
			verbs = append(verbs, v)
		}
	}
	// After the delete that succeeds, a decision made on a view that has not seen it yet
	// may still try and be refused (409, the object being deleted): that changes nothing.
	if len(verbs) < 3 || verbs[0] != "patchUnblock" || verbs[1] != "delete!" || !slices.Contains(verbs[2:], "delete") {
		t.Errorf("d's writes %v; want patchUnblock, a delete refused (409: the decision's resourceVersion moved), then a delete decided again", verbs)
	}
}

func TestOrphanKeepsDependentsWithoutReferences(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	a := e.configMap(t, ns, "a", nil, cmRef(owner))
	b := e.configMap(t, ns, "b", nil, cmRef(owner, nonBlocking))

	e.deleteCM(t, owner, metav1.DeletePropagationOrphan)
	e.waitGone(t, owner)
	assertState(t, e.getCM(t, a), "a", nil, nil, false)
	assertState(t, e.getCM(t, b), "b", nil, nil, false)
}

func TestBlockingDependentHeldByFinalizerBlocksForegroundUntilReleased(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	held := e.configMap(t, ns, "held", []string{holdFinalizer}, cmRef(owner))
	free := e.configMap(t, ns, "free", nil, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	e.waitGone(t, free)
	testkit.Eventually(t, "held is being deleted", func() bool {
		obj := e.getCM(t, held)
		return obj != nil && obj.DeletionTimestamp != nil
	})
	testkit.Consistently(t, "the owner waits for its held dependent", 2*time.Second, func() bool { return e.getCM(t, owner) != nil })
	assertState(t, e.getCM(t, owner), "owner", nil, []string{metav1.FinalizerDeleteDependents}, true)
	assertState(t, e.getCM(t, held), "held", []types.UID{owner.UID}, []string{holdFinalizer}, true)

	ex, ok := e.engine.Explain(owner.UID)
	if !ok {
		t.Fatal("explain: owner not in the graph")
	}
	if !ex.Object.DeletingDependents || len(ex.Blockers) != 1 || ex.Blockers[0].Object.UID != held.UID ||
		!slices.Contains(ex.Blockers[0].Finalizers, holdFinalizer) {
		t.Errorf("explain should name held and its finalizer as the one blocker: %+v", ex)
	}
	if !strings.Contains(strings.Join(ex.Words, "; "), "configmap held is held by finalizer "+holdFinalizer) {
		t.Errorf("explain words do not name the finalizer: %q", ex.Words)
	}

	e.removeFinalizers(t, configMaps, ns, held.Name)
	e.waitGone(t, held)
	e.waitGone(t, owner)
}

func TestSolidOwnerDoesNotBlockWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	waiting := e.configMap(t, ns, "waiting-owner", nil)
	solid := e.configMap(t, ns, "solid-owner", nil)
	dep := e.configMap(t, ns, "dep", nil, cmRef(waiting), cmRef(solid))

	e.deleteCM(t, waiting, metav1.DeletePropagationForeground)
	e.waitGone(t, waiting)
	assertState(t, e.getCM(t, dep), "dep", []types.UID{solid.UID}, nil, false)
	assertState(t, e.getCM(t, solid), "solid-owner", nil, nil, false)
}

func TestNonBlockingReferenceDoesNotBlockForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner, nonBlocking))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	e.waitGone(t, owner)
	// The dependent is collected too; its own finalizer keeps it, being deleted.
	testkit.Eventually(t, "dep is being deleted", func() bool {
		obj := e.getCM(t, dep)
		return obj != nil && obj.DeletionTimestamp != nil
	})
	assertState(t, e.getCM(t, dep), "dep", []types.UID{owner.UID}, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestForegroundTwiceOnObjectWithItsOwnFinalizer(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	obj := e.configMap(t, ns, "obj", []string{holdFinalizer})

	for i := range 2 {
		e.deleteCM(t, obj, metav1.DeletePropagationForeground)
		testkit.Eventually(t, fmt.Sprintf("delete %d: the collector removes foregroundDeletion", i+1), func() bool {
			o := e.getCM(t, obj)
			return o != nil && o.DeletionTimestamp != nil && slices.Equal(o.Finalizers, []string{holdFinalizer})
		})
		assertState(t, e.getCM(t, obj), "obj", nil, []string{holdFinalizer}, true)
	}
	e.removeFinalizers(t, configMaps, ns, obj.Name)
	e.waitGone(t, obj)
}

func TestThreeObjectCircleDeletedInForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	a := e.configMap(t, ns, "a", nil)
	b := e.configMap(t, ns, "b", nil, cmRef(a))
	c := e.configMap(t, ns, "c", nil, cmRef(b))
	a.OwnerReferences = []metav1.OwnerReference{cmRef(c)}
	a, err := e.client.CoreV1().ConfigMaps(ns).Update(context.Background(), a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.deleteCM(t, a, metav1.DeletePropagationForeground)
	for _, cm := range []*corev1.ConfigMap{a, b, c} {
		e.waitGone(t, cm)
	}
}

func TestOwnerThatNeverExisted(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID(), BlockOwnerDeletion: ptr.To(true)}
	dep := e.configMap(t, ns, "dep", nil, ghost)
	e.waitGone(t, dep)
	testkit.Eventually(t, "the virtual owner leaves the graph", func() bool {
		_, ok := e.engine.Node(ghost.UID)
		return !ok
	})
}

func TestCrossNamespaceReference(t *testing.T) {
	e := setup(t)
	home := e.namespace(t)
	away := e.namespace(t)
	owner := e.configMap(t, home, "owner", nil)
	child := e.configMap(t, home, "child", nil, cmRef(owner))
	stray := e.configMap(t, away, "stray", nil, cmRef(owner))

	e.waitGone(t, stray)
	testkit.Consistently(t, "the real owner's dependent stays", time.Second, func() bool { return e.getCM(t, child) != nil })
	assertState(t, e.getCM(t, child), "child", []types.UID{owner.UID}, nil, false)
	assertState(t, e.getCM(t, owner), "owner", nil, nil, false)
	testkit.Eventually(t, "a Warning OwnerRefInvalidNamespace event on the stray dependent", func() bool {
		events, err := e.client.CoreV1().Events(away).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range events.Items {
			if ev.Reason == "OwnerRefInvalidNamespace" && ev.Type == corev1.EventTypeWarning &&
				ev.InvolvedObject.UID == stray.UID && strings.Contains(ev.Message, string(owner.UID)) {
				return true
			}
		}
		return false
	})
}

func TestUnblockingReferenceReleasesWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	testkit.Consistently(t, "the owner waits", 2*time.Second, func() bool { return e.getCM(t, owner) != nil })

	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q,"blockOwnerDeletion":false}]}}`, owner.UID)
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), dep.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, owner)
	assertState(t, e.getCM(t, dep), "dep", []types.UID{owner.UID}, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestSecondDeleteWithOrphanPolicyOnWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "the owner waits in the foreground, and the collector has deleted dep", func() bool {
		o, d := e.getCM(t, owner), e.getCM(t, dep)
		return o != nil && slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) && d != nil && d.DeletionTimestamp != nil
	})
	e.deleteCM(t, owner, metav1.DeletePropagationOrphan)
	e.waitGone(t, owner)
	// Orphaned: the reference is gone. It had already been deleted during the
	// foreground phase, and its own finalizer holds it.
	assertState(t, e.getCM(t, dep), "dep", nil, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestStressOwnersDeletedEveryWay(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	type group struct {
		owner *corev1.ConfigMap
		deps  []*corev1.ConfigMap
		way   string
	}
	ways := []string{"background", "foreground", "orphan", "default", "foreground-nonblocking"}
	var groups []group
	for i := range 10 {
		for _, way := range ways {
			g := group{way: way, owner: e.configMap(t, ns, fmt.Sprintf("owner-%s-%d", way, i), nil)}
			for j := range 3 {
				ref := cmRef(g.owner)
				if way == "foreground-nonblocking" {
					nonBlocking(&ref)
				}
				g.deps = append(g.deps, e.configMap(t, ns, fmt.Sprintf("dep-%s-%d-%d", way, i, j), nil, ref))
			}
			groups = append(groups, g)
		}
	}
	start := time.Now()
	for _, g := range groups {
		switch g.way {
		case "background":
			e.deleteCM(t, g.owner, metav1.DeletePropagationBackground)
		case "foreground", "foreground-nonblocking":
			e.deleteCM(t, g.owner, metav1.DeletePropagationForeground)
		case "orphan":
			e.deleteCM(t, g.owner, metav1.DeletePropagationOrphan)
		case "default":
			e.deleteCM(t, g.owner, "")
		}
	}
	for _, g := range groups {
		e.waitGone(t, g.owner)
		for _, d := range g.deps {
			if g.way == "orphan" {
				testkit.Eventually(t, d.Name+" orphaned", func() bool {
					o := e.getCM(t, d)
					return o != nil && len(o.OwnerReferences) == 0
				})
				assertState(t, e.getCM(t, d), d.Name, nil, nil, false)
			} else {
				e.waitGone(t, d)
			}
		}
	}
	t.Logf("50 groups of 1 owner + 3 dependents settled in %v", time.Since(start).Round(time.Millisecond))
	if time.Since(start) > 60*time.Second {
		t.Errorf("stress took %v, upstream's bound is 60s", time.Since(start))
	}
}

func TestDeploymentChainDeletedInForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	dep, err := e.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the controllers create a ReplicaSet and 3 Pods", func() bool {
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 3
	})
	fg := metav1.DeletePropagationForeground
	if err := e.client.AppsV1().Deployments(ns).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the Deployment is gone", func() bool {
		_, err := e.client.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Foreground: by the time the Deployment goes, its ReplicaSets and Pods are gone.
	rss, err := e.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(rss.Items) != 0 {
		t.Errorf("ReplicaSets left after the Deployment: %d (%v)", len(rss.Items), err)
	}
	pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("Pods left after the Deployment: %d (%v)", len(pods.Items), err)
	}
}

func TestClusterScopedOwners(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	cr, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-test-owner-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	valid := e.configMap(t, ns, "valid", nil, refTo("rbac.authorization.k8s.io/v1", "ClusterRole", cr))
	missing := e.configMap(t, ns, "missing", nil, metav1.OwnerReference{
		APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "never-existed", UID: uuid.NewUUID()})
	unknownRef := metav1.OwnerReference{APIVersion: "unknown.gcscope.io/v1", Kind: "Thing", Name: "x", UID: uuid.NewUUID()}
	unknown := e.configMap(t, ns, "unknown-kind", nil, unknownRef)

	e.waitGone(t, missing)
	testkit.Consistently(t, "dependents of a valid owner and of an unknown kind stay", 3*time.Second, func() bool {
		return e.getCM(t, valid) != nil && e.getCM(t, unknown) != nil
	})
	assertState(t, e.getCM(t, unknown), "unknown-kind", []types.UID{unknownRef.UID}, nil, false)
	ex, ok := e.engine.Explain(unknown.UID)
	if !ok || len(ex.Owners) != 1 || ex.Owners[0].State != gc.OwnerUnresolvable {
		t.Errorf("explain unknown-kind: want one unresolvable owner (a kind the apiserver does not serve), got %+v", ex.Owners)
	}

	if err := e.client.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, valid)
	assertState(t, e.getCM(t, unknown), "unknown-kind", []types.UID{unknownRef.UID}, nil, false)
}

func TestClusterScopedDependentOfNamespacedOwnerIsNeverDeleted(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	owner := e.configMap(t, ns, "owner", nil)
	cr, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "gc-test-invalid-", OwnerReferences: []metav1.OwnerReference{cmRef(owner, nonBlocking)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.client.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{})
	e.waitObserved(t, cr.UID)
	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, owner)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.UID == cr.UID && ev.Type == corev1.EventTypeWarning && ev.Reason == "OwnerRefInvalidNamespace" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Warning event on the cluster-scoped dependent; engine: %s", e.explain(cr.UID))
	}
	testkit.Consistently(t, "the ClusterRole stays", 2*time.Second, func() bool {
		return e.get(t, rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "", cr.Name, cr.UID) != nil
	})
}

// --- custom resources ---

// crd creates a namespaced CRD of group gc.gcscope.io and waits until the engine
// monitors it.
func (e *testEnv) crd(t *testing.T, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	ctx := context.Background()
	group := "gc.gcscope.io"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	e.waitMonitored(t, gvr)
	return gvr
}

func (e *testEnv) waitMonitored(t *testing.T, gvr schema.GroupVersionResource) {
	t.Helper()
	name := gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
	testkit.Eventually(t, "the engine monitors "+name, func() bool {
		st := e.engine.SyncState()
		return slices.Contains(st.Resources, name) && !slices.Contains(st.Unsynced, name)
	})
}

// customResource creates a custom resource (retrying while the resource is not served yet).
func (e *testEnv) customResource(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name string, owners ...metav1.OwnerReference) metav1.Object {
	t.Helper()
	var refs []any
	for _, o := range owners {
		refs = append(refs, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": string(o.UID),
			"blockOwnerDeletion": o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion})
	}
	obj := map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "ownerReferences": refs},
	}
	var created metav1.Object
	testkit.Eventually(t, "create "+kind+" "+name, func() bool {
		u, err := e.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
		if err != nil {
			return false
		}
		created = u
		return true
	})
	e.waitObserved(t, created.GetUID())
	return created
}

func TestCustomResourceCascadeOrphanAndMixedOwnership(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	gvr := e.crd(t, "gadgets", "Gadget")
	api := gvr.GroupVersion().String()
	ctx := context.Background()

	// Cascade: a Gadget owning a ConfigMap and a Gadget.
	top := e.customResource(t, gvr, "Gadget", ns, "top")
	childCR := e.customResource(t, gvr, "Gadget", ns, "child", refTo(api, "Gadget", top))
	childCM := e.configMap(t, ns, "child-cm", nil, refTo(api, "Gadget", top))
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "top", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, childCM)
	testkit.Eventually(t, "child Gadget collected", func() bool { return e.get(t, gvr, ns, "child", childCR.GetUID()) == nil })

	// Orphan: custom resources take no strategic merge patch; the engine falls back to a
	// JSON merge patch.
	parent := e.customResource(t, gvr, "Gadget", ns, "parent")
	orphanCR := e.customResource(t, gvr, "Gadget", ns, "orphan-cr", refTo(api, "Gadget", parent))
	orphanCM := e.configMap(t, ns, "orphan-cm", nil, refTo(api, "Gadget", parent))
	orphan := metav1.DeletePropagationOrphan
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "parent Gadget gone", func() bool { return e.get(t, gvr, ns, "parent", parent.GetUID()) == nil })
	assertState(t, e.get(t, gvr, ns, "orphan-cr", orphanCR.GetUID()), "orphan-cr", nil, nil, false)
	assertState(t, e.getCM(t, orphanCM), "orphan-cm", nil, nil, false)

	// Mixed, in the foreground: ConfigMap → Gadget → ConfigMap.
	root := e.configMap(t, ns, "root", nil)
	mid := e.customResource(t, gvr, "Gadget", ns, "mid", cmRef(root))
	leaf := e.configMap(t, ns, "leaf", []string{holdFinalizer}, refTo(api, "Gadget", mid))
	e.deleteCM(t, root, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "mid Gadget waits in the foreground for leaf", func() bool {
		m := e.get(t, gvr, ns, "mid", mid.GetUID())
		return m != nil && slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents)
	})
	assertState(t, e.getCM(t, root), "root", nil, []string{metav1.FinalizerDeleteDependents}, true)
	e.removeFinalizers(t, configMaps, ns, leaf.Name)
	e.waitGone(t, leaf)
	testkit.Eventually(t, "mid gone", func() bool { return e.get(t, gvr, ns, "mid", mid.GetUID()) == nil })
	e.waitGone(t, root)
}

func TestDeletingCRDCollectsDependentsAndRecreating(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	gvr := e.crd(t, "sprockets", "Sprocket")
	api := gvr.GroupVersion().String()
	s := e.customResource(t, gvr, "Sprocket", ns, "s1")
	dep := e.configMap(t, ns, "dep", nil, refTo(api, "Sprocket", s))

	crdName := gvr.Resource + "." + gvr.Group
	if err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, dep)
	testkit.Eventually(t, "the CRD is gone", func() bool {
		_, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "the engine stops monitoring sprockets", func() bool {
		return !slices.Contains(e.engine.SyncState().Resources, "gc.gcscope.io/v1/sprockets")
	})

	gvr = e.crd(t, "sprockets", "Sprocket")
	s2 := e.customResource(t, gvr, "Sprocket", ns, "s2")
	dep2 := e.configMap(t, ns, "dep2", nil, refTo(api, "Sprocket", s2))
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "s2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, dep2)
}

// TestVersionNoLongerServedIsNeverProofOfAbsence: a CRD serves v1 (preferred) and
// v1beta1; dependents name their owner through v1beta1. When v1beta1 stops being served,
// the apiserver answers 404 for it, which must not be taken for the owner's absence (a
// stale REST mapper would still map it): the dependents stay. When v1beta1 is served
// again it becomes mappable (the mapper is reset every period, as kube-controller-manager
// resets its own), and a delete of the owner collects them.
func TestVersionNoLongerServedIsNeverProofOfAbsence(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	group, plural := "gc.gcscope.io", "gizmos"
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "Gizmo", ListKind: "GizmoList", Singular: "gizmo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
				{Name: "v1beta1", Served: true, Schema: schemaProps},
			},
		},
	}
	crd, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	e.waitMonitored(t, gvr)
	owner := e.customResource(t, gvr, "Gizmo", ns, "owner")
	beta := refTo(group+"/v1beta1", "Gizmo", owner)
	early := e.configMap(t, ns, "early", nil, beta)
	// The engine has looked the owner up through v1beta1 (its mapper maps it now).
	testkit.Eventually(t, "the engine to verify early's owner through v1beta1", func() bool {
		ex, _ := e.engine.Explain(early.UID)
		return ex.Last != nil && ex.Last.Verb == gc.VerbKeep
	})

	setServed := func(served bool) {
		t.Helper()
		testkit.Eventually(t, "update the CRD", func() bool {
			cur, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			cur.Spec.Versions[1].Served = served
			_, err = e.ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil
		})
		testkit.Eventually(t, fmt.Sprintf("discovery to say v1beta1 served=%v", served), func() bool {
			_, err := e.client.Discovery().ServerResourcesForGroupVersion(group + "/v1beta1")
			return (err == nil) == served
		})
	}
	setServed(false)
	late := e.configMap(t, ns, "late", nil, beta)
	testkit.Consistently(t, "both dependents of the live owner stay", 3*discoveryPeriod, func() bool {
		return e.getCM(t, early) != nil && e.getCM(t, late) != nil
	})
	testkit.Eventually(t, "Explain to call late's owner unresolvable", func() bool {
		ex, _ := e.engine.Explain(late.UID)
		return len(ex.Owners) == 1 && ex.Owners[0].State == gc.OwnerUnresolvable
	})

	setServed(true)
	testkit.Eventually(t, "Explain to see late's owner again", func() bool {
		ex, _ := e.engine.Explain(late.UID)
		return len(ex.Owners) == 1 && ex.Owners[0].State == gc.OwnerSolid
	})
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, early)
	e.waitGone(t, late)
}

func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// TestBrokenResourceDoesNotStopCollection: a custom resource whose list keeps failing is
// reported failing, and everything else is still collected. Its objects are stored as v1;
// then v2 appears, preferred and stored, behind a conversion webhook that does not
// answer: the engine moves its monitor to v2, whose list never succeeds.
func TestBrokenResourceDoesNotStopCollection(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	ca, err := os.ReadFile(e.config.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	group := "gc.gcscope.io"
	validation := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crds := e.ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "brokens." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "brokens", Kind: "Broken", ListKind: "BrokenList", Singular: "broken"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: validation},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer crds.Delete(ctx, crd.Name, metav1.DeleteOptions{})
	v1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "brokens"}
	e.customResource(t, v1, "Broken", ns, "b1")
	e.waitMonitored(t, v1)

	// Break it: a v2, preferred and stored, converting through a webhook nobody serves.
	testkit.Eventually(t, "the CRD gets a v2 behind a dead webhook", func() bool {
		crd, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		crd.Spec.Versions[0].Storage = false
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: "v2", Served: true, Storage: true, Schema: validation})
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert"), CABundle: ca},
			},
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err == nil
	})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, failing := e.engine.SyncState().Failing[group+"/v2/brokens"]
		return failing, nil
	})
	if err != nil {
		st := e.engine.SyncState()
		t.Fatalf("the engine does not report brokens failing: unsynced %v, failing %v", st.Unsynced, st.Failing)
	}

	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", nil, cmRef(owner))
	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, dep)
}

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
