package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/cluster/demo"
	"github.com/gcscope/gcscope/internal/testkit"
)

// One control plane for the whole package, with the demo applied: booting one takes seconds
// and the controller-manager can run only once per process.
var (
	testCluster *cluster.Cluster
	client      kubernetes.Interface
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Controllers: true, Setup: func(ctx context.Context, e *testkit.Env) error {
		testCluster, client = e.Cluster, e.Client
		if err := demo.Apply(ctx, e.Config, demo.Options{Logger: e.Log}); err != nil {
			return fmt.Errorf("apply demo: %w", err)
		}
		return nil
	}})
}

func TestWrittenKubeconfigReachesAPIServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "kubeconfig")
	if err := testCluster.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %s: mode %v, err %v; want 0600", path, fi.Mode().Perm(), err)
	}
	// The file must work on its own: no reference into the data dir.
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CAFile != "" || len(cfg.CAData) == 0 || cfg.BearerToken == "" {
		t.Fatalf("kubeconfig should inline CA and token: CAFile=%q CAData=%d bytes token=%t", cfg.CAFile, len(cfg.CAData), cfg.BearerToken != "")
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get kube-system with the written kubeconfig: %v", err)
	}
	if ns.UID == "" {
		t.Fatal("kube-system has no uid")
	}
	// And the default one in the data dir too, used by the controller-manager.
	if _, err := clientcmd.BuildConfigFromFlags("", testCluster.KubeconfigPath()); err != nil {
		t.Fatalf("data-dir kubeconfig: %v", err)
	}
}

func TestAnonymousRequestsAreRejected(t *testing.T) {
	cfg := testCluster.RESTConfig()
	cfg.BearerToken = ""
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Fatalf("anonymous list of secrets: want 401/403, got %v", err)
	}
}

// ownerOf returns the single controller reference of obj, failing the test otherwise.
func ownerOf(t *testing.T, obj metav1.Object) metav1.OwnerReference {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		t.Fatalf("%s/%s has no controller ownerReference: %+v", obj.GetNamespace(), obj.GetName(), obj.GetOwnerReferences())
	}
	return *ref
}

func TestDemoDeploymentHasTwoRevisionsWithRealOwnerReferences(t *testing.T) {
	ctx := context.Background()
	dep, err := client.AppsV1().Deployments(demo.NamespaceWeb).Get(ctx, "frontend", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rss []appsv1.ReplicaSet
	testkit.Eventually(t, "frontend has two ReplicaSets with Pods", func() bool {
		list, err := client.AppsV1().ReplicaSets(demo.NamespaceWeb).List(ctx, metav1.ListOptions{LabelSelector: "app=frontend"})
		if err != nil {
			return false
		}
		rss = list.Items
		return len(rss) == 2
	})
	images := map[string]bool{}
	for _, rs := range rss {
		ref := ownerOf(t, &rs)
		if ref.Kind != "Deployment" || ref.Name != dep.Name || ref.UID != dep.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("ReplicaSet %s: owner %+v, want the frontend Deployment %s blocking deletion", rs.Name, ref, dep.UID)
		}
		images[rs.Spec.Template.Spec.Containers[0].Image] = true
	}
	if !images["nginx:1.27"] || !images["nginx:1.28"] {
		t.Errorf("want one ReplicaSet per revision (nginx:1.27 and nginx:1.28), got %v", images)
	}
	uids := map[string]bool{string(rss[0].UID): true, string(rss[1].UID): true}
	testkit.Eventually(t, "frontend Pods owned by its ReplicaSets", func() bool {
		pods, err := client.CoreV1().Pods(demo.NamespaceWeb).List(ctx, metav1.ListOptions{LabelSelector: "app=frontend"})
		if err != nil || len(pods.Items) == 0 {
			return false
		}
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "ReplicaSet" || !uids[string(ref.UID)] {
				t.Fatalf("pod %s owner %+v is not a frontend ReplicaSet", p.Name, p.OwnerReferences)
			}
		}
		return true
	})
}

func TestDemoStatefulSetOwnsRevisionsPodsAndClaims(t *testing.T) {
	ctx := context.Background()
	sts, err := client.AppsV1().StatefulSets(demo.NamespaceStateful).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "db has a ControllerRevision, 3 Pods and 3 PVCs it owns", func() bool {
		revs, err := client.AppsV1().ControllerRevisions(demo.NamespaceStateful).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		pods, err := client.CoreV1().Pods(demo.NamespaceStateful).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		pvcs, err := client.CoreV1().PersistentVolumeClaims(demo.NamespaceStateful).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		owned := func(objs []metav1.Object) int {
			n := 0
			for _, o := range objs {
				for _, ref := range o.GetOwnerReferences() {
					if ref.UID == sts.UID && ref.Kind == "StatefulSet" {
						n++
					}
				}
			}
			return n
		}
		return owned(metas(revs.Items)) >= 1 && owned(metas(pods.Items)) == 3 && owned(metas(pvcs.Items)) == 3
	})
}

