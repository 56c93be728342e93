package deploy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The chart's hub mode (values hub.remotes), rendered as testdata/hub.yaml: gcscope runs
// without --in-cluster, with a --remote per remote gcscope, and the release grants nothing
// in the cluster; then the binary runs with those args against stand-in remotes.

// hubRemotes are how testdata/hub.yaml's values give each remote (deploy/render.go).
var hubRemotes = []struct {
	name, url, forward string
	ca                 corev1.VolumeSource // where its CA comes from
}{
	{"east", "https://gcscope.east.example.com", "",
		corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "east-gcscope-ca", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}},
	{"west", "https://gcscope.west.example.com/gcscope", "id-token",
		corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "west-gcscope-ca"}, Items: []corev1.KeyToPath{{Key: "ca.pem", Path: "ca.crt"}}}}},
	{"north", "https://gcscope.north.example.com", "token",
		corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gcscope-remote-cas"}, Items: []corev1.KeyToPath{{Key: "remote-2.crt", Path: "ca.crt"}}}}},
}

// checkHubGrantsNothing checks that a rendered hub has no ClusterRole, no binding, no
// claim and no mounted ServiceAccount token, that its pod is hardened as any other and
// that it runs gcscope itself (not the image's `gcscope --in-cluster`); it returns the hub's
// Deployment.
func checkHubGrantsNothing(t *testing.T, m *manifest) *appsv1.Deployment {
	t.Helper()
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "PersistentVolumeClaim"} {
		if n := len(m.of(kind)); n > 0 {
			t.Errorf("the hub's manifest has %d %s: a hub reads no cluster and records no history", n, kind)
		}
	}
	d := m.deployment(t)
	spec := d.Spec.Template.Spec
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v: a hub needs no ServiceAccount token", a)
	}
	checkPod(t, d)
	if c := spec.Containers[0]; !slices.Equal(c.Command, []string{"/usr/local/bin/gcscope"}) {
		t.Errorf("command %q: want gcscope without the image's --in-cluster", c.Command)
	}
	return d
}

// TestRenderedHub: a hub runs gcscope itself (not the image's `gcscope --in-cluster`) with
// a --remote per remote whose ca= is the file its volume mounts; it signs users in with
// the token file of its Secret; it has no ClusterRole, no binding, no mounted
// ServiceAccount token, no history and no claim; the pod is hardened as any other.
func TestRenderedHub(t *testing.T) {
	m := load(t, "testdata/hub.yaml")
	d := checkHubGrantsNothing(t, m)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	for _, a := range []string{"--listen=0.0.0.0:8443", "--auth-token-file=/etc/gcscope/auth/tokens",
		"--tls-cert-file=" + tlsMountPath + "/tls.crt", "--tls-private-key-file=" + tlsMountPath + "/tls.key", "--history=false"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("the container args %q lack %s", c.Args, a)
		}
	}
	for _, a := range c.Args {
		for _, engine := range []string{"--in-cluster", "--auth=", "--gc-mode", "--history-dir", "--read-only", "--kubeconfig", "--context"} {
			if strings.HasPrefix(a, engine) {
				t.Errorf("the hub's args hold %s: %q", a, c.Args)
			}
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if v, vm := volumes["auth"], mounts["auth"]; v.Secret == nil || v.Secret.SecretName != "gcscope-hub-users" ||
		!slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "tokens", Path: "tokens"}}) || vm.MountPath != "/etc/gcscope/auth" || !vm.ReadOnly {
		t.Errorf("the token file: volume %+v mounted %+v; want Secret gcscope-hub-users's key tokens at /etc/gcscope/auth/tokens, read-only", v.VolumeSource, vm)
	}
	var remotes []string
	for _, a := range c.Args {
		if spec, ok := strings.CutPrefix(a, "--remote="); ok {
			remotes = append(remotes, spec)
		}
	}
	if len(remotes) != len(hubRemotes) {
		t.Fatalf("--remote %q; want one per remote of the values (%d)", remotes, len(hubRemotes))
	}
	for i, r := range hubRemotes {
		parts := strings.Split(remotes[i], ",")
		if parts[0] != r.name+"="+r.url {
			t.Errorf("--remote %q: want %s=%s first", remotes[i], r.name, r.url)
		}
		var caFile string
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			switch k {
			case "ca":
				caFile = v
			case "forward":
				if v != r.forward {
					t.Errorf("--remote %q: forward %q, want %q", remotes[i], v, r.forward)
				}
			}
		}
		if r.forward == "" && strings.Contains(remotes[i], "forward=") {
			t.Errorf("--remote %q: a forward the values do not give", remotes[i])
		}
		// Its CA file is the ca.crt of a read-only mount of the volume the values name.
		dir, file := filepath.Split(caFile)
		var found bool
		for name, vm := range mounts {
			if filepath.Clean(vm.MountPath) == filepath.Clean(dir) && file == "ca.crt" {
				found = true
				v := volumes[name]
				if !vm.ReadOnly || !equalJSON(v.VolumeSource, r.ca) {
					t.Errorf("%s's CA %s: volume %s %s (read-only %v); want %s", r.name, caFile, name, asJSON(v.VolumeSource), vm.ReadOnly, asJSON(r.ca))
				}
			}
		}
		if !found {
			t.Errorf("%s's CA file %q is on no mounted volume", r.name, caFile)
		}
	}
	cms := m.of("ConfigMap")
	if len(cms) != 1 || cms[0].GetName() != "gcscope-remote-cas" {
		t.Fatalf("ConfigMaps %v; want gcscope-remote-cas holding north's CA", cms)
	}
	pem, _ := os.ReadFile("testdata/hub-remote-ca.pem")
	if data, _, _ := unstructured.NestedString(cms[0].Object, "data", "remote-2.crt"); data != string(pem) {
		t.Errorf("gcscope-remote-cas's remote-2.crt is not testdata/hub-remote-ca.pem")
	}
}

