package scenario_test

// Every scenario played against a real kube-apiserver with kube-controller-manager's
// controllers (not its collector) and gcscope's engine running active, as on gcscope's
// embedded cluster: each creates what it says, and the end state is what upstream's
// collector leaves.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/scenario"
)

// One control plane, engine and player for the package: the controller-manager can run
// only once per process.
var (
	player *scenario.Player
	engine *gc.GarbageCollector
	client kubernetes.Interface
	meta   metadata.Interface
	ext    apiextensionsclient.Interface
	dyn    dynamic.Interface
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Controllers: true, Setup: func(_ context.Context, e *testkit.Env) error {
		restConfig, client, meta, ext, dyn = e.Config, e.Client, e.Meta, e.Ext, e.Dyn
		var err error
		if engine, err = gc.NewForConfig(e.Config, gc.Options{SyncTimeout: 20 * time.Second, Logger: e.Log}); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		if err := e.GoReady(engine.Started(), engine.Run); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		// The discovery period stays the binary's (30 s): the CRD scenario must get its
		// resource monitored by asking, as it does in gcscope.
		player, err = scenario.NewPlayer(e.Config, scenario.Options{Engine: engine, Logger: e.Log, StepTimeout: 2 * time.Minute, MaxActive: 6})
		if err != nil {
			return fmt.Errorf("player: %w", err)
		}
		e.Cleanup(player.Close)
		return nil
	}})
}

// play starts scenario id and checks its run's shape.
func play(t *testing.T, id string) scenario.Run {
	t.Helper()
	run, err := player.Play(context.Background(), id)
	if err != nil {
		t.Fatalf("play %s: %v", id, err)
	}
	if !strings.HasPrefix(run.ID, "play-"+id+"-") || run.Namespaces[0] != run.ID || run.State != scenario.RunRunning || len(run.Steps) < 3 {
		t.Fatalf("play %s: run %+v", id, run)
	}
	ns, err := client.CoreV1().Namespaces().Get(context.Background(), run.ID, metav1.GetOptions{})
	if err != nil || ns.Labels[scenario.LabelRun] != run.ID || ns.Labels[scenario.LabelScenario] != id {
		t.Fatalf("the run's namespace %s: %v, labels %v", run.ID, err, ns.Labels)
	}
	return run
}

// waitState polls the run until it is in state, failing on failed (or at the timeout).
func waitState(t *testing.T, id, state string) scenario.Run {
	t.Helper()
	var run scenario.Run
	var failure error // the run can no longer reach state: stop waiting
	err := testkit.Poll(context.Background(), 3*time.Minute, func() bool {
		var ok bool
		if run, ok = player.Status(id); !ok {
			failure = errors.New("the player forgot the run")
		} else if run.State == scenario.RunFailed && state != scenario.RunFailed {
			failure = errors.New("the run failed: " + run.Error)
		}
		return failure != nil || run.State == state
	})
	if failure != nil {
		err = failure
	}
	if err != nil {
		t.Fatalf("run %s did not reach %s: %v\nsteps: %s", id, state, err, steps(run))
	}
	return run
}