func TestDemoCronJobJobsAndPods(t *testing.T) {
	ctx := context.Background()
	cj, err := client.BatchV1().CronJobs(demo.NamespaceBatch).Get(ctx, "report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := client.BatchV1().Jobs(demo.NamespaceBatch).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobUIDs := map[string]bool{}
	for _, j := range jobs.Items {
		if ref := ownerOf(t, &j); ref.UID != cj.UID {
			t.Errorf("job %s owner %+v, want CronJob %s", j.Name, ref, cj.UID)
		}
		jobUIDs[string(j.UID)] = true
	}
	if len(jobUIDs) < 2 {
		t.Fatalf("want at least 2 Jobs under the CronJob, got %d", len(jobUIDs))
	}
	testkit.Eventually(t, "Job pods owned by the Jobs", func() bool {
		pods, err := client.CoreV1().Pods(demo.NamespaceBatch).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		n := 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "Job" && jobUIDs[string(ref.UID)] {
				n++
			}
		}
		return n >= 4
	})
}

func TestDemoDaemonSetRunsOnTheDemoNode(t *testing.T) {
	ctx := context.Background()
	ds, err := client.AppsV1().DaemonSets(demo.NamespaceDaemon).Get(ctx, "node-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "a node-agent Pod owned by the DaemonSet", func() bool {
		pods, err := client.CoreV1().Pods(demo.NamespaceDaemon).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		return len(pods.Items) == 1 && metav1.GetControllerOf(&pods.Items[0]).UID == ds.UID
	})
}

func TestDemoWidgetsOwnConfigMapsAndSecrets(t *testing.T) {
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(testCluster.RESTConfig())
	list, err := dyn.Resource(demo.WidgetResource).Namespace(demo.NamespaceCRD).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widgets := map[string]string{} // uid -> name
	for _, w := range list.Items {
		widgets[string(w.GetUID())] = w.GetName()
	}
	if len(widgets) < 3 {
		t.Fatalf("want several widgets, got %v", widgets)
	}
	for _, w := range list.Items {
		cm, err := client.CoreV1().ConfigMaps(demo.NamespaceCRD).Get(ctx, w.GetName()+"-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := ownerOf(t, cm); ref.UID != w.GetUID() || ref.Kind != "Widget" || ref.APIVersion != demo.WidgetResource.GroupVersion().String() {
			t.Errorf("configmap %s owner %+v, want widget %s", cm.Name, ref, w.GetUID())
		}
		s, err := client.CoreV1().Secrets(demo.NamespaceCRD).Get(ctx, w.GetName()+"-credentials", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := ownerOf(t, s); ref.UID != w.GetUID() {
			t.Errorf("secret %s owner %+v, want widget %s", s.Name, ref, w.GetUID())
		}
	}
	shared, err := client.CoreV1().ConfigMaps(demo.NamespaceCRD).Get(ctx, "shared-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(shared.OwnerReferences) != 2 {
		t.Fatalf("shared-config: want two owners, got %+v", shared.OwnerReferences)
	}
	for _, ref := range shared.OwnerReferences {
		if widgets[string(ref.UID)] != ref.Name {
			t.Errorf("shared-config owner %+v is not a demo widget", ref)
		}
	}
}

func TestDemoStuckPodHeldByFinalizer(t *testing.T) {
	ctx := context.Background()
	testkit.Eventually(t, "the stuck Deployment's Pod carries the hold finalizer", func() bool {
		pods, err := client.CoreV1().Pods(demo.NamespaceStuck).List(ctx, metav1.ListOptions{LabelSelector: "app=stuck"})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		return slices.Contains(pods.Items[0].Finalizers, demo.HoldFinalizer)
	})
}

func TestDemoBrokenReferences(t *testing.T) {
	ctx := context.Background()
	dangling, err := client.CoreV1().ConfigMaps(demo.NamespaceDangling).Get(ctx, "orphan-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ownerOf(t, dangling)
	deps, err := client.AppsV1().Deployments(demo.NamespaceDangling).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		if d.UID == ref.UID {
			t.Fatalf("orphan-config's owner %s exists; it must not", ref.UID)
		}
	}

	api, err := client.AppsV1().Deployments(demo.NamespaceWeb).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cross, err := client.CoreV1().ConfigMaps(demo.NamespaceCrossNS).Get(ctx, "cross-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := ownerOf(t, cross); ref.UID != api.UID || cross.Namespace == api.Namespace {
		t.Fatalf("cross-config owner %+v: want the api Deployment of another namespace (%s)", ref, api.UID)
	}
	cr, err := client.RbacV1().ClusterRoles().Get(ctx, demo.InvalidClusterRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := ownerOf(t, cr); ref.UID != api.UID {
		t.Fatalf("cluster-scoped %s owner %+v: want the namespaced api Deployment", cr.Name, ref)
	}
}

func TestDemoSizeAndIdempotence(t *testing.T) {
	ctx := context.Background()
	// Controllers may still be creating Pods when the tests start: count once they are done.
	waitDemoSettled(t)
	before := countDemoObjects(t)
	if before < 100 || before > 300 {
		t.Errorf("demo has %d objects, want between 100 and 300", before)
	}
	if err := demo.Apply(ctx, testCluster.RESTConfig(), demo.Options{}); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	waitDemoSettled(t)
	if after := countDemoObjects(t); after != before {
		t.Fatalf("a second apply changed the demo from %d objects to %d", before, after)
	}
	t.Logf("demo objects: %d", before)
}

// countDemoObjects counts what the demo created and what controllers made from it: every
// object of the demo namespaces in the resources the demo touches, plus the namespaces and
// the cluster-scoped objects.
func countDemoObjects(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(testCluster.RESTConfig())
	n := len(demo.Namespaces) + 3 // namespaces, node, CRD, ClusterRole
	for _, ns := range demo.Namespaces {
		for _, gvr := range demoResources {
			list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list %s in %s: %v", gvr.Resource, ns, err)
			}
			n += len(list.Items)
		}
	}
	return n
}

var demoResources = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("pods"),
	corev1.SchemeGroupVersion.WithResource("configmaps"),
	corev1.SchemeGroupVersion.WithResource("secrets"),
	corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
	corev1.SchemeGroupVersion.WithResource("services"),
	corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"),
	appsv1.SchemeGroupVersion.WithResource("deployments"),
	appsv1.SchemeGroupVersion.WithResource("replicasets"),
	appsv1.SchemeGroupVersion.WithResource("statefulsets"),
	appsv1.SchemeGroupVersion.WithResource("daemonsets"),
	appsv1.SchemeGroupVersion.WithResource("controllerrevisions"),
	batchv1.SchemeGroupVersion.WithResource("jobs"),
	batchv1.SchemeGroupVersion.WithResource("cronjobs"),
	demo.WidgetResource,
}

