package deletion_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestStorageGoesWithTheClaims: two StatefulSets, each with a claim bound to a volume made
// for it (no provisioner runs here: the volumes are created, the claims bind to them by
// their claimRef). "db" deletes its claims with it (whenDeleted: Delete) and its volume's
// reclaim policy is Delete: its prediction says the disk goes, by name, size, class and
// driver. "keep" keeps its claims (whenDeleted: Retain, the default): its prediction
// lists the claim as left behind and its volume as kept. Then db's delete removes the
// claim, as predicted, and its volume is released.
func TestStorageGoesWithTheClaims(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	ns := e.createNamespace(t, "storage-fates").Name
	t.Cleanup(func() { e.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	volume := func(name, claim string, policy corev1.PersistentVolumeReclaimPolicy) {
		t.Helper()
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: policy,
				StorageClassName:              "manual",
				ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: "vol-" + name}},
			}}
		if _, err := e.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			e.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	statefulSet := func(name string, whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType) *appsv1.StatefulSet {
		t.Helper()
		labels := map[string]string{"app": name}
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(1)), ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("manual"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		}}
		if whenDeleted != "" {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
		}
		s, err := e.client.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	volume(ns+"-db", "data-db-0", corev1.PersistentVolumeReclaimDelete)
	volume(ns+"-keep", "data-keep-0", corev1.PersistentVolumeReclaimRetain)
	db := statefulSet("db", appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
	keep := statefulSet("keep", "")
	claimBound := func(name string) bool {
		pvc, err := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Spec.VolumeName != "" && pvc.Status.Phase == corev1.ClaimBound
	}
	testkit.Eventually(t, "the StatefulSets' claims bound to their volumes", func() bool { return claimBound("data-db-0") && claimBound("data-keep-0") })
	dbClaim, _ := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	keepClaim, _ := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-keep-0", metav1.GetOptions{})
	testkit.Eventually(t, "the engine sees db's claim owned by db", func() bool {
		n, ok := e.engine.Node(dbClaim.UID)
		return ok && slices.ContainsFunc(n.Owners, func(o gc.OwnerRef) bool { return o.UID == db.UID }) && e.inGraph(keepClaim.UID)
	})

	p, ok := e.engine.PredictDelete(db.UID, metav1.DeletePropagationBackground)
	if !ok || !slices.ContainsFunc(p.Deleted, func(d gc.PredictedObject) bool { return d.Object.UID == dbClaim.UID }) {
		t.Fatalf("db's prediction %+v does not delete its claim", p.Deleted)
	}
	c := e.x.Consequences(ctx, p, nil)
	if c.Unread != "" || len(c.Volumes) != 1 || c.DataLoss() != 1 {
		t.Fatalf("db's consequences = %+v, want one volume lost", c)
	}
	v := c.Volumes[0]
	if v.Claim.UID != dbClaim.UID || v.Volume != ns+"-db" || v.Verdict != deletion.VolumeDataLoss || v.ReclaimPolicy != "Delete" ||
		v.Capacity != "1Gi" || v.StorageClass != "manual" || v.Driver != "disk.example.com" || v.Handle != "vol-"+ns+"-db" ||
		!strings.HasPrefix(v.Says, "data loss: ") || !strings.Contains(v.Says, "deletes PersistentVolume "+ns+"-db") {
		t.Errorf("db's volume = %+v", v)
	}
	// A reader who may not list PersistentVolumes is not told of the volume.
	if c := e.x.Consequences(ctx, p, func(r gc.ObjectRef) bool { return r.Kind != "PersistentVolume" }); len(c.Volumes) != 1 || c.Volumes[0].Verdict != deletion.VolumeUnknown || c.Volumes[0].Capacity != "" {
		t.Errorf("db's volumes to a reader who may not list volumes = %+v", c.Volumes)
	}

	p, _ = e.engine.PredictDelete(keep.UID, metav1.DeletePropagationBackground)
	if slices.ContainsFunc(p.Deleted, func(d gc.PredictedObject) bool { return d.Object.UID == keepClaim.UID }) {
		t.Fatalf("keep's prediction deletes its retained claim: %+v", p.Deleted)
	}
	c = e.x.Consequences(ctx, p, nil)
	if len(c.LeftBehind) != 1 || c.LeftBehind[0].Object.UID != keepClaim.UID || !strings.Contains(c.LeftBehind[0].Reason, "whenDeleted: Retain") {
		t.Errorf("keep's left behind = %+v, want its claim, retained", c.LeftBehind)
	}
	if len(c.Volumes) != 1 || c.Volumes[0].Verdict != deletion.VolumeKept || c.DataLoss() != 0 {
		t.Errorf("keep's volumes = %+v, want its claim kept", c.Volumes)
	}

	// The delete does what was predicted: db's claim goes, its volume is released.
	if err := e.client.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "db's claim gone", func() bool {
		_, err := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "db's volume no longer bound", func() bool {
		pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, ns+"-db", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && pv.Status.Phase != corev1.VolumeBound
	})
	if !claimBound("data-keep-0") {
		t.Errorf("keep's claim no longer bound, though nothing deleted it")
	}
}