func steps(run scenario.Run) string {
	var b strings.Builder
	for i, s := range run.Steps {
		at := "-"
		if !s.At.IsZero() {
			at = s.At.Sub(run.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "\n  %d/%d at %s %s: %s — %s", i+1, len(run.Steps), at, s.State, s.Title, s.Detail)
	}
	return b.String()
}

// object finds the run's object of kind and name.
func object(t *testing.T, run scenario.Run, kind, name string) scenario.Object {
	t.Helper()
	for _, o := range run.Objects {
		if o.Kind == kind && (o.Name == name || name == "") {
			return o
		}
	}
	t.Fatalf("run %s has no %s %s: %+v", run.ID, kind, name, run.Objects)
	return scenario.Object{}
}

var (
	configMaps  = corev1.SchemeGroupVersion.WithResource("configmaps")
	pods        = corev1.SchemeGroupVersion.WithResource("pods")
	replicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// get reads o's metadata as gvr; nil when it is gone (or another object has its name).
func get(t *testing.T, gvr schema.GroupVersionResource, o scenario.Object) *metav1.PartialObjectMetadata {
	t.Helper()
	got, err := meta.Resource(gvr).Namespace(o.Namespace).Get(context.Background(), o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, o.Namespace, o.Name, err)
	}
	if got.UID != o.UID {
		return nil
	}
	return got
}

func ownerUIDs(refs []metav1.OwnerReference) []types.UID {
	var out []types.UID
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}

func TestScenarioList(t *testing.T) {
	var ids []string
	for _, s := range player.Scenarios() {
		ids = append(ids, s.ID)
		if s.Title == "" || len(s.Description) < 100 || len(s.Steps) < 3 {
			t.Errorf("scenario %s: title %q, description of %d bytes, %d steps", s.ID, s.Title, len(s.Description), len(s.Steps))
		}
	}
	want := []string{scenario.Dangling, scenario.ForegroundHeld, scenario.Orphan, scenario.Cycle, scenario.CrossNamespace, scenario.CRDDeleted,
		scenario.NamespaceHeld, scenario.NamespaceBlocked}
	if !slices.Equal(ids, want) {
		t.Errorf("scenarios %v, want %v", ids, want)
	}
	if _, err := player.Play(context.Background(), "nope"); !errors.Is(err, scenario.ErrUnknownScenario) {
		t.Errorf("play of an unknown scenario: %v", err)
	}
	if _, err := player.Release(context.Background(), "play-nope-1"); !errors.Is(err, scenario.ErrUnknownRun) {
		t.Errorf("release of an unknown run: %v", err)
	}
}

func TestPlayDanglingReference(t *testing.T) {
	run := play(t, scenario.Dangling)
	run = waitState(t, run.ID, scenario.RunDone)
	lonely, shared, keeper := object(t, run, "ConfigMap", "lonely"), object(t, run, "ConfigMap", "shared"), object(t, run, "ConfigMap", "keeper")
	if run.Focus != lonely.UID {
		t.Errorf("focus %s, want lonely %s", run.Focus, lonely.UID)
	}
	if get(t, configMaps, lonely) != nil {
		t.Error("lonely, whose only owner never existed, still exists")
	}
	s := get(t, configMaps, shared)
	if s == nil || !slices.Equal(ownerUIDs(s.OwnerReferences), []types.UID{keeper.UID}) || s.DeletionTimestamp != nil {
		t.Errorf("shared: %+v; want it kept with keeper its only owner", s)
	}
	if get(t, configMaps, keeper) == nil {
		t.Error("keeper is gone")
	}
	t.Logf("steps:%s", steps(run))
}

func TestPlayForegroundWithHeldPod(t *testing.T) {
	run := play(t, scenario.ForegroundHeld)
	run = waitState(t, run.ID, scenario.RunWaiting)
	if !run.Hold || run.Step != 4 || run.Steps[4].State != scenario.StepWaiting {
		t.Fatalf("waiting run: hold %v, step %d:%s", run.Hold, run.Step, steps(run))
	}
	dep, rs, pod := object(t, run, "Deployment", "web"), object(t, run, "ReplicaSet", ""), object(t, run, "Pod", "")
	if run.Focus != dep.UID {
		t.Errorf("focus %s, want the Deployment %s", run.Focus, dep.UID)
	}
	// The Pod is deleted but held; its owners wait in the foreground, and keep waiting.
	testkit.Consistently(t, "the Pod stays held, the ReplicaSet and Deployment waiting", 2*time.Second, func() bool {
		p, r, d := get(t, pods, pod), get(t, replicaSets, rs), get(t, deployments, dep)
		if p == nil || p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, scenario.HoldFinalizer) {
			t.Fatalf("the Pod: %+v; want it being deleted, held by %s", p, scenario.HoldFinalizer)
		}
		for name, o := range map[string]*metav1.PartialObjectMetadata{"ReplicaSet": r, "Deployment": d} {
			if o == nil || o.DeletionTimestamp == nil || !slices.Equal(o.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
				t.Fatalf("the %s: %+v; want it waiting with foregroundDeletion", name, o)
			}
		}
		return true
	})
	n, ok := engine.Node(dep.UID)
	if !ok || !n.DeletingDependents {
		t.Errorf("the engine's node of the Deployment: %+v; want deletingDependents", n)
	}

	run, err := player.Release(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	run = waitState(t, run.ID, scenario.RunDone)
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		obj scenario.Object
	}{{pods, pod}, {replicaSets, rs}, {deployments, dep}} {
		if got := get(t, o.gvr, o.obj); got != nil {
			t.Errorf("%s %s still exists after the release: %+v", o.obj.Kind, o.obj.Name, got)
		}
	}
	if _, err := player.Release(context.Background(), run.ID); !errors.Is(err, scenario.ErrNothingHeld) {
		t.Errorf("a second release: %v, want ErrNothingHeld", err)
	}
	t.Logf("steps:%s", steps(run))
}

