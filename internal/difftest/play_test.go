package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

const (
	holdFinalizer = "test.gcscope.io/hold"
	scenarioLabel = "difftest.gcscope.io/scenario"
	// discoveryWait follows every change to what the apiserver serves (a CRD created or
	// deleted, a version switched): two discovery periods, after which both collectors
	// have re-read discovery, reset their mappers and monitor what is served.
	discoveryWait = 2*syncPeriod + 500*time.Millisecond
)

// awaitRediscovery lets both collectors re-read discovery after a change to what is
// served. It is a wait for time, not a condition: upstream's collector tells no one when
// it has reset its mapper and started or stopped a monitor, and both sides must get the
// same wait for the comparison to be fair.
func awaitRediscovery() { time.Sleep(discoveryWait) }

var (
	configMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// play is one scenario on one side: its namespaces, its CRD's group, and the uids its
// objects got there.
type play struct {
	side *side
	s    Scenario
	ns   string // the scenario's namespace; the second one is ns+"-b"
	uids []types.UID
	// looseTiming leaves the ownerReferences of objects being deleted out of the state.
	// Which of them were dropped before the delete depends on the order the collector's
	// workers happened to take the dependents in (a dependent examined before or after its
	// other owner's delete), which faults and restarts change; the collector is right
	// either way.
	looseTiming bool
}

func newPlay(sd *side, s Scenario, ns string) *play {
	return &play{side: sd, s: s, ns: ns, uids: make([]types.UID, len(s.Objects))}
}

func (p *play) group() string { return p.ns + ".gcscope.io" }

func (p *play) widgets(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: p.group(), Version: version, Resource: "widgets"}
}

func (p *play) gvr(kind string) schema.GroupVersionResource {
	switch kind {
	case kindClusterRole:
		return clusterRoles
	case kindWidget:
		return p.widgets("v1")
	}
	return configMaps
}

func (p *play) apiVersion(kind string) string {
	gv := p.gvr(kind).GroupVersion()
	return gv.String()
}

func (p *play) namespace(o Object) string {
	switch {
	case o.Kind == kindClusterRole:
		return ""
	case o.OtherNS:
		return p.ns + "-b"
	}
	return p.ns
}

func (p *play) name(i int) string {
	if p.s.Objects[i].Kind == kindClusterRole {
		return fmt.Sprintf("%s-o%d", p.ns, i)
	}
	return fmt.Sprintf("o%d", i)
}

// ownerRef writes ref as the dependent will carry it.
func (p *play) ownerRef(ref Ref) map[string]any {
	out := map[string]any{"controller": ref.Controller, "blockOwnerDeletion": ref.Block}
	if ref.Owner < 0 {
		out["apiVersion"], out["kind"], out["name"] = "v1", kindConfigMap, "ghost"
		out["uid"] = fmt.Sprintf("00000000-0000-0000-0000-%012d", p.s.Seed%1e12)
		return out
	}
	owner := p.s.Objects[ref.Owner]
	out["apiVersion"], out["kind"] = p.apiVersion(owner.Kind), owner.Kind
	out["name"], out["uid"] = p.name(ref.Owner), string(p.uids[ref.Owner])
	switch ref.As {
	case asWrongKind:
		out["apiVersion"], out["kind"] = "v1", "Secret"
		if owner.Kind != kindConfigMap {
			out["kind"] = kindConfigMap
		}
	case asOtherVersion:
		out["apiVersion"] = p.widgets("v1beta1").GroupVersion().String()
	}
	return out
}

func (p *play) ownerRefs(i int, refs []Ref, self bool) []any {
	out := []any{}
	for _, r := range refs {
		out = append(out, p.ownerRef(r))
	}
	if self {
		o := p.s.Objects[i]
		out = append(out, map[string]any{"apiVersion": p.apiVersion(o.Kind), "kind": o.Kind, "name": p.name(i),
			"uid": string(p.uids[i]), "blockOwnerDeletion": true})
	}
	return out
}

