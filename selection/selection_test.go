package selection_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/selection"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type env struct {
	*testkit.Env
	ctx context.Context
	ns  string
}

func setup(t *testing.T) *env {
	t.Helper()
	k := testkit.Shared(t, testkit.Options{})
	e := &env{Env: k, ctx: context.Background(), ns: "sel-" + strings.ToLower(strings.ReplaceAll(t.Name()[4:], "/", "-"))}
	if len(e.ns) > 40 {
		e.ns = e.ns[:40]
	}
	if _, err := k.Client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Client.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}) })
	return e
}

// source reads the cluster as the admin, kinds mapped from fresh discovery (short names
// too, as kubectl's).
func (e *env) source(t *testing.T) *selection.Source {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, func(string) {})
	s, err := selection.NewSource(e.Config, mapper, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) configMap(t *testing.T, ns, name string, labels map[string]string) types.UID {
	t.Helper()
	cm, err := e.Client.CoreV1().ConfigMaps(ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.UID
}

func names(refs []gc.ObjectRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Kind+" "+strings.TrimPrefix(r.Namespace+"/"+r.Name, "/"))
	}
	slices.Sort(out)
	return out
}

// TestAManifestResolvesEachDocument: the documents of a manifest resolve to their live
// objects as kubectl delete -f finds them (no namespace: the current one; a List's items
// each), with uids; a document the cluster does not hold is said missing, naming it.
// Six ConfigMaps of one namespace are read with one LIST, the others with a GET each.
func TestAManifestResolvesEachDocument(t *testing.T) {
	e := setup(t)
	other := e.ns + "-b"
	if _, err := e.Client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Client.CoreV1().Namespaces().Delete(context.Background(), other, metav1.DeleteOptions{}) })
	uids := map[string]types.UID{}
	for i := range 6 {
		name := fmt.Sprintf("many-%d", i)
		uids[name] = e.configMap(t, e.ns, name, nil)
	}
	uids["there"] = e.configMap(t, other, "there", nil)
	uids["here"] = e.configMap(t, e.ns, "here", nil)
	manifest := `apiVersion: v1
kind: ConfigMap
metadata: {name: here}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: there, namespace: ` + other + `}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: gone}
---
apiVersion: v1
kind: List
items:
` + func() string {
		var b strings.Builder
		for i := range 6 {
			fmt.Fprintf(&b, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: many-%d}}\n", i)
		}
		return b.String()
	}() + `---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
`
	docs, err := selection.ParseManifest([]byte(manifest), "app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 10 {
		t.Fatalf("%d documents read, want 10 (4 alone, 6 in a List)", len(docs))
	}
	set, err := e.source(t).Manifest(e.ctx, docs, "kubectl delete -f app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 8 {
		t.Fatalf("resolved %v, want the 8 ConfigMaps that exist", names(set.Objects))
	}
	for _, o := range set.Objects {
		if uids[o.Name] != o.UID || o.APIVersion != "v1" || o.Kind != "ConfigMap" {
			t.Errorf("resolved %+v: uid %s, want %s", o, o.UID, uids[o.Name])
		}
		if o.Name == "there" && o.Namespace != other || o.Name != "there" && o.Namespace != e.ns {
			t.Errorf("%s resolved in namespace %s", o.Name, o.Namespace)
		}
	}
	if len(set.Missing) != 2 {
		t.Fatalf("missing %+v, want gone (not found) and the Widget (not served)", set.Missing)
	}
	if m := set.Missing[0]; m.Object.Name != "gone" || !strings.Contains(m.Reason, "not found") || !strings.Contains(m.Reason, "app.yaml, document 3") {
		t.Errorf("missing %+v, want gone: not found, in document 3", m)
	}
	if m := set.Missing[1]; m.Object.Kind != "Widget" || !strings.Contains(m.Reason, "does not serve") {
		t.Errorf("missing %+v, want the Widget: not served", m)
	}

	for _, bad := range []string{"kind: ConfigMap\nmetadata: {name: x}\n", "apiVersion: v1\nkind: [\n"} {
		if _, err := selection.ParseManifest([]byte(bad), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "bad.yaml, document 1") {
			t.Errorf("manifest %q: %v, want an error naming bad.yaml, document 1", bad, err)
		}
	}
}

