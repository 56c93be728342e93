package deletion_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/internal/testkit"
)

// installCRD serves kind (plural resource) of group at version, any content.
func (e *testEnv) installCRD(t *testing.T, group, version, kind, plural string) schema.GroupVersionResource {
	t.Helper()
	ctx := context.Background()
	crds := e.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	name := plural + "." + group
	_, err := crds.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crds.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	testkit.Eventually(t, "the apiserver serving "+name, func() bool {
		_, err := e.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	return gvr
}

// TestGitOpsBringsItBack: a ConfigMap an Argo CD Application with self-heal tracks (by
// its tracking-id annotation) and one a Flux Kustomization applied (by its labels) are
// predicted to come back, naming the Application and the Kustomization and how to stop
// it; one whose Kustomization is suspended, and one whose app.kubernetes.io/instance
// names no Application, are not.
func TestGitOpsBringsItBack(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	ns := e.createNamespace(t, "gitops").Name
	t.Cleanup(func() { e.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// Before Argo CD's kinds are served: the annotation says who tracks it, and that
	// whether it comes back cannot be told.
	early, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tracked-early",
		Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:/ConfigMap:" + ns + "/tracked-early"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes the early ConfigMap", func() bool { return e.inGraph(early.UID) })
	p, _ := e.engine.PredictDelete(early.UID, metav1.DeletePropagationBackground)
	if r := e.x.Consequences(ctx, p, nil).Recreated; len(r) != 1 || !strings.Contains(r[0].Says, "not served here: cannot tell") {
		t.Errorf("tracked by an Application whose kind is not served: %+v, want it said that gcscope cannot tell", r)
	}
	apps := e.installCRD(t, "argoproj.io", "v1alpha1", "Application", "applications")
	kusts := e.installCRD(t, "kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations")
	create := func(gvr schema.GroupVersionResource, kind, name string, spec map[string]any) {
		t.Helper()
		if _, err := e.dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(apps, "Application", "shop", map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"selfHeal": true, "prune": true}}})
	create(kusts, "Kustomization", "apps", map[string]any{"interval": "5m", "prune": true})
	create(kusts, "Kustomization", "paused", map[string]any{"interval": "5m", "suspend": true})
	configMap := func(name string, labels, annotations map[string]string) types.UID {
		t.Helper()
		cm, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.UID
	}
	argo := configMap("by-argo", nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop:/ConfigMap:" + ns + "/by-argo"})
	flux := configMap("by-flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}, nil)
	paused := configMap("by-paused-flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "paused", "kustomize.toolkit.fluxcd.io/namespace": ns}, nil)
	helm := configMap("by-helm", map[string]string{"app.kubernetes.io/instance": "no-such-app"}, nil)
	testkit.Eventually(t, "the engine observes the ConfigMaps", func() bool {
		return e.inGraph(argo) && e.inGraph(flux) && e.inGraph(paused) && e.inGraph(helm)
	})
	comesBack := func(uid types.UID) string {
		t.Helper()
		p, ok := e.engine.PredictDelete(uid, metav1.DeletePropagationBackground)
		if !ok {
			t.Fatalf("no prediction for %s", uid)
		}
		var says []string
		for _, r := range e.x.Consequences(ctx, p, nil).Recreated {
			says = append(says, r.By.Kind+" "+r.By.Name+": "+r.Says)
		}
		return strings.Join(says, "; ")
	}
	if got := comesBack(argo); !strings.HasPrefix(got, "Application shop: Argo CD Application shop") || !strings.Contains(got, "self-heal") || !strings.Contains(got, "remove it from the Application's source") {
		t.Errorf("the Argo CD ConfigMap: %q, want it recreated by Application shop (self-heal), and how to stop it", got)
	}
	if got := comesBack(flux); !strings.HasPrefix(got, "Kustomization apps: Flux Kustomization "+ns+"/apps applies it again") || !strings.Contains(got, "every 5m") || !strings.Contains(got, "flux suspend kustomization apps") {
		t.Errorf("the Flux ConfigMap: %q, want it applied again by Kustomization apps every 5m, and how to suspend it", got)
	}
	if got := comesBack(paused); got != "" {
		t.Errorf("a suspended Kustomization's ConfigMap: %q, want nothing", got)
	}
	if got := comesBack(helm); got != "" {
		t.Errorf("app.kubernetes.io/instance naming no Application: %q, want nothing", got)
	}
}
