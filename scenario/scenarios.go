package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
)

// scenario is one case: what the user is told, and how it is played.
type scenario struct {
	Info
	// extraNamespaces are created beside the run's own, named with these suffixes.
	extraNamespaces []string
	play            func(context.Context, *runner) error
}

// The scenario ids.
const (
	Dangling       = "dangling"
	ForegroundHeld = "foreground-held"
	Orphan         = "orphan"
	Cycle          = "cycle"
	CrossNamespace = "cross-namespace"
	CRDDeleted     = "crd-deleted"
	// NamespaceHeld and NamespaceBlocked are deletions the collector does not own: the
	// namespace controller's.
	NamespaceHeld    = "namespace-held"
	NamespaceBlocked = "namespace-blocked"
)

// scenarios, in menu order.
var scenarios = []scenario{
	{
		Info: Info{
			ID:    Dangling,
			Title: "Dangling owner reference",
			Description: "Two ConfigMaps name Deployment ghost as their owner, with a uid that no object has. " +
				"The collector looks the owner up, the apiserver answers 404, and the reference is dangling: " +
				"lonely, whose only owner it was, is deleted; shared also has a real owner, keeper, so it stays " +
				"and the collector patches the dangling reference out of it. Upstream does the same: an owner " +
				"reference proves nothing until the owner is found.",
			Steps: []string{
				"Create ConfigMap keeper, a real owner",
				"Create lonely (owner: Deployment ghost, a uid no object has) and shared (owners: ghost and keeper)",
				"Watch: the collector deletes lonely and removes the ghost reference from shared",
			},
		},
		play: playDangling,
	},
	{
		Info: Info{
			ID:    ForegroundHeld,
			Title: "Foreground delete with a held Pod",
			Description: "Deployment web's Pod carries a finalizer that no controller removes (" + HoldFinalizer + "). " +
				"Deleting web in the foreground puts foregroundDeletion on it; the collector deletes its " +
				"ReplicaSet in the foreground too, then the Pod. The Pod is only marked for deletion, the " +
				"finalizer holds it, so the ReplicaSet and the Deployment wait on a blocking dependent. " +
				"Release the hold and the cascade finishes from the bottom: Pod, ReplicaSet, Deployment.",
			Steps: []string{
				"Create Deployment web, whose Pod template carries the finalizer " + HoldFinalizer,
				"Wait for the controllers to create its ReplicaSet and Pod",
				"Delete Deployment web with propagationPolicy Foreground",
				"Watch: the collector deletes the ReplicaSet in the foreground, then the Pod, which the finalizer holds",
				"Release the hold: remove the finalizer from the Pod (the button, or kubectl)",
				"Watch: the Pod goes, then the ReplicaSet, then the Deployment",
			},
		},
		play: playForegroundHeld,
	},
	{
		Info: Info{
			ID:    Orphan,
			Title: "Orphan delete",
			Description: "Deployment api runs a ReplicaSet with two Pods. Deleting api with propagationPolicy " +
				"Orphan puts the orphan finalizer on it: the collector removes api's reference from the " +
				"ReplicaSet, then the finalizer, and api goes. The ReplicaSet and its Pods stay, owned by no " +
				"Deployment (kubectl delete --cascade=orphan).",
			Steps: []string{
				"Create Deployment api with 2 replicas",
				"Wait for the controllers to create its ReplicaSet and Pods",
				"Delete Deployment api with propagationPolicy Orphan",
				"Watch: the collector removes api's reference from the ReplicaSet, then the orphan finalizer; api goes, the ReplicaSet and its Pods stay",
			},
		},
		play: playOrphan,
	},
	{
		Info: Info{
			ID:    Cycle,
			Title: "Ownership cycle",
			Description: "ConfigMaps a, b and c own each other in a circle (a owns b, b owns c, c owns a), every " +
				"reference blocking. Deleting a in the foreground makes a wait for b, b for c and c for a. " +
				"The collector breaks the circle as upstream does: before it deletes a dependent in the " +
				"foreground, it makes that dependent's references to waiting owners non-blocking, so nobody " +
				"waits for ever, and all three go.",
			Steps: []string{
				"Create ConfigMap a, b owned by a, and c owned by b",
				"Close the circle: a gets an owner reference to c",
				"Delete a with propagationPolicy Foreground",
				"Watch: the collector unblocks the circle and deletes a, b and c",
			},
		},
		play: playCycle,
	},
	{
		Info: Info{
			ID:    CrossNamespace,
			Title: "Cross-namespace owner",
			Description: "ConfigMap stray, in the run's -away namespace, names ConfigMap owner of the run's " +
				"namespace as its owner. Owner references cannot cross namespaces: the collector looks the " +
				"owner up in stray's own namespace, finds nothing there, and, as upstream, deletes stray and " +
				"records a Warning event OwnerRefInvalidNamespace on it. child, owner's dependent in owner's " +
				"own namespace, stays.",
			Steps: []string{
				"Create ConfigMap owner and its dependent child",
				"Create stray in the -away namespace, naming owner (of another namespace) as its owner",
				"Watch: the collector deletes stray and records a Warning event OwnerRefInvalidNamespace; child stays",
			},
		},
		extraNamespaces: []string{"-away"},
		play:            playCrossNamespace,
	},
	{
		Info: Info{
			ID:    CRDDeleted,
			Title: "CRD deleted under its custom resources",
			Description: "A CustomResourceDefinition of kind Gear is made for the run, and Gear g1 owns a " +
				"ConfigMap and a Secret. Deleting the CRD makes the apiserver delete every Gear with it; the " +
				"collector sees the owner go and deletes the ConfigMap and the Secret, then stops monitoring " +
				"the resource, which discovery no longer lists.",
			Steps: []string{
				"Create a CustomResourceDefinition of kind Gear",
				"Create Gear g1, and a ConfigMap and a Secret it owns",
				"Delete the CustomResourceDefinition",
				"Watch: the apiserver deletes g1 with its CRD; the collector deletes the ConfigMap and the Secret",
			},
		},
		play: playCRDDeleted,
	},
	{
		Info: Info{
			ID:    NamespaceHeld,
			Title: "A namespace held by a finalizer",
			Description: "The run's namespace holds ConfigMaps settings and ledger and Deployment worker; " + FinalizerManager +
				", a controller that does not run here, has put its finalizer " + ControllerFinalizer + " on ledger (managedFields " +
				"record who). Deleting the namespace, the namespace controller deletes its content, but ledger is only marked for " +
				"deletion: its finalizer holds it, so the namespace stays Terminating with NamespaceContentRemaining and " +
				"NamespaceFinalizersRemaining. The collector has nothing to do with it. Release the hold (the JSON patch an " +
				"operator would run) and ledger goes, then the namespace.",
			Steps: []string{
				"Create ConfigMaps settings and ledger and Deployment worker",
				"Wait for the controllers to create worker's ReplicaSet and Pod",
				"As " + FinalizerManager + " (its field manager), add the finalizer " + ControllerFinalizer + " to ledger",
				"Delete the namespace",
				"Watch: the namespace controller deletes everything but ledger, which the finalizer holds; the namespace stays Terminating",
				"Release the hold: remove the finalizer from ledger (the button, or kubectl patch with a test op)",
				"Watch: ledger goes, then the namespace",
			},
		},
		play: playNamespaceHeld,
	},
	{
		Info: Info{
			ID:    NamespaceBlocked,
			Title: "A namespace blocked by an unavailable API",
			Description: "An APIService registers an aggregated API group whose Service does not exist, so discovery fails " +
				"for that group. Deleting the run's namespace, the namespace controller deletes its ConfigMap but cannot " +
				"finish: it cannot list the failing group, so it cannot tell the namespace is empty, and the namespace " +
				"stays Terminating with NamespaceDeletionDiscoveryFailure. Every namespace deleted in the cluster meanwhile " +
				"waits the same way. Release (delete the APIService) and the namespace controller's next try finishes, " +
				"within a minute (it retries with a growing backoff).",
			Steps: []string{
				"Create an APIService whose Service does not exist; wait until discovery fails for its group",
				"Create ConfigMap settings",
				"Delete the namespace",
				"Watch: the namespace controller deletes settings but stops on NamespaceDeletionDiscoveryFailure; the namespace stays Terminating",
				"Release the hold: delete the APIService (the button, or kubectl delete apiservice)",
				"Watch: discovery recovers; at its next try the namespace controller finishes and the namespace goes",
			},
		},
		play: playNamespaceBlocked,
	},
}