// TestASelectorMatchesInItsNamespaceOrAll: kubectl delete configmaps -l app=web matches
// in the namespace only, or in every namespace with -A; a type the cluster does not serve
// is refused.
func TestASelectorMatchesInItsNamespaceOrAll(t *testing.T) {
	e := setup(t)
	other := e.ns + "-b"
	if _, err := e.Client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Client.CoreV1().Namespaces().Delete(context.Background(), other, metav1.DeleteOptions{}) })
	web := map[string]string{"app": "web"}
	e.configMap(t, e.ns, "web-a", web)
	e.configMap(t, e.ns, "db", map[string]string{"app": "db"})
	e.configMap(t, other, "web-b", web)
	s := e.source(t)
	set, err := s.Selector(e.ctx, []string{"cm"}, "app=web", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(set.Objects); !slices.Equal(got, []string{"ConfigMap " + e.ns + "/web-a"}) {
		t.Errorf("-n %s: %v", e.ns, got)
	}
	all, err := s.Selector(e.ctx, []string{"configmaps"}, "app=web", "", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ConfigMap " + e.ns + "/web-a", "ConfigMap " + other + "/web-b"} {
		if !slices.Contains(names(all.Objects), want) {
			t.Errorf("-A: %v, want %s among them", names(all.Objects), want)
		}
	}
	if _, err := s.Selector(e.ctx, []string{"widgets"}, "app=web", "", false); err == nil {
		t.Error("a type not served: no error")
	}
	if _, err := s.Selector(e.ctx, []string{"cm"}, "app in (", "", false); err == nil {
		t.Error("a bad selector: no error")
	}
}

// helmRecord writes revision v of release name as Helm 3 stores it: a Secret of type
// helm.sh/release.v1 whose data "release" is the release's JSON, gzipped, in base64.
func (e *env) helmRecord(t *testing.T, name string, v int, status string, rel map[string]any) types.UID {
	t.Helper()
	rel["name"], rel["namespace"], rel["version"], rel["info"] = name, e.ns, v, map[string]any{"status": status}
	raw, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw)
	w.Close()
	sec, err := e.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, v),
			Labels: map[string]string{"owner": "helm", "name": name, "version": fmt.Sprint(v), "status": status}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sec.UID
}

