package selection

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
)

// The delete of an Argo CD Application: the resources it tracks (status.resources) go
// with it only when it carries the resources finalizer, which makes Argo CD's controller
// delete them first (resources-finalizer.argocd.argoproj.io: in the foreground, waiting
// for each; its /background variant: without waiting) and then let the Application go.
// Without it the Application goes alone and its resources stay, no longer synced
// (argocd app delete --cascade adds the finalizer before deleting).

const (
	argoResourcesFinalizer   = "resources-finalizer.argocd.argoproj.io"
	argoBackgroundFinalizer  = "resources-finalizer.argocd.argoproj.io/background"
	argoDefaultNamespace     = "argocd"
	argoApplicationKind      = "Application"
	argoApplicationVersion   = "argoproj.io/v1alpha1"
	argoApplicationsResource = "applications"
)

// ArgoCDApplication resolves what deleting the Application name in namespace (default
// argocd) deletes.
func (s *Source) ArgoCDApplication(ctx context.Context, name, namespace string) (Set, error) {
	if namespace == "" {
		namespace = argoDefaultNamespace
	}
	describe := fmt.Sprintf("kubectl delete application %s -n %s", name, namespace)
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: argoApplicationsResource}
	app, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*unstructured.Unstructured, error) {
		return s.dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err) && s.servesApplications():
		return Set{}, fmt.Errorf("%s: Application %s not found in namespace %s", describe, name, namespace)
	case apierrors.IsNotFound(err):
		return Set{}, fmt.Errorf("%s: the cluster does not serve Argo CD Applications (argoproj.io/v1alpha1)", describe)
	case err != nil:
		return Set{}, fmt.Errorf("%s: reading the Application: %w", describe, err)
	}
	set := Set{Describe: describe}
	set.Objects = append(set.Objects, gc.ObjectRef{APIVersion: argoApplicationVersion, Kind: argoApplicationKind, Namespace: namespace, Name: name, UID: app.GetUID()})
	tracked, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	var entries []*entry
	finalizers := app.GetFinalizers()
	foreground, background := slices.Contains(finalizers, argoResourcesFinalizer), slices.Contains(finalizers, argoBackgroundFinalizer)
	keep := ""
	switch {
	case foreground:
		set.Notes = append(set.Notes, fmt.Sprintf("Argo CD deletes the Application's %d resources first, in the foreground (its finalizer %s), then lets the Application go", len(tracked), argoResourcesFinalizer))
	case background:
		set.Notes = append(set.Notes, fmt.Sprintf("Argo CD deletes the Application's %d resources first, in the background (its finalizer %s), then lets the Application go", len(tracked), argoBackgroundFinalizer))
	default:
		keep = "the Application has no resources finalizer: Argo CD leaves its resources, no longer synced (argocd app delete --cascade would add it)"
	}
	for _, t := range tracked {
		r, ok := t.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := r[k].(string); return v }
		gv := schema.GroupVersion{Group: str("group"), Version: str("version")}
		entries = append(entries, &entry{ref: gc.ObjectRef{APIVersion: gv.String(), Kind: str("kind"), Namespace: str("namespace"), Name: str("name")},
			keep: keep, where: "the Application's status.resources"})
	}
	if len(entries) > MaxObjects {
		return Set{}, tooMany(len(entries), describe)
	}
	rs := *s // a namespaced resource recorded without a namespace is in the destination's
	if dest, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace"); dest != "" {
		rs.Namespace = dest
	}
	if err := rs.resolve(ctx, entries); err != nil {
		return Set{}, err
	}
	collect(&set, entries)
	return set, nil
}

// servesApplications reports whether the cluster serves Argo CD's Applications.
func (s *Source) servesApplications() bool {
	_, err := s.Mapper.RESTMapping(schema.GroupKind{Group: "argoproj.io", Kind: argoApplicationKind}, "v1alpha1")
	return err == nil
}
