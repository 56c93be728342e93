package deletion

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// The steps of a namespace's deletion, as kube-controller-manager v1.37's namespace
// controller takes them (pkg/controller/namespace/deletion: Pods first, and nothing else
// until they are gone; then every other deletable resource).
const (
	stepPods = 1 + iota
	stepContent
	stepNamespace
	stepDependents // the namespace's own dependents, collected once it is gone
)

// NamespaceOrder says the order a namespace deletion follows.
const NamespaceOrder = "the namespace controller deletes the namespace's Pods first and waits until they are gone, " +
	"then all its other content at once (kube-controller-manager v1.37); once the namespace is empty it removes the kubernetes finalizer " +
	"and the namespace goes, then the collector deletes the namespace's own dependents. Events go too and are not counted here (gcscope does not watch them)"

// IsNamespace reports whether ref is a Namespace.
func IsNamespace(ref gc.ObjectRef) bool { return ref.APIVersion == "v1" && ref.Kind == "Namespace" }

// PredictNamespace predicts deleting the namespace of uid with policy: all its content, in
// the namespace controller's order, what finalizers will hold, and the namespace's own
// dependents (cluster-scoped objects it owns) as the collector treats them with policy.
// False if the graph does not hold it.
func (x *Explainer) PredictNamespace(uid types.UID, policy metav1.DeletionPropagation) (gc.Prediction, bool) {
	p, ok := x.graph.PredictDelete(uid, policy)
	if !ok || !IsNamespace(p.Target) {
		return p, ok
	}
	p.Order = NamespaceOrder
	deleted := p.Deleted
	p.Deleted, p.Waiting = nil, nil
	for _, d := range deleted {
		if d.Object.UID == uid {
			d.Step, d.Reason = stepNamespace, "the target: it goes once its content is gone"
		} else if policy == metav1.DeletePropagationForeground {
			d.Step = stepContent // the namespace waits for them, as for its content
		} else {
			d.Step = stepDependents
		}
		p.Deleted = append(p.Deleted, d)
	}
	for _, o := range x.graph.InNamespace(p.Target.Name) {
		d := gc.PredictedObject{Object: o.ObjectRef, Finalizers: gc.HeldBy(o.Finalizers), Step: stepContent,
			Reason: "the namespace controller deletes the namespace's content once its Pods are gone"}
		if o.APIVersion == "v1" && o.Kind == "Pod" {
			d.Step, d.Reason = stepPods, "the namespace controller deletes the namespace's Pods first"
		}
		if o.BeingDeleted {
			d.Reason = "already being deleted"
		}
		p.Deleted = append(p.Deleted, d)
	}
	for _, d := range p.Deleted {
		if len(d.Finalizers) > 0 {
			p.Waiting = append(p.Waiting, d)
		}
	}
	byStep := func(a, b gc.PredictedObject) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name), cmp.Compare(a.Object.UID, b.Object.UID))
	}
	slices.SortFunc(p.Deleted, byStep)
	slices.SortFunc(p.Waiting, byStep)
	return p, true
}
