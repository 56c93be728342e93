package scenario

// The scenario whose owner's resource goes away: a custom resource's CRD deleted.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func crdDeletedSteps(x *runner) []step {
	var gvr schema.GroupVersionResource
	var crdName string
	var crd *apiextensionsv1.CustomResourceDefinition
	var gear *unstructured.Unstructured
	var cm *corev1.ConfigMap
	var secret *corev1.Secret
	var deleted time.Time
	return []step{{title: "Create a CustomResourceDefinition of kind Gear", run: func(ctx context.Context) (string, error) {
		// The group is the run's own, so every run has its own CRD.
		group := x.ns + ".gcscope.io"
		gvr = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gears"}
		crdName = gvr.Resource + "." + group
		def := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: crdName, Labels: map[string]string{LabelRun: x.ns}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gears", Singular: "gear", Kind: "Gear", ListKind: "GearList"},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}},
				}},
			},
		}
		var err error
		if crd, err = x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, def, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("create CRD %s: %w", crdName, err)
		}
		x.add("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd, false)
		err = x.until(ctx, "the CRD established", func(ctx context.Context) (bool, error) {
			got, err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if e := x.p.opts.Engine; e != nil {
			e.RefreshDiscovery()
		}
		return "Created CustomResourceDefinition " + crdName, err
	}},
		{title: "Create Gear g1, and a ConfigMap and a Secret it owns", run: func(ctx context.Context) (string, error) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Gear",
				"metadata": map[string]any{"name": "g1", "labels": map[string]any{LabelRun: x.ns}},
				"spec":     map[string]any{"teeth": int64(12)},
			}}
			// Served a moment after it is established.
			err := x.until(ctx, "Gear g1 created", func(ctx context.Context) (bool, error) {
				var err error
				gear, err = x.p.dyn.Resource(gvr).Namespace(x.ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
				return err == nil, nil
			})
			if err != nil {
				return "", err
			}
			x.add(gvr.GroupVersion().String(), "Gear", gear, true)
			ref := blocking(gvr.GroupVersion().String(), "Gear", gear)
			ref.Controller = ptr.To(true)
			if cm, err = x.configMap(ctx, x.ns, "g1-config", nil, ref); err != nil {
				return "", err
			}
			x.add("v1", "ConfigMap", cm, false)
			s := &corev1.Secret{ObjectMeta: x.meta(x.ns, "g1-credentials", ref), StringData: map[string]string{"token": "g1"}}
			if secret, err = x.p.core.CoreV1().Secrets(x.ns).Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
				return "", fmt.Errorf("create Secret g1-credentials: %w", err)
			}
			x.add("v1", "Secret", secret, false)
			return "Created Gear g1, ConfigMap g1-config and Secret g1-credentials (both owned by g1)", x.waitObserved(ctx, gear.GetUID(), cm.UID, secret.UID)
		}},
		{title: "Delete the CustomResourceDefinition", run: func(ctx context.Context) (string, error) {
			deleted = time.Now()
			if err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &crd.UID}}); err != nil {
				return "", fmt.Errorf("delete CRD %s: %w", crdName, err)
			}
			return "Deleted CustomResourceDefinition " + crdName, nil
		}},
		{title: "Watch: the apiserver deletes g1 with its CRD; the collector deletes the ConfigMap and the Secret", run: func(ctx context.Context) (string, error) {
			var left []string
			err := x.until(ctx, "g1, its ConfigMap and Secret, and the CRD gone", func(ctx context.Context) (bool, error) {
				left = left[:0]
				if g, _ := x.gone(ctx, gvr, x.ns, "g1", gear.GetUID()); !g {
					left = append(left, "Gear g1")
				}
				if g, _ := x.gone(ctx, configMapsGVR, x.ns, cm.Name, cm.UID); !g {
					left = append(left, "ConfigMap "+cm.Name)
				}
				if g, _ := x.gone(ctx, secretsGVR, x.ns, secret.Name, secret.UID); !g {
					left = append(left, "Secret "+secret.Name)
				}
				if _, err := x.p.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					left = append(left, "the CRD")
				}
				return len(left) == 0, nil
			})
			if err != nil {
				return "", fmt.Errorf("%w (still there: %s)", err, strings.Join(left, ", "))
			}
			if e := x.p.opts.Engine; e != nil {
				e.RefreshDiscovery() // stop monitoring the resource now, not at the next period
			}
			return fmt.Sprintf("The apiserver deleted g1 with its CRD, and the collector its ConfigMap and Secret (%s after the delete)", since(deleted)), nil
		}}}
}
