// Package demo creates workloads chosen to show what the garbage collector does: owner
// chains several levels deep, two ReplicaSet revisions, an object with two owners, custom
// resources that own core objects, a Pod held by a finalizer, a dangling and a
// cross-namespace ownerReference. It talks to any cluster through client-go only and is
// idempotent: applying it again creates only what is missing.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The demo's namespaces, one per scenario.
const (
	NamespaceWeb       = "demo-web"      // Deployments, one with two ReplicaSet revisions; a bare ReplicaSet
	NamespaceStateful  = "demo-stateful" // StatefulSet: ControllerRevision, Pods, PVCs it owns
	NamespaceBatch     = "demo-batch"    // CronJob → Jobs → Pods
	NamespaceDaemon    = "demo-daemon"   // DaemonSet on a node object
	NamespaceCRD       = "demo-crd"      // Widgets (custom resources) owning ConfigMaps and Secrets; two owners
	NamespaceStuck     = "demo-stuck"    // a Deployment deleted in the foreground, waiting on a Pod a finalizer holds
	NamespaceDangling  = "demo-dangling" // an ownerReference to an owner that does not exist
	NamespaceCrossNS   = "demo-crossns"  // an ownerReference to an object in another namespace
	HoldFinalizer      = "demo.gcscope.io/hold"
	PartOfLabel        = "app.kubernetes.io/part-of"
	PartOfValue        = "gcscope-demo"
	WidgetGroup        = "demo.gcscope.io"
	InvalidClusterRole = "demo-invalid-owner" // cluster-scoped, names a namespaced owner
	NodeName           = "demo-node-1"
)

// Namespaces lists every namespace the demo creates.
var Namespaces = []string{NamespaceWeb, NamespaceStateful, NamespaceBatch, NamespaceDaemon,
	NamespaceCRD, NamespaceStuck, NamespaceDangling, NamespaceCrossNS}

// WidgetResource is the demo's custom resource.
var WidgetResource = schema.GroupVersionResource{Group: WidgetGroup, Version: "v1", Resource: "widgets"}

// fieldManager names the demo in managedFields.
const fieldManager = "gcscope-demo"

// Options for Apply.
type Options struct {
	Logger *slog.Logger
	// Observed, when set, says whether the garbage collector's graph holds the object.
	// The stuck Deployment is deleted only once its Pod is there: a collector that does
	// not know the ReplicaSet has a dependent yet deletes it in the background (upstream's
	// would too), and then nothing waits on the held Pod.
	Observed func(types.UID) bool
}

// Apply creates whatever part of the demo is missing. Steps that depend on controllers
// (the second ReplicaSet revision) wait a bounded time and are skipped with a warning on a
// cluster that has none.
func Apply(ctx context.Context, cfg *rest.Config, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, err := newApplier(cfg, log)
	if err != nil {
		return err
	}
	d.observed = o.Observed
	for _, ns := range Namespaces {
		if _, err := ensure(ctx, d.core.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: d.meta("", ns)}); err != nil {
			return fmt.Errorf("demo namespace %s: %w", ns, err)
		}
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"deployments", d.web},
		{"statefulset", d.stateful},
		{"cronjob", d.batch},
		{"daemonset", d.daemon},
		{"custom resources", d.crd},
		{"finalizer-held pod", d.stuck},
		{"broken references", d.broken},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("demo %s: %w", s.name, err)
		}
		log.Debug("demo step done", "step", s.name, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

type applier struct {
	log      *slog.Logger
	core     kubernetes.Interface
	ext      apiextensionsclient.Interface
	dyn      dynamic.Interface
	observed func(types.UID) bool // Options.Observed
}

func newApplier(cfg *rest.Config, log *slog.Logger) (*applier, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &applier{log: log, core: core, ext: ext, dyn: dyn}, nil
}

func (d *applier) meta(ns, name string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{PartOfLabel: PartOfValue}, OwnerReferences: owners}
}