// TestAHelmReleaseIsReadFromHelmsOwnStorage: helm uninstall web deletes what the newest
// revision's manifest declares (read from the release Secret in Helm's format), but not
// what is annotated helm.sh/resource-policy: keep, nor the resources a post-install hook
// made; it runs the pre-delete hook, and deletes the release's records.
func TestAHelmReleaseIsReadFromHelmsOwnStorage(t *testing.T) {
	e := setup(t)
	config := e.configMap(t, e.ns, "web-config", nil)
	keep := e.configMap(t, e.ns, "web-data", nil)
	job, err := e.Client.BatchV1().Jobs(e.ns).Create(e.ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "web-migrate"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "m", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := e.helmRecord(t, "web", 1, "superseded", map[string]any{"manifest": "---\n# Source: web/templates/old.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-old\n"})
	newest := e.helmRecord(t, "web", 2, "deployed", map[string]any{
		"manifest": "---\n# Source: web/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n" +
			"---\n# Source: web/templates/data.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-data\n  annotations:\n    helm.sh/resource-policy: keep\n" +
			"---\n# Source: web/templates/gone.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-gone\n",
		"hooks": []any{
			map[string]any{"name": "web-migrate", "kind": "Job", "path": "web/templates/migrate.yaml", "events": []string{"post-install", "post-upgrade"},
				"manifest": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: web-migrate\n"},
			map[string]any{"name": "web-backup", "kind": "Job", "path": "web/templates/backup.yaml", "events": []string{"pre-delete"},
				"delete_policies": []string{"hook-succeeded"}, "manifest": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: web-backup\n"},
		},
	})
	set, err := e.source(t).HelmRelease(e.ctx, "web", e.ns)
	if err != nil {
		t.Fatal(err)
	}
	if set.Describe != "helm uninstall web -n "+e.ns {
		t.Errorf("describe %q", set.Describe)
	}
	uidsOf := func(refs []gc.ObjectRef) []types.UID {
		var out []types.UID
		for _, r := range refs {
			out = append(out, r.UID)
		}
		return out
	}
	if got := uidsOf(set.Objects); !slices.Equal(got, []types.UID{config, old, newest}) {
		t.Errorf("deletes %v, want web-config and the two revisions' Secrets", names(set.Objects))
	}
	if len(set.Kept) != 2 || set.Kept[0].Object.UID != keep || !strings.Contains(set.Kept[0].Reason, "resource-policy: keep") ||
		set.Kept[1].Object.UID != job.UID || !strings.Contains(set.Kept[1].Reason, "post-install") {
		t.Errorf("kept %+v, want web-data (keep) and the post-install hook's Job", set.Kept)
	}
	if len(set.Missing) != 1 || set.Missing[0].Object.Name != "web-gone" {
		t.Errorf("missing %+v, want web-gone", set.Missing)
	}
	if !slices.ContainsFunc(set.Notes, func(n string) bool {
		return strings.Contains(n, "pre-delete hook Job web-backup") && strings.Contains(n, "hook-succeeded")
	}) {
		t.Errorf("notes %q, want the pre-delete hook run", set.Notes)
	}

	if _, err := e.source(t).HelmRelease(e.ctx, "absent", e.ns); err == nil || !strings.Contains(err.Error(), "release not found") {
		t.Errorf("an absent release: %v", err)
	}
	e.helmRecord(t, "done", 1, "uninstalled", map[string]any{"manifest": ""})
	if _, err := e.source(t).HelmRelease(e.ctx, "done", e.ns); err == nil || !strings.Contains(err.Error(), "already uninstalled") {
		t.Errorf("an uninstalled release: %v", err)
	}
}

// TestAnArgoCDApplicationTakesItsResourcesOnlyWithItsFinalizer: deleting an Application
// with the resources finalizer deletes the resources it tracks; without it, they are
// kept. Before the kind is served, the delete is refused saying so.
func TestAnArgoCDApplicationTakesItsResourcesOnlyWithItsFinalizer(t *testing.T) {
	e := setup(t)
	if _, err := e.source(t).ArgoCDApplication(e.ctx, "shop", e.ns); err == nil || !strings.Contains(err.Error(), "does not serve") {
		t.Errorf("Applications not served: %v", err)
	}
	gvr := installApplications(t, e)
	a, b := e.configMap(t, e.ns, "shop-a", nil), e.configMap(t, e.ns, "shop-b", nil)
	resources := []any{
		map[string]any{"group": "", "version": "v1", "kind": "ConfigMap", "namespace": e.ns, "name": "shop-a"},
		map[string]any{"group": "", "version": "v1", "kind": "ConfigMap", "name": "shop-b"},
		map[string]any{"group": "", "version": "v1", "kind": "ConfigMap", "namespace": e.ns, "name": "shop-pruned"},
	}
	app := func(name string, finalizers ...string) types.UID {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"destination": map[string]any{"namespace": e.ns}},
			"status": map[string]any{"resources": resources}}}
		u.SetFinalizers(finalizers)
		got, err := e.Dyn.Resource(gvr).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			got.SetFinalizers(nil)
			e.Dyn.Resource(gvr).Namespace(e.ns).Update(context.Background(), got, metav1.UpdateOptions{})
		})
		return got.GetUID()
	}
	cascading := app("shop", "resources-finalizer.argocd.argoproj.io")
	alone := app("shop-alone")
	s := e.source(t)
	set, err := s.ArgoCDApplication(e.ctx, "shop", e.ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 3 || set.Objects[0].UID != cascading || set.Objects[1].UID != a || set.Objects[2].UID != b {
		t.Errorf("with the finalizer: deletes %v, want the Application, shop-a and shop-b", names(set.Objects))
	}
	if len(set.Missing) != 1 || set.Missing[0].Object.Name != "shop-pruned" || len(set.Notes) != 1 || !strings.Contains(set.Notes[0], "foreground") {
		t.Errorf("with the finalizer: missing %+v, notes %q", set.Missing, set.Notes)
	}
	set, err = s.ArgoCDApplication(e.ctx, "shop-alone", e.ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 1 || set.Objects[0].UID != alone || len(set.Kept) != 2 || !strings.Contains(set.Kept[0].Reason, "no resources finalizer") {
		t.Errorf("without the finalizer: deletes %v, keeps %+v; want the Application alone, its resources kept", names(set.Objects), set.Kept)
	}
	if _, err := s.ArgoCDApplication(e.ctx, "absent", e.ns); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("an absent Application: %v", err)
	}
}

// installApplications serves Argo CD's Application kind (any content).
func installApplications(t *testing.T, e *env) schema.GroupVersionResource {
	t.Helper()
	crds := e.Dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	_, err := crds.Create(e.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "applications.argoproj.io"},
		"spec": map[string]any{"group": "argoproj.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Application", "plural": "applications", "singular": "application", "listKind": "ApplicationList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	testkit.Eventually(t, "the apiserver serving Applications", func() bool {
		_, err := e.Dyn.Resource(gvr).List(e.ctx, metav1.ListOptions{})
		return err == nil
	})
	return gvr
}
