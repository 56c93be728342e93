package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestCascadesOfTheRealEngine: a foreground and a background deletion on a real
// apiserver, collected by the real engine, are each recorded as one cascade with its
// root, policy, members and deletes; the foreground one is seen open, part done, while it
// runs.
func TestCascadesOfTheRealEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, engine := startEngine(ctx, t, 40*time.Millisecond)
	// The store is watched while the cascade runs: a recorder that stepped aside for the
	// cascade's first 20 ms (about 100 events, near the default BurstRate) would write it
	// only once it calmed (TestRecorderStepsAsideInABurst tests that).
	store := recordInto(t, engine, history.RecorderOptions{FlushInterval: 10 * time.Millisecond, CascadeQuiet: 500 * time.Millisecond, BurstRate: -1})

	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cascades"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tree := func(name string, n int) *corev1.ConfigMap {
		owner, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-dep-%02d", name, i),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
					BlockOwnerDeletion: ptr.To(true)}},
			}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		testkit.EventuallyEvery(t, 5*time.Millisecond, "the engine to observe "+name+"'s dependents", func() bool {
			s := engine.Snapshot()
			seen := 0
			for _, nd := range s.Nodes {
				if len(nd.Owners) > 0 && nd.Owners[0].UID == owner.UID {
					seen++
				}
			}
			return seen == n
		})
		return owner
	}
	const deps = 12
	fgOwner, bgOwner := tree("fg", deps), tree("bg", deps)
	cascadesOf := func(owner *corev1.ConfigMap) []history.Cascade {
		cs, err := store.Cascades(ctx, history.CascadeQuery{UID: string(owner.UID)})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}

	fg := metav1.DeletePropagationForeground
	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, fgOwner.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	var mid history.Cascade
	var seen []string // each different answer, for a failure
	defer func() {
		if t.Failed() {
			t.Logf("the foreground cascade as recorded, each change:\n%s", strings.Join(seen, "\n"))
		}
	}()
	testkit.EventuallyEvery(t, 5*time.Millisecond, "the foreground cascade to be recorded part done", func() bool {
		cs := cascadesOf(fgOwner)
		if s := fmt.Sprintf("%+v", cs); len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if len(cs) == 1 && cs[0].End == nil && cs[0].Deleted >= deps/2 && cs[0].Deleted < cs[0].Objects {
			mid = cs[0]
			return true
		}
		return false
	})
	bg := metav1.DeletePropagationBackground
	if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, bgOwner.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		owner  *corev1.ConfigMap
		policy string
	}{{fgOwner, "Foreground"}, {bgOwner, "Background"}} {
		var got history.Cascade
		testkit.EventuallyEvery(t, 5*time.Millisecond, "the "+want.policy+" cascade to end", func() bool {
			cs := cascadesOf(want.owner)
			if len(cs) == 1 && cs[0].End != nil {
				got = cs[0]
				return true
			}
			return false
		})
		if got.Root.UID != want.owner.UID || got.Root.Name != want.owner.Name || got.Root.Kind != "ConfigMap" || got.Policy != want.policy ||
			got.Objects != deps+1 || got.Deleted != deps+1 || got.Actions < deps || !got.Start.Before(*got.End) || got.Note != "" {
			t.Fatalf("the %s cascade: %+v; want rooted at %s, %d objects all deleted, at least %d actions, start before end",
				want.policy, got, want.owner.Name, deps+1, deps)
		}
		// Its events: the delete of every dependent is among them.
		deletes := 0
		q := history.Query{Cascade: got.ID, Types: []string{"action"}, Verbs: []string{"delete"}, Results: []string{"ok"}, Limit: history.MaxLimit}
		page, err := store.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Events {
			if r.Cascade == got.ID && r.Action.Object.Namespace == ns.Name {
				deletes++
			}
		}
		if deletes != deps {
			t.Fatalf("the %s cascade's events hold %d deletes of its %d dependents", want.policy, deletes, deps)
		}
		t.Logf("%s: %d objects, %d deleted, %d actions, %d errors in %s", want.policy, got.Objects, got.Deleted, got.Actions, got.Errors, got.End.Sub(got.Start).Round(time.Millisecond))
	}
	t.Logf("the foreground cascade part done: %d of %d objects deleted", mid.Deleted, mid.Objects)
}
