package cluster_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/cluster/demo"
	"github.com/gcscope/gcscope/internal/testkit"
)

// waitDemoSettled waits until kube-controller-manager's controllers have finished with the
// demo: each namespace has its default ServiceAccount and root CA ConfigMap, and every
// workload has observed its spec and made the Pods (and ReplicaSets) it wants. A count that
// merely stopped changing for a while is no proof: Pods are refused until the namespace's
// ServiceAccount exists, and the ReplicaSet controller then retries with a backoff that
// grows to many seconds on a loaded machine, so Pods can still appear long after a quiet
// moment.
func waitDemoSettled(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, "the controllers are done with the demo", func() bool {
		why := demoUnsettled(context.Background())
		if why != "" {
			t.Logf("demo not settled: %s", why)
		}
		return why == ""
	})
}

// demoUnsettled names one thing the controllers still have to do for the demo, or "".
func demoUnsettled(ctx context.Context) string {
	for _, ns := range demo.Namespaces {
		if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return ns + ": default ServiceAccount: " + err.Error()
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return ns + ": root CA ConfigMap: " + err.Error()
		}
		if why := replicaSetsUnsettled(ctx, ns); why != "" {
			return why
		}
		stss, err := client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, s := range stss.Items {
			if s.Status.ObservedGeneration != s.Generation || s.Status.Replicas != *s.Spec.Replicas {
				return "StatefulSet " + ns + "/" + s.Name
			}
		}
		dss, err := client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, d := range dss.Items {
			st := d.Status
			if st.ObservedGeneration != d.Generation || st.DesiredNumberScheduled == 0 || st.CurrentNumberScheduled != st.DesiredNumberScheduled {
				return "DaemonSet " + ns + "/" + d.Name
			}
		}
		jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, j := range jobs.Items {
			// No node runs the Pods: each Job keeps its parallelism of Pods active.
			if j.Status.Active != *j.Spec.Parallelism {
				return "Job " + ns + "/" + j.Name
			}
		}
	}
	return ""
}

// replicaSetsUnsettled checks the Deployments and ReplicaSets of ns. A Deployment is done
// when it has observed its spec and its status counts the Pods its ReplicaSets have: the
// deployment controller scales the ReplicaSets and writes that status in one sync, so a
// ReplicaSet still short of its spec, or a status behind the ReplicaSets, means more to do.
func replicaSetsUnsettled(ctx context.Context, ns string) string {
	rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	podsOf := map[string]int32{} // by owning Deployment's UID
	for _, rs := range rss.Items {
		if rs.Status.ObservedGeneration != rs.Generation || rs.Status.Replicas != *rs.Spec.Replicas {
			return "ReplicaSet " + ns + "/" + rs.Name
		}
		if ref := metav1.GetControllerOf(&rs); ref != nil {
			podsOf[string(ref.UID)] += rs.Status.Replicas
		}
	}
	deps, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, d := range deps.Items {
		if !deploymentDone(&d, podsOf[string(d.UID)]) {
			return "Deployment " + ns + "/" + d.Name
		}
	}
	return ""
}

func deploymentDone(d *appsv1.Deployment, pods int32) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == pods && pods > 0
}
