package scenario

// The namespace scenarios: deletions the collector does not own, which the namespace
// controller (kube-controller-manager's) finishes or cannot finish.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

const (
	// ControllerFinalizer is the finalizer the namespace-held scenario's ConfigMap carries,
	// added as FinalizerManager, a controller that does not run: nothing removes it but a
	// release.
	ControllerFinalizer = "scenario.gcscope.dev/hold"
	// FinalizerManager is the field manager that adds ControllerFinalizer, so that the
	// object's managedFields name it as the finalizer's owner.
	FinalizerManager = "acme-controller"
)

var (
	namespacesGVR  = corev1.SchemeGroupVersion.WithResource("namespaces")
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// namespace reads the run's namespace and records it; focus makes it the main object.
func (x *runner) namespace(ctx context.Context, focus bool) (*corev1.Namespace, error) {
	ns, err := x.p.core.CoreV1().Namespaces().Get(ctx, x.ns, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", x.ns, err)
	}
	x.add("v1", "Namespace", ns, focus)
	return ns, nil
}

func (x *runner) deleteNamespace(ctx context.Context, ns *corev1.Namespace) (string, error) {
	err := x.p.core.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
	if err != nil {
		return "", fmt.Errorf("delete namespace %s: %w", ns.Name, err)
	}
	return fmt.Sprintf("Deleted namespace %s: it is Terminating, with spec.finalizers [kubernetes] until the namespace controller has emptied it", ns.Name), nil
}

// terminating reads the run's namespace while it is being deleted: an error when it is
// gone already (what names the state the scenario expected instead).
func (x *runner) terminating(ctx context.Context, ns *corev1.Namespace, what string) (*corev1.Namespace, error) {
	got, err := x.p.core.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && got.UID != ns.UID) {
		return nil, fmt.Errorf("namespace %s went without %s", ns.Name, what)
	}
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating {
		return nil, nil // transient, or not Terminating yet: ask again
	}
	return got, nil
}

// condition returns the namespace's condition of type t when its status is True.
func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) (corev1.NamespaceCondition, bool) {
	for _, c := range ns.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return corev1.NamespaceCondition{}, false
}

// kubectlRelease is the command that removes finalizer f at index i of a ConfigMap by
// hand, with the player's own patch.
func kubectlRelease(ns, name, f string, i int) string {
	return fmt.Sprintf("kubectl patch configmap %s -n %s --type=json -p '%s'", name, ns, releasePatch(f, i))
}