// object is object i as created: its name, label, creation references and hold.
func (p *play) object(i int, o Object) *unstructured.Unstructured {
	meta := map[string]any{
		"name":            p.name(i),
		"labels":          map[string]any{scenarioLabel: p.ns},
		"ownerReferences": p.ownerRefs(i, p.s.creationRefs(o), false),
	}
	if ns := p.namespace(o); ns != "" {
		meta["namespace"] = ns
	}
	if o.Held {
		meta["finalizers"] = []any{holdFinalizer}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": p.apiVersion(o.Kind), "kind": o.Kind, "metadata": meta}}
}

// createNamespaces makes the play's two namespaces.
func (p *play) createNamespaces(ctx context.Context) error {
	for _, ns := range []string{p.ns, p.ns + "-b"} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns}}}
		if _, err := p.side.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// create makes the namespaces, the CRD if the scenario uses it, and the objects with their
// creation references, owners first.
func (p *play) create(ctx context.Context) error {
	if err := p.createNamespaces(ctx); err != nil {
		return err
	}
	if p.s.usesCRD() {
		if err := p.createCRD(ctx); err != nil {
			return err
		}
	}
	for i, o := range p.s.Objects {
		created, err := p.side.dyn.Resource(p.gvr(o.Kind)).Namespace(p.namespace(o)).Create(ctx, p.object(i, o), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create o%d: %w", i, err)
		}
		p.uids[i] = created.GetUID()
	}
	return nil
}

func (p *play) crd() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + p.group()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: p.group(),
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: kindWidget, ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v1beta1", Served: true, Schema: schema},
			},
		},
	}
}

// createCRD creates the Widget CRD, waits until v1 is served, then for discovery.
func (p *play) createCRD(ctx context.Context) error {
	if _, err := p.side.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, p.crd(), metav1.CreateOptions{}); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := p.side.dyn.Resource(p.widgets("v1")).Namespace(p.ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("widgets never served: %w", err)
	}
	awaitRediscovery()
	return nil
}

// deleteCRD deletes the Widget CRD and waits until it is gone, or stays only for Widgets
// the hold finalizer keeps (the apiserver removes a CRD once its last object is gone).
func (p *play) deleteCRD(ctx context.Context) error {
	crds := p.side.ext.ApiextensionsV1().CustomResourceDefinitions()
	name := p.crd().Name
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := crds.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return true, nil
		}
		list, err := p.side.dyn.Resource(p.widgets("v1")).List(ctx, metav1.ListOptions{LabelSelector: scenarioLabel + "=" + p.ns})
		if err != nil {
			return false, nil
		}
		for _, w := range list.Items {
			if w.GetDeletionTimestamp() == nil || !slices.Contains(w.GetFinalizers(), holdFinalizer) {
				return false, nil
			}
		}
		return len(list.Items) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s never went: %w", name, err)
	}
	awaitRediscovery()
	return nil
}

