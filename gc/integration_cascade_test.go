package gc_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// Cascades on the embedded control plane, each as upstream's collector decides it:
// background, foreground and orphan deletions, blocking and non-blocking references,
// finalizers that hold, circles, cluster-scoped and cross-namespace owners.

func TestBackgroundCascadeKeepsDependentWithSecondSolidOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	other := e.configMap(t, ns, "other-owner", nil)
	only := e.configMap(t, ns, "only-child", nil, cmRef(owner))
	shared := e.configMap(t, ns, "shared-child", nil, cmRef(owner), cmRef(other))

	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, owner)
	e.waitGone(t, only)
	testkit.Eventually(t, "shared-child keeps only its second owner", func() bool {
		obj := e.getCM(t, shared)
		return obj != nil && len(obj.OwnerReferences) == 1
	})
	assertState(t, e.getCM(t, shared), "shared-child", []types.UID{other.UID}, nil, false)
	assertState(t, e.getCM(t, other), "other-owner", nil, nil, false)
}

// TestTwoReferencesWithOneUIDBothGoAndTheReasonSaysSo: a dependent names its live owner
// and, under the same uid, an owner of another kind that does not exist. The dangling
// reference is removed by uid, as upstream removes it, so the solid one goes with it; the
// recorded reason must say that both go, and why.
func TestTwoReferencesWithOneUIDBothGoAndTheReasonSaysSo(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "ghost", UID: owner.UID}
	start := e.engine.Feed().LastSeq()
	dep := e.configMap(t, ns, "dependent", nil, cmRef(owner), ghost)
	testkit.Eventually(t, "the dependent loses both references", func() bool {
		obj := e.getCM(t, dep)
		return obj != nil && len(obj.OwnerReferences) == 0
	})
	assertState(t, e.getCM(t, owner), "owner", nil, nil, false)
	// The action is in the feed once the worker's PATCH has returned: the apiserver can show
	// its result first.
	var reason string
	testkit.Eventually(t, "the removal of the references in the feed", func() bool {
		events, err := e.engine.Feed().Since(start, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if a := ev.Action; a != nil && a.Object.UID == dep.UID && a.Verb == gc.VerbRemoveRefs && a.Error == "" {
				reason = a.Reason
			}
		}
		return reason != ""
	})
	for _, want := range []string{"Secret ghost", "ConfigMap owner goes too", "same uid " + string(owner.UID), "both references"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if strings.Contains(reason, "owner ConfigMap owner exists") {
		t.Errorf("reason %q claims the removed reference's owner keeps the object", reason)
	}
}

// TestExplainOwnerOfUnservedVersionSaysTheEngineRetries: an owner named through an
// apiVersion the apiserver does not serve cannot be looked up. The engine retries and
// never deletes for it, and Explain says exactly that.
func TestExplainOwnerOfUnservedVersionSaysTheEngineRetries(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	unserved := metav1.OwnerReference{APIVersion: "gadgets.example.com/v9", Kind: "Gadget", Name: "g", UID: "0d5c3b1e-unserved-owner"}
	dep := e.configMap(t, ns, "dependent", nil, unserved)
	// The owner is a virtual node: the engine tries to verify it, cannot, and retries.
	testkit.Eventually(t, "the engine to try the unserved owner and requeue it", func() bool {
		ex, _ := e.engine.Explain(unserved.UID)
		return ex.Last != nil && ex.Last.Verb == gc.VerbRequeue
	})
	ex, _ := e.engine.Explain(dep.UID)
	if len(ex.Owners) != 1 || ex.Owners[0].State != gc.OwnerUnresolvable || !strings.Contains(ex.Owners[0].Reason, "never treats it as absent") {
		t.Errorf("owner status %+v; want unresolvable, saying it is never treated as absent", ex.Owners)
	}
	if !strings.HasPrefix(ex.Next, "retry later") || strings.Contains(ex.Next, "delete") {
		t.Errorf("next step %q; want a retry, and no delete", ex.Next)
	}
	if owner, _ := e.engine.Explain(unserved.UID); !strings.HasPrefix(owner.Next, "retry later") {
		t.Errorf("the owner's next step %q; want a retry", owner.Next)
	}
	testkit.Consistently(t, "the dependent stays", 2*time.Second, func() bool { return e.getCM(t, dep) != nil })
}