// TestHubWithTheChartsArgs: the binary started with the hub's rendered args (the listen
// address, TLS files, token file and CA files replaced by the test's, and each remote's URL
// by a stand-in's) serves, lists the three remotes, and reaches each with the signed-in
// user's own token, trusting the CA file its --remote names.
func TestHubWithTheChartsArgs(t *testing.T) {
	m := load(t, "testdata/hub.yaml")
	d := m.deployment(t)
	c := d.Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	certFile, keyFile, pool := certificate(t, dir)
	const userToken = "platform-user-token-0123456789"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(userToken+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A stand-in gcscope per remote, serving https with the test's certificate, that
	// accepts the user's token.
	var names []string
	for _, r := range hubRemotes {
		names = append(names, r.name)
	}
	remotes := startStandIns(t, certFile, keyFile, names, func(_ context.Context, token string) (string, bool) {
		return "alice", token == userToken
	})
	standIns := map[string]string{}
	for name, s := range remotes {
		standIns[name] = s.url
	}

	args := localArgs(t, c.Args, certFile, keyFile, standIns, map[string]string{"--auth-token-file=/etc/gcscope/auth/tokens": "--auth-token-file=" + tokens})
	p := launch(t, dir, args, c.Env, pool)
	if code, body := p.get(t, "/readyz", "", ""); code != http.StatusOK {
		t.Errorf("/readyz of the hub: %d %s", code, body)
	}
	if code, _ := p.get(t, "/api/v1/clusters", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/clusters without a token: %d, want 401", code)
	}
	var list struct {
		Clusters []struct{ Name, State string }
	}
	testkit.Eventually(t, "the three remotes listed, probed", func() bool {
		code, body := p.get(t, "/api/v1/clusters", userToken, "")
		list.Clusters = nil
		if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Clusters) != 3 {
			return false
		}
		for _, cl := range list.Clusters {
			if cl.State != "ready" && cl.State != "refused" {
				return false
			}
		}
		return true
	})
	var got []string
	for _, cl := range list.Clusters {
		got = append(got, cl.Name+" "+cl.State)
	}
	if !slices.Equal(got, []string{"east ready", "west refused", "north ready"}) {
		t.Errorf("clusters %v, want east ready, west refused (it takes ID tokens only), north ready", got)
	}
	// A pasted token (from the token file) reaches east and north, each as the user; west
	// takes ID tokens only and refuses it without being sent it.
	for _, r := range hubRemotes {
		code, body := p.get(t, "/api/v1/clusters/"+r.name+"/graph", userToken, "")
		want := http.StatusOK
		if r.forward == "id-token" {
			want = http.StatusForbidden
		}
		if code != want {
			t.Errorf("%s's graph through the hub: %d %s, want %d", r.name, code, body, want)
		}
	}
	for _, r := range hubRemotes {
		got := remotes[r.name].reviewed()
		switch {
		case r.forward == "id-token" && len(got) > 0:
			t.Errorf("%s (id-token) got requests as %q; want none", r.name, got)
		case r.forward != "id-token" && (len(got) == 0 || slices.ContainsFunc(got, func(u string) bool { return u != "alice" })):
			t.Errorf("%s reviewed its requests as %q; want the user's token (alice) on each", r.name, got)
		}
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func equalJSON(a, b any) bool { return asJSON(a) == asJSON(b) }