var (
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	secretsGVR    = corev1.SchemeGroupVersion.WithResource("secrets")
)

// blocking is a blocking, non-controller reference to obj.
func blocking(apiVersion, kind string, obj metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: ptr.To(true)}
}

func (x *runner) configMap(ctx context.Context, ns, name string, finalizers []string, owners ...metav1.OwnerReference) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: x.meta(ns, name, owners...), Data: map[string]string{"run": x.ns}}
	cm.Finalizers = finalizers
	got, err := x.p.core.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, fmt.Errorf("create ConfigMap %s: %w", name, err)
	}
	return got, nil
}

// gone reports whether the object name of gvr in ns with uid no longer exists. A 404 of
// a resource no longer served (a CRD deleted) counts as gone.
func (x *runner) gone(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID) (bool, error) {
	u, err := x.p.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, nil // transient: ask again
	}
	return u.GetUID() != uid, nil
}

func playDangling(ctx context.Context, x *runner) error {
	var keeper, lonely, shared *corev1.ConfigMap
	err := x.step(ctx, 0, func() (string, error) {
		var err error
		if keeper, err = x.configMap(ctx, x.ns, "keeper", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", keeper, false)
		return "Created ConfigMap keeper", x.waitObserved(ctx, keeper.UID)
	})
	if err != nil {
		return err
	}
	ghost := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "ghost", UID: uuid.NewUUID(), BlockOwnerDeletion: ptr.To(true)}
	var created time.Time
	err = x.step(ctx, 1, func() (string, error) {
		only := ghost
		only.Controller = ptr.To(true)
		var err error
		if lonely, err = x.configMap(ctx, x.ns, "lonely", nil, only); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", lonely, true)
		if shared, err = x.configMap(ctx, x.ns, "shared", nil, ghost, blocking("v1", "ConfigMap", keeper)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", shared, false)
		created = time.Now()
		// No wait for the collector to observe them: it may act on them at once.
		return fmt.Sprintf("Created lonely and shared, naming Deployment ghost (uid %s, which no object has) as their owner", ghost.UID), nil
	})
	if err != nil {
		return err
	}
	return x.step(ctx, 2, func() (string, error) {
		err := x.until(ctx, "lonely deleted and the ghost reference removed from shared", func(ctx context.Context) (bool, error) {
			if g, _ := x.gone(ctx, configMapsGVR, x.ns, "lonely", lonely.UID); !g {
				return false, nil
			}
			s, err := x.p.core.CoreV1().ConfigMaps(x.ns).Get(ctx, "shared", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return !slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == ghost.UID }), nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("The collector deleted lonely and removed the ghost reference from shared, which keeper still owns (%s after they were created)", since(created)), nil
	})
}

// deployment is a Deployment of the run; with hold, its Pods carry HoldFinalizer.
func (x *runner) deployment(name string, replicas int32, hold bool) *appsv1.Deployment {
	labels := map[string]string{"app": name, LabelRun: x.ns}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: "nginx:1.27"}},
			// No node runs them; do not wait 30 s for nothing when deleted.
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
		},
	}
	if hold {
		tmpl.Finalizers = []string{HoldFinalizer}
	}
	return &appsv1.Deployment{
		ObjectMeta: x.meta(x.ns, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: tmpl,
		},
	}
}

