package deletion

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
)

// GitOps: an object Argo CD or Flux keeps in sync comes back after a delete by hand, at
// their next sync. Argo CD tracks what an Application applied by the annotation
// argocd.argoproj.io/tracking-id ("APP:GROUP/KIND:NAMESPACE/NAME", APP possibly
// "NAMESPACE_NAME") or, by default, the label app.kubernetes.io/instance; its
// Application recreates it when spec.syncPolicy.automated.selfHeal is set. Flux labels
// what a Kustomization or a HelmRelease applied with kustomize.toolkit.fluxcd.io/name and
// /namespace, or helm.toolkit.fluxcd.io/name and /namespace; a Kustomization that is not
// suspended applies it again at every interval. The Applications, Kustomizations and
// HelmReleases are read on demand, only where their kinds are served.

const (
	argoTrackingID    = "argocd.argoproj.io/tracking-id"
	argoInstance      = "app.kubernetes.io/instance"
	fluxKustomizeNS   = "kustomize.toolkit.fluxcd.io/namespace"
	fluxKustomize     = "kustomize.toolkit.fluxcd.io/name"
	fluxHelmRelease   = "helm.toolkit.fluxcd.io/name"
	fluxHelmReleaseNS = "helm.toolkit.fluxcd.io/namespace"
	// maxGitOpsReads bounds the objects whose labels a prediction reads (a GET each).
	maxGitOpsReads = 50
)

var (
	argoApplications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	fluxKustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	fluxHelmReleases   = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
)

// gitOpsReader reads, once per prediction, what the objects' labels name.
type gitOpsReader struct {
	x   *Explainer
	ctx context.Context
	// apps are the Argo CD Applications by name (nil: not listed yet; listed: tried).
	apps   map[string][]unstructured.Unstructured
	listed bool
	noArgo string // why Applications cannot be read ("" when they can)
}

// gitOps says who brings back objects (those no controller owns, which GitOps tools
// apply): their labels are read, a GET each.
func (x *Explainer) gitOps(ctx context.Context, objects []gc.ObjectRef) []Recreated {
	r := &gitOpsReader{x: x, ctx: ctx}
	var out []Recreated
	for _, obj := range objects {
		m, err := x.metadataOf(ctx, obj)
		if err != nil {
			continue
		}
		if rc, ok := r.argo(obj, m); ok {
			out = append(out, rc)
		}
		if rc, ok := r.flux(obj, m.Labels); ok {
			out = append(out, rc)
		}
	}
	return out
}

func controlled(owners []gc.OwnerRef) bool {
	for _, o := range owners {
		if o.Controller {
			return true
		}
	}
	return false
}

// argo: the Application that tracks obj, if one does, and whether it self-heals.
func (r *gitOpsReader) argo(obj gc.ObjectRef, m *metav1.PartialObjectMetadata) (Recreated, bool) {
	app, by := "", ""
	if id := m.Annotations[argoTrackingID]; id != "" {
		app, _, _ = strings.Cut(id, ":")
		by = "annotation " + argoTrackingID
	} else if v := m.Labels[argoInstance]; v != "" {
		app, by = v, "label "+argoInstance
	}
	if app == "" {
		return Recreated{}, false
	}
	appNS, appName := "", app
	if ns, name, ok := strings.Cut(app, "_"); ok { // an Application outside Argo CD's namespace
		appNS, appName = ns, name
	}
	found := r.application(appNS, appName)
	switch {
	case r.noArgo != "" && by == "label "+argoInstance:
		return Recreated{}, false // the label alone is Helm's too: no Argo CD, no claim
	case r.noArgo != "":
		return Recreated{Object: obj, By: gc.ObjectRef{APIVersion: argoApplications.GroupVersion().String(), Kind: "Application", Namespace: appNS, Name: appName},
			Says: fmt.Sprintf("tracked by Argo CD Application %s (%s), but %s: cannot tell whether it syncs it back", appName, by, r.noArgo)}, true
	case found == nil:
		return Recreated{}, false
	}
	ref := gc.ObjectRef{APIVersion: found.GetAPIVersion(), Kind: "Application", Namespace: found.GetNamespace(), Name: found.GetName(), UID: found.GetUID()}
	automated, _, _ := unstructured.NestedMap(found.Object, "spec", "syncPolicy", "automated")
	selfHeal, _, _ := unstructured.NestedBool(found.Object, "spec", "syncPolicy", "automated", "selfHeal")
	switch {
	case automated != nil && selfHeal:
		return Recreated{Object: obj, By: ref, Says: fmt.Sprintf("Argo CD Application %s (tracking it by %s) syncs automatically with self-heal: it recreates it at its next sync, within minutes; "+
			"to keep it deleted, remove it from the Application's source, or turn self-heal off", found.GetName(), by)}, true
	case automated != nil:
		return Recreated{Object: obj, By: ref, Says: fmt.Sprintf("Argo CD Application %s (tracking it by %s) syncs automatically without self-heal: it recreates it at the next change of its source; "+
			"to keep it deleted, remove it from the source", found.GetName(), by)}, true
	}
	return Recreated{}, false // synced by hand: nothing brings it back by itself
}

