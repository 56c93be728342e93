package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

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
	// Where the Deployment mounts the TLS Secret, and the history's volume.
	tlsMountPath     = "/etc/gcscope/tls"
	historyMountPath = "/var/lib/gcscope"
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
				"--history-dir=" + historyMountPath + "/history", "--history-max-size=1Gi", "--history-max-age=168h",
			} {
				if !slices.Contains(args, a) {
					t.Errorf("the container args %q lack %s", args, a)
				}
			}
			if got := slices.Contains(args, "--read-only"); got != c.readOnly {
				t.Errorf("--read-only in the args: %v, want %v", got, c.readOnly)
			}
			checkPod(t, d)
			checkHistoryClaim(t, m, d)
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

// checkHistoryClaim: the history is recorded on the chart's PersistentVolumeClaim,
// mounted where --history-dir points, writable by the pod's fsGroup.
func checkHistoryClaim(t testing.TB, m *manifest, d *appsv1.Deployment) {
	t.Helper()
	claims := m.of("PersistentVolumeClaim")
	if len(claims) != 1 {
		t.Fatalf("%d PersistentVolumeClaims, want the history's", len(claims))
	}
	pvc := &corev1.PersistentVolumeClaim{}
	js, _ := claims[0].MarshalJSON()
	json.Unmarshal(js, pvc)
	if size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; size.Cmp(resource.MustParse("1Gi")) <= 0 ||
		!slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim %s: %v %s, want ReadWriteOnce and more than --history-max-size (1Gi)", pvc.Name, pvc.Spec.AccessModes, size.String())
	}
	spec := d.Spec.Template.Spec
	var mounted string
	for _, vm := range spec.Containers[0].VolumeMounts {
		if vm.MountPath == historyMountPath && !vm.ReadOnly {
			mounted = vm.Name
		}
	}
	var claimed bool
	for _, v := range spec.Volumes {
		claimed = claimed || (v.Name == mounted && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name)
	}
	if mounted == "" || !claimed {
		t.Errorf("claim %s is not mounted writable at %s: mounts %+v, volumes %+v", pvc.Name, historyMountPath, spec.Containers[0].VolumeMounts, spec.Volumes)
	}
	if psc := spec.SecurityContext; psc == nil || psc.FSGroup == nil || *psc.FSGroup != *psc.RunAsGroup {
		t.Errorf("pod securityContext %+v: the claim needs fsGroup = runAsGroup to be writable", psc)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %s: a ReadWriteOnce claim needs Recreate (the old pod lets go of it first)", d.Spec.Strategy.Type)
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
