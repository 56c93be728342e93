package gc_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// Custom resources on the embedded control plane: cascades through them, a CRD deleted
// and recreated, a version no longer served, a resource that cannot be listed.

// crdGroups holds each test's API group, by *testing.T.
var crdGroups sync.Map

// crdGroup is the API group of t's custom resources: one of its own, so that a test run
// again (go test -count) does not meet the CRDs of its previous run, which the control
// plane may still be deleting (or cannot delete: a broken conversion keeps its instances).
func crdGroup(t *testing.T) string {
	g, _ := crdGroups.LoadOrStore(t, fmt.Sprintf("gc%d.gcscope.io", crdGroupSeq.Add(1)))
	return g.(string)
}

var crdGroupSeq atomic.Int64

// crd creates a namespaced CRD of the test's group and waits until the engine monitors it.
func (e *testEnv) crd(t *testing.T, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	ctx := context.Background()
	group := crdGroup(t)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	e.waitMonitored(t, gvr)
	return gvr
}

func (e *testEnv) waitMonitored(t *testing.T, gvr schema.GroupVersionResource) {
	t.Helper()
	name := gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
	testkit.Eventually(t, "the engine monitors "+name, func() bool {
		st := e.engine.SyncState()
		return slices.Contains(st.Resources, name) && !slices.Contains(st.Unsynced, name)
	})
}

// customResource creates a custom resource (retrying while the resource is not served yet).
func (e *testEnv) customResource(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name string, owners ...metav1.OwnerReference) metav1.Object {
	t.Helper()
	var refs []any
	for _, o := range owners {
		refs = append(refs, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": string(o.UID),
			"blockOwnerDeletion": o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion})
	}
	obj := map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "ownerReferences": refs},
	}
	var created metav1.Object
	testkit.Eventually(t, "create "+kind+" "+name, func() bool {
		u, err := e.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
		if err != nil {
			return false
		}
		created = u
		return true
	})
	e.waitObserved(t, created.GetUID())
	return created
}

func TestCustomResourceCascadeOrphanAndMixedOwnership(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	gvr := e.crd(t, "gadgets", "Gadget")
	api := gvr.GroupVersion().String()
	ctx := context.Background()

	// Cascade: a Gadget owning a ConfigMap and a Gadget.
	top := e.customResource(t, gvr, "Gadget", ns, "top")
	childCR := e.customResource(t, gvr, "Gadget", ns, "child", refTo(api, "Gadget", top))
	childCM := e.configMap(t, ns, "child-cm", nil, refTo(api, "Gadget", top))
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "top", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, childCM)
	testkit.Eventually(t, "child Gadget collected", func() bool { return e.get(t, gvr, ns, "child", childCR.GetUID()) == nil })

	// Orphan: custom resources take no strategic merge patch; the engine falls back to a
	// JSON merge patch.
	parent := e.customResource(t, gvr, "Gadget", ns, "parent")
	orphanCR := e.customResource(t, gvr, "Gadget", ns, "orphan-cr", refTo(api, "Gadget", parent))
	orphanCM := e.configMap(t, ns, "orphan-cm", nil, refTo(api, "Gadget", parent))
	orphan := metav1.DeletePropagationOrphan
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "parent Gadget gone", func() bool { return e.get(t, gvr, ns, "parent", parent.GetUID()) == nil })
	assertState(t, e.get(t, gvr, ns, "orphan-cr", orphanCR.GetUID()), "orphan-cr", nil, nil, false)
	assertState(t, e.getCM(t, orphanCM), "orphan-cm", nil, nil, false)

	// Mixed, in the foreground: ConfigMap → Gadget → ConfigMap.
	root := e.configMap(t, ns, "root", nil)
	mid := e.customResource(t, gvr, "Gadget", ns, "mid", cmRef(root))
	leaf := e.configMap(t, ns, "leaf", []string{holdFinalizer}, refTo(api, "Gadget", mid))
	e.deleteCM(t, root, metav1.DeletePropagationForeground)
	testkit.Eventually(t, "mid Gadget waits in the foreground for leaf", func() bool {
		m := e.get(t, gvr, ns, "mid", mid.GetUID())
		return m != nil && slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents)
	})
	assertState(t, e.getCM(t, root), "root", nil, []string{metav1.FinalizerDeleteDependents}, true)
	e.removeFinalizers(t, configMaps, ns, leaf.Name)
	e.waitGone(t, leaf)
	testkit.Eventually(t, "mid gone", func() bool { return e.get(t, gvr, ns, "mid", mid.GetUID()) == nil })
	e.waitGone(t, root)
}