func namespaceHeldSteps(x *runner) []step {
	var ns *corev1.Namespace
	var settings, ledger *corev1.ConfigMap
	var dep *appsv1.Deployment
	var rs *appsv1.ReplicaSet
	var pod corev1.Pod
	var deleted, released time.Time
	return []step{{title: "Create ConfigMaps settings and ledger and Deployment worker", run: func(ctx context.Context) (string, error) {
		var err error
		if ns, err = x.namespace(ctx, false); err != nil {
			return "", err
		}
		if settings, err = x.configMap(ctx, x.ns, "settings", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", settings, false)
		if ledger, err = x.configMap(ctx, x.ns, "ledger", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", ledger, true)
		if dep, err = x.p.core.AppsV1().Deployments(x.ns).Create(ctx, x.deployment("worker", 1, false), metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("create Deployment worker: %w", err)
		}
		x.add("apps/v1", "Deployment", dep, false)
		return fmt.Sprintf("Created ConfigMaps settings and ledger and Deployment worker in namespace %s", x.ns), nil
	}},
		{title: "Wait for the controllers to create worker's ReplicaSet and Pod", run: func(ctx context.Context) (string, error) {
			var pods []corev1.Pod
			var err error
			if rs, pods, err = x.waitControlled(ctx, dep, 1); err != nil {
				return "", err
			}
			pod = pods[0]
			return fmt.Sprintf("The controllers created ReplicaSet %s and Pod %s", rs.Name, pod.Name), x.waitObserved(ctx, ns.UID, settings.UID, ledger.UID)
		}},
		{title: "As " + FinalizerManager + " (its field manager), add the finalizer " + ControllerFinalizer + " to ledger", run: func(ctx context.Context) (string, error) {
			// As a controller adds its finalizer: an update of what it read, under its own
			// field manager, which managedFields then name as the finalizer's owner.
			ledger.Finalizers = append(ledger.Finalizers, ControllerFinalizer)
			var err error
			if ledger, err = x.p.core.CoreV1().ConfigMaps(x.ns).Update(ctx, ledger, metav1.UpdateOptions{FieldManager: FinalizerManager}); err != nil {
				return "", fmt.Errorf("add %s to ledger as %s: %w", ControllerFinalizer, FinalizerManager, err)
			}
			recorded := "managedFields do not name it (unexpected)"
			for _, m := range ledger.ManagedFields {
				if m.Manager == FinalizerManager && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `v:\"`+ControllerFinalizer+`\"`) {
					recorded = fmt.Sprintf("ledger's managedFields record %s (%s) as the manager of that finalizer", m.Manager, m.Operation)
				}
			}
			return fmt.Sprintf("%s added the finalizer %s to ledger; %s. No %s runs in this cluster", FinalizerManager, ControllerFinalizer, recorded, FinalizerManager), nil
		}},
		{title: "Delete the namespace", run: func(ctx context.Context) (string, error) {
			deleted = time.Now()
			return x.deleteNamespace(ctx, ns)
		}},
		{title: "Watch: the namespace controller deletes everything but ledger, which the finalizer holds; the namespace stays Terminating", run: func(ctx context.Context) (string, error) {
			var content, fins corev1.NamespaceCondition
			err := x.until(ctx, "the namespace emptied but for ledger, held by its finalizer", func(ctx context.Context) (bool, error) {
				got, err := x.terminating(ctx, ns, "waiting on ledger's finalizer: was the hold released early?")
				if got == nil {
					return false, err
				}
				var ok1, ok2 bool
				content, ok1 = condition(got, corev1.NamespaceContentRemaining)
				fins, ok2 = condition(got, corev1.NamespaceFinalizersRemaining)
				if !ok1 || !ok2 {
					return false, nil
				}
				l, err := x.p.core.CoreV1().ConfigMaps(x.ns).Get(ctx, ledger.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return false, fmt.Errorf("ledger went without waiting on its finalizer: was the hold released early?")
				}
				if err != nil || l.DeletionTimestamp == nil || !slices.Contains(l.Finalizers, ControllerFinalizer) {
					return false, nil
				}
				for _, o := range []struct {
					gvr  schema.GroupVersionResource
					meta metav1.Object
				}{
					{configMapsGVR, settings},
					{appsv1.SchemeGroupVersion.WithResource("deployments"), dep},
					{appsv1.SchemeGroupVersion.WithResource("replicasets"), rs},
					{corev1.SchemeGroupVersion.WithResource("pods"), &pod},
				} {
					if g, _ := x.gone(ctx, o.gvr, x.ns, o.meta.GetName(), o.meta.GetUID()); !g {
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("The namespace controller deleted settings, worker, ReplicaSet %s and Pod %s; %s is still Terminating (%s after the delete), held by ledger: "+
				"ledger is being deleted, but keeps the finalizer %s, which %s added and no running controller removes. "+
				"The namespace controller removes the namespace's own finalizer, kubernetes, only once it is empty, so it waits. "+
				"Its conditions: NamespaceContentRemaining (%s); NamespaceFinalizersRemaining (%s)",
				rs.Name, pod.Name, x.ns, since(deleted), ControllerFinalizer, FinalizerManager, content.Message, fins.Message), nil
		}},
		{title: "Release the hold: remove the finalizer from ledger (the button, or kubectl patch with a test op)", user: &userWait{
			awaiting: func() string {
				command := kubectlRelease(x.ns, ledger.Name, ControllerFinalizer, slices.Index(ledger.Finalizers, ControllerFinalizer))
				return "Waiting for you: release the hold, or remove the finalizer by hand: " + command
			},
			released: func(ctx context.Context) (bool, error) {
				l, err := x.p.core.CoreV1().ConfigMaps(x.ns).Get(ctx, ledger.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return err == nil && !slices.Contains(l.Finalizers, ControllerFinalizer), nil
			},
		}, run: func(context.Context) (string, error) {
			released = time.Now()
			return "The finalizer " + ControllerFinalizer + " was removed from ledger", nil
		}},
		{title: "Watch: ledger goes, then the namespace", run: func(ctx context.Context) (string, error) {
			err := x.until(ctx, "ledger and the namespace gone", func(ctx context.Context) (bool, error) {
				if g, _ := x.gone(ctx, configMapsGVR, x.ns, ledger.Name, ledger.UID); !g {
					return false, nil
				}
				return x.gone(ctx, namespacesGVR, "", ns.Name, ns.UID)
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("ledger went, then namespace %s: the namespace controller found it empty and removed its finalizer (%s after the release)", x.ns, since(released)), nil
		}}}
}

// deleteAPIServices deletes the APIServices selector finds and, when there were any, asks
// the engine to re-read discovery. It talks to the cluster.
func (p *Player) deleteAPIServices(ctx context.Context, selector string) ([]string, error) {
	list, err := p.dyn.Resource(apiServicesGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list APIServices: %w", err)
	}
	var deleted []string
	for _, a := range list.Items {
		uid := a.GetUID()
		err := p.dyn.Resource(apiServicesGVR).Delete(ctx, a.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete APIService %s: %w", a.GetName(), err)
		}
		deleted = append(deleted, a.GetName())
	}
	if e := p.opts.Engine; e != nil && len(deleted) > 0 {
		e.RefreshDiscovery() // monitor what it hid again now, not at the next period
	}
	return deleted, nil
}

// apiServiceAvailable says the Available condition of APIService name ("" when it has
// none yet).
func (x *runner) apiServiceAvailable(ctx context.Context, name string) string {
	a, err := x.p.dyn.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
			return fmt.Sprintf("Available %v (%v: %v)", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}

// discoveryFails reports whether the apiserver's discovery fails for gv now, with the
// error, as the namespace controller reads it (uncached).
func (x *runner) discoveryFails(gv schema.GroupVersion) (bool, error) {
	_, _, err := x.p.core.Discovery().ServerGroupsAndResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		if gerr, ok := failed.Groups[gv]; ok {
			return true, gerr
		}
	}
	return false, nil
}

func namespaceBlockedSteps(x *runner) []step {
	var gv schema.GroupVersion
	var name string
	var api *unstructured.Unstructured
	var created time.Time
	var ns *corev1.Namespace
	var settings *corev1.ConfigMap
	var deleted, released time.Time
	return []step{{title: "Create an APIService whose Service does not exist; wait until discovery fails for its group", run: func(ctx context.Context) (string, error) {
		// The group is the run's own, so that runs do not share an APIService.
		gv = schema.GroupVersion{Group: x.ns + ".scenario.gcscope.dev", Version: "v1alpha1"}
		name = gv.Version + "." + gv.Group
		x.onEnd(func() {
			// However the run ends (failed, or stopped by a cleanup or a shutdown), the
			// APIService goes: while it is there, no namespace of the cluster can finish
			// deleting, other runs' and users' alike.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err := x.p.dyn.Resource(apiServicesGVR).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				x.p.log.Error("scenario: the APIService stays; every namespace deletion will stall until it is deleted", "apiService", name, "err", err)
			}
		})
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiServicesGVR.GroupVersion().String(), "kind": "APIService",
			"metadata": map[string]any{"name": name, "labels": map[string]any{LabelRun: x.ns}},
			"spec": map[string]any{
				"group": gv.Group, "version": gv.Version,
				// No such Service: nothing will ever answer for the group.
				"service":               map[string]any{"namespace": x.ns, "name": "absent", "port": int64(443)},
				"insecureSkipTLSVerify": true,
				"groupPriorityMinimum":  int64(1000),
				"versionPriority":       int64(15),
			},
		}}
		var err error
		if api, err = x.p.dyn.Resource(apiServicesGVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("create APIService %s: %w", name, err)
		}
		created = time.Now()
		x.add(apiServicesGVR.GroupVersion().String(), "APIService", api, false)
		// Delete the namespace only once discovery fails, as it will for the namespace
		// controller: before, its deletion could finish. The aggregator says why a moment
		// later, in the APIService's Available condition.
		var derr error
		var failed, availableAfter time.Duration
		available := ""
		err = x.until(ctx, "discovery to fail for "+gv.String()+" and the APIService's Available condition", func(ctx context.Context) (bool, error) {
			if failed == 0 {
				var fails bool
				if fails, derr = x.discoveryFails(gv); fails {
					failed = time.Since(created)
				}
			}
			if available == "" {
				if available = x.apiServiceAvailable(ctx, name); available != "" {
					availableAfter = time.Since(created)
				}
			}
			return failed > 0 && available != "", nil
		})
		if err != nil {
			return "", err
		}
		if e := x.p.opts.Engine; e != nil {
			e.RefreshDiscovery() // its discovery fails for the group too: let it say so now
		}
		return fmt.Sprintf("Created APIService %s for group %s, backed by Service %s/absent, which does not exist: %s (%s after the create). Discovery fails for %s (%s after the create): %v",
			name, gv.Group, x.ns, available, availableAfter.Round(10*time.Millisecond), gv, failed.Round(10*time.Millisecond), derr), x.waitObserved(ctx, api.GetUID())
	}},
		{title: "Create ConfigMap settings", run: func(ctx context.Context) (string, error) {
			var err error
			if ns, err = x.namespace(ctx, true); err != nil {
				return "", err
			}
			if settings, err = x.configMap(ctx, x.ns, "settings", nil); err != nil {
				return "", err
			}
			x.add("v1", "ConfigMap", settings, false)
			return "Created ConfigMap settings in namespace " + x.ns, x.waitObserved(ctx, ns.UID, settings.UID)
		}},
		{title: "Delete the namespace", run: func(ctx context.Context) (string, error) {
			deleted = time.Now()
			return x.deleteNamespace(ctx, ns)
		}},
		{title: "Watch: the namespace controller deletes settings but stops on NamespaceDeletionDiscoveryFailure; the namespace stays Terminating", run: func(ctx context.Context) (string, error) {
			var failure corev1.NamespaceCondition
			err := x.until(ctx, "the namespace emptied, its deletion stopped by NamespaceDeletionDiscoveryFailure", func(ctx context.Context) (bool, error) {
				got, err := x.terminating(ctx, ns, "a discovery failure: did discovery recover, was the APIService deleted early?")
				if got == nil {
					return false, err
				}
				var ok bool
				if failure, ok = condition(got, corev1.NamespaceDeletionDiscoveryFailure); !ok {
					return false, nil
				}
				if _, err := x.p.dyn.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					return false, fmt.Errorf("the APIService %s was deleted early", name)
				}
				return x.gone(ctx, configMapsGVR, x.ns, settings.Name, settings.UID)
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("The namespace controller deleted settings, but %s stays Terminating (%s after the delete): it could not read group %s, "+
				"whose APIService %s has no Service to answer, so it cannot tell that the namespace holds none of that group's objects, and keeps the namespace's finalizer kubernetes. "+
				"While the APIService is there, every namespace deleted in this cluster waits the same way. Condition NamespaceDeletionDiscoveryFailure: %s",
				x.ns, since(deleted), gv.Group, name, failure.Message), nil
		}},
		{title: "Release the hold: delete the APIService (the button, or kubectl delete apiservice)", user: &userWait{
			awaiting: func() string {
				return "Waiting for you: release the hold, that is delete the APIService (or kubectl delete apiservice " + name + ")"
			},
			released: func(ctx context.Context) (bool, error) {
				_, err := x.p.dyn.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			},
		}, run: func(context.Context) (string, error) {
			released = time.Now()
			return "APIService " + name + " was deleted", nil
		}},
		{title: "Watch: discovery recovers; at its next try the namespace controller finishes and the namespace goes", run: func(ctx context.Context) (string, error) {
			var recovered time.Duration
			err := x.until(ctx, "discovery to recover and the namespace gone", func(ctx context.Context) (bool, error) {
				if recovered == 0 {
					if fails, _ := x.discoveryFails(gv); !fails {
						recovered = time.Since(released)
						if e := x.p.opts.Engine; e != nil {
							e.RefreshDiscovery() // the engine's discovery recovers too: let it say so now
						}
					}
				}
				if recovered == 0 {
					return false, nil
				}
				return x.gone(ctx, namespacesGVR, "", ns.Name, ns.UID)
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Discovery no longer fails for %s (%s after the APIService was deleted); the namespace controller's next try read it whole and finished: %s went %s after the APIService was deleted "+
				"(it retries a failed deletion with a backoff that grows to a minute, so the longer the block, the longer this wait)",
				gv, recovered.Round(time.Millisecond), x.ns, since(released)), nil
		}}}
}
