package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The manifests of this directory, rendered from charts/gcscope, against a real
// kube-apiserver: every object is accepted by a server-side dry-run apply, and gcscope runs
// with nothing but the chart's ServiceAccount token and exactly the chart's RBAC.
//
// gcscope runs as the image runs it: the slim build (tag noembedded, as the Dockerfile
// builds it) with the container args of the rendered Deployment, changed only where a pod
// differs from a test: --in-cluster becomes --kubeconfig (a kubeconfig holding only the
// ServiceAccount's token), --listen 0.0.0.0:8443 becomes 127.0.0.1:0, and the TLS files
// mounted from the Secret become files of the test's own certificate.

const (
	// The release the manifests are rendered for (deploy/render.go).
	chartNamespace = "gcscope"
	chartSA        = "gcscope"
	// Where the Deployment mounts the TLS Secret.
	tlsMountPath = "/etc/gcscope/tls"
)

var (
	binary string           // gcscope, slim build
	kube   *cluster.Cluster // the shared embedded control plane
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gcscope-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "gcscope")
	build := exec.Command("go", "build", "-tags", "noembedded", "-o", binary, "../cmd/gcscope")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build gcscope (slim): %v\n", err)
		return 1
	}
	return testkit.Run(m, testkit.Options{Setup: func(_ context.Context, e *testkit.Env) error {
		kube = e.Cluster
		return nil
	}})
}

// ---- the manifests -------------------------------------------------------------------

// manifest is one rendered file: its objects in order.
type manifest struct {
	file    string
	objects []*unstructured.Unstructured
}

func load(t testing.TB, file string) *manifest {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := &manifest{file: file}
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "" || s == "{}" {
			continue // a document of comments only
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v\n%s", file, err, doc)
		}
		m.objects = append(m.objects, u)
	}
	if len(m.objects) == 0 {
		t.Fatalf("%s holds no objects", file)
	}
	return m
}

// of returns the objects of one kind.
func (m *manifest) of(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// typed converts the only object of a kind into out.
func (m *manifest) typed(t testing.TB, kind string, out any) {
	t.Helper()
	objs := m.of(kind)
	if len(objs) != 1 {
		t.Fatalf("%s: %d objects of kind %s, want 1", m.file, len(objs), kind)
	}
	js, err := objs[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, out); err != nil {
		t.Fatal(err)
	}
}

func (m *manifest) deployment(t testing.TB) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	m.typed(t, "Deployment", d)
	return d
}

// clusterRoles are the manifest's ClusterRoles by name.
func (m *manifest) clusterRoles(t testing.TB) map[string]*rbacv1.ClusterRole {
	t.Helper()
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range m.of("ClusterRole") {
		cr := &rbacv1.ClusterRole{}
		js, _ := o.MarshalJSON()
		if err := json.Unmarshal(js, cr); err != nil {
			t.Fatal(err)
		}
		out[cr.Name] = cr
	}
	return out
}