func TestPlayOrphan(t *testing.T) {
	run := play(t, scenario.Orphan)
	run = waitState(t, run.ID, scenario.RunDone)
	dep, rs := object(t, run, "Deployment", "api"), object(t, run, "ReplicaSet", "")
	if get(t, deployments, dep) != nil {
		t.Error("the Deployment still exists")
	}
	r := get(t, replicaSets, rs)
	if r == nil || len(r.OwnerReferences) != 0 || r.DeletionTimestamp != nil {
		t.Fatalf("the ReplicaSet: %+v; want it kept with no owner", r)
	}
	var podCount int
	for _, o := range run.Objects {
		if o.Kind != "Pod" {
			continue
		}
		podCount++
		p := get(t, pods, o)
		if p == nil || p.DeletionTimestamp != nil || !slices.Equal(ownerUIDs(p.OwnerReferences), []types.UID{rs.UID}) {
			t.Errorf("Pod %s: %+v; want it kept, owned by the ReplicaSet", o.Name, p)
		}
	}
	if podCount != 2 {
		t.Errorf("the run recorded %d Pods, want 2", podCount)
	}
}

func TestPlayCycle(t *testing.T) {
	run := play(t, scenario.Cycle)
	run = waitState(t, run.ID, scenario.RunDone)
	for _, name := range []string{"a", "b", "c"} {
		if o := get(t, configMaps, object(t, run, "ConfigMap", name)); o != nil {
			t.Errorf("%s still exists: %+v", name, o)
		}
	}
	if run.Focus != object(t, run, "ConfigMap", "a").UID {
		t.Errorf("focus %s, want a", run.Focus)
	}
}

func TestPlayCrossNamespaceOwner(t *testing.T) {
	run := play(t, scenario.CrossNamespace)
	if len(run.Namespaces) != 2 || run.Namespaces[1] != run.ID+"-away" {
		t.Fatalf("namespaces %v, want the run's and its -away", run.Namespaces)
	}
	run = waitState(t, run.ID, scenario.RunDone)
	stray, child, owner := object(t, run, "ConfigMap", "stray"), object(t, run, "ConfigMap", "child"), object(t, run, "ConfigMap", "owner")
	if stray.Namespace != run.Namespaces[1] || child.Namespace != run.ID {
		t.Errorf("stray in %s, child in %s", stray.Namespace, child.Namespace)
	}
	if get(t, configMaps, stray) != nil {
		t.Error("stray, naming an owner of another namespace, still exists")
	}
	c := get(t, configMaps, child)
	if c == nil || c.DeletionTimestamp != nil || !slices.Equal(ownerUIDs(c.OwnerReferences), []types.UID{owner.UID}) {
		t.Errorf("child: %+v; want it kept, owned by owner", c)
	}
	events, err := client.CoreV1().Events(stray.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
		return ev.Reason == "OwnerRefInvalidNamespace" && ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.UID == stray.UID
	}) {
		t.Errorf("no Warning OwnerRefInvalidNamespace event on stray: %+v", events.Items)
	}
	if last := run.Steps[len(run.Steps)-1].Detail; !strings.Contains(last, "OwnerRefInvalidNamespace") {
		t.Errorf("the last step does not report the event: %q", last)
	}
}

func TestPlayCRDDeletedUnderItsResources(t *testing.T) {
	run := play(t, scenario.CRDDeleted)
	run = waitState(t, run.ID, scenario.RunDone)
	crd, gear := object(t, run, "CustomResourceDefinition", ""), object(t, run, "Gear", "g1")
	if run.Focus != gear.UID {
		t.Errorf("focus %s, want g1 %s", run.Focus, gear.UID)
	}
	t.Logf("steps:%s", steps(run))
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CRD %s: %v; want it gone", crd.Name, err)
	}
	if o := get(t, configMaps, object(t, run, "ConfigMap", "g1-config")); o != nil {
		t.Errorf("g1-config, owned by a Gear deleted with its CRD, still exists: %+v", o)
	}
	if o := get(t, corev1.SchemeGroupVersion.WithResource("secrets"), object(t, run, "Secret", "g1-credentials")); o != nil {
		t.Errorf("g1-credentials still exists: %+v", o)
	}
	if testkit.Poll(context.Background(), time.Minute, func() bool {
		return !slices.ContainsFunc(engine.SyncState().Resources, func(r string) bool { return strings.HasPrefix(r, run.ID+".gcscope.io/") })
	}) != nil {
		t.Errorf("the engine still monitors the deleted CRD's resource: %v", engine.SyncState().Resources)
	}
}

