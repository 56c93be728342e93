package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The objects the plugin's tests look at, created once on the shared control plane: a
// Deployment's tree, dangling and cross-namespace references, a namespace being deleted.

// createFixtures makes, in plugin-demo:
//   - web: Deployment web → ReplicaSet web-7d9 → Pods web-7d9-a, web-7d9-b; ConfigMap
//     web-config owned by web; ConfigMap shared owned by web and by ConfigMap settings;
//   - stuck: Deployment stuck → ReplicaSet stuck-6c8 → Pod stuck-6c8-held, which carries
//     the finalizer example.com/hold; the Pod, the ReplicaSet and the Deployment are
//     deleted (the last two in the foreground), as a collector would have got that far;
//   - lost-child: a ConfigMap whose owner never existed;
//   - legacy: a Deployment deleted with the orphan policy, and its ConfigMap;
//   - an Event (a resource the collector ignores);
//   - shop: a Helm release (its record, a Secret in Helm's format) of ConfigMaps
//     shop-config and shop-data (annotated helm.sh/resource-policy: keep), with a
//     post-install hook's ConfigMap shop-setup and a pre-delete hook.
func createFixtures(ctx context.Context, cs kubernetes.Interface) error {
	f := &fixtures{ctx: ctx, cs: cs}
	f.do(func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	})
	f.do(func() error { // no controller-manager: Pods need their ServiceAccount made by hand
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		return err
	})
	web := f.deployment("web")
	rs := f.replicaSet("web-7d9", web)
	f.pod("web-7d9-a", nil, rs)
	f.pod("web-7d9-b", nil, rs)
	f.configMap("web-config", ownerOf(web, "apps/v1", "Deployment", true))
	settings := f.configMap("settings")
	f.configMap("shared", ownerOf(web, "apps/v1", "Deployment", false), ownerOf(settings, "v1", "ConfigMap", false))

	stuck := f.deployment("stuck")
	stuckRS := f.replicaSet("stuck-6c8", stuck)
	held := f.pod("stuck-6c8-held", []string{"example.com/hold"}, stuckRS)
	f.do(func() error { return cs.CoreV1().Pods(ns).Delete(ctx, held.GetName(), metav1.DeleteOptions{}) })
	foreground := metav1.DeletePropagationForeground
	f.do(func() error {
		return cs.AppsV1().ReplicaSets(ns).Delete(ctx, stuckRS.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground})
	})
	f.do(func() error {
		return cs.AppsV1().Deployments(ns).Delete(ctx, stuck.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground})
	})

	f.configMap("lost-child", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: neverExisted})

	legacy := f.deployment("legacy")
	f.configMap("legacy-config", ownerOf(legacy, "apps/v1", "Deployment", true))
	orphan := metav1.DeletePropagationOrphan
	f.do(func() error {
		return cs.AppsV1().Deployments(ns).Delete(ctx, legacy.GetName(), metav1.DeleteOptions{PropagationPolicy: &orphan})
	})

	// Storage: StatefulSet db deletes its claim with it (whenDeleted: Delete, so the claim
	// is owned by it) and the claim's volume is reclaimed by deleting the disk; StatefulSet
	// archive keeps its claim (the default), on a volume kept when released. The claims
	// name their volumes as a bound claim does (no PV controller binds them here).
	db := f.statefulSet("db", appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
	f.claim("data-db-0", "plugin-demo-db", ownerOf(db, "apps/v1", "StatefulSet", true))
	f.volume("plugin-demo-db", "data-db-0", corev1.PersistentVolumeReclaimDelete)
	f.statefulSet("archive", "")
	f.claim("data-archive-0", "plugin-demo-archive")
	f.volume("plugin-demo-archive", "data-archive-0", corev1.PersistentVolumeReclaimRetain)

	// A namespace being deleted, with no namespace controller here to empty it: its
	// content stays, one ConfigMap with a finalizer field manager acme-controller added.
	f.do(func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goneNS}}, metav1.CreateOptions{})
		return err
	})
	for _, name := range []string{"left", "held"} {
		f.do(func() error {
			_, err := cs.CoreV1().ConfigMaps(goneNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		})
	}
	f.do(func() error {
		_, err := cs.CoreV1().ConfigMaps(goneNS).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":["acme.example.com/hold"]}}`), metav1.PatchOptions{FieldManager: "acme-controller"})
		return err
	})
	f.do(func() error { return cs.CoreV1().Namespaces().Delete(ctx, goneNS, metav1.DeleteOptions{}) })

	f.configMap("shop-config")
	f.configMap("shop-data")
	f.configMap("shop-setup")
	f.helmRelease("shop", shopRelease)

	f.do(func() error {
		_, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "plugin-event"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-7d9-a"},
			Reason:         "Test", Message: "an event", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		return err
	})
	return f.err
}