// waitControlled waits until the controllers have made dep's ReplicaSet and its pods Pods,
// records them and waits until the collector has observed them all.
func (x *runner) waitControlled(ctx context.Context, dep *appsv1.Deployment, pods int) (*appsv1.ReplicaSet, []corev1.Pod, error) {
	var rs *appsv1.ReplicaSet
	var owned []corev1.Pod
	err := x.until(ctx, "the controllers to create the ReplicaSet and Pods (is kube-controller-manager running?)", func(ctx context.Context) (bool, error) {
		rss, err := x.p.core.AppsV1().ReplicaSets(x.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + dep.Name})
		if err != nil {
			return false, nil
		}
		rs = nil
		for i := range rss.Items {
			if metav1.IsControlledBy(&rss.Items[i], dep) {
				rs = &rss.Items[i]
			}
		}
		if rs == nil {
			return false, nil
		}
		list, err := x.p.core.CoreV1().Pods(x.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + dep.Name})
		if err != nil {
			return false, nil
		}
		owned = owned[:0]
		for _, p := range list.Items {
			if metav1.IsControlledBy(&p, rs) {
				owned = append(owned, p)
			}
		}
		return len(owned) >= pods, nil
	})
	if err != nil {
		return nil, nil, err
	}
	x.add("apps/v1", "ReplicaSet", rs, false)
	uids := []types.UID{dep.UID, rs.UID}
	for i := range owned {
		x.add("v1", "Pod", &owned[i], false)
		uids = append(uids, owned[i].UID)
	}
	return rs, owned, x.waitObserved(ctx, uids...)
}

