package deploy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// The manifests on the embedded apiserver: clients that apply them (for real or as a dry
// run), the chart's RBAC installed, ServiceAccount tokens and users with chosen verbs.

// clients of the embedded cluster's admin, and a mapper from kinds to resources.
type clients struct {
	config *rest.Config
	cs     *kubernetes.Clientset
	dyn    *dynamic.DynamicClient
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func admin(t testing.TB) *clients {
	t.Helper()
	cfg := kube.RESTConfig()
	return newClients(t, cfg)
}

func newClients(t testing.TB, cfg *rest.Config) *clients {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &clients{
		config: cfg,
		cs:     kubernetes.NewForConfigOrDie(cfg),
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
}

// apply applies objects with server-side apply (dryRun: the apiserver validates, admits and
// answers, and stores nothing).
func (c *clients) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	gvk := o.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
	}
	opts := metav1.ApplyOptions{FieldManager: "gcscope-deploy-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(mapping.Resource)
	if ns := o.GetNamespace(); ns != "" {
		ri = c.dyn.Resource(mapping.Resource).Namespace(ns)
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// warnings records the apiserver's warnings (Pod Security among them).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	w.list = append(w.list, text)
	w.mu.Unlock()
}

// TestServerSideDryRun: every object of every variant is accepted by the apiserver
// (schema, defaulting, admission, Pod Security "restricted" on the namespace), with no
// warning; then a Pod made from the Deployment's template passes the namespace's enforced
// Pod Security level.
func TestServerSideDryRun(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"gcscope.yaml", "gcscope-writes.yaml", "gcscope-active.yaml"} {
		t.Run(file, func(t *testing.T) {
			m := load(t, file)
			w := &warnings{}
			cfg := kube.RESTConfig()
			cfg.WarningHandler = w
			c := newClients(t, cfg)
			// A dry run cannot create in a namespace that does not exist yet: the Namespace is
			// applied for real first (it is the manifests' own, labels included).
			nss := m.of("Namespace")
			if len(nss) != 1 || nss[0].GetName() != chartNamespace {
				t.Fatalf("want the Namespace %s in the manifest", chartNamespace)
			}
			if err := c.apply(ctx, nss[0], false); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, o := range m.objects {
				if err := c.apply(ctx, o, true); err != nil {
					t.Error(err)
				}
				kinds[o.GetKind()]++
			}
			for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment"} {
				if kinds[k] == 0 {
					t.Errorf("the manifest has no %s", k)
				}
			}
			if len(w.list) > 0 {
				t.Errorf("the apiserver warned: %q", w.list)
			}

			// The pod itself, as the ReplicaSet controller would create it (its ServiceAccount
			// must exist for admission).
			for _, o := range m.of("ServiceAccount") {
				if err := c.apply(ctx, o, false); err != nil {
					t.Fatal(err)
				}
			}
			d := m.deployment(t)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gcscope-dry-run", Namespace: d.Namespace, Labels: d.Spec.Template.Labels},
				Spec: d.Spec.Template.Spec}
			if _, err := c.cs.CoreV1().Pods(d.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("the Deployment's pod is refused: %v", err)
			}
			// The enforcement is on: a root pod is refused in that namespace.
			root := pod.DeepCopy()
			root.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
			root.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
			root.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
			if _, err := c.cs.CoreV1().Pods(d.Namespace).Create(ctx, root, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
				t.Errorf("a root pod in namespace %s: %v, want Forbidden (Pod Security restricted)", d.Namespace, err)
			}
		})
	}
}

// installRBAC makes the cluster's gcscope permissions exactly those of a manifest: its
// Namespace, ServiceAccount, ClusterRoles and ClusterRoleBindings are applied for real, and
// the release's ClusterRoles and bindings it lacks (from another variant) are deleted.
func installRBAC(t testing.TB, m *manifest) {
	t.Helper()
	ctx := context.Background()
	c := admin(t)
	keep := map[string]bool{}
	for _, o := range m.objects {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			if err := c.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
			keep[o.GetKind()+"/"+o.GetName()] = true
		}
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=gcscope"}
	crbs, err := c.cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range crbs.Items {
		if !keep["ClusterRoleBinding/"+b.Name] {
			if err := c.cs.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	crs, err := c.cs.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range crs.Items {
		if !keep["ClusterRole/"+r.Name] {
			if err := c.cs.RbacV1().ClusterRoles().Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// token asks for a token of a ServiceAccount through the TokenRequest API, as
// `kubectl create token` does.
func token(t testing.TB, namespace, name string) string {
	t.Helper()
	tr, err := admin(t).cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// asToken is a client configuration with that bearer token and nothing else of the admin's.
func asToken(tok string) *rest.Config {
	a := kube.RESTConfig()
	return &rest.Config{Host: a.Host, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAFile: a.TLSClientConfig.CAFile}}
}

// can asks the apiserver, as the token's holder, whether it may do verb on resource.
func can(t testing.TB, cs kubernetes.Interface, attr authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// user creates a ServiceAccount in namespace with a Role of verbs on configmaps there, and
// returns its token: a person signing in to gcscope.
func user(t testing.TB, namespace, name string, verbs ...string) string {
	t.Helper()
	ctx := context.Background()
	cs := admin(t).cs
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return token(t, namespace, name)
}

// scene creates a namespace of ConfigMaps: owner, child (owned by owner), lonely (owned
// only by a ConfigMap that does not exist: a dangling owner) and shared (owned by owner and
// by that missing one). It returns the objects by name.
func scene(t testing.TB, namespace string) map[string]*corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	cs := admin(t).cs
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager here: the namespace's default ServiceAccount is made by hand.
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.ConfigMap{}
	mk := func(name string, owners ...metav1.OwnerReference) {
		cm, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = cm
	}
	mk("owner")
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}
	}
	ghost := ref("ghost", "00000000-0000-4000-8000-00000000dead")
	mk("child", ref("owner", out["owner"].UID))
	mk("lonely", ghost)
	mk("shared", ref("owner", out["owner"].UID), ghost)
	mk("victim")
	return out
}