// recreateCRD releases the Widgets a deleted CRD waits for, then creates the CRD again.
func (p *play) recreateCRD(ctx context.Context) error {
	for i, o := range p.s.Objects {
		if o.Kind == kindWidget {
			if err := p.finalizer(ctx, i, false); err != nil {
				return err
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := p.side.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, p.crd().Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("the deleted CRD never went: %w", err)
	}
	return p.createCRD(ctx)
}

func (p *play) serveV1beta1(ctx context.Context, served bool) error {
	crds := p.side.ext.ApiextensionsV1().CustomResourceDefinitions()
	for range 10 {
		crd, err := crds.Get(ctx, p.crd().Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.Spec.Versions[1].Served = served
		if _, err = crds.Update(ctx, crd, metav1.UpdateOptions{}); err == nil {
			awaitRediscovery()
			return nil
		} else if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("serve v1beta1=%v: conflicts", served)
}

func (p *play) resource(i int) dynamic.ResourceInterface {
	o := p.s.Objects[i]
	return p.side.dyn.Resource(p.gvr(o.Kind)).Namespace(p.namespace(o))
}

// apply does st. An object already gone (or whose kind is not served) is not an error:
// the other side gets the same.
func (p *play) apply(ctx context.Context, st Step) error {
	var err error
	switch st.Op {
	case opDelete:
		opts := metav1.DeleteOptions{}
		if st.Policy != "" {
			policy := metav1.DeletionPropagation(st.Policy)
			opts.PropagationPolicy = &policy
		}
		err = p.resource(st.Target).Delete(ctx, p.name(st.Target), opts)
	case opRelease:
		err = p.finalizer(ctx, st.Target, false)
	case opHold:
		err = p.finalizer(ctx, st.Target, true)
	case opSetRefs:
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": p.ownerRefs(st.Target, st.Refs, st.Self)}})
		_, err = p.resource(st.Target).Patch(ctx, p.name(st.Target), types.MergePatchType, patch, metav1.PatchOptions{})
	case opV1beta1Off, opV1beta1On:
		return p.serveV1beta1(ctx, st.Op == opV1beta1On)
	case opCRDDelete:
		// No fault while the CRD goes: a Widget deleted while the engine is down or its
		// watch cut is never seen deleted, and once the kind is no longer served no
		// collector (upstream neither) can prove it absent; its dependents stay.
		if p.side.calm != nil {
			defer p.side.calm()()
		}
		return p.deleteCRD(ctx)
	case opCRDCreate:
		return p.recreateCRD(ctx)
	case opReleaseAll:
		for i := range p.s.Objects {
			if err := p.finalizer(ctx, i, false); err != nil {
				return err
			}
		}
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// finalizer adds or removes the hold finalizer (and only it) on object i.
func (p *play) finalizer(ctx context.Context, i int, hold bool) error {
	for range 10 {
		u, err := p.resource(i).Get(ctx, p.name(i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		fins := u.GetFinalizers()
		if slices.Contains(fins, holdFinalizer) == hold {
			return nil
		}
		if hold {
			fins = append(fins, holdFinalizer)
		} else {
			fins = slices.DeleteFunc(fins, func(f string) bool { return f == holdFinalizer })
		}
		u.SetFinalizers(fins)
		_, err = p.resource(i).Update(ctx, u, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("finalizer of o%d: conflicts", i)
}

// state is the scenario's objects, normalized so that the two sides compare: owners by
// apiVersion, kind and name (uids differ), finalizers sorted, deletion as a flag.
func (p *play) state(ctx context.Context) (string, error) {
	sel := metav1.ListOptions{LabelSelector: scenarioLabel + "=" + p.ns}
	var items []unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{configMaps, clusterRoles, p.widgets("v1")} {
		if gvr.Group == p.group() && !p.s.usesCRD() {
			continue
		}
		list, err := p.side.dyn.Resource(gvr).List(ctx, sel)
		if apierrors.IsNotFound(err) && gvr.Group == p.group() {
			continue // the CRD is deleted
		}
		if err != nil {
			return "", err
		}
		items = append(items, list.Items...)
	}
	var lines []string
	for _, u := range items {
		var refs []string
		for _, r := range u.GetOwnerReferences() {
			refs = append(refs, fmt.Sprintf("%s/%s/%s(c=%v,b=%v)", r.APIVersion, r.Kind, strings.TrimPrefix(r.Name, p.ns+"-"),
				deref(r.Controller), deref(r.BlockOwnerDeletion)))
		}
		slices.Sort(refs)
		fins := slices.Sorted(slices.Values(u.GetFinalizers()))
		where := strings.TrimPrefix(u.GetNamespace(), p.ns)
		if p.looseTiming && u.GetDeletionTimestamp() != nil {
			refs = []string{"(not compared)"}
		}
		lines = append(lines, fmt.Sprintf("%s %s%s deleting=%v finalizers=%v owners=%v", u.GetKind(),
			strings.TrimPrefix(u.GetName(), p.ns+"-"), where, u.GetDeletionTimestamp() != nil, fins, refs))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

func deref(b *bool) bool { return b != nil && *b }