// application is the Argo CD Application of name (in namespace, when given), or nil.
func (r *gitOpsReader) application(namespace, name string) *unstructured.Unstructured {
	if !r.listed {
		r.listed = true
		r.apps = map[string][]unstructured.Unstructured{}
		l, err := r.x.dynamic.Resource(argoApplications).List(r.ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			r.noArgo = "Argo CD's Applications are not served here"
		case err != nil:
			r.noArgo = "gcscope cannot list Argo CD Applications (" + err.Error() + ")"
		default:
			for _, a := range l.Items {
				r.apps[a.GetName()] = append(r.apps[a.GetName()], a)
			}
		}
	}
	for i, a := range r.apps[name] {
		if namespace == "" || a.GetNamespace() == namespace {
			return &r.apps[name][i]
		}
	}
	return nil
}

// flux: the Kustomization or HelmRelease whose labels obj carries, and whether it
// applies it again.
func (r *gitOpsReader) flux(obj gc.ObjectRef, labels map[string]string) (Recreated, bool) {
	kind, gvr, name, ns := "Kustomization", fluxKustomizations, labels[fluxKustomize], labels[fluxKustomizeNS]
	if name == "" {
		kind, gvr, name, ns = "HelmRelease", fluxHelmReleases, labels[fluxHelmRelease], labels[fluxHelmReleaseNS]
	}
	if name == "" || ns == "" {
		return Recreated{}, false
	}
	ref := gc.ObjectRef{APIVersion: gvr.GroupVersion().String(), Kind: kind, Namespace: ns, Name: name}
	src, err := r.x.dynamic.Resource(gvr).Namespace(ns).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return Recreated{Object: obj, By: ref, Says: fmt.Sprintf("applied by Flux %s %s/%s (its labels say), which gcscope cannot read (%v): cannot tell whether it applies it again", kind, ns, name, err)}, true
	}
	ref.UID = src.GetUID()
	if suspended, _, _ := unstructured.NestedBool(src.Object, "spec", "suspend"); suspended {
		return Recreated{}, false
	}
	interval, _, _ := unstructured.NestedString(src.Object, "spec", "interval")
	every := ""
	if interval != "" {
		every = " (every " + interval + ")"
	}
	if kind == "HelmRelease" {
		drift, _, _ := unstructured.NestedString(src.Object, "spec", "driftDetection", "mode")
		if drift != "enabled" {
			return Recreated{Object: obj, By: ref, Says: fmt.Sprintf("Flux HelmRelease %s/%s recreates it at its next upgrade (its drift detection is off, so not at every reconciliation); "+
				"to keep it deleted, remove it from the chart or its values", ns, name)}, true
		}
	}
	return Recreated{Object: obj, By: ref, Says: fmt.Sprintf("Flux %s %s/%s applies it again at its next reconciliation%s; to keep it deleted, remove it from the source, or suspend the %s (flux suspend %s %s -n %s)",
		kind, ns, name, every, kind, strings.ToLower(kind), name, ns)}, true
}