// grants lists every (group, resource, verb) the manifest's ClusterRoles grant, as
// "group/resource:verb".
func (m *manifest) grants(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, cr := range m.clusterRoles(t) {
		for _, r := range cr.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, g+"/"+res+":"+v)
					}
				}
			}
			for _, u := range r.NonResourceURLs {
				for _, v := range r.Verbs {
					out = append(out, u+":"+v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestRenderedChart checks what each variant of the chart says, before any cluster sees
// it: the flags gcscope is started with, the pod's hardening, the probes, and the exact
// permissions of its ServiceAccount.
func TestRenderedChart(t *testing.T) {
	readOnly := []string{
		"*/*:get", "*/*:list", "*/*:watch",
		"authentication.k8s.io/tokenreviews:create",
		"authorization.k8s.io/subjectaccessreviews:create",
	}
	impersonate := []string{"/groups:impersonate", "/serviceaccounts:impersonate", "/users:impersonate", "authentication.k8s.io/*:impersonate"}
	active := []string{"*/*:delete", "*/*:patch", "/events:create", "/events:patch"}
	cases := []struct {
		file      string
		mode      string
		readOnly  bool
		grants    []string
		roleNames []string
	}{
		{"gcscope.yaml", "shadow", true, readOnly, []string{"gcscope"}},
		{"gcscope-writes.yaml", "shadow", false, append(slices.Clone(readOnly), impersonate...), []string{"gcscope", "gcscope-writes"}},
		{"gcscope-active.yaml", "active", true, append(slices.Clone(readOnly), active...), []string{"gcscope", "gcscope-active"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			m := load(t, c.file)
			want := slices.Clone(c.grants)
			slices.Sort(want)
			if got := m.grants(t); !slices.Equal(got, want) {
				t.Errorf("the ClusterRoles grant\n  %v\nwant exactly\n  %v", got, want)
			}
			roles := m.clusterRoles(t)
			for _, b := range m.of("ClusterRoleBinding") {
				crb := &rbacv1.ClusterRoleBinding{}
				js, _ := b.MarshalJSON()
				json.Unmarshal(js, crb)
				if roles[crb.RoleRef.Name] == nil {
					t.Errorf("ClusterRoleBinding %s binds %s, which the manifest does not define", crb.Name, crb.RoleRef.Name)
				}
				if len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != chartSA || crb.Subjects[0].Namespace != chartNamespace {
					t.Errorf("ClusterRoleBinding %s binds %v, want only ServiceAccount %s/%s", crb.Name, crb.Subjects, chartNamespace, chartSA)
				}
			}
			var names []string
			for n := range roles {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, c.roleNames) || len(m.of("ClusterRoleBinding")) != len(c.roleNames) {
				t.Errorf("ClusterRoles %v with %d bindings, want %v, one binding each", names, len(m.of("ClusterRoleBinding")), c.roleNames)
			}
			if len(m.of("Role")) != 0 || len(m.of("RoleBinding")) != 0 {
				t.Error("the manifest has Roles or RoleBindings: the test does not check what they grant")
			}

			d := m.deployment(t)
			args := d.Spec.Template.Spec.Containers[0].Args
			for _, a := range []string{
				"--auth=kubernetes", "--listen=0.0.0.0:8443", "--gc-mode=" + c.mode,
				"--tls-cert-file=" + tlsMountPath + "/tls.crt", "--tls-private-key-file=" + tlsMountPath + "/tls.key",
				"--allowed-hosts=gcscope,gcscope.gcscope,gcscope.gcscope.svc,gcscope.gcscope.svc.cluster.local",
			} {
				if !slices.Contains(args, a) {
					t.Errorf("the container args %q lack %s", args, a)
				}
			}
			if got := slices.Contains(args, "--read-only"); got != c.readOnly {
				t.Errorf("--read-only in the args: %v, want %v", got, c.readOnly)
			}
			checkPod(t, d)
		})
	}
}

// checkPod: the pod's hardening, probes, resources and TLS Secret.
func checkPod(t testing.TB, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas %d, want 1", *d.Spec.Replicas)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, a non-zero runAsUser and seccomp RuntimeDefault", psc)
	}
	if spec.ServiceAccountName != chartSA {
		t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, chartSA)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext %+v: want a read-only root filesystem, no privilege escalation, all capabilities dropped", sc)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8443 || c.Ports[0].Name != "https" {
		t.Errorf("ports %+v, want https 8443", c.Ports)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path ||
			p.probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.probe.HTTPGet.Port.String() != "https" {
			t.Errorf("%s probe %+v: want GET %s over HTTPS on port https", p.name, p.probe, p.path)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: request %s, limit %s: want both, request ≤ limit", r, req.String(), lim.String())
		}
	}
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == tlsMountPath {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly {
		t.Fatalf("no read-only volume mounted at %s: %+v", tlsMountPath, c.VolumeMounts)
	}
	for _, v := range spec.Volumes {
		if v.Name == mount.Name {
			if v.Secret == nil || v.Secret.SecretName != "gcscope-tls" || v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440 {
				t.Errorf("volume %s %+v: want Secret gcscope-tls with mode 0440", v.Name, v.VolumeSource)
			}
		}
	}
}

// TestDockerfileMatchesTheChart: the chart appends flags to the image's ENTRYPOINT, which
// must be gcscope --in-cluster from the slim build this test runs.
func TestDockerfileMatchesTheChart(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{`-tags noembedded`, `ENTRYPOINT ["/usr/local/bin/gcscope", "--in-cluster"]`, "USER 65532:65532"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %s: the chart and this test assume it", want)
		}
	}
}

// ---- the apiserver -------------------------------------------------------------------

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

// ---- gcscope -------------------------------------------------------------------------