func TestForegroundDeleteLeavesOwnerWaitingWithoutCollector(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "fg")
	cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{
		PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &cm.UID},
	}); err != nil {
		t.Fatal(err)
	}
	// No collector runs: nothing removes the finalizer, so the owner stays, waiting.
	testkit.Consistently(t, "the owner stays, with its deletionTimestamp and the "+metav1.FinalizerDeleteDependents+" finalizer", 2*time.Second, func() bool {
		got, err := client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("owner gone after a Foreground delete with no collector: %v", err)
		}
		return got.DeletionTimestamp != nil && slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents)
	})
}

func TestUserDeploymentGetsReplicaSetFromControllers(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "user")
	one := int32(1)
	dep, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
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
	testkit.Eventually(t, "a ReplicaSet and a Pending Pod", func() bool {
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(rss.Items) != 1 {
			return false
		}
		if ref := metav1.GetControllerOf(&rss.Items[0]); ref == nil || ref.UID != dep.UID {
			t.Fatalf("replicaset owner %+v, want %s", rss.Items[0].OwnerReferences, dep.UID)
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		ref := metav1.GetControllerOf(&pods.Items[0])
		return ref != nil && ref.UID == rss.Items[0].UID && pods.Items[0].Status.Phase == corev1.PodPending
	})
}

func TestNamespaceDeletionEmptiesAndRemovesIt(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "gone")
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "namespace removed by the namespace controller", func() bool {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestDataDirHoldsCredentialsKubeconfigAndLogs(t *testing.T) {
	if _, err := os.Stat(testCluster.DataDir()); err != nil {
		t.Fatalf("data dir: %v", err)
	}
	for _, f := range []string{"pki/ca.crt", "pki/apiserver.key", "pki/sa.key", "pki/tokens.csv", "kubeconfig", "logs/controlplane.log"} {
		if _, err := os.Stat(filepath.Join(testCluster.DataDir(), f)); err != nil {
			t.Errorf("data dir lacks %s: %v", f, err)
		}
	}
}

func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-" + prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func metas[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}
