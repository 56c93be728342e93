package deletion_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The tests here run on the embedded control plane with kube-controller-manager, whose
// namespace controller is the real one, and gcscope's engine in active mode beside it.

type testEnv struct {
	cluster *cluster.Cluster
	config  *rest.Config
	client  kubernetes.Interface
	dyn     dynamic.Interface
	engine  *gc.GarbageCollector
	x       *deletion.Explainer
	logs    *syncBuffer
}

// env is filled by the shared control plane's Setup.
var env *testEnv

func TestMain(m *testing.M) { testkit.Main(m) }

// syncBuffer collects the engine's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the log lines that contain every one of words.
func (s *syncBuffer) lines(words ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(l, w) }) {
			out = append(out, l)
		}
	}
	return out
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	testkit.Shared(t, testkit.Options{Controllers: true, Logger: testkit.Logger(slog.LevelError), Setup: startEngine})
	return env
}

// startEngine runs the shared engine, active, logging to a buffer the tests read.
func startEngine(_ context.Context, k *testkit.Env) error {
	e := &testEnv{cluster: k.Cluster, config: k.Config, client: k.Client, dyn: k.Dyn, logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	e.engine, err = gc.NewForConfig(e.config, gc.Options{DiscoveryPeriod: time.Second, SyncTimeout: 20 * time.Second, Logger: log})
	if err != nil {
		return err
	}
	if e.x, err = deletion.New(e.engine, e.config); err != nil {
		return err
	}
	if err := k.GoReady(e.engine.Started(), e.engine.Run); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	env = e
	return nil
}

func (e *testEnv) createNamespace(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	ns, err := e.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// configMap creates a ConfigMap with data: one created with no field the apiserver tracks
// (a name only) gets no managedFields entry, and the apiserver then records none for later
// updates either (its skip-non-applied manager), so a finalizer's manager is unknown.
func (e *testEnv) configMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// addFinalizer adds f to a ConfigMap as field manager manager, as a controller would.
func (e *testEnv) addFinalizer(t *testing.T, ns, name, f, manager string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, f)
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) removeFinalizers(t *testing.T, ns, name string) {
	t.Helper()
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) namespaceGone(name string) bool {
	_, err := e.client.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

func (e *testEnv) inGraph(uid types.UID) bool {
	_, ok := e.engine.Node(uid)
	return ok
}

func uidsOf(objs []gc.PredictedObject) map[types.UID]gc.PredictedObject {
	out := map[types.UID]gc.PredictedObject{}
	for _, o := range objs {
		out[o.Object.UID] = o
	}
	return out
}

// TestNamespaceHeldByAFinalizer follows a namespace whose ConfigMap another controller's
// finalizer holds: the prediction before the delete (all its content, Pods first, and
// the namespace's own cluster-scoped dependent), then each state of the real namespace
// controller's work, the explanation while it is held (conditions, content, the holder,
// the field manager that added the finalizer, whether that controller looks alive), the
// stuck list and its metric, and the release.
func TestNamespaceHeldByAFinalizer(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const name, hold, manager = "held-by-acme", "acme.example.com/hold", "acme-controller"
	ns := e.createNamespace(t, name)
	var content []types.UID
	for i := range 3 {
		content = append(content, e.configMap(t, name, fmt.Sprintf("plain-%d", i)).UID)
	}
	held := e.configMap(t, name, "held")
	content = append(content, held.UID)
	e.addFinalizer(t, name, "held", hold, manager)
	var pods []types.UID
	for i := range 2 {
		p, err := e.client.CoreV1().Pods(name).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p.UID)
	}
	// A cluster-scoped object the namespace owns: the collector deletes it once the
	// namespace is gone.
	role, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-role",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: name, UID: ns.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Deployment named like the controller, whose Pods never become ready here (no
	// kubelet): the controller is found, and down.
	replicas := int32(1)
	labels := map[string]string{"app": manager}
	if _, err := e.client.AppsV1().Deployments("default").Create(ctx, ptr.To(appsv1Deployment(manager, labels, replicas)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	all := append(append(slices.Clone(content), pods...), role.UID)
	testkit.Eventually(t, "the engine observes the namespace's content and the ClusterRole", func() bool {
		return !slices.ContainsFunc(append(all, ns.UID), func(u types.UID) bool { return !e.inGraph(u) })
	})
	testkit.Eventually(t, "the engine sees the held ConfigMap's finalizer", func() bool {
		n, _ := e.engine.Node(held.UID)
		return slices.Contains(n.Finalizers, hold)
	})

	// Before: the prediction.
	p, ok := e.x.PredictNamespace(ns.UID, metav1.DeletePropagationBackground)
	if !ok {
		t.Fatal("no prediction for the namespace")
	}
	predicted := uidsOf(p.Deleted)
	// The controllers added their own content (the default ServiceAccount, the root CA
	// ConfigMap): the prediction holds everything the graph has in the namespace.
	for _, o := range e.engine.InNamespace(name) {
		if _, ok := predicted[o.UID]; !ok {
			t.Errorf("prediction misses %s %s", o.Kind, o.Name)
		}
		if !slices.Contains(all, o.UID) {
			all = append(all, o.UID)
		}
	}
	if len(p.Deleted) != len(all)+1 {
		t.Errorf("prediction deletes %d objects, want %d (the namespace, %d objects in it, its ClusterRole): %+v", len(p.Deleted), len(all)+1, len(all)-1, p.Deleted)
	}
	for _, u := range append(slices.Clone(all), ns.UID) {
		if _, ok := predicted[u]; !ok {
			t.Errorf("prediction misses %s", u)
		}
	}
	for _, u := range pods {
		if predicted[u].Step != 1 {
			t.Errorf("Pod %s: step %d, want 1 (Pods first)", predicted[u].Object.Name, predicted[u].Step)
		}
	}
	for _, u := range all {
		if u == role.UID || slices.Contains(pods, u) {
			continue
		}
		if predicted[u].Step != 2 {
			t.Errorf("ConfigMap %s: step %d, want 2", predicted[u].Object.Name, predicted[u].Step)
		}
	}
	if predicted[ns.UID].Step != 3 || predicted[role.UID].Step != 4 {
		t.Errorf("namespace step %d and its ClusterRole's %d, want 3 and 4", predicted[ns.UID].Step, predicted[role.UID].Step)
	}
	if !slices.IsSortedFunc(p.Deleted, func(a, b gc.PredictedObject) int { return a.Step - b.Step }) {
		t.Errorf("deleted objects are not in step order")
	}
	if len(p.Waiting) != 1 || p.Waiting[0].Object.UID != held.UID || !slices.Equal(p.Waiting[0].Finalizers, []string{hold}) {
		t.Errorf("waiting = %+v, want only the held ConfigMap with %s", p.Waiting, hold)
	}
	if !strings.Contains(p.Order, "Pods first") {
		t.Errorf("order = %q, want it to say Pods go first", p.Order)
	}

	// The delete, and what the namespace controller then did.
	before := e.observed()
	if err := e.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "everything but the held ConfigMap is gone", func() bool {
		return !slices.ContainsFunc(all, func(u types.UID) bool { return u != held.UID && u != role.UID && e.inGraph(u) })
	})
	var r deletion.NamespaceReport
	testkit.Eventually(t, "the namespace controller reports the content it cannot remove", func() bool {
		r, err = e.x.Namespace(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := r.Condition(corev1.NamespaceFinalizersRemaining)
		return ok && c.Status == "True"
	})
	if r.DeletionTimestamp == nil || r.Phase != "Terminating" || !slices.Equal(r.Finalizers, []string{"kubernetes"}) {
		t.Errorf("namespace: phase %q, deletion %v, spec.finalizers %v; want Terminating, set, [kubernetes]", r.Phase, r.DeletionTimestamp, r.Finalizers)
	}
	if c, _ := r.Condition(corev1.NamespaceFinalizersRemaining); !strings.Contains(c.Message, hold) {
		t.Errorf("NamespaceFinalizersRemaining message %q does not name %s", c.Message, hold)
	}
	if c, ok := r.Condition(corev1.NamespaceContentRemaining); !ok || c.Status != "True" || !strings.Contains(c.Message, "configmaps") {
		t.Errorf("NamespaceContentRemaining = %+v, want True naming configmaps", c)
	}
	if r.Content.Total != 1 || len(r.Content.ByKind) != 1 || r.Content.ByKind[0] != (deletion.KindCount{APIVersion: "v1", Kind: "ConfigMap", Count: 1, BeingDeleted: 1, Held: 1}) {
		t.Errorf("content = %+v, want the one held ConfigMap", r.Content)
	}
	if len(r.Content.Holders) != 1 || r.Content.Holders[0].Object.UID != held.UID || !r.Content.Holders[0].BeingDeleted {
		t.Errorf("holders = %+v, want the held ConfigMap, being deleted", r.Content.Holders)
	}
	if len(r.Content.Origins) != 1 {
		t.Fatalf("origins = %+v, want the one finalizer's", r.Content.Origins)
	}
	o := r.Content.Origins[0]
	if o.Finalizer != hold || o.Manager != manager || o.Operation != "Update" || o.Time == nil {
		t.Errorf("origin = %+v, want %s added by %s (Update) at a time", o, hold, manager)
	}
	if o.Controller.State != deletion.Down || len(o.Controller.Evidence) == 0 || o.Controller.Evidence[0].Object.Name != manager {
		t.Errorf("controller = %+v, want down, with Deployment %s (0 of 1 ready)", o.Controller, manager)
	}
	if want := "finalizer " + hold + " (added by " + manager + ") must be removed from 1 object: ConfigMap " + name + "/held"; r.Next != want {
		t.Errorf("next = %q, want %q", r.Next, want)
	}

	// The stuck list, and the metric.
	s := e.x.Stuck(ctx, 0, nil)
	byCause := map[string]deletion.StuckGroup{}
	for _, g := range s.Groups {
		byCause[g.Cause+"/"+g.Finalizer] = g
	}
	if g := byCause["finalizer/"+hold]; g.Count != 1 || g.Objects[0].Object.UID != held.UID || g.Origin == nil || g.Origin.Manager != manager {
		t.Errorf("stuck group of %s = %+v, want the held ConfigMap, added by %s", hold, g, manager)
	}
	if g := byCause["namespace/"]; g.Count != 1 || g.Objects[0].Object.Name != name || g.Objects[0].Detail != "1 object left" {
		t.Errorf("stuck namespaces = %+v, want %s with 1 object left", g, name)
	}
	if s := e.x.Stuck(ctx, time.Hour, nil); s.Total != 0 {
		t.Errorf("stuck for more than an hour: %d, want 0", s.Total)
	}

	// The release: the namespace and then its ClusterRole go.
	e.removeFinalizers(t, name, "held")
	testkit.Eventually(t, "the namespace is gone", func() bool { return e.namespaceGone(name) })
	testkit.Eventually(t, "the collector deleted the namespace's ClusterRole", func() bool { return !e.inGraph(role.UID) })
	// What went is what was predicted: no more, no less.
	after := e.observed()
	for u, ref := range before {
		_, predictedGone := predicted[u]
		if _, still := after[u]; still == predictedGone {
			t.Errorf("%s %s: predicted deleted %v, still there %v", ref.Kind, ref.Name, predictedGone, still)
		}
	}
}

// observed is every object the engine has observed, by uid.
func (e *testEnv) observed() map[types.UID]gc.ObjectRef {
	out := map[types.UID]gc.ObjectRef{}
	for _, n := range e.engine.Snapshot().Nodes {
		if n.Observed {
			out[n.UID] = n.ObjectRef
		}
	}
	return out
}

// TestNamespaceBlockedByAnUnavailableAPI: an APIService whose Service does not exist makes
// discovery fail for its group: the engine logs it once, reports it in its sync state,
// the namespace controller stops with NamespaceDeletionDiscoveryFailure, and the
// explanation names the APIService and its missing Service; removing the APIService
// recovers all three.
func TestNamespaceBlockedByAnUnavailableAPI(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const name, gv, apiService = "blocked-by-api", "blocked.example.com/v1alpha1", "v1alpha1.blocked.example.com"
	apiServices := e.dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	_, err := apiServices.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": apiService},
		"spec": map[string]any{"group": "blocked.example.com", "version": "v1alpha1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "default", "name": "no-such-service", "port": int64(443)}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	removeAPIService := func() {
		if removed {
			return
		}
		removed = true
		if err := apiServices.Delete(ctx, apiService, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the APIService (it blocks every namespace deletion): %v", err)
		}
	}
	t.Cleanup(removeAPIService)

	e.engine.RefreshDiscovery()
	testkit.Eventually(t, "the engine reports the group version discovery cannot read", func() bool {
		_, failing := e.engine.SyncState().DiscoveryFailures[gv]
		return failing
	})
	since := e.engine.SyncState().DiscoveryFailures[gv].Since
	e.createNamespace(t, name)
	e.configMap(t, name, "content")
	if err := e.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var r deletion.NamespaceReport
	testkit.Eventually(t, "the namespace controller reports its discovery failure", func() bool {
		r, err = e.x.Namespace(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := r.Condition(corev1.NamespaceDeletionDiscoveryFailure)
		return ok && c.Status == "True"
	})
	if c, _ := r.Condition(corev1.NamespaceDeletionDiscoveryFailure); !strings.Contains(c.Message, gv) {
		t.Errorf("condition message %q does not name %s", c.Message, gv)
	}
	var a *deletion.APIServiceReport
	for i := range r.APIServices {
		if r.APIServices[i].Name == apiService {
			a = &r.APIServices[i]
		}
	}
	if a == nil {
		t.Fatalf("APIServices = %+v, want %s", r.APIServices, apiService)
	}
	if a.GroupVersion != gv || a.Available != "False" || a.Service != "default/no-such-service" || a.ServiceExists || a.Problem != "its Service default/no-such-service does not exist" {
		t.Errorf("APIService report = %+v", *a)
	}
	// A reader who may see APIServices but not the Services of default is not told
	// whether the Service exists; one who may not see APIServices, only that it fails.
	failures := e.engine.SyncState().DiscoveryFailures
	noServices := deletion.Visible(func(ref gc.ObjectRef) bool { return ref.Kind == "APIService" })
	for _, tc := range []struct {
		visible deletion.Visible
		check   func(deletion.APIServiceReport) bool
	}{
		{noServices, func(a deletion.APIServiceReport) bool {
			return !a.Hidden && !a.ServiceExists && a.ReadyEndpoints == 0 && !strings.Contains(a.Problem, "does not exist") && strings.Contains(a.Next, "you may not list")
		}},
		{func(gc.ObjectRef) bool { return false }, func(a deletion.APIServiceReport) bool {
			return a.Hidden && a.Service == "" && a.GroupVersion == gv
		}},
	} {
		reports := e.x.APIServices(ctx, failures, tc.visible)
		i := slices.IndexFunc(reports, func(a deletion.APIServiceReport) bool { return a.Name == apiService })
		if i < 0 || !tc.check(reports[i]) {
			t.Errorf("APIServices as a reader who sees less = %+v", reports)
		}
	}
	if !strings.HasPrefix(r.Next, "make "+apiService+" available again: create Service default/no-such-service") {
		t.Errorf("next = %q", r.Next)
	}
	if s := e.x.Stuck(ctx, 0, nil); !slices.ContainsFunc(s.Groups, func(g deletion.StuckGroup) bool {
		return g.Cause == deletion.CauseDiscovery && slices.ContainsFunc(g.Objects, func(o deletion.StuckObject) bool { return o.Object.Name == name })
	}) {
		t.Errorf("stuck groups %+v do not list %s under discovery", s.Groups, name)
	}
	// Still failing a few discovery periods later: one log line, and the same since.
	testkit.Eventually(t, "discovery re-read twice more", func() bool { return time.Since(since) > 3*time.Second })
	if got := e.engine.SyncState().DiscoveryFailures[gv].Since; !got.Equal(since) {
		t.Errorf("since moved from %v to %v while the group kept failing", since, got)
	}
	if lines := e.logs.lines("API discovery fails", gv); len(lines) != 1 {
		t.Errorf("%d log lines say discovery fails for %s, want 1: %q", len(lines), gv, lines)
	}

	removeAPIService()
	testkit.Eventually(t, "the engine reports discovery recovered", func() bool {
		_, failing := e.engine.SyncState().DiscoveryFailures[gv]
		return !failing
	})
	if lines := e.logs.lines("API discovery recovered", gv); len(lines) != 1 {
		t.Errorf("%d log lines say discovery recovered for %s, want 1: %q", len(lines), gv, lines)
	}
	testkit.Eventually(t, "the namespace is gone", func() bool { return e.namespaceGone(name) })
}

func appsv1Deployment(name string, labels map[string]string, replicas int32) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
			},
		},
	}
}