// gcscopeProc is a running gcscope binary.
type gcscopeProc struct {
	base   string // https://127.0.0.1:PORT
	client *http.Client
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

var servingLine = regexp.MustCompile(`serving on (https://127\.0\.0\.1:\d+)`)

// startGcscope runs gcscope with the container args of m's Deployment and the token of the
// chart's ServiceAccount (and nothing else): see the comment at the top of the file. drop
// names args to leave out.
func startGcscope(t testing.TB, m *manifest, saToken string, drop ...string) *gcscopeProc {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, pool := certificate(t, dir)

	a := kube.RESTConfig()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["embedded"] = &clientcmdapi.Cluster{Server: a.Host, CertificateAuthority: a.TLSClientConfig.CAFile}
	kc.AuthInfos["gcscope"] = &clientcmdapi.AuthInfo{Token: saToken}
	kc.Contexts["gcscope"] = &clientcmdapi.Context{Cluster: "embedded", AuthInfo: "gcscope"}
	kc.CurrentContext = "gcscope"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	c := m.deployment(t).Spec.Template.Spec.Containers[0]
	args := []string{"--kubeconfig=" + kubeconfig} // the image's ENTRYPOINT says --in-cluster
	replaced := map[string]bool{}
	for _, arg := range c.Args {
		name, _, _ := strings.Cut(arg, "=")
		switch {
		case slices.Contains(drop, name):
			replaced[name] = true
			continue
		case arg == "--listen=0.0.0.0:8443":
			arg = "--listen=127.0.0.1:0"
		case arg == "--tls-cert-file="+tlsMountPath+"/tls.crt":
			arg = "--tls-cert-file=" + certFile
		case arg == "--tls-private-key-file="+tlsMountPath+"/tls.key":
			arg = "--tls-private-key-file=" + keyFile
		default:
			args = append(args, arg)
			continue
		}
		replaced[name] = true
		args = append(args, arg)
	}
	for _, n := range append([]string{"--listen", "--tls-cert-file", "--tls-private-key-file"}, drop...) {
		if !replaced[n] {
			t.Fatalf("the Deployment's args %q have no %s to replace", c.Args, n)
		}
	}

	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &gcscopeProc{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	base := make(chan string, 1)
	var out lockedWriter
	out.w = &bytes.Buffer{}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			fmt.Fprintln(&out, s.Text())
			if m := servingLine.FindStringSubmatch(s.Text()); m != nil {
				base <- m[1]
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("gcscope %q\nstdout:\n%s\nstderr:\n%s", args, out.String(), p.stderrString())
		}
	})
	select {
	case p.base = <-base:
	case <-exited:
		t.Fatalf("gcscope %q exited: %v\nstdout:\n%s\nstderr:\n%s", args, cmd.ProcessState, out.String(), p.stderrString())
	case <-time.After(60 * time.Second):
		t.Fatalf("gcscope %q did not serve within a minute\nstdout:\n%s\nstderr:\n%s", args, out.String(), p.stderrString())
	}
	jar, _ := cookiejar.New(nil)
	p.client = &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return p
}

// rss is the process's resident memory (VmRSS), for the chart's sizing.
func (p *gcscopeProc) rss() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (p *gcscopeProc) stderrString() string {
	return p.cmd.Stderr.(*lockedWriter).String()
}

// lockedWriter is a buffer written by one goroutine and read by another.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// certificate writes a self-signed serving certificate for localhost and 127.0.0.1 and
// returns its files and a pool that trusts it.
func certificate(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcscope"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost", "gcscope.gcscope.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// get sends a GET with a bearer token (none when empty) and Host (the URL's when empty).
func (p *gcscopeProc) get(t testing.TB, path, bearer, host string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if host != "" {
		req.Host = host
	}
	return p.do(t, req)
}

func (p *gcscopeProc) do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// waitReady polls /readyz as the readiness probe does (its path from the Deployment).
func (p *gcscopeProc) waitReady(t testing.TB, m *manifest) {
	t.Helper()
	path := m.deployment(t).Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path
	var code int
	var body []byte
	if testkit.Poll(context.Background(), time.Minute, func() bool { code, body = p.get(t, path, "", ""); return code == http.StatusOK }) != nil {
		t.Fatalf("%s: %d %s after a minute", path, code, body)
	}
}

// apiError is gcscope's error shape.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// deleteAs asks gcscope to delete the object of uid (Background) as the token's holder,
// as the page does: a session for the CSRF token, then a same-origin POST.
func (p *gcscopeProc) deleteAs(t testing.TB, bearer string, uid types.UID, dryRun bool) (int, apiError) {
	t.Helper()
	code, body := p.get(t, "/api/v1/session", bearer, "")
	if code != http.StatusOK {
		t.Fatalf("/api/v1/session: %d %s", code, body)
	}
	var session struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.Unmarshal(body, &session); err != nil || session.CSRFToken == "" {
		t.Fatalf("/api/v1/session: %s (%v)", body, err)
	}
	reqBody := fmt.Sprintf(`{"propagationPolicy":"Background","dryRun":%v}`, dryRun)
	req, _ := http.NewRequest(http.MethodPost, p.base+"/api/v1/objects/"+url.PathEscape(string(uid))+"/delete", strings.NewReader(reqBody))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Origin", p.base)
	req.Header.Set("X-CSRF-Token", session.CSRFToken)
	req.Header.Set("Content-Type", "application/json")
	code, body = p.do(t, req)
	var e apiError
	if code != http.StatusOK {
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("delete: %d, not gcscope's error shape: %s", code, body)
		}
	}
	return code, e
}

