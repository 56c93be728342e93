package deletion_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestWhatComesBack: a Pod of a live ReplicaSet of a Deployment, and that ReplicaSet, are
// predicted to come back, each naming its controller; deleting the Deployment itself
// brings nothing back. The Pod's delete is then made, and the ReplicaSet's replacement is
// observed.
func TestWhatComesBack(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	ns := e.createNamespace(t, "comes-back").Name
	t.Cleanup(func() { e.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "site"}
	dep, err := e.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rs, pod gc.NodeState
	testkit.Eventually(t, "the Deployment's ReplicaSet and its Pod in the graph", func() bool {
		rs, pod = gc.NodeState{}, gc.NodeState{}
		for _, o := range e.engine.InNamespace(ns) {
			if o.Kind == "ReplicaSet" && slices.ContainsFunc(o.Owners, func(r gc.OwnerRef) bool { return r.UID == dep.UID }) {
				rs = o
			}
		}
		for _, o := range e.engine.InNamespace(ns) {
			if o.Kind == "Pod" && rs.UID != "" && slices.ContainsFunc(o.Owners, func(r gc.OwnerRef) bool { return r.UID == rs.UID }) {
				pod = o
			}
		}
		return pod.UID != ""
	})
	recreated := func(uid types.UID) []string {
		t.Helper()
		p, ok := e.engine.PredictDelete(uid, metav1.DeletePropagationBackground)
		if !ok {
			t.Fatalf("no prediction for %s", uid)
		}
		var out []string
		for _, r := range e.x.Consequences(ctx, p, nil).Recreated {
			out = append(out, r.Object.Kind+" "+r.Object.Name+" by "+r.By.Kind+" "+r.By.Name+": "+r.Says)
		}
		return out
	}
	if got := recreated(pod.UID); len(got) != 1 || !strings.HasPrefix(got[0], "Pod "+pod.Name+" by ReplicaSet "+rs.Name+": ReplicaSet "+rs.Name+" will create a replacement Pod") {
		t.Errorf("the Pod's delete: comes back %q, want by its ReplicaSet", got)
	}
	if got := recreated(rs.UID); len(got) != 1 || !strings.HasPrefix(got[0], "ReplicaSet "+rs.Name+" by Deployment site: ") || !strings.Contains(got[0], "current one") {
		t.Errorf("the ReplicaSet's delete: comes back %q, want by its Deployment, as its current one", got)
	}
	if got := recreated(dep.UID); len(got) != 0 {
		t.Errorf("the Deployment's delete: comes back %q, want nothing (its controllers go with it)", got)
	}
	if err := e.client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the ReplicaSet's replacement Pod", func() bool {
		for _, o := range e.engine.InNamespace(ns) {
			if o.Kind == "Pod" && o.UID != pod.UID && slices.ContainsFunc(o.Owners, func(r gc.OwnerRef) bool { return r.UID == rs.UID && r.Controller }) {
				return true
			}
		}
		return false
	})
}