// TestCleanupStopsRunsReleasesHoldsAndDeletesNamespaces: a run waiting on its held Pod is
// stopped, the hold released, and its namespace deleted to the end (no held Pod keeps
// it terminating).
func TestCleanupStopsRunsReleasesHoldsAndDeletesNamespaces(t *testing.T) {
	run := play(t, scenario.ForegroundHeld)
	waitState(t, run.ID, scenario.RunWaiting)
	cross := play(t, scenario.CrossNamespace)
	waitState(t, cross.ID, scenario.RunDone)

	out, err := player.Cleanup(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	// At least the held Pod's hold; a replacement the ReplicaSet made from the same
	// template (before the ReplicaSet itself was being deleted) holds too.
	if !slices.Equal(out.Namespaces, []string{run.ID}) || out.Released < 1 {
		t.Errorf("cleanup of %s: %+v; want its namespace, its holds released", run.ID, out)
	}
	if _, ok := player.Status(run.ID); ok {
		t.Error("the cleaned run is still listed")
	}
	if _, ok := player.Status(cross.ID); !ok {
		t.Error("the cleanup of one run forgot another")
	}
	out, err = player.Cleanup(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out.Namespaces, cross.ID) || !slices.Contains(out.Namespaces, cross.ID+"-away") {
		t.Errorf("cleanup of all: %+v; want %s and its -away namespace", out, cross.ID)
	}
	if len(player.Runs()) != 0 {
		t.Errorf("runs after cleaning all: %+v", player.Runs())
	}
	if testkit.Poll(context.Background(), 2*time.Minute, func() bool {
		list, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: scenario.LabelRun})
		return err == nil && len(list.Items) == 0
	}) != nil {
		list, _ := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: scenario.LabelRun})
		t.Errorf("played namespaces left after cleanup: %+v", list.Items)
	}
}

// terminatingNamespace reads the run's namespace, which must be Terminating.
func terminatingNamespace(t *testing.T, run scenario.Run) *corev1.Namespace {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Get(context.Background(), run.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", run.ID, err)
	}
	if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		t.Fatalf("namespace %s: deletionTimestamp %v, phase %s, finalizers %v; want it Terminating, kept by the kubernetes finalizer",
			ns.Name, ns.DeletionTimestamp, ns.Status.Phase, ns.Spec.Finalizers)
	}
	return ns
}

// trueCondition returns the namespace's condition t, failing unless it is True.
func trueCondition(t *testing.T, ns *corev1.Namespace, ct corev1.NamespaceConditionType) corev1.NamespaceCondition {
	t.Helper()
	for _, c := range ns.Status.Conditions {
		if c.Type == ct {
			if c.Status != corev1.ConditionTrue {
				t.Errorf("namespace %s: condition %s is %s (%s), want True", ns.Name, ct, c.Status, c.Message)
			}
			return c
		}
	}
	t.Errorf("namespace %s has no condition %s: %+v", ns.Name, ct, ns.Status.Conditions)
	return corev1.NamespaceCondition{}
}