// TestExplainObjectThatOwnsItself: an object naming itself as a blocking owner, deleted in
// the foreground, is among its own blockers; the words say so instead of an empty list.
func TestExplainObjectThatOwnsItself(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	self := e.configMap(t, ns, "selfish", nil)
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"selfish","uid":%q,"blockOwnerDeletion":true}]}}`, self.UID)
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "selfish", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine sees the self reference", func() bool {
		n, ok := e.engine.Node(self.UID)
		return ok && len(n.Owners) == 1
	})
	e.deleteCM(t, self, metav1.DeletePropagationForeground)
	var ex gc.Explanation
	testkit.Eventually(t, "the engine marks it deleting its dependents", func() bool {
		ex, _ = e.engine.Explain(self.UID)
		return ex.Object.DeletingDependents && len(ex.Blockers) > 0
	})
	text := strings.Join(ex.Words, ". ")
	if !strings.Contains(text, "is the object itself") || strings.Contains(text, "dependents: ;") || strings.HasSuffix(text, ": ") || strings.Contains(text, "dependents: .") {
		t.Errorf("words %q; want them to say it is its own blocker, with no empty list", ex.Words)
	}
	e.removeFinalizers(t, configMaps, ns, "selfish")
}

// TestLastActionIsAboutTheObjectItself: a dependent in another namespace names the owner's
// uid; the collector looks that owner up in the dependent's namespace (and does not find
// it). That look-up is not the owner's last worker action: its panel showed "look up owner
// of ConfigMap stray: not found" for an object that exists.
func TestLastActionIsAboutTheObjectItself(t *testing.T) {
	e := setup(t)
	nsA, nsB := e.namespace(t), e.namespace(t)
	owner := e.configMap(t, nsA, "owner", nil)
	from := e.engine.Feed().LastSeq()
	stray := e.configMap(t, nsB, "stray", nil, cmRef(owner))
	testkit.Eventually(t, "the collector looks the owner up for stray", func() bool {
		evs, err := e.engine.Feed().Since(from, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if a := ev.Action; a != nil && a.Verb == gc.VerbGet && a.Object.UID == owner.UID && a.For != nil && a.For.UID == stray.UID {
				return true
			}
		}
		return false
	})
	ex, ok := e.engine.Explain(owner.UID)
	if !ok {
		t.Fatal("the owner is not in the graph")
	}
	if ex.Last != nil && (ex.Last.Object.Namespace != nsA || ex.Last.For != nil) {
		t.Errorf("the owner's last worker action is %+v: a look-up made for stray in %s", *ex.Last, nsB)
	}
}

// TestUnblockThenDeleteIsDecidedAgainAsUpstream: D waits on its foreground-deleted owner O
// and has a dependent E that is itself deleting its dependents, so D first unblocks its
// references (breaking a possible cycle). As upstream, the delete that follows carries the
// resourceVersion the decision was made on: the patch moved it, so that delete earns a
// 409 and D is decided again on the patched object; in the end D and O are gone.
func TestUnblockThenDeleteIsDecidedAgainAsUpstream(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	o := e.configMap(t, ns, "o", nil)
	d := e.configMap(t, ns, "d", nil, cmRef(o))
	eDep := e.configMap(t, ns, "e", nil, cmRef(d))
	f := e.configMap(t, ns, "f", []string{holdFinalizer}, cmRef(eDep))
	e.deleteCM(t, eDep, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "e waits for f", func() bool { n, _ := e.engine.Node(eDep.UID); return n.DeletingDependents })
	start := e.engine.Feed().LastSeq()
	e.deleteCM(t, o, metav1.DeletePropagationForeground)
	e.waitGone(t, o) // d no longer blocks it
	e.removeFinalizers(t, configMaps, ns, f.Name)
	for _, cm := range []*corev1.ConfigMap{f, eDep, d} {
		e.waitGone(t, cm)
	}
	events, err := e.engine.Feed().Since(start, 0)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, ev := range events {
		if a := ev.Action; a != nil && a.Object.UID == d.UID && (a.Verb == gc.VerbUnblock || a.Verb == gc.VerbDelete) {
			v := string(a.Verb)
			if a.Error != "" {
				v += "!"
			}
			verbs = append(verbs, v)
		}
	}
	// After the delete that succeeds, a decision made on a view that has not seen it yet
	// may still try and be refused (409, the object being deleted): that changes nothing.
	if len(verbs) < 3 || verbs[0] != "patchUnblock" || verbs[1] != "delete!" || !slices.Contains(verbs[2:], "delete") {
		t.Errorf("d's writes %v; want patchUnblock, a delete refused (409: the decision's resourceVersion moved), then a delete decided again", verbs)
	}
}

func TestOrphanKeepsDependentsWithoutReferences(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	a := e.configMap(t, ns, "a", nil, cmRef(owner))
	b := e.configMap(t, ns, "b", nil, cmRef(owner, nonBlocking))

	e.deleteCM(t, owner, metav1.DeletePropagationOrphan)
	e.waitGone(t, owner)
	assertState(t, e.getCM(t, a), "a", nil, nil, false)
	assertState(t, e.getCM(t, b), "b", nil, nil, false)
}

func TestBlockingDependentHeldByFinalizerBlocksForegroundUntilReleased(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	held := e.configMap(t, ns, "held", []string{holdFinalizer}, cmRef(owner))
	free := e.configMap(t, ns, "free", nil, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	e.waitGone(t, free)
	testkit.Eventually(t, "held is being deleted", func() bool {
		obj := e.getCM(t, held)
		return obj != nil && obj.DeletionTimestamp != nil
	})
	testkit.Consistently(t, "the owner waits for its held dependent", 2*time.Second, func() bool { return e.getCM(t, owner) != nil })
	assertState(t, e.getCM(t, owner), "owner", nil, []string{metav1.FinalizerDeleteDependents}, true)
	assertState(t, e.getCM(t, held), "held", []types.UID{owner.UID}, []string{holdFinalizer}, true)

	ex, ok := e.engine.Explain(owner.UID)
	if !ok {
		t.Fatal("explain: owner not in the graph")
	}
	if !ex.Object.DeletingDependents || len(ex.Blockers) != 1 || ex.Blockers[0].Object.UID != held.UID ||
		!slices.Contains(ex.Blockers[0].Finalizers, holdFinalizer) {
		t.Errorf("explain should name held and its finalizer as the one blocker: %+v", ex)
	}
	if !strings.Contains(strings.Join(ex.Words, "; "), "configmap held is held by finalizer "+holdFinalizer) {
		t.Errorf("explain words do not name the finalizer: %q", ex.Words)
	}

	e.removeFinalizers(t, configMaps, ns, held.Name)
	e.waitGone(t, held)
	e.waitGone(t, owner)
}

func TestSolidOwnerDoesNotBlockWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	waiting := e.configMap(t, ns, "waiting-owner", nil)
	solid := e.configMap(t, ns, "solid-owner", nil)
	dep := e.configMap(t, ns, "dep", nil, cmRef(waiting), cmRef(solid))

	e.deleteCM(t, waiting, metav1.DeletePropagationForeground)
	e.waitGone(t, waiting)
	assertState(t, e.getCM(t, dep), "dep", []types.UID{solid.UID}, nil, false)
	assertState(t, e.getCM(t, solid), "solid-owner", nil, nil, false)
}

func TestNonBlockingReferenceDoesNotBlockForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner, nonBlocking))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	e.waitGone(t, owner)
	// The dependent is collected too; its own finalizer keeps it, being deleted.
	testkit.Eventually(t, "dep is being deleted", func() bool {
		obj := e.getCM(t, dep)
		return obj != nil && obj.DeletionTimestamp != nil
	})
	assertState(t, e.getCM(t, dep), "dep", []types.UID{owner.UID}, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestForegroundTwiceOnObjectWithItsOwnFinalizer(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	obj := e.configMap(t, ns, "obj", []string{holdFinalizer})

	for i := range 2 {
		e.deleteCM(t, obj, metav1.DeletePropagationForeground)
		testkit.Eventually(t, fmt.Sprintf("delete %d: the collector removes foregroundDeletion", i+1), func() bool {
			o := e.getCM(t, obj)
			return o != nil && o.DeletionTimestamp != nil && slices.Equal(o.Finalizers, []string{holdFinalizer})
		})
		assertState(t, e.getCM(t, obj), "obj", nil, []string{holdFinalizer}, true)
	}
	e.removeFinalizers(t, configMaps, ns, obj.Name)
	e.waitGone(t, obj)
}

func TestThreeObjectCircleDeletedInForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	a := e.configMap(t, ns, "a", nil)
	b := e.configMap(t, ns, "b", nil, cmRef(a))
	c := e.configMap(t, ns, "c", nil, cmRef(b))
	a.OwnerReferences = []metav1.OwnerReference{cmRef(c)}
	a, err := e.client.CoreV1().ConfigMaps(ns).Update(context.Background(), a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.deleteCM(t, a, metav1.DeletePropagationForeground)
	for _, cm := range []*corev1.ConfigMap{a, b, c} {
		e.waitGone(t, cm)
	}
}

func TestOwnerThatNeverExisted(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID(), BlockOwnerDeletion: ptr.To(true)}
	dep := e.configMap(t, ns, "dep", nil, ghost)
	e.waitGone(t, dep)
	testkit.Eventually(t, "the virtual owner leaves the graph", func() bool {
		_, ok := e.engine.Node(ghost.UID)
		return !ok
	})
}

func TestCrossNamespaceReference(t *testing.T) {
	e := setup(t)
	home := e.namespace(t)
	away := e.namespace(t)
	owner := e.configMap(t, home, "owner", nil)
	child := e.configMap(t, home, "child", nil, cmRef(owner))
	stray := e.configMap(t, away, "stray", nil, cmRef(owner))

	e.waitGone(t, stray)
	testkit.Consistently(t, "the real owner's dependent stays", time.Second, func() bool { return e.getCM(t, child) != nil })
	assertState(t, e.getCM(t, child), "child", []types.UID{owner.UID}, nil, false)
	assertState(t, e.getCM(t, owner), "owner", nil, nil, false)
	testkit.Eventually(t, "a Warning OwnerRefInvalidNamespace event on the stray dependent", func() bool {
		events, err := e.client.CoreV1().Events(away).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range events.Items {
			if ev.Reason == "OwnerRefInvalidNamespace" && ev.Type == corev1.EventTypeWarning &&
				ev.InvolvedObject.UID == stray.UID && strings.Contains(ev.Message, string(owner.UID)) {
				return true
			}
		}
		return false
	})
}

func TestUnblockingReferenceReleasesWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	testkit.Consistently(t, "the owner waits", 2*time.Second, func() bool { return e.getCM(t, owner) != nil })

	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q,"blockOwnerDeletion":false}]}}`, owner.UID)
	if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(context.Background(), dep.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, owner)
	assertState(t, e.getCM(t, dep), "dep", []types.UID{owner.UID}, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestSecondDeleteWithOrphanPolicyOnWaitingOwner(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", []string{holdFinalizer}, cmRef(owner))

	e.deleteCM(t, owner, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "the owner waits in the foreground, and the collector has deleted dep", func() bool {
		o, d := e.getCM(t, owner), e.getCM(t, dep)
		return o != nil && slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) && d != nil && d.DeletionTimestamp != nil
	})
	e.deleteCM(t, owner, metav1.DeletePropagationOrphan)
	e.waitGone(t, owner)
	// Orphaned: the reference is gone. It had already been deleted during the
	// foreground phase, and its own finalizer holds it.
	assertState(t, e.getCM(t, dep), "dep", nil, []string{holdFinalizer}, true)
	e.removeFinalizers(t, configMaps, ns, dep.Name)
	e.waitGone(t, dep)
}