func (x *runner) deleteDeployment(ctx context.Context, dep *appsv1.Deployment, policy metav1.DeletionPropagation) (string, error) {
	err := x.p.core.AppsV1().Deployments(x.ns).Delete(ctx, dep.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &dep.UID}})
	if err != nil {
		return "", fmt.Errorf("delete Deployment %s: %w", dep.Name, err)
	}
	return fmt.Sprintf("Deleted Deployment %s with propagationPolicy %s", dep.Name, policy), nil
}

func playForegroundHeld(ctx context.Context, x *runner) error {
	var dep *appsv1.Deployment
	err := x.step(ctx, 0, func() (string, error) {
		var err error
		dep, err = x.p.core.AppsV1().Deployments(x.ns).Create(ctx, x.deployment("web", 1, true), metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return "", fmt.Errorf("create Deployment web: %w", err)
		}
		x.add("apps/v1", "Deployment", dep, true)
		return "Created Deployment web (1 replica, its Pods held by " + HoldFinalizer + ")", nil
	})
	if err != nil {
		return err
	}
	var rs *appsv1.ReplicaSet
	var pod corev1.Pod
	err = x.step(ctx, 1, func() (string, error) {
		var pods []corev1.Pod
		var err error
		if rs, pods, err = x.waitControlled(ctx, dep, 1); err != nil {
			return "", err
		}
		pod = pods[0]
		return fmt.Sprintf("The controllers created ReplicaSet %s and Pod %s", rs.Name, pod.Name), nil
	})
	if err != nil {
		return err
	}
	if err := x.step(ctx, 2, func() (string, error) { return x.deleteDeployment(ctx, dep, metav1.DeletePropagationForeground) }); err != nil {
		return err
	}
	err = x.step(ctx, 3, func() (string, error) {
		err := x.until(ctx, "the Pod deleted and held, the ReplicaSet waiting on it", func(ctx context.Context) (bool, error) {
			p, err := x.p.core.CoreV1().Pods(x.ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("pod %s went without waiting on its finalizer: was the hold released early?", pod.Name)
			}
			if err != nil || p.DeletionTimestamp == nil {
				return false, nil
			}
			r, err := x.p.core.AppsV1().ReplicaSets(x.ns).Get(ctx, rs.Name, metav1.GetOptions{})
			return err == nil && r.DeletionTimestamp != nil && slices.Contains(r.Finalizers, metav1.FinalizerDeleteDependents), nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("The collector deleted ReplicaSet %s in the foreground, then Pod %s; %s holds the Pod, so the ReplicaSet and the Deployment wait", rs.Name, pod.Name, HoldFinalizer), nil
	})
	if err != nil {
		return err
	}
	err = x.waitForUser(ctx, 4, "Waiting for you: release the hold (or kubectl patch the Pod's finalizers away)", func(ctx context.Context) (bool, error) {
		p, err := x.p.core.CoreV1().Pods(x.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && !slices.Contains(p.Finalizers, HoldFinalizer), nil
	})
	if err != nil {
		return err
	}
	x.p.update(x.r, func(s *Run) {
		s.Steps[4].State, s.Steps[4].Detail, s.Steps[4].At = StepDone, "The hold on Pod "+pod.Name+" was released", time.Now()
	})
	return x.step(ctx, 5, func() (string, error) {
		err := x.until(ctx, "the Pod, the ReplicaSet and the Deployment gone", func(ctx context.Context) (bool, error) {
			for _, o := range []struct {
				gvr  schema.GroupVersionResource
				name string
				uid  types.UID
			}{
				{corev1.SchemeGroupVersion.WithResource("pods"), pod.Name, pod.UID},
				{appsv1.SchemeGroupVersion.WithResource("replicasets"), rs.Name, rs.UID},
				{appsv1.SchemeGroupVersion.WithResource("deployments"), dep.Name, dep.UID},
			} {
				if g, _ := x.gone(ctx, o.gvr, x.ns, o.name, o.uid); !g {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Pod %s went, then ReplicaSet %s, then Deployment web: the foreground deletion is finished", pod.Name, rs.Name), nil
	})
}

func playOrphan(ctx context.Context, x *runner) error {
	var dep *appsv1.Deployment
	err := x.step(ctx, 0, func() (string, error) {
		var err error
		dep, err = x.p.core.AppsV1().Deployments(x.ns).Create(ctx, x.deployment("api", 2, false), metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return "", fmt.Errorf("create Deployment api: %w", err)
		}
		x.add("apps/v1", "Deployment", dep, true)
		return "Created Deployment api with 2 replicas", nil
	})
	if err != nil {
		return err
	}
	var rs *appsv1.ReplicaSet
	var pods []corev1.Pod
	err = x.step(ctx, 1, func() (string, error) {
		var err error
		if rs, pods, err = x.waitControlled(ctx, dep, 2); err != nil {
			return "", err
		}
		return fmt.Sprintf("The controllers created ReplicaSet %s and Pods %s and %s", rs.Name, pods[0].Name, pods[1].Name), nil
	})
	if err != nil {
		return err
	}
	var deleted time.Time
	err = x.step(ctx, 2, func() (string, error) {
		deleted = time.Now()
		return x.deleteDeployment(ctx, dep, metav1.DeletePropagationOrphan)
	})
	if err != nil {
		return err
	}
	return x.step(ctx, 3, func() (string, error) {
		err := x.until(ctx, "api gone and its ReplicaSet orphaned", func(ctx context.Context) (bool, error) {
			if g, _ := x.gone(ctx, appsv1.SchemeGroupVersion.WithResource("deployments"), x.ns, dep.Name, dep.UID); !g {
				return false, nil
			}
			r, err := x.p.core.AppsV1().ReplicaSets(x.ns).Get(ctx, rs.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("the ReplicaSet %s was deleted: an orphan delete must keep it", rs.Name)
			}
			return err == nil && !slices.ContainsFunc(r.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == dep.UID }), nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("The collector removed api's reference from ReplicaSet %s and the orphan finalizer from api (%s after the delete); api is gone, %s and its Pods stay", rs.Name, since(deleted), rs.Name), nil
	})
}

func playCycle(ctx context.Context, x *runner) error {
	var a, b, c *corev1.ConfigMap
	err := x.step(ctx, 0, func() (string, error) {
		var err error
		if a, err = x.configMap(ctx, x.ns, "a", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", a, true)
		if b, err = x.configMap(ctx, x.ns, "b", nil, blocking("v1", "ConfigMap", a)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", b, false)
		if c, err = x.configMap(ctx, x.ns, "c", nil, blocking("v1", "ConfigMap", b)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", c, false)
		return "Created a, b owned by a, and c owned by b", x.waitObserved(ctx, a.UID, b.UID, c.UID)
	})
	if err != nil {
		return err
	}
	err = x.step(ctx, 1, func() (string, error) {
		a.OwnerReferences = []metav1.OwnerReference{blocking("v1", "ConfigMap", c)}
		var err error
		if a, err = x.p.core.CoreV1().ConfigMaps(x.ns).Update(ctx, a, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("give a an owner reference to c: %w", err)
		}
		if e := x.p.opts.Engine; e != nil {
			// Delete only once the collector's graph holds the circle.
			err = x.until(ctx, "the collector to see a owned by c", func(context.Context) (bool, error) {
				n, ok := e.Node(a.UID)
				return ok && slices.ContainsFunc(n.Owners, func(o gc.OwnerRef) bool { return o.UID == c.UID }), nil
			})
		}
		return "a is owned by c: a owns b owns c owns a", err
	})
	if err != nil {
		return err
	}
	var deleted time.Time
	err = x.step(ctx, 2, func() (string, error) {
		deleted = time.Now()
		err := x.p.core.CoreV1().ConfigMaps(x.ns).Delete(ctx, "a", metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationForeground), Preconditions: &metav1.Preconditions{UID: &a.UID}})
		if err != nil {
			return "", fmt.Errorf("delete a: %w", err)
		}
		return "Deleted a with propagationPolicy Foreground: a waits for b, b for c, c for a", nil
	})
	if err != nil {
		return err
	}
	return x.step(ctx, 3, func() (string, error) {
		err := x.until(ctx, "a, b and c gone", func(ctx context.Context) (bool, error) {
			for _, cm := range []*corev1.ConfigMap{a, b, c} {
				if g, _ := x.gone(ctx, configMapsGVR, x.ns, cm.Name, cm.UID); !g {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("The collector broke the circle: a, b and c are gone, %s after the delete", since(deleted)), nil
	})
}

func playCrossNamespace(ctx context.Context, x *runner) error {
	away := x.namespaces[1]
	var owner, child, stray *corev1.ConfigMap
	err := x.step(ctx, 0, func() (string, error) {
		var err error
		if owner, err = x.configMap(ctx, x.ns, "owner", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", owner, false)
		if child, err = x.configMap(ctx, x.ns, "child", nil, blocking("v1", "ConfigMap", owner)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", child, false)
		return fmt.Sprintf("Created owner and child in %s", x.ns), x.waitObserved(ctx, owner.UID, child.UID)
	})
	if err != nil {
		return err
	}
	var created time.Time
	err = x.step(ctx, 1, func() (string, error) {
		var err error
		if stray, err = x.configMap(ctx, away, "stray", nil, blocking("v1", "ConfigMap", owner)); err != nil {
			return "", err
		}
		created = time.Now()
		x.add("v1", "ConfigMap", stray, true)
		return fmt.Sprintf("Created stray in %s, naming owner of %s (uid %s) as its owner", away, x.ns, owner.UID), nil
	})
	if err != nil {
		return err
	}
	return x.step(ctx, 2, func() (string, error) {
		err := x.until(ctx, "stray deleted", func(ctx context.Context) (bool, error) {
			return x.gone(ctx, configMapsGVR, away, stray.Name, stray.UID)
		})
		if err != nil {
			return "", err
		}
		took := since(created)
		// The event may be written a moment after the delete.
		var event string
		_ = x.until(ctx, "the OwnerRefInvalidNamespace event", func(ctx context.Context) (bool, error) {
			events, err := x.p.core.CoreV1().Events(away).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, ev := range events.Items {
				if ev.Reason == "OwnerRefInvalidNamespace" && ev.InvolvedObject.UID == stray.UID {
					event = fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message)
					return true, nil
				}
			}
			return time.Since(created) > 30*time.Second, nil
		})
		if g, _ := x.gone(ctx, configMapsGVR, x.ns, child.Name, child.UID); g {
			return "", fmt.Errorf("child was deleted: its owner is in its own namespace and exists")
		}
		if event == "" {
			event = "no OwnerRefInvalidNamespace event was seen"
		}
		return fmt.Sprintf("The collector deleted stray (%s after it was created); child stays. Event on stray: %s", took, event), nil
	})
}

func playCRDDeleted(ctx context.Context, x *runner) error {
	// The group is the run's own, so every run has its own CRD.
	group := x.ns + ".gcscope.io"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gears"}
	crdName := gvr.Resource + "." + group
	var crd *apiextensionsv1.CustomResourceDefinition
	err := x.step(ctx, 0, func() (string, error) {
		def := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: crdName, Labels: map[string]string{LabelRun: x.ns}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gears", Singular: "gear", Kind: "Gear", ListKind: "GearList"},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}},
				}},
			},
		}
		var err error
		if crd, err = x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, def, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("create CRD %s: %w", crdName, err)
		}
		x.add("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd, false)
		err = x.until(ctx, "the CRD established", func(ctx context.Context) (bool, error) {
			got, err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if e := x.p.opts.Engine; e != nil {
			e.RefreshDiscovery()
		}
		return "Created CustomResourceDefinition " + crdName, err
	})
	if err != nil {
		return err
	}
	var gear *unstructured.Unstructured
	var cm *corev1.ConfigMap
	var secret *corev1.Secret
	err = x.step(ctx, 1, func() (string, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Gear",
			"metadata": map[string]any{"name": "g1", "labels": map[string]any{LabelRun: x.ns}},
			"spec":     map[string]any{"teeth": int64(12)},
		}}
		// Served a moment after it is established.
		err := x.until(ctx, "Gear g1 created", func(ctx context.Context) (bool, error) {
			var err error
			gear, err = x.p.dyn.Resource(gvr).Namespace(x.ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
			return err == nil, nil
		})
		if err != nil {
			return "", err
		}
		x.add(gvr.GroupVersion().String(), "Gear", gear, true)
		ref := blocking(gvr.GroupVersion().String(), "Gear", gear)
		ref.Controller = ptr.To(true)
		if cm, err = x.configMap(ctx, x.ns, "g1-config", nil, ref); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", cm, false)
		s := &corev1.Secret{ObjectMeta: x.meta(x.ns, "g1-credentials", ref), StringData: map[string]string{"token": "g1"}}
		if secret, err = x.p.core.CoreV1().Secrets(x.ns).Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("create Secret g1-credentials: %w", err)
		}
		x.add("v1", "Secret", secret, false)
		return "Created Gear g1, ConfigMap g1-config and Secret g1-credentials (both owned by g1)", x.waitObserved(ctx, gear.GetUID(), cm.UID, secret.UID)
	})
	if err != nil {
		return err
	}
	var deleted time.Time
	err = x.step(ctx, 2, func() (string, error) {
		deleted = time.Now()
		if err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &crd.UID}}); err != nil {
			return "", fmt.Errorf("delete CRD %s: %w", crdName, err)
		}
		return "Deleted CustomResourceDefinition " + crdName, nil
	})
	if err != nil {
		return err
	}
	return x.step(ctx, 3, func() (string, error) {
		var left []string
		err := x.until(ctx, "g1, its ConfigMap and Secret, and the CRD gone", func(ctx context.Context) (bool, error) {
			left = left[:0]
			if g, _ := x.gone(ctx, gvr, x.ns, "g1", gear.GetUID()); !g {
				left = append(left, "Gear g1")
			}
			if g, _ := x.gone(ctx, configMapsGVR, x.ns, cm.Name, cm.UID); !g {
				left = append(left, "ConfigMap "+cm.Name)
			}
			if g, _ := x.gone(ctx, secretsGVR, x.ns, secret.Name, secret.UID); !g {
				left = append(left, "Secret "+secret.Name)
			}
			if _, err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "the CRD")
			}
			return len(left) == 0, nil
		})
		if err != nil {
			return "", fmt.Errorf("%w (still there: %s)", err, strings.Join(left, ", "))
		}
		if e := x.p.opts.Engine; e != nil {
			e.RefreshDiscovery() // stop monitoring the resource now, not at the next period
		}
		return fmt.Sprintf("The apiserver deleted g1 with its CRD, and the collector its ConfigMap and Secret (%s after the delete)", since(deleted)), nil
	})
}