// graphNames returns the names of the objects of namespace in gcscope's graph, as the
// token's holder sees them.
func (p *gcscopeProc) graphNames(t testing.TB, bearer, namespace string) []string {
	t.Helper()
	code, body := p.get(t, "/api/v1/graph?namespace="+namespace, bearer, "")
	if code != http.StatusOK {
		t.Fatalf("/api/v1/graph: %d %s", code, body)
	}
	var g struct {
		Nodes []struct {
			Name     string `json:"name"`
			Observed bool   `json:"observed"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(body, &g); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range g.Nodes {
		if n.Observed {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	return names
}

// queues is the part of /api/v1/queues the tests read.
type queues struct {
	Mode   string `json:"mode"`
	Queues []struct {
		Name   string `json:"name"`
		Recent []struct {
			Verb   string `json:"verb"`
			Policy string `json:"policy"`
			Object struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"object"`
			Reason string `json:"reason"`
			Error  string `json:"error"`
			Shadow bool   `json:"shadow"`
		} `json:"recent"`
	} `json:"queues"`
	Sync struct {
		Resources []string          `json:"resources"`
		Unsynced  []string          `json:"unsynced"`
		Failing   map[string]string `json:"failing"`
	} `json:"sync"`
}

func (p *gcscopeProc) queues(t testing.TB, bearer string) queues {
	t.Helper()
	code, body := p.get(t, "/api/v1/queues", bearer, "")
	if code != http.StatusOK {
		t.Fatalf("/api/v1/queues: %d %s", code, body)
	}
	var q queues
	if err := json.Unmarshal(body, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// action returns the first recent action of verb on namespace/name that is not an error.
func (q queues) action(verb, namespace, name string) (shadow, found bool) {
	for _, qu := range q.Queues {
		for _, a := range qu.Recent {
			if a.Verb == verb && a.Object.Namespace == namespace && a.Object.Name == name && a.Error == "" {
				return a.Shadow, true
			}
		}
	}
	return false, false
}

// ---- the chart's RBAC at work ------------------------------------------------------------

// TestShadowModeWithTheChartsToken: the default manifests' ServiceAccount token is enough
// for gcscope to sync every monitor, answer its probes, show the graph to a signed-in user
// and record a shadow decision; and it is not enough to write anything.
func TestShadowModeWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope.yaml")
	installRBAC(t, m)
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "shadow-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch", "delete")

	// What the ServiceAccount itself may do, as the apiserver's RBAC says.
	cm := func(verb string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		cm("get"), cm("list"), cm("watch"),
		{Verb: "list", Group: "example.com", Resource: "widgets"}, // a CRD installed later: the monitors need it too
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("the ServiceAccount may not %s %s.%s: gcscope needs it", attr.Verb, attr.Resource, attr.Group)
		}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		cm("delete"), cm("patch"), cm("update"), cm("create"), cm("deletecollection"),
		{Verb: "delete", Group: "apps", Resource: "deployments", Namespace: ns},
		{Verb: "patch", Group: "example.com", Resource: "widgets"},
		{Verb: "create", Resource: "events", Namespace: ns},
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: ns},
		{Verb: "impersonate", Resource: "users"},
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: "alice"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	} {
		if can(t, sa, attr) {
			t.Errorf("the default chart's ServiceAccount may %s %s/%s.%s", attr.Verb, attr.Resource, attr.Subresource, attr.Group)
		}
	}
	// And the writes themselves, dry-run: the apiserver's RBAC refuses them (403).
	dry := []string{metav1.DryRunAll}
	err := sa.CoreV1().ConfigMaps(ns).Delete(ctx, "lonely", metav1.DeleteOptions{DryRun: dry})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount's dry-run delete: %v, want 403 Forbidden", err)
	}
	_, err = sa.CoreV1().ConfigMaps(ns).Patch(ctx, "shared", types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`), metav1.PatchOptions{DryRun: dry})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount's dry-run patch: %v, want 403 Forbidden", err)
	}

	p := startGcscope(t, m, saToken)
	if code, body := p.get(t, "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("/healthz (the liveness probe): %d %s", code, body)
	}
	p.waitReady(t, m)
	// The Service's name is answered (--allowed-hosts from the chart); another is not.
	if code, _ := p.get(t, "/healthz", "", "gcscope.gcscope.svc:443"); code != http.StatusOK {
		t.Errorf("/healthz with Host gcscope.gcscope.svc: %d, want 200", code)
	}
	if code, _ := p.get(t, "/healthz", "", "evil.example"); code != http.StatusMisdirectedRequest {
		t.Errorf("/healthz with Host evil.example: %d, want 421", code)
	}
	// --auth=kubernetes: no token, no graph.
	if code, _ := p.get(t, "/api/v1/graph", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/graph without a token: %d, want 401", code)
	}

	q := p.queues(t, alice)
	if q.Mode != "shadow" {
		t.Errorf("mode %q, want shadow", q.Mode)
	}
	if len(q.Sync.Unsynced) > 0 || len(q.Sync.Failing) > 0 || !slices.Contains(q.Sync.Resources, "v1/configmaps") || len(q.Sync.Resources) < 20 {
		t.Errorf("monitors with the chart's token: %d resources, unsynced %v, failing %v", len(q.Sync.Resources), q.Sync.Unsynced, q.Sync.Failing)
	}
	want := []string{"child", "lonely", "owner", "shared", "victim"}
	testkit.Eventually(t, "alice sees the ConfigMaps of "+ns+" in the graph", func() bool {
		return slices.Equal(p.graphNames(t, alice, ns), want)
	})
	// The dangling owner: the engine decides to delete lonely and to patch the ghost out of
	// shared, and in shadow mode only records it.
	testkit.Eventually(t, "a shadow delete of lonely and a shadow patch of shared", func() bool {
		q := p.queues(t, alice)
		del, ok1 := q.action("delete", ns, "lonely")
		patch, ok2 := q.action("patchRemoveRefs", ns, "shared")
		return ok1 && ok2 && del && patch
	})
	t.Logf("gcscope's resident memory, synced on an almost empty cluster: %s", p.rss())
	live, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{})
	if err != nil || live.DeletionTimestamp != nil {
		t.Errorf("lonely after a shadow decision: %v %v: want it untouched", err, live)
	}
	if shared, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{}); err != nil || len(shared.OwnerReferences) != 2 {
		t.Errorf("shared after a shadow decision: %v, want both ownerReferences kept", err)
	}

	// A delete through gcscope's API: refused by gcscope itself (--read-only), before any
	// request reaches the cluster; a dry run still predicts.
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusForbidden || e.Error != "read_only" {
		t.Errorf("delete through gcscope: %d %+v, want 403 read_only", code, e)
	}
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, true); code != http.StatusOK {
		t.Errorf("dry-run delete through gcscope: %d %+v, want 200", code, e)
	}

	// Without --read-only, the same install still cannot delete: gcscope deletes as alice
	// by impersonation, which the ServiceAccount may not do: the apiserver's 403.
	p2 := startGcscope(t, m, saToken, "--read-only")
	p2.waitReady(t, m)
	testkit.Eventually(t, "the second gcscope's graph holds victim", func() bool {
		return slices.Contains(p2.graphNames(t, alice, ns), "victim")
	})
	code, e := p2.deleteAs(t, alice, objs["victim"].UID, false)
	if code != http.StatusForbidden || e.Error != "apiserver" || e.Reason != string(metav1.StatusReasonForbidden) || !strings.Contains(e.Message, "impersonate") {
		t.Errorf("delete through gcscope without --read-only: %d %+v, want the apiserver's 403 on impersonation", code, e)
	}
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("victim after the refused deletes: %v", err)
	}
}

// TestWritesWithTheChartsToken: with writes.enabled the ServiceAccount may impersonate, and
// still not delete by itself; a delete through gcscope is the signed-in user's, decided by
// that user's RBAC.
func TestWritesWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope-writes.yaml")
	installRBAC(t, m)
	t.Cleanup(func() { installRBAC(t, load(t, "gcscope.yaml")) })
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "writes-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch", "delete")
	bob := user(t, ns, "bob", "get", "list", "watch")

	for _, attr := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "users", Name: "someone"},
		{Verb: "impersonate", Resource: "groups", Name: "system:authenticated"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: "alice"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "authentication.kubernetes.io/credential-id"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("with writes enabled the ServiceAccount may not %s %s/%s", attr.Verb, attr.Resource, attr.Subresource)
		}
	}
	for _, verb := range []string{"delete", "patch", "update", "create"} {
		if can(t, sa, authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"}) {
			t.Errorf("with writes enabled the ServiceAccount itself may %s configmaps: only the users it impersonates should", verb)
		}
	}

	p := startGcscope(t, m, saToken)
	p.waitReady(t, m)
	testkit.Eventually(t, "victim in the graph", func() bool {
		return slices.Contains(p.graphNames(t, alice, ns), "victim")
	})
	// bob may not delete ConfigMaps: the apiserver says so to gcscope acting as bob.
	code, e := p.deleteAs(t, bob, objs["victim"].UID, false)
	if code != http.StatusForbidden || e.Error != "apiserver" || e.Reason != string(metav1.StatusReasonForbidden) || !strings.Contains(e.Message, "writes-test:bob") {
		t.Errorf("bob's delete through gcscope: %d %+v, want the apiserver's 403 for bob", code, e)
	}
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Fatalf("victim after bob's refused delete: %v", err)
	}
	// alice may, and does.
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusOK {
		t.Fatalf("alice's delete through gcscope: %d %+v, want 200", code, e)
	}
	testkit.Eventually(t, "victim deleted", func() bool {
		_, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// The engine is still in shadow mode: the dangling owner's dependent stays.
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{}); err != nil {
		t.Errorf("lonely: %v, want it kept (shadow mode)", err)
	}
	if !strings.Contains(p.stderrString(), `"action":"delete"`) || !strings.Contains(p.stderrString(), `"impersonated":true`) {
		t.Errorf("no audit line of an impersonated delete on stderr:\n%s", p.stderrString())
	}
}

// TestActiveModeWithTheChartsToken: with gc.mode=active the ServiceAccount may delete and
// patch, and gcscope's engine collects with that token alone.
func TestActiveModeWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope-active.yaml")
	installRBAC(t, m)
	t.Cleanup(func() { installRBAC(t, load(t, "gcscope.yaml")) })
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "active-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch")

	for _, attr := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "delete", Resource: "configmaps"},
		{Namespace: ns, Verb: "patch", Resource: "configmaps"},
		{Verb: "delete", Group: "example.com", Resource: "widgets"},
		{Namespace: ns, Verb: "create", Resource: "events"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("in active mode the ServiceAccount may not %s %s.%s", attr.Verb, attr.Resource, attr.Group)
		}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "configmaps"},
		{Namespace: ns, Verb: "update", Resource: "configmaps"},
		{Verb: "impersonate", Resource: "users"},
	} {
		if can(t, sa, attr) {
			t.Errorf("in active mode the ServiceAccount may %s %s", attr.Verb, attr.Resource)
		}
	}
	if err := sa.CoreV1().ConfigMaps(ns).Delete(ctx, "victim", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the ServiceAccount's dry-run delete in active mode: %v", err)
	}

	p := startGcscope(t, m, saToken)
	p.waitReady(t, m)
	// The engine deletes lonely (its only owner is gone) and patches the ghost out of shared.
	testkit.Eventually(t, "lonely deleted by gcscope's engine", func() bool {
		_, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "the ghost reference patched out of shared", func() bool {
		s, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
		return err == nil && len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == objs["owner"].UID
	})
	q := p.queues(t, alice)
	if shadow, ok := q.action("delete", ns, "lonely"); !ok || shadow {
		t.Errorf("the engine's delete of lonely: found %v, shadow %v; want a real delete", ok, shadow)
	}
	// The UI stays read-only (writes are another switch).
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusForbidden || e.Error != "read_only" {
		t.Errorf("delete through gcscope: %d %+v, want 403 read_only", code, e)
	}
}