func TestStressOwnersDeletedEveryWay(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	type group struct {
		owner *corev1.ConfigMap
		deps  []*corev1.ConfigMap
		way   string
	}
	ways := []string{"background", "foreground", "orphan", "default", "foreground-nonblocking"}
	var groups []group
	for i := range 10 {
		for _, way := range ways {
			g := group{way: way, owner: e.configMap(t, ns, fmt.Sprintf("owner-%s-%d", way, i), nil)}
			for j := range 3 {
				ref := cmRef(g.owner)
				if way == "foreground-nonblocking" {
					nonBlocking(&ref)
				}
				g.deps = append(g.deps, e.configMap(t, ns, fmt.Sprintf("dep-%s-%d-%d", way, i, j), nil, ref))
			}
			groups = append(groups, g)
		}
	}
	start := time.Now()
	for _, g := range groups {
		switch g.way {
		case "background":
			e.deleteCM(t, g.owner, metav1.DeletePropagationBackground)
		case "foreground", "foreground-nonblocking":
			e.deleteCM(t, g.owner, metav1.DeletePropagationForeground)
		case "orphan":
			e.deleteCM(t, g.owner, metav1.DeletePropagationOrphan)
		case "default":
			e.deleteCM(t, g.owner, "")
		}
	}
	for _, g := range groups {
		e.waitGone(t, g.owner)
		for _, d := range g.deps {
			if g.way == "orphan" {
				testkit.Eventually(t, d.Name+" orphaned", func() bool {
					o := e.getCM(t, d)
					return o != nil && len(o.OwnerReferences) == 0
				})
				assertState(t, e.getCM(t, d), d.Name, nil, nil, false)
			} else {
				e.waitGone(t, d)
			}
		}
	}
	t.Logf("50 groups of 1 owner + 3 dependents settled in %v", time.Since(start).Round(time.Millisecond))
	if time.Since(start) > 60*time.Second {
		t.Errorf("stress took %v, upstream's bound is 60s", time.Since(start))
	}
}