// web: six Deployments, one rolled out twice so it has two ReplicaSet revisions (with
// no nodes the rollout never completes, so both keep Pods), and a bare ReplicaSet.
func (d *applier) web(ctx context.Context) error {
	deps := d.core.AppsV1().Deployments(NamespaceWeb)
	for _, spec := range []struct {
		name     string
		replicas int32
	}{{"frontend", 6}, {"api", 4}, {"worker", 5}, {"cache", 2}, {"search", 4}, {"canary", 1}} {
		if _, err := ensure(ctx, deps, deployment(NamespaceWeb, spec.name, spec.replicas, "nginx:1.27", d.meta)); err != nil {
			return err
		}
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: d.meta(NamespaceWeb, "legacy"),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "legacy"}},
			Template: podTemplate("legacy", "nginx:1.25", d.meta),
		},
	}
	if _, err := ensure(ctx, d.core.AppsV1().ReplicaSets(NamespaceWeb), rs); err != nil {
		return err
	}
	return d.rollout(ctx, NamespaceWeb, "frontend", "nginx:1.28")
}

// rollout changes a Deployment's image once its first ReplicaSet exists, giving it a second
// revision. Already rolled out: nothing to do.
func (d *applier) rollout(ctx context.Context, ns, name, image string) error {
	deps := d.core.AppsV1().Deployments(ns)
	dep, err := deps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if dep.Spec.Template.Spec.Containers[0].Image == image {
		return nil
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := d.core.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		return err == nil && len(list.Items) > 0, nil
	})
	if err != nil {
		d.log.Warn("demo: no ReplicaSet appeared for a Deployment; is a deployment controller running? Skipping its second revision",
			"deployment", ns+"/"+name)
		return nil
	}
	// A strategic merge patch of the one container: no conflict with the controller's
	// concurrent status updates.
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`,
		dep.Spec.Template.Spec.Containers[0].Name, image)
	_, err = deps.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// stateful: a StatefulSet with Parallel pod management (no node ever makes a Pod ready, and
// OrderedReady would stop at the first) whose PVCs it owns and deletes with it.
func (d *applier) stateful(ctx context.Context) error {
	sts := &appsv1.StatefulSet{
		ObjectMeta: d.meta(NamespaceStateful, "db"),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(3)),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template:            podTemplate("db", "postgres:17", d.meta),
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				},
			}},
		},
	}
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}
	svc := &corev1.Service{
		ObjectMeta: d.meta(NamespaceStateful, "db"),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app": "db"},
			Ports:     []corev1.ServicePort{{Name: "pg", Port: 5432}},
		},
	}
	if _, err := ensure(ctx, d.core.CoreV1().Services(NamespaceStateful), svc); err != nil {
		return err
	}
	_, err := ensure(ctx, d.core.AppsV1().StatefulSets(NamespaceStateful), sts)
	return err
}

// batch: a CronJob and two Jobs it controls, started by hand as `kubectl create job --from`
// does, so Jobs and Pods exist without waiting for the schedule. The CronJob is suspended:
// its controller does not count hand-made Jobs as active, so Forbid would not stop the
// schedule adding a Job and its Pods at every :00 and :30 (and with no nodes they run forever).
func (d *applier) batch(ctx context.Context) error {
	jobTemplate := batchv1.JobSpec{
		Parallelism:  ptr.To(int32(2)),
		Completions:  ptr.To(int32(2)),
		BackoffLimit: ptr.To(int32(1)),
		Template:     podTemplate("report", "busybox:1.37", d.meta),
	}
	jobTemplate.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	jobTemplate.Template.Spec.Containers[0].Command = []string{"sh", "-c", "echo report"}
	// The Job controller labels its Pods itself and requires its own selector.
	jobTemplate.Template.Labels = map[string]string{PartOfLabel: PartOfValue}
	cj := &batchv1.CronJob{
		ObjectMeta: d.meta(NamespaceBatch, "report"),
		Spec: batchv1.CronJobSpec{
			Schedule:                   "*/30 * * * *",
			Suspend:                    ptr.To(true),
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To(int32(2)),
			FailedJobsHistoryLimit:     ptr.To(int32(1)),
			JobTemplate:                batchv1.JobTemplateSpec{Spec: jobTemplate},
		},
	}
	cj, err := ensure(ctx, d.core.BatchV1().CronJobs(NamespaceBatch), cj)
	if err != nil {
		return err
	}
	owner := controllerRef("batch/v1", "CronJob", cj.Name, cj.UID)
	for _, name := range []string{"report-manual-1", "report-manual-2"} {
		job := &batchv1.Job{ObjectMeta: d.meta(NamespaceBatch, name, owner), Spec: *jobTemplate.DeepCopy()}
		if _, err := ensure(ctx, d.core.BatchV1().Jobs(NamespaceBatch), job); err != nil {
			return err
		}
	}
	return nil
}

// daemon: a DaemonSet and a Node object for it to run on. No kubelet backs the node and no
// scheduler binds the Pods, so they stay Pending; the toleration keeps the DaemonSet
// wanting them once the node lifecycle controller taints the silent node.
func (d *applier) daemon(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: d.meta("", NodeName)}
	node.Labels["kubernetes.io/hostname"] = NodeName
	if _, err := ensure(ctx, d.core.CoreV1().Nodes(), node); err != nil {
		return err
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: d.meta(NamespaceDaemon, "node-agent"),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-agent"}},
			Template: podTemplate("node-agent", "fluent/fluent-bit:4.0", d.meta),
		},
	}
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	_, err := ensure(ctx, d.core.AppsV1().DaemonSets(NamespaceDaemon), ds)
	return err
}

// crd: a Widget custom resource; each Widget owns a ConfigMap and a Secret, and one
// ConfigMap has two Widget owners.
func (d *applier) crd(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: d.meta("", WidgetResource.Resource+"."+WidgetGroup),
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: WidgetGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	if _, err := ensure(ctx, d.ext.ApiextensionsV1().CustomResourceDefinitions(), crd); err != nil {
		return err
	}
	widgets := d.dyn.Resource(WidgetResource).Namespace(NamespaceCRD)
	// The new resource is served a moment after the CRD is established.
	var uids = map[string]types.UID{}
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, done := uids[name]; done {
				continue
			}
			w := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": WidgetResource.GroupVersion().String(),
				"kind":       "Widget",
				"metadata":   map[string]any{"name": name, "labels": map[string]any{PartOfLabel: PartOfValue}},
				"spec":       map[string]any{"size": len(name)},
			}}
			got, err := widgets.Create(ctx, w, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) {
				got, err = widgets.Get(ctx, name, metav1.GetOptions{})
			}
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				return false, nil // not served yet
			}
			if err != nil {
				return false, err
			}
			uids[name] = got.GetUID()
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("widgets: %w", err)
	}
	widgetRef := func(name string) metav1.OwnerReference {
		return controllerRef(WidgetResource.GroupVersion().String(), "Widget", name, uids[name])
	}
	for _, name := range names {
		cm := &corev1.ConfigMap{ObjectMeta: d.meta(NamespaceCRD, name+"-config", widgetRef(name)), Data: map[string]string{"widget": name}}
		if _, err := ensure(ctx, d.core.CoreV1().ConfigMaps(NamespaceCRD), cm); err != nil {
			return err
		}
		s := &corev1.Secret{ObjectMeta: d.meta(NamespaceCRD, name+"-credentials", widgetRef(name)), StringData: map[string]string{"token": name}}
		if _, err := ensure(ctx, d.core.CoreV1().Secrets(NamespaceCRD), s); err != nil {
			return err
		}
	}
	// Two owners, neither a controller: deleting one Widget keeps it, deleting both removes it.
	alpha, beta := widgetRef("alpha"), widgetRef("beta")
	alpha.Controller, beta.Controller = nil, nil
	shared := &corev1.ConfigMap{ObjectMeta: d.meta(NamespaceCRD, "shared-config", alpha, beta), Data: map[string]string{"shared": "true"}}
	_, err = ensure(ctx, d.core.CoreV1().ConfigMaps(NamespaceCRD), shared)
	return err
}

// stuck: a Deployment whose Pod template carries a custom finalizer, deleted in the
// foreground once its Pod exists. The ReplicaSet controller copied the finalizer onto the
// Pod, so the Pod is held and the ReplicaSet and the Deployment wait on it, until someone
// removes the finalizer: the demo of an object that will not go away.
func (d *applier) stuck(ctx context.Context) error {
	dep := deployment(NamespaceStuck, "stuck", 1, "nginx:1.27", d.meta)
	dep.Spec.Template.Finalizers = []string{HoldFinalizer}
	got, err := ensure(ctx, d.core.AppsV1().Deployments(NamespaceStuck), dep)
	if err != nil || got.DeletionTimestamp != nil {
		return err
	}
	// Wait (bounded) for the controllers to create this Deployment's Pod (not one an
	// earlier run left held), and for the collector to know it: deleted before, nothing
	// would hold.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rss, err := d.core.AppsV1().ReplicaSets(NamespaceStuck).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := d.core.CoreV1().Pods(NamespaceStuck).List(ctx, metav1.ListOptions{LabelSelector: "app=stuck"})
		if err != nil {
			return false, nil
		}
		for _, rs := range rss.Items {
			if ref := metav1.GetControllerOf(&rs); ref == nil || ref.UID != got.UID {
				continue
			}
			for _, p := range pods.Items {
				if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && (d.observed == nil || d.observed(p.UID)) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the stuck Deployment's Pod: %w", err)
	}
	return d.core.AppsV1().Deployments(NamespaceStuck).Delete(ctx, "stuck", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &got.UID},
	})
}

// broken: references the collector treats as absent or cannot resolve. A ConfigMap whose
// owner never existed; one whose owner's kind is not served; a ConfigMap naming the UID of
// a Deployment in another namespace; a cluster-scoped ClusterRole naming a namespaced owner.
func (d *applier) broken(ctx context.Context) error {
	ghost := controllerRef("apps/v1", "Deployment", "ghost", uuid.NewUUID())
	cm := &corev1.ConfigMap{ObjectMeta: d.meta(NamespaceDangling, "orphan-config", ghost), Data: map[string]string{"owner": "ghost"}}
	if _, err := ensure(ctx, d.core.CoreV1().ConfigMaps(NamespaceDangling), cm); err != nil {
		return err
	}
	// An owner of a kind no API serves: the collector can never verify it, so it never
	// deletes the dependent and keeps retrying (a virtual owner that stays).
	gadget := controllerRef(WidgetGroup+"/v1alpha1", "Gadget", "unserved", uuid.NewUUID())
	cm = &corev1.ConfigMap{ObjectMeta: d.meta(NamespaceDangling, "unserved-owner-config", gadget), Data: map[string]string{"owner": "Gadget (unserved)"}}
	if _, err := ensure(ctx, d.core.CoreV1().ConfigMaps(NamespaceDangling), cm); err != nil {
		return err
	}
	api, err := d.core.AppsV1().Deployments(NamespaceWeb).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		return err
	}
	cross := controllerRef("apps/v1", "Deployment", api.Name, api.UID)
	cm = &corev1.ConfigMap{ObjectMeta: d.meta(NamespaceCrossNS, "cross-config", cross), Data: map[string]string{"owner": NamespaceWeb + "/api"}}
	if _, err := ensure(ctx, d.core.CoreV1().ConfigMaps(NamespaceCrossNS), cm); err != nil {
		return err
	}
	// Not blocking: a blocking reference, even an invalid one, would hold a foreground
	// deletion of the api Deployment forever, as it does upstream.
	invalid := cross
	invalid.BlockOwnerDeletion = ptr.To(false)
	cr := &rbacv1.ClusterRole{ObjectMeta: d.meta("", InvalidClusterRole, invalid)}
	_, err = ensure(ctx, d.core.RbacV1().ClusterRoles(), cr)
	return err
}

func deployment(ns, name string, replicas int32, image string, meta func(string, string, ...metav1.OwnerReference) metav1.ObjectMeta) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: meta(ns, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image, meta),
		},
	}
}

func podTemplate(app, image string, meta func(string, string, ...metav1.OwnerReference) metav1.ObjectMeta) corev1.PodTemplateSpec {
	m := meta("", "")
	m.Labels["app"] = app
	return corev1.PodTemplateSpec{
		ObjectMeta: m,
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: image}}},
	}
}

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// creator is the part of a typed client that ensure needs.
type creator[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
}

// ensure creates obj, or returns the existing object of that name.
func ensure[T metav1.Object](ctx context.Context, c creator[T], obj T) (T, error) {
	got, err := c.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		got, err = c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", describe(obj), err)
	}
	return got, nil
}

func describe(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
