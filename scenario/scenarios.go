package scenario

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// scenario is one case: what the user is told, and how it is played.
type scenario struct {
	Info
	// extraNamespaces are created beside the run's own, named with these suffixes.
	extraNamespaces []string
	// steps builds the scenario's steps for a run (x nil: for their titles only).
	steps func(x *runner) []step
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
		},
		steps: danglingSteps,
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
		},
		steps: foregroundHeldSteps,
	},
	{
		Info: Info{
			ID:    Orphan,
			Title: "Orphan delete",
			Description: "Deployment api runs a ReplicaSet with two Pods. Deleting api with propagationPolicy " +
				"Orphan puts the orphan finalizer on it: the collector removes api's reference from the " +
				"ReplicaSet, then the finalizer, and api goes. The ReplicaSet and its Pods stay, owned by no " +
				"Deployment (kubectl delete --cascade=orphan).",
		},
		steps: orphanSteps,
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
		},
		steps: cycleSteps,
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
		},
		extraNamespaces: []string{"-away"},
		steps:           crossNamespaceSteps,
	},
	{
		Info: Info{
			ID:    CRDDeleted,
			Title: "CRD deleted under its custom resources",
			Description: "A CustomResourceDefinition of kind Gear is made for the run, and Gear g1 owns a " +
				"ConfigMap and a Secret. Deleting the CRD makes the apiserver delete every Gear with it; the " +
				"collector sees the owner go and deletes the ConfigMap and the Secret, then stops monitoring " +
				"the resource, which discovery no longer lists.",
		},
		steps: crdDeletedSteps,
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
		},
		steps: namespaceHeldSteps,
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
		},
		steps: namespaceBlockedSteps,
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