// countingTransport counts the requests it passes on, by method and path.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *countingTransport) count(match func(key string) bool) (n int, seen []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.n {
		if match(k) {
			n += v
			seen = append(seen, fmt.Sprintf("%s ×%d", k, v))
		}
	}
	slices.Sort(seen)
	return n, seen
}

// TestConcurrentStuckListsLookUpOnce: twenty stuck lists asked at once, each with groups
// whose finalizers' origins and controllers are looked up, cost one GET of managedFields
// per group's object and one LIST of each kind a controller may be, not twenty of each.
func TestConcurrentStuckListsLookUpOnce(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const name = "stuck-at-once"
	e.createNamespace(t, name)
	var held []types.UID
	for i := range 3 {
		cm := e.configMap(t, name, fmt.Sprintf("held-%d", i))
		e.addFinalizer(t, name, cm.Name, fmt.Sprintf("team%d.example.com/hold", i), fmt.Sprintf("team%d-controller", i))
		if err := e.client.CoreV1().ConfigMaps(name).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		held = append(held, cm.UID)
	}
	t.Cleanup(func() {
		for i := range 3 {
			e.removeFinalizers(t, name, fmt.Sprintf("held-%d", i))
		}
		e.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	testkit.Eventually(t, "the engine sees the three ConfigMaps being deleted", func() bool {
		return !slices.ContainsFunc(held, func(u types.UID) bool { n, ok := e.engine.Node(u); return !ok || !n.BeingDeleted })
	})

	counter := &countingTransport{n: map[string]int{}}
	cfg := rest.CopyConfig(e.config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	x, err := deletion.New(e.engine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reports := make([]deletion.StuckReport, 20)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() { reports[i] = x.Stuck(ctx, 0, nil) })
	}
	wg.Wait()
	for i, r := range reports {
		origins := 0
		for _, g := range r.Groups {
			if g.Cause == deletion.CauseFinalizer && strings.HasPrefix(g.Finalizer, "team") && g.Origin != nil && g.Origin.Manager != "" && g.Origin.Controller.State != "" {
				origins++
			}
		}
		if origins != 3 {
			t.Errorf("report %d: %d of the 3 finalizer groups say who added the finalizer and whether its controller runs: %+v", i, origins, r.Groups)
		}
	}
	gets, seen := counter.count(func(k string) bool { return strings.HasPrefix(k, "GET /api/v1/namespaces/"+name+"/configmaps/") })
	if gets != 3 {
		t.Errorf("%d GETs of the held ConfigMaps for 20 stuck lists, want 3 (one per finalizer group): %v", gets, seen)
	}
	for _, kind := range []string{"/apis/apps/v1/deployments", "/apis/apps/v1/statefulsets", "/apis/apps/v1/daemonsets", "/apis/coordination.k8s.io/v1/leases"} {
		if lists, seen := counter.count(func(k string) bool { return k == "GET "+kind }); lists != 1 {
			t.Errorf("%d LISTs of %s for 20 stuck lists, want 1: %v", lists, kind, seen)
		}
	}
}
