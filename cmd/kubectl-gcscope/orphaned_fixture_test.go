package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// orphansNS holds the orphaned Job, apart from plugin-demo, whose whole content other
// goldens predict.
const orphansNS = "plugin-orphans"

// createOrphanedJob makes, in plugin-orphans, what an Orphan delete of a CronJob leaves: the
// Job nightly-29000000 (as the CronJob's controller makes it: its scheduled time
// annotated, a controller reference to CronJob nightly), then the CronJob deleted with
// propagationPolicy=Orphan and a real collector's work done: gcscope's engine, active,
// monitoring only Jobs and CronJobs (so it leaves every other fixture as it is), runs
// until the Job has lost its reference and the CronJob is gone.
func createOrphanedJob(ctx context.Context, k *testkit.Env) error {
	cs := k.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: orphansNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	cron, err := cs.BatchV1().CronJobs(orphansNS).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec()}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	job, err := cs.BatchV1().Jobs(orphansNS).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000000",
		Annotations:     map[string]string{"batch.kubernetes.io/cronjob-scheduled-timestamp": "2025-02-21T03:00:00Z"},
		OwnerReferences: []metav1.OwnerReference{ownerOf(cron, "batch/v1", "CronJob", true)}}, Spec: jobSpec()}, metav1.CreateOptions{})
	if err != nil {
		return err
	}

	ignored, err := allResourcesBut(cs.Discovery(), schema.GroupResource{Group: "batch", Resource: "jobs"}, schema.GroupResource{Group: "batch", Resource: "cronjobs"})
	if err != nil {
		return err
	}
	engine, err := gc.NewForConfig(k.Config, gc.Options{IgnoredResources: ignored, Workers: 1, SyncTimeout: 20 * time.Second})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- engine.Run(runCtx) }()
	defer func() { stop(); <-done }()
	select {
	case <-engine.Synced():
	case err := <-done:
		return fmt.Errorf("the collector of the orphaned Job fixture: %v", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := cs.BatchV1().CronJobs(orphansNS).Delete(ctx, cron.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		return err
	}
	orphaned := func() bool {
		j, err := cs.BatchV1().Jobs(orphansNS).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil || len(j.OwnerReferences) != 0 {
			return false
		}
		_, err = cs.BatchV1().CronJobs(orphansNS).Get(ctx, cron.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	if err := testkit.Poll(ctx, time.Minute, orphaned); err != nil {
		return errors.New("the Orphan delete of CronJob nightly did not leave Job nightly-29000000 without its reference within a minute")
	}
	return nil
}

func jobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "run", Image: "registry.invalid/run:1"}}}}}
}

// allResourcesBut are the resources discovery lists, less keep.
func allResourcesBut(dc discovery.DiscoveryInterface, keep ...schema.GroupResource) ([]schema.GroupResource, error) {
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil {
		return nil, err
	}
	kept := map[schema.GroupResource]bool{}
	for _, gr := range keep {
		kept[gr] = true
	}
	var out []schema.GroupResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if gr := gv.WithResource(r.Name).GroupResource(); !kept[gr] {
				out = append(out, gr)
			}
		}
	}
	return out, nil
}