// fixtures creates objects, keeping the first error.
type fixtures struct {
	ctx context.Context
	cs  kubernetes.Interface
	err error
}

func (f *fixtures) do(fn func() error) {
	if f.err == nil {
		f.err = fn()
	}
}

func ownerOf(o metav1.Object, apiVersion, kind string, controller bool) metav1.OwnerReference {
	t := true
	ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: &t}
	if controller {
		ref.Controller = &t
	}
	return ref
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

func (f *fixtures) deployment(name string) metav1.Object {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	f.do(func() (err error) {
		d, err = f.cs.AppsV1().Deployments(ns).Create(f.ctx, d, metav1.CreateOptions{})
		return err
	})
	return d
}

func (f *fixtures) replicaSet(name string, owner metav1.Object) metav1.Object {
	app := owner.GetName()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownerOf(owner, "apps/v1", "Deployment", true)}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, Template: podTemplate(app)}}
	f.do(func() (err error) {
		rs, err = f.cs.AppsV1().ReplicaSets(ns).Create(f.ctx, rs, metav1.CreateOptions{})
		return err
	})
	return rs
}

func (f *fixtures) pod(name string, finalizers []string, owner metav1.Object) metav1.Object {
	tmpl := podTemplate(owner.GetName())
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{ownerOf(owner, "apps/v1", "ReplicaSet", true)}}, Spec: tmpl.Spec}
	f.do(func() (err error) {
		p, err = f.cs.CoreV1().Pods(ns).Create(f.ctx, p, metav1.CreateOptions{})
		return err
	})
	return p
}

func (f *fixtures) configMap(name string, owners ...metav1.OwnerReference) metav1.Object {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}
	f.do(func() (err error) {
		cm, err = f.cs.CoreV1().ConfigMaps(ns).Create(f.ctx, cm, metav1.CreateOptions{})
		return err
	})
	return cm
}

// shopRelease is revision 1 of the release shop, as Helm writes it.
var shopRelease = map[string]any{
	"manifest": "---\n# Source: shop/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-config\n" +
		"---\n# Source: shop/templates/data.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-data\n  annotations:\n    helm.sh/resource-policy: keep\n",
	"hooks": []any{
		map[string]any{"name": "shop-setup", "kind": "ConfigMap", "path": "shop/templates/setup.yaml", "events": []string{"post-install"},
			"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-setup\n"},
		map[string]any{"name": "shop-backup", "kind": "Job", "path": "shop/templates/backup.yaml", "events": []string{"pre-delete"},
			"delete_policies": []string{"hook-succeeded"}, "manifest": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: shop-backup\n"},
	},
}

// helmRelease writes revision 1 of release name as Helm 3 stores it: a Secret whose data
// "release" is the release's JSON, gzipped, in base64.
func (f *fixtures) helmRelease(name string, rel map[string]any) {
	rel["name"], rel["namespace"], rel["version"], rel["info"] = name, ns, 1, map[string]any{"status": "deployed"}
	f.do(func() error {
		raw, err := json.Marshal(rel)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(raw)
		w.Close()
		_, err = f.cs.CoreV1().Secrets(ns).Create(f.ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v1", Labels: map[string]string{"owner": "helm", "name": name, "version": "1", "status": "deployed"}},
			Type:       "helm.sh/release.v1",
			Data:       map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
		}, metav1.CreateOptions{})
		return err
	})
}

func (f *fixtures) statefulSet(name string, whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType) metav1.Object {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(1)), ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template:             podTemplate(name),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec("")}},
	}}
	if whenDeleted != "" {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	}
	f.do(func() (err error) {
		s, err = f.cs.AppsV1().StatefulSets(ns).Create(f.ctx, s, metav1.CreateOptions{})
		return err
	})
	return s
}

func claimSpec(volume string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To("standard"), VolumeName: volume,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}
}

func (f *fixtures) claim(name, volume string, owners ...metav1.OwnerReference) {
	f.do(func() error {
		_, err := f.cs.CoreV1().PersistentVolumeClaims(ns).Create(f.ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}, Spec: claimSpec(volume)}, metav1.CreateOptions{})
		return err
	})
}

func (f *fixtures) volume(name, claim string, policy corev1.PersistentVolumeReclaimPolicy) {
	f.do(func() error {
		_, err := f.cs.CoreV1().PersistentVolumes().Create(f.ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: policy, StorageClassName: "standard",
				ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.example.com", VolumeHandle: "vol-" + name}},
			}}, metav1.CreateOptions{})
		return err
	})
}
