package scenario

// The scenarios played on a Deployment and what its controllers make: a foreground
// deletion held by a finalizer, and an orphaning delete.

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

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

func foregroundHeldSteps(x *runner) []step {
	var dep *appsv1.Deployment
	var rs *appsv1.ReplicaSet
	var pod corev1.Pod
	return []step{{title: "Create Deployment web, whose Pod template carries the finalizer " + HoldFinalizer, run: func(ctx context.Context) (string, error) {
		var err error
		dep, err = x.p.core.AppsV1().Deployments(x.ns).Create(ctx, x.deployment("web", 1, true), metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return "", fmt.Errorf("create Deployment web: %w", err)
		}
		x.add("apps/v1", "Deployment", dep, true)
		return "Created Deployment web (1 replica, its Pods held by " + HoldFinalizer + ")", nil
	}},
		{title: "Wait for the controllers to create its ReplicaSet and Pod", run: func(ctx context.Context) (string, error) {
			var pods []corev1.Pod
			var err error
			if rs, pods, err = x.waitControlled(ctx, dep, 1); err != nil {
				return "", err
			}
			pod = pods[0]
			return fmt.Sprintf("The controllers created ReplicaSet %s and Pod %s", rs.Name, pod.Name), nil
		}},
		{title: "Delete Deployment web with propagationPolicy Foreground", run: func(ctx context.Context) (string, error) {
			return x.deleteDeployment(ctx, dep, metav1.DeletePropagationForeground)
		}},
		{title: "Watch: the collector deletes the ReplicaSet in the foreground, then the Pod, which the finalizer holds", run: func(ctx context.Context) (string, error) {
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
		}},
		{title: "Release the hold: remove the finalizer from the Pod (the button, or kubectl)", user: &userWait{
			awaiting: func() string { return "Waiting for you: release the hold (or kubectl patch the Pod's finalizers away)" },
			released: func(ctx context.Context) (bool, error) {
				p, err := x.p.core.CoreV1().Pods(x.ns).Get(ctx, pod.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return err == nil && !slices.Contains(p.Finalizers, HoldFinalizer), nil
			},
		}, run: func(context.Context) (string, error) { return "The hold on Pod " + pod.Name + " was released", nil }},
		{title: "Watch: the Pod goes, then the ReplicaSet, then the Deployment", run: func(ctx context.Context) (string, error) {
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
		}}}
}

func orphanSteps(x *runner) []step {
	var dep *appsv1.Deployment
	var rs *appsv1.ReplicaSet
	var pods []corev1.Pod
	var deleted time.Time
	return []step{{title: "Create Deployment api with 2 replicas", run: func(ctx context.Context) (string, error) {
		var err error
		dep, err = x.p.core.AppsV1().Deployments(x.ns).Create(ctx, x.deployment("api", 2, false), metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return "", fmt.Errorf("create Deployment api: %w", err)
		}
		x.add("apps/v1", "Deployment", dep, true)
		return "Created Deployment api with 2 replicas", nil
	}},
		{title: "Wait for the controllers to create its ReplicaSet and Pods", run: func(ctx context.Context) (string, error) {
			var err error
			if rs, pods, err = x.waitControlled(ctx, dep, 2); err != nil {
				return "", err
			}
			return fmt.Sprintf("The controllers created ReplicaSet %s and Pods %s and %s", rs.Name, pods[0].Name, pods[1].Name), nil
		}},
		{title: "Delete Deployment api with propagationPolicy Orphan", run: func(ctx context.Context) (string, error) {
			deleted = time.Now()
			return x.deleteDeployment(ctx, dep, metav1.DeletePropagationOrphan)
		}},
		{title: "Watch: the collector removes api's reference from the ReplicaSet, then the orphan finalizer; api goes, the ReplicaSet and its Pods stay", run: func(ctx context.Context) (string, error) {
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
		}}}
}