// waitNamespaceGone waits until the run's namespace is gone.
func waitNamespaceGone(t *testing.T, id string) {
	t.Helper()
	err := testkit.Poll(context.Background(), 2*time.Minute, func() bool {
		_, err := client.CoreV1().Namespaces().Get(context.Background(), id, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err != nil {
		t.Errorf("namespace %s is still there: %v", id, err)
	}
}

// cleanUpAPIServices cleans run id up when the test ends, however it ends, and checks
// that no APIService of the run is left: one that is unavailable stops every namespace
// deletion of the cluster, the other tests' too.
func cleanUpAPIServices(t *testing.T, id string) {
	t.Cleanup(func() {
		if _, err := player.Cleanup(context.Background(), id); err != nil && !errors.Is(err, scenario.ErrUnknownRun) {
			t.Errorf("cleanup of %s: %v", id, err)
		}
		list, err := meta.Resource(apiServices).List(context.Background(), metav1.ListOptions{LabelSelector: scenario.LabelRun + "=" + id})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("APIServices of %s left after its cleanup: %v %+v", id, err, list)
			for _, a := range list.Items {
				_ = meta.Resource(apiServices).Delete(context.Background(), a.Name, metav1.DeleteOptions{})
			}
		}
	})
}

func TestPlayNamespaceHeldByAFinalizer(t *testing.T) {
	run := play(t, scenario.NamespaceHeld)
	cleanUpAPIServices(t, run.ID)
	run = waitState(t, run.ID, scenario.RunWaiting)
	t.Logf("waiting:%s", steps(run))
	if !run.Hold || run.Step != 5 || run.Steps[5].State != scenario.StepWaiting {
		t.Fatalf("waiting run: hold %v, step %d:%s", run.Hold, run.Step, steps(run))
	}
	if !strings.Contains(run.Steps[5].Detail, "kubectl patch configmap ledger -n "+run.ID+` --type=json -p '[{"op":"test","path":"/metadata/finalizers/0","value":"`+scenario.ControllerFinalizer+`"},{"op":"remove"`) {
		t.Errorf("the release step does not give the patch by hand: %q", run.Steps[5].Detail)
	}
	ledger := object(t, run, "ConfigMap", "ledger")
	if run.Focus != ledger.UID {
		t.Errorf("focus %s, want ledger %s", run.Focus, ledger.UID)
	}

	// The namespace is Terminating, emptied but for ledger, which its finalizer holds.
	ns := terminatingNamespace(t, run)
	if c := trueCondition(t, ns, corev1.NamespaceContentRemaining); !strings.Contains(c.Message, "configmaps") {
		t.Errorf("NamespaceContentRemaining does not name configmaps: %q", c.Message)
	}
	if c := trueCondition(t, ns, corev1.NamespaceFinalizersRemaining); !strings.Contains(c.Message, scenario.ControllerFinalizer) {
		t.Errorf("NamespaceFinalizersRemaining does not name %s: %q", scenario.ControllerFinalizer, c.Message)
	}
	l := get(t, configMaps, ledger)
	if l == nil || l.DeletionTimestamp == nil || !slices.Equal(l.Finalizers, []string{scenario.ControllerFinalizer}) {
		t.Fatalf("ledger: %+v; want it being deleted, held by %s", l, scenario.ControllerFinalizer)
	}
	if !slices.ContainsFunc(l.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == scenario.FinalizerManager && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `v:\"`+scenario.ControllerFinalizer+`\"`)
	}) {
		t.Errorf("ledger's managedFields do not name %s as the manager of %s: %+v", scenario.FinalizerManager, scenario.ControllerFinalizer, l.ManagedFields)
	}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{configMaps, "ConfigMap"}, {deployments, "Deployment"}, {replicaSets, "ReplicaSet"}, {pods, "Pod"}} {
		for _, obj := range run.Objects {
			if obj.Kind == o.kind && obj.UID != ledger.UID {
				if got := get(t, o.gvr, obj); got != nil {
					t.Errorf("%s %s is still there; the namespace controller should have deleted all but ledger: %+v", o.kind, obj.Name, got)
				}
			}
		}
	}
	if d := run.Steps[4].Detail; !strings.Contains(d, "NamespaceFinalizersRemaining") || !strings.Contains(d, scenario.FinalizerManager) {
		t.Errorf("the step that waits does not explain the hold: %q", d)
	}
	err := testkit.Poll(context.Background(), time.Minute, func() bool {
		n, ok := engine.Node(ledger.UID)
		return ok && n.BeingDeleted && slices.Contains(n.Finalizers, scenario.ControllerFinalizer)
	})
	if err != nil {
		n, _ := engine.Node(ledger.UID)
		t.Errorf("the engine's node of ledger: %+v; want it being deleted, held", n)
	}

	run, err = player.Release(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	run = waitState(t, run.ID, scenario.RunDone)
	if get(t, configMaps, ledger) != nil {
		t.Error("ledger is still there after the release")
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), run.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the release: %v; want it gone", run.ID, err)
	}
	if _, err := player.Release(context.Background(), run.ID); !errors.Is(err, scenario.ErrNothingHeld) {
		t.Errorf("a second release: %v, want ErrNothingHeld", err)
	}
	t.Logf("steps:%s", steps(run))
}

