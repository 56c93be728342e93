package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestKilledMidCascadeFinishesAfterRestart: gcscope killed with SIGKILL three times during
// a Foreground cascade, each time restarted on the same --data-dir, finishes it: the
// owner and its dependents are gone, and a dependent that has another live owner stays,
// no longer naming the deleted one (the outcome of the fault-free run, and upstream's).
func TestKilledMidCascadeFinishesAfterRestart(t *testing.T) {
	// Its own gcscope process, data dir and port: it runs beside the other process tests,
	// after the browser tests, which stay serial (they time what the page draws).
	t.Parallel()
	const dependents = 200
	root := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, root, "home"), "TMPDIR=" + mkdir(t, root, "tmp")}
	dataDir := filepath.Join(root, "data")
	kubeconfig := filepath.Join(root, "kubeconfig")
	start := func() (*process, string, kubernetes.Interface) {
		addr := freeAddr(t)
		p := startProcess(t, root, env, binary, "--listen", addr, "--data-dir", dataDir, "--write-kubeconfig", kubeconfig,
			// Two workers, 100 ms per write: about 20 deletes a second, so a restart (the
			// engine starts working before /readyz answers) never finds the cascade over.
			"--demo=false", "--workers", "2", "--gc-action-delay", "100ms")
		p.waitReady(t, addr)
		return p, addr, clientFor(t, kubeconfig)
	}
	p, addr, cs := start()
	ctx := context.Background()
	ns := "cascade"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	create := func(name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, o := range owners {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
				Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true)})
		}
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	owner, keeper := create("owner"), create("keeper")
	shared := create("shared", owner, keeper)
	for i := range dependents {
		create(fmt.Sprintf("dep-%03d", i), owner)
	}
	// Wait until the engine has seen them all (its graph is rebuilt from the cluster on
	// every start, but the delete must not outrun the first build).
	testkit.Eventually(t, "the engine to see the owner's dependents", func() bool {
		var g graphDoc
		if getJSON("http://"+addr+"/api/v1/graph?limit=100000&namespace="+ns, &g) != nil {
			return false
		}
		return len(g.Nodes) >= dependents+3
	})
	fg := metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}

	remaining := func(cs kubernetes.Interface) int {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return -1
		}
		n := 0
		for _, cm := range list.Items {
			if len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == owner.UID {
				n++
			}
		}
		return n
	}
	for kill, below := range []int{dependents * 3 / 4, dependents / 2, dependents / 4} {
		if err := testkit.Poll(ctx, 2*time.Minute, func() bool { n := remaining(cs); return n >= 0 && n <= below }); err != nil {
			t.Fatalf("kill %d: %d dependents left after 2 minutes, waiting for %d", kill+1, remaining(cs), below)
		}
		left := remaining(cs)
		if left == 0 {
			t.Fatalf("kill %d: the cascade was over before the kill", kill+1)
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		t.Logf("kill %d: SIGKILL with %d of %d dependents left", kill+1, left, dependents)
		p, addr, cs = start()
	}

	var ownerErr error
	if err := testkit.Poll(ctx, 2*time.Minute, func() bool {
		_, ownerErr = cs.CoreV1().ConfigMaps(ns).Get(ctx, owner.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(ownerErr) && remaining(cs) == 0
	}); err != nil {
		t.Fatalf("after the last restart: owner %v, %d dependents left after 2 minutes", ownerErr, remaining(cs))
	}
	cms = cs.CoreV1().ConfigMaps(ns) // the client of the last start
	for _, want := range []*corev1.ConfigMap{keeper, shared} {
		got, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s must live: %v", want.Name, err)
		}
		if got.UID != want.UID || got.DeletionTimestamp != nil {
			t.Fatalf("%s must live untouched: uid %s→%s, deletionTimestamp %v", want.Name, want.UID, got.UID, got.DeletionTimestamp)
		}
	}
	got, _ := cms.Get(ctx, shared.Name, metav1.GetOptions{})
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != keeper.UID {
		t.Errorf("shared must name only its live owner: %v", refUIDs(got.OwnerReferences))
	}
	if _, err := os.Stat(dataDir); err != nil {
		t.Fatal(err)
	}
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	var out []types.UID
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}