func TestDeploymentChainDeletedInForeground(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	dep, err := e.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(3)),
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
	testkit.Eventually(t, "the controllers create a ReplicaSet and 3 Pods", func() bool {
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 3
	})
	fg := metav1.DeletePropagationForeground
	if err := e.client.AppsV1().Deployments(ns).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the Deployment is gone", func() bool {
		_, err := e.client.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Foreground: by the time the Deployment goes, its ReplicaSets and Pods are gone.
	rss, err := e.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(rss.Items) != 0 {
		t.Errorf("ReplicaSets left after the Deployment: %d (%v)", len(rss.Items), err)
	}
	pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("Pods left after the Deployment: %d (%v)", len(pods.Items), err)
	}
}

func TestClusterScopedOwners(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	cr, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-test-owner-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	valid := e.configMap(t, ns, "valid", nil, refTo("rbac.authorization.k8s.io/v1", "ClusterRole", cr))
	missing := e.configMap(t, ns, "missing", nil, metav1.OwnerReference{
		APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "never-existed", UID: uuid.NewUUID()})
	unknownRef := metav1.OwnerReference{APIVersion: "unknown.gcscope.io/v1", Kind: "Thing", Name: "x", UID: uuid.NewUUID()}
	unknown := e.configMap(t, ns, "unknown-kind", nil, unknownRef)

	e.waitGone(t, missing)
	testkit.Consistently(t, "dependents of a valid owner and of an unknown kind stay", 3*time.Second, func() bool {
		return e.getCM(t, valid) != nil && e.getCM(t, unknown) != nil
	})
	assertState(t, e.getCM(t, unknown), "unknown-kind", []types.UID{unknownRef.UID}, nil, false)
	ex, ok := e.engine.Explain(unknown.UID)
	if !ok || len(ex.Owners) != 1 || ex.Owners[0].State != gc.OwnerUnresolvable {
		t.Errorf("explain unknown-kind: want one unresolvable owner (a kind the apiserver does not serve), got %+v", ex.Owners)
	}

	if err := e.client.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, valid)
	assertState(t, e.getCM(t, unknown), "unknown-kind", []types.UID{unknownRef.UID}, nil, false)
}

func TestClusterScopedDependentOfNamespacedOwnerIsNeverDeleted(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	owner := e.configMap(t, ns, "owner", nil)
	cr, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "gc-test-invalid-", OwnerReferences: []metav1.OwnerReference{cmRef(owner, nonBlocking)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.client.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{})
	e.waitObserved(t, cr.UID)
	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, owner)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.UID == cr.UID && ev.Type == corev1.EventTypeWarning && ev.Reason == "OwnerRefInvalidNamespace" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Warning event on the cluster-scoped dependent; engine: %s", e.explain(cr.UID))
	}
	testkit.Consistently(t, "the ClusterRole stays", 2*time.Second, func() bool {
		return e.get(t, rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "", cr.Name, cr.UID) != nil
	})
}