func TestPlayNamespaceBlockedByAnUnavailableAPI(t *testing.T) {
	run := play(t, scenario.NamespaceBlocked)
	cleanUpAPIServices(t, run.ID)
	run = waitState(t, run.ID, scenario.RunWaiting)
	t.Logf("waiting:%s", steps(run))
	if !run.Hold || run.Step != 4 || run.Steps[4].State != scenario.StepWaiting {
		t.Fatalf("waiting run: hold %v, step %d:%s", run.Hold, run.Step, steps(run))
	}
	api, namespace, settings := object(t, run, "APIService", ""), object(t, run, "Namespace", run.ID), object(t, run, "ConfigMap", "settings")
	if run.Focus != namespace.UID {
		t.Errorf("focus %s, want the namespace %s", run.Focus, namespace.UID)
	}
	group := strings.TrimPrefix(api.Name, "v1alpha1.")
	if a := get(t, apiServices, api); a == nil || a.Labels[scenario.LabelRun] != run.ID || !strings.Contains(run.Steps[4].Detail, "kubectl delete apiservice "+api.Name) {
		t.Fatalf("APIService %s: %+v (waiting: %q); want it there, labelled with the run", api.Name, a, run.Steps[4].Detail)
	}

	// The namespace is emptied, yet Terminating: discovery fails for the APIService's group.
	ns := terminatingNamespace(t, run)
	if c := trueCondition(t, ns, corev1.NamespaceDeletionDiscoveryFailure); !strings.Contains(c.Message, group+"/v1alpha1") {
		t.Errorf("NamespaceDeletionDiscoveryFailure does not name %s/v1alpha1: %q", group, c.Message)
	}
	if get(t, configMaps, settings) != nil {
		t.Error("settings is still there: the namespace controller deletes what it can list")
	}
	if d := run.Steps[3].Detail; !strings.Contains(d, "NamespaceDeletionDiscoveryFailure") || !strings.Contains(d, api.Name) {
		t.Errorf("the step that waits does not explain the block: %q", d)
	}

	run, err := player.Release(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	run = waitState(t, run.ID, scenario.RunDone)
	if get(t, apiServices, api) != nil {
		t.Error("the APIService is still there after the release")
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), run.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the release: %v; want it gone", run.ID, err)
	}
	if _, err := player.Release(context.Background(), run.ID); !errors.Is(err, scenario.ErrNothingHeld) {
		t.Errorf("a second release: %v, want ErrNothingHeld", err)
	}
	t.Logf("steps:%s", steps(run))
}

// TestCleanupOfABlockedRunDeletesItsAPIServices: a run stopped while its APIService
// blocks namespace deletions deletes it as it ends, and the cleanup deletes any other
// APIService labelled with the run (one left by an earlier gcscope): the namespace then
// finishes deleting.
func TestCleanupOfABlockedRunDeletesItsAPIServices(t *testing.T) {
	run := play(t, scenario.NamespaceBlocked)
	cleanUpAPIServices(t, run.ID)
	run = waitState(t, run.ID, scenario.RunWaiting)
	api := object(t, run, "APIService", "")
	left := "v1alpha1.left." + run.ID + ".scenario.gcscope.dev"
	_, err := dyn.Resource(apiServices).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": left, "labels": map[string]any{scenario.LabelRun: run.ID}},
		"spec": map[string]any{"group": "left." + run.ID + ".scenario.gcscope.dev", "version": "v1alpha1",
			"service":               map[string]any{"namespace": run.ID, "name": "absent", "port": int64(443)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := player.Cleanup(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.APIServices, []string{left}) {
		t.Errorf("cleanup deleted APIServices %v, want only %s (the run deletes its own as it stops)", out.APIServices, left)
	}
	if get(t, apiServices, api) != nil {
		t.Errorf("the stopped run's APIService %s is still there", api.Name)
	}
	waitNamespaceGone(t, run.ID)
}

// TestANewPlayerRemovesTheAPIServicesOfEarlierRuns: an APIService an earlier process's run
// left (gcscope killed while the run waited) blocks every namespace deletion; a new player
// removes it as it starts.
func TestANewPlayerRemovesTheAPIServicesOfEarlierRuns(t *testing.T) {
	left := "v1alpha1.left-by-a-killed-run.scenario.gcscope.dev"
	_, err := dyn.Resource(apiServices).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": left, "labels": map[string]any{scenario.LabelRun: "play-namespace-blocked-99"}},
		"spec": map[string]any{"group": "left-by-a-killed-run.scenario.gcscope.dev", "version": "v1alpha1",
			"service":               map[string]any{"namespace": "default", "name": "absent", "port": int64(443)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.NewPlayer(restConfig, scenario.Options{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := dyn.Resource(apiServices).Get(context.Background(), left, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the APIService an earlier run left is still there after a new player started: %v", err)
		dyn.Resource(apiServices).Delete(context.Background(), left, metav1.DeleteOptions{})
	}
}

// restConfig is the embedded cluster's admin configuration.
var restConfig *rest.Config