func TestDeletingCRDCollectsDependentsAndRecreating(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	gvr := e.crd(t, "sprockets", "Sprocket")
	api := gvr.GroupVersion().String()
	s := e.customResource(t, gvr, "Sprocket", ns, "s1")
	dep := e.configMap(t, ns, "dep", nil, refTo(api, "Sprocket", s))

	crdName := gvr.Resource + "." + gvr.Group
	if err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, dep)
	testkit.Eventually(t, "the CRD is gone", func() bool {
		_, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "the engine stops monitoring sprockets", func() bool {
		return !slices.Contains(e.engine.SyncState().Resources, gvr.Group+"/v1/sprockets")
	})

	gvr = e.crd(t, "sprockets", "Sprocket")
	s2 := e.customResource(t, gvr, "Sprocket", ns, "s2")
	dep2 := e.configMap(t, ns, "dep2", nil, refTo(api, "Sprocket", s2))
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "s2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, dep2)
}

// TestVersionNoLongerServedIsNeverProofOfAbsence: a CRD serves v1 (preferred) and
// v1beta1; dependents name their owner through v1beta1. When v1beta1 stops being served,
// the apiserver answers 404 for it, which must not be taken for the owner's absence (a
// stale REST mapper would still map it): the dependents stay. When v1beta1 is served
// again it becomes mappable (the mapper is reset every period, as kube-controller-manager
// resets its own), and a delete of the owner collects them.
func TestVersionNoLongerServedIsNeverProofOfAbsence(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	group, plural := crdGroup(t), "gizmos"
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "Gizmo", ListKind: "GizmoList", Singular: "gizmo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
				{Name: "v1beta1", Served: true, Schema: schemaProps},
			},
		},
	}
	crd, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	e.waitMonitored(t, gvr)
	owner := e.customResource(t, gvr, "Gizmo", ns, "owner")
	beta := refTo(group+"/v1beta1", "Gizmo", owner)
	early := e.configMap(t, ns, "early", nil, beta)
	// The engine has looked the owner up through v1beta1 (its mapper maps it now).
	testkit.Eventually(t, "the engine to verify early's owner through v1beta1", func() bool {
		ex, _ := e.engine.Explain(early.UID)
		return ex.Last != nil && ex.Last.Verb == gc.VerbKeep
	})

	setServed := func(served bool) {
		t.Helper()
		testkit.Eventually(t, "update the CRD", func() bool {
			cur, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			cur.Spec.Versions[1].Served = served
			_, err = e.ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil
		})
		testkit.Eventually(t, fmt.Sprintf("discovery to say v1beta1 served=%v", served), func() bool {
			_, err := e.client.Discovery().ServerResourcesForGroupVersion(group + "/v1beta1")
			return (err == nil) == served
		})
	}
	setServed(false)
	late := e.configMap(t, ns, "late", nil, beta)
	testkit.Consistently(t, "both dependents of the live owner stay", 3*discoveryPeriod, func() bool {
		return e.getCM(t, early) != nil && e.getCM(t, late) != nil
	})
	testkit.Eventually(t, "Explain to call late's owner unresolvable", func() bool {
		ex, _ := e.engine.Explain(late.UID)
		return len(ex.Owners) == 1 && ex.Owners[0].State == gc.OwnerUnresolvable
	})

	setServed(true)
	testkit.Eventually(t, "Explain to see late's owner again", func() bool {
		ex, _ := e.engine.Explain(late.UID)
		return len(ex.Owners) == 1 && ex.Owners[0].State == gc.OwnerSolid
	})
	if err := e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, early)
	e.waitGone(t, late)
}

func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// TestBrokenResourceDoesNotStopCollection: a custom resource whose list keeps failing is
// reported failing, and everything else is still collected. Its objects are stored as v1;
// then v2 appears, preferred and stored, behind a conversion webhook that does not
// answer: the engine moves its monitor to v2, whose list never succeeds.
func TestBrokenResourceDoesNotStopCollection(t *testing.T) {
	e := setup(t)
	ns := e.namespace(t)
	ctx := context.Background()
	ca, err := os.ReadFile(e.config.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	group := crdGroup(t)
	validation := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crds := e.ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "brokens." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "brokens", Kind: "Broken", ListKind: "BrokenList", Singular: "broken"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: validation},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer crds.Delete(ctx, crd.Name, metav1.DeleteOptions{})
	v1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "brokens"}
	e.customResource(t, v1, "Broken", ns, "b1")
	e.waitMonitored(t, v1)

	// Break it: a v2, preferred and stored, converting through a webhook nobody serves.
	testkit.Eventually(t, "the CRD gets a v2 behind a dead webhook", func() bool {
		crd, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		crd.Spec.Versions[0].Storage = false
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: "v2", Served: true, Storage: true, Schema: validation})
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert"), CABundle: ca},
			},
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err == nil
	})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, failing := e.engine.SyncState().Failing[group+"/v2/brokens"]
		return failing, nil
	})
	if err != nil {
		st := e.engine.SyncState()
		t.Fatalf("the engine does not report brokens failing: unsynced %v, failing %v", st.Unsynced, st.Failing)
	}

	owner := e.configMap(t, ns, "owner", nil)
	dep := e.configMap(t, ns, "dep", nil, cmRef(owner))
	e.deleteCM(t, owner, metav1.DeletePropagationBackground)
	e.waitGone(t, dep)
}
