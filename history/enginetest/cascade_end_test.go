package enginetest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestACascadeEndsWithWhatItKeepsAndOrphans: a cascade ends once nothing of it is left to
// happen, even when some of its members stay: a ClusterRole whose reference to a
// namespaced owner is invalid (the collector keeps it, never collecting it for that
// owner), a dependent another owner still holds, and the dependents an Orphan delete
// leaves. Before, the kept ClusterRole held a finished Foreground cascade open for ever
// (end null, "still running" on the timeline).
func TestACascadeEndsWithWhatItKeepsAndOrphans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, engine := startEngine(ctx, t, 0)
	store := recordInto(t, engine, history.RecorderOptions{FlushInterval: 10 * time.Millisecond, CascadeQuiet: 300 * time.Millisecond, BurstRate: -1})

	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cascade-ends"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		var refs []metav1.OwnerReference
		for _, o := range owners {
			refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true)})
		}
		out, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	observed := func(uids ...types.UID) {
		t.Helper()
		testkit.Eventually(t, "the engine observes the objects", func() bool {
			for _, u := range uids {
				if n, ok := engine.Node(u); !ok || n.Virtual {
					return false
				}
			}
			return true
		})
	}
	cascadeOf := func(root types.UID) history.Cascade {
		t.Helper()
		var got history.Cascade
		testkit.Eventually(t, "the cascade of "+string(root)+" to end", func() bool {
			cs, err := store.Cascades(ctx, history.CascadeQuery{UID: string(root)})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Root.UID == root {
					got = c
				}
			}
			return got.End != nil
		})
		return got
	}

	// Foreground: one dependent goes; a ClusterRole naming the namespaced root is kept
	// (its reference is invalid); a dependent another owner holds is freed of the root.
	root, other := cm("api"), cm("other")
	dep, shared := cm("api-dep", root), cm("api-shared", root, other)
	role, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cascade-ends-invalid-owner",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: root.Name, UID: root.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	observed(root.UID, dep.UID, shared.UID, role.UID)
	fg := metav1.DeletePropagationForeground
	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, root.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	got := cascadeOf(root.UID)
	if got.Deleted != 2 {
		t.Errorf("the Foreground cascade: %+v; want api and api-dep deleted", got)
	}
	for _, stays := range []types.UID{role.UID, shared.UID, other.UID} {
		if _, ok := engine.Node(stays); !ok {
			t.Errorf("%s was deleted: the collector keeps it", stays)
		}
	}

	// Orphan: the dependents stay, freed of their owner; the cascade ends.
	lead := cm("lead")
	a, b := cm("lead-a", lead), cm("lead-b", lead)
	observed(lead.UID, a.UID, b.UID)
	orphan := metav1.DeletePropagationOrphan
	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, lead.Name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	got = cascadeOf(lead.UID)
	if got.Deleted != 1 || got.Policy != "Orphan" {
		t.Errorf("the Orphan cascade: %+v; want lead alone deleted", got)
	}
}
