package main

// The plugin against the embedded kube-apiserver (no controllers, no collector: the
// objects stay as the fixtures leave them), run in-process through run() and compared
// with testdata/*.golden. go test -run . -update rewrites the golden files.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gcscope/gcscope/cluster"
	"github.com/gcscope/gcscope/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// ns is the fixtures' namespace, the kubeconfig context's default.
const ns = "plugin-demo"

// goneNS is a namespace being deleted that nothing empties (no namespace controller here).
const goneNS = "plugin-gone"

// A uid no object has: the owner of the dangling reference.
const neverExisted = types.UID("00000000-0000-4000-8000-00000000dead")

type testEnv struct {
	cluster    *cluster.Cluster
	client     kubernetes.Interface
	kubeconfig string
	host       string
}

// theEnv is filled by the shared control plane's Setup.
var theEnv *testEnv

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.Main(m)
}

// env starts the control plane once for the package and creates the fixtures.
func env(t *testing.T) *testEnv {
	t.Helper()
	testkit.Shared(t, testkit.Options{Setup: func(ctx context.Context, k *testkit.Env) error {
		e := &testEnv{cluster: k.Cluster, client: k.Client, host: k.Config.Host}
		var err error
		if e.kubeconfig, err = writeKubeconfig(k.Cluster); err != nil {
			return err
		}
		if err := createFixtures(ctx, e.client); err != nil {
			return err
		}
		theEnv = e
		return nil
	}})
	return theEnv
}

// writeKubeconfig writes the kubeconfig the plugin reads through $KUBECONFIG: the current
// context "plugin" (the embedded cluster, namespace plugin-demo) and "offline" (a
// loopback port nothing listens on).
func writeKubeconfig(c *cluster.Cluster) (string, error) {
	path := filepath.Join(c.DataDir(), "plugin-kubeconfig")
	if err := c.WriteKubeconfig(path); err != nil {
		return "", err
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	embedded := cfg.Contexts[cfg.CurrentContext]
	cfg.Contexts["plugin"] = &clientcmdapi.Context{Cluster: embedded.Cluster, AuthInfo: embedded.AuthInfo, Namespace: ns}
	cfg.Clusters["offline"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1",
		CertificateAuthorityData: cfg.Clusters[embedded.Cluster].CertificateAuthorityData}
	cfg.Contexts["offline"] = &clientcmdapi.Context{Cluster: "offline", AuthInfo: embedded.AuthInfo}
	cfg.CurrentContext = "plugin"
	return path, clientcmd.WriteToFile(*cfg, path)
}

// createFixtures makes, in plugin-demo:
//   - web: Deployment web → ReplicaSet web-7d9 → Pods web-7d9-a, web-7d9-b; ConfigMap
//     web-config owned by web; ConfigMap shared owned by web and by ConfigMap settings;
//   - stuck: Deployment stuck → ReplicaSet stuck-6c8 → Pod stuck-6c8-held, which carries
//     the finalizer example.com/hold; the Pod, the ReplicaSet and the Deployment are
//     deleted (the last two in the foreground), as a collector would have got that far;
//   - lost-child: a ConfigMap whose owner never existed;
//   - legacy: a Deployment deleted with the orphan policy, and its ConfigMap;
//   - an Event (a resource the collector ignores).
func createFixtures(ctx context.Context, cs kubernetes.Interface) error {
	f := &fixtures{ctx: ctx, cs: cs}
	f.do(func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	})
	f.do(func() error { // no controller-manager: Pods need their ServiceAccount made by hand
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		return err
	})
	web := f.deployment("web")
	rs := f.replicaSet("web-7d9", web)
	f.pod("web-7d9-a", nil, rs)
	f.pod("web-7d9-b", nil, rs)
	f.configMap("web-config", ownerOf(web, "apps/v1", "Deployment", true))
	settings := f.configMap("settings")
	f.configMap("shared", ownerOf(web, "apps/v1", "Deployment", false), ownerOf(settings, "v1", "ConfigMap", false))

	stuck := f.deployment("stuck")
	stuckRS := f.replicaSet("stuck-6c8", stuck)
	held := f.pod("stuck-6c8-held", []string{"example.com/hold"}, stuckRS)
	f.do(func() error { return cs.CoreV1().Pods(ns).Delete(ctx, held.GetName(), metav1.DeleteOptions{}) })
	foreground := metav1.DeletePropagationForeground
	f.do(func() error {
		return cs.AppsV1().ReplicaSets(ns).Delete(ctx, stuckRS.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground})
	})
	f.do(func() error {
		return cs.AppsV1().Deployments(ns).Delete(ctx, stuck.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground})
	})

	f.configMap("lost-child", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: neverExisted})

	legacy := f.deployment("legacy")
	f.configMap("legacy-config", ownerOf(legacy, "apps/v1", "Deployment", true))
	orphan := metav1.DeletePropagationOrphan
	f.do(func() error {
		return cs.AppsV1().Deployments(ns).Delete(ctx, legacy.GetName(), metav1.DeleteOptions{PropagationPolicy: &orphan})
	})

	// A namespace being deleted, with no namespace controller here to empty it: its
	// content stays, one ConfigMap with a finalizer field manager acme-controller added.
	f.do(func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goneNS}}, metav1.CreateOptions{})
		return err
	})
	for _, name := range []string{"left", "held"} {
		f.do(func() error {
			_, err := cs.CoreV1().ConfigMaps(goneNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		})
	}
	f.do(func() error {
		_, err := cs.CoreV1().ConfigMaps(goneNS).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":["acme.example.com/hold"]}}`), metav1.PatchOptions{FieldManager: "acme-controller"})
		return err
	})
	f.do(func() error { return cs.CoreV1().Namespaces().Delete(ctx, goneNS, metav1.DeleteOptions{}) })

	f.do(func() error {
		_, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "plugin-event"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-7d9-a"},
			Reason:         "Test", Message: "an event", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		return err
	})
	return f.err
}

// fixtures creates objects, keeping the first error.
type fixtures struct {
	ctx context.Context
	cs  kubernetes.Interface
	err error
}

func (f *fixtures) do(fn func() error) {
	if f.err == nil {
		f.err = fn()
	}
}

func ownerOf(o metav1.Object, apiVersion, kind string, controller bool) metav1.OwnerReference {
	t := true
	ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: &t}
	if controller {
		ref.Controller = &t
	}
	return ref
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

func (f *fixtures) deployment(name string) metav1.Object {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	f.do(func() (err error) {
		d, err = f.cs.AppsV1().Deployments(ns).Create(f.ctx, d, metav1.CreateOptions{})
		return err
	})
	return d
}

func (f *fixtures) replicaSet(name string, owner metav1.Object) metav1.Object {
	app := owner.GetName()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownerOf(owner, "apps/v1", "Deployment", true)}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, Template: podTemplate(app)}}
	f.do(func() (err error) {
		rs, err = f.cs.AppsV1().ReplicaSets(ns).Create(f.ctx, rs, metav1.CreateOptions{})
		return err
	})
	return rs
}

func (f *fixtures) pod(name string, finalizers []string, owner metav1.Object) metav1.Object {
	tmpl := podTemplate(owner.GetName())
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Finalizers: finalizers,
		OwnerReferences: []metav1.OwnerReference{ownerOf(owner, "apps/v1", "ReplicaSet", true)}}, Spec: tmpl.Spec}
	f.do(func() (err error) {
		p, err = f.cs.CoreV1().Pods(ns).Create(f.ctx, p, metav1.CreateOptions{})
		return err
	})
	return p
}

func (f *fixtures) configMap(name string, owners ...metav1.OwnerReference) metav1.Object {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}
	f.do(func() (err error) {
		cm, err = f.cs.CoreV1().ConfigMaps(ns).Create(f.ctx, cm, metav1.CreateOptions{})
		return err
	})
	return cm
}

// syncBuffer is a bytes.Buffer safe to read while run writes to it (--watch, ui).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// getenv is the plugin's environment in the tests: only $KUBECONFIG.
func (e *testEnv) getenv(name string) string {
	if name == "KUBECONFIG" {
		return e.kubeconfig
	}
	return ""
}

// run runs the plugin in-process with args and returns its output and exit code.
func (e *testEnv) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs syncBuffer
	code = run(ctx, args, e.getenv, &out, &errs)
	return out.String(), errs.String(), code
}

var (
	uidPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	durPattern  = regexp.MustCompile(`"(duration|lag|forSeconds)": \d+`)
	// agoPattern: how long a deletion has lasted, in text.
	agoPattern = regexp.MustCompile(`(for |\()(\d+h)?(\d+m)?\d+(\.\d+)?s( ago)?`)
)

// normalize makes output stable from run to run: uids become <uid-N> in order of first
// appearance (the dangling owner's fixed uid stays), times <time>, durations 0, and the
// embedded apiserver's address https://127.0.0.1:PORT.
func (e *testEnv) normalize(s string) string {
	s = strings.ReplaceAll(s, e.host, "https://127.0.0.1:PORT")
	seen := map[string]string{string(neverExisted): string(neverExisted)}
	s = uidPattern.ReplaceAllStringFunc(s, func(uid string) string {
		if _, ok := seen[uid]; !ok {
			seen[uid] = fmt.Sprintf("<uid-%d>", len(seen))
		}
		return seen[uid]
	})
	s = timePattern.ReplaceAllString(s, "<time>")
	s = agoPattern.ReplaceAllString(s, "${1}<duration>${5}")
	return durPattern.ReplaceAllString(s, `"$1": 0`)
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update accepts it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestGolden runs tree, why and predict over the fixtures and compares their output, and
// that they print nothing on stderr and exit 0.
func TestGolden(t *testing.T) {
	e := env(t)
	cases := []struct {
		name string
		args []string
	}{
		// tree: a healthy Deployment, through the context's namespace.
		{"tree_web", []string{"tree", "deploy/web"}},
		// a stuck foreground deletion: deleting dependents down to a Pod held by a finalizer.
		{"tree_stuck", []string{"tree", "deployments.apps/stuck", "-n", ns}},
		{"tree_stuck_json", []string{"tree", "Deployment/stuck", "-o", "json"}},
		{"tree_stuck_color", []string{"tree", "rs/stuck-6c8", "--color=always"}},
		{"tree_held_pod", []string{"tree", "pod/stuck-6c8-held"}},
		{"tree_dangling", []string{"tree", "cm/lost-child"}},
		{"tree_orphaning", []string{"tree", "deployment/legacy"}},
		// why: the chain of blockers and the command that releases the hold.
		{"why_stuck", []string{"why", "deploy/stuck"}},
		{"why_held_pod", []string{"why", "pod", "stuck-6c8-held"}},
		{"why_dangling", []string{"why", "configmap/lost-child"}},
		{"why_kept", []string{"why", "cm/shared"}},
		{"why_web", []string{"why", "deploy/web"}},
		{"why_stuck_json", []string{"why", "deploy/stuck", "-o", "json"}},
		// predict: each policy over the same Deployment, and the stuck one.
		{"predict_web_background", []string{"predict", "deploy/web"}},
		{"predict_web_foreground", []string{"predict", "deploy/web", "--cascade=foreground"}},
		{"predict_web_orphan", []string{"predict", "deploy/web", "--cascade", "orphan"}},
		{"predict_stuck_foreground", []string{"predict", "deploy/stuck", "--cascade=foreground"}},
		{"predict_web_json", []string{"predict", "deploy/web", "-o", "json", "--cascade=foreground"}},
		// a namespace: why it is still Terminating, and a delete's prediction of all its
		// content in the namespace controller's order.
		{"why_namespace", []string{"why", "ns/" + goneNS}},
		{"predict_namespace", []string{"predict", "namespace/" + ns}},
		// the stuck list, of the cluster and of one namespace.
		{"stuck_all", []string{"stuck", "-A", "--older-than=0s"}},
		{"stuck_namespace", []string{"stuck", "-n", goneNS, "--older-than", "0s"}},
		{"stuck_none", []string{"stuck"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := e.run(t, c.args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("kubectl gcscope %s: exit %d, stderr %q", strings.Join(c.args, " "), code, stderr)
			}
			out := e.normalize(stdout)
			if strings.HasPrefix(c.name, "stuck") {
				out = sortRuns(out, "for <duration>")
			}
			golden(t, c.name, out)
		})
	}
}

// TestErrors checks that each failure ends with one line on stderr, nothing on stdout,
// and the exit code: 1 for what the cluster says, 2 for the command line.
func TestErrors(t *testing.T) {
	e := env(t)
	cases := [][]string{
		{"tree", "widgets/x"},                     // unknown kind
		{"tree", "deploy/missing"},                // not found
		{"why", "cm/web-config", "-n", "default"}, // not found in another namespace
		{"tree", "deploy/web", "--context", "offline"},
		{"tree", "deploy/web", "--context", "nosuch"},
		{"tree", "deploy/web", "--as", "nobody"}, // forbidden
		{"tree", "event/plugin-event"},           // a resource the collector ignores
		{"tree", "deploy"},
		{"tree", "deploy/web", "extra/arg"},
		{"tree", "deploy/web", "-o", "yaml"},
		{"predict", "deploy/web", "--cascade=sideways"},
		{"tree", "deploy/web", "--frobnicate"},
		{"frobnicate"},
		{"ui", "extra"},
	}
	var b strings.Builder
	for _, args := range cases {
		stdout, stderr, code := e.run(t, args...)
		if stdout != "" {
			t.Errorf("kubectl gcscope %s: stdout %q, want nothing", strings.Join(args, " "), stdout)
		}
		if lines := strings.Count(stderr, "\n"); lines != 1 || !strings.HasPrefix(stderr, "error: ") {
			t.Errorf("kubectl gcscope %s: stderr %q, want one line starting with error:", strings.Join(args, " "), stderr)
		}
		if code != exitError && code != exitUsage {
			t.Errorf("kubectl gcscope %s: exit %d", strings.Join(args, " "), code)
		}
		fmt.Fprintf(&b, "$ kubectl gcscope %s\nexit %d\n%s\n", strings.Join(args, " "), code, stderr)
	}
	// With no kubeconfig anywhere.
	var out, errs syncBuffer
	code := run(context.Background(), []string{"tree", "deploy/web"}, func(name string) string {
		if name == "KUBECONFIG" {
			return filepath.Join(t.TempDir(), "absent")
		}
		return ""
	}, &out, &errs)
	fmt.Fprintf(&b, "$ KUBECONFIG=/absent kubectl gcscope tree deploy/web\nexit %d\n%s\n", code, errs.String())
	golden(t, "errors", e.normalize(b.String()))
}

// TestResolveKinds checks that KIND is read as kubectl reads it: resources, short names,
// singular names, kinds, with or without group and version.
func TestResolveKinds(t *testing.T) {
	e := env(t)
	k, err := connect(&options{getenv: e.getenv})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.reach(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"deploy": "apps/v1/deployments", "deployment": "apps/v1/deployments", "deployments": "apps/v1/deployments",
		"deployments.apps": "apps/v1/deployments", "deployments.v1.apps": "apps/v1/deployments",
		"Deployment": "apps/v1/deployments", "Deployment.apps": "apps/v1/deployments", "Deployment.v1.apps": "apps/v1/deployments",
		"rs": "apps/v1/replicasets", "replicaset": "apps/v1/replicasets",
		"po": "v1/pods", "pod": "v1/pods", "pods": "v1/pods", "Pod": "v1/pods",
		"cm": "v1/configmaps", "ns": "v1/namespaces",
	}
	for kind, want := range cases {
		tg, err := k.resolve(kind, "x")
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		gvr := tg.mapping.Resource
		got := gvr.Version + "/" + gvr.Resource
		if gvr.Group != "" {
			got = gvr.Group + "/" + got
		}
		if got != want {
			t.Errorf("%s resolves to %s, want %s", kind, got, want)
		}
		wantNS := ns
		if kind == "ns" {
			wantNS = "" // cluster-scoped
		}
		if tg.namespace != wantNS {
			t.Errorf("%s: namespace %q, want %q", kind, tg.namespace, wantNS)
		}
	}
	if _, err := k.resolve("nosuchkind", "x"); err == nil || err.Error() != `the server doesn't have a resource type "nosuchkind"` {
		t.Errorf("nosuchkind: %v", err)
	}
}

// TestWatchRedrawsOnChange runs tree --watch: a new dependent is drawn in a second tree,
// and deleting the root ends the watch by itself with exit 0.
func TestWatchRedrawsOnChange(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fixtures{ctx: ctx, cs: e.client}
	watched := f.deployment("watched")
	if f.err != nil {
		t.Fatal(f.err)
	}
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"tree", "deploy/watched", "--watch"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "Deployment/watched", 1)

	f.configMap("watched-config", ownerOf(watched, "apps/v1", "Deployment", true))
	if f.err != nil {
		t.Fatal(f.err)
	}
	waitOutput(t, &out, "└─ConfigMap/watched-config", 1)
	if n := strings.Count(out.String(), "NAMESPACE"); n != 2 {
		t.Errorf("%d trees drawn, want 2 (the first, then one with the new dependent):\n%s", n, out.String())
	}
	if err := e.client.AppsV1().Deployments(ns).Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-ctx.Done():
		t.Fatal("the watch did not end when its root was deleted")
	}
	if !strings.HasSuffix(out.String(), "\ndeployments.apps \"watched\": deleted\n") {
		t.Errorf("the watch does not end by saying the root is deleted:\n%s", out.String())
	}
}

// TestWatchStopsOnCancel: Ctrl-C (the context) ends a watch with exit 0.
func TestWatchStopsOnCancel(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"tree", "deploy/web", "--watch"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "Deployment/web", 1)
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after cancel, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not stop within 10 s of its context's end")
	}
}

// waitOutput waits until out contains s at least n times.
func waitOutput(t *testing.T, out *syncBuffer, s string, n int) {
	t.Helper()
	if testkit.Poll(context.Background(), time.Minute, func() bool { return strings.Count(out.String(), s) >= n }) != nil {
		t.Fatalf("no %q in the output after a minute:\n%s", s, out.String())
	}
}

// TestUIServesDashboard starts the dashboard: it listens on 127.0.0.1, prints its URL,
// serves the page and becomes ready, and stops with exit 0 when its context ends.
func TestUIServesDashboard(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"ui", "--open=false"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "http://127.0.0.1:", 1)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(out.String())
	if url == "" {
		t.Fatalf("no URL printed:\n%s", out.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	var code int
	var body string
	if testkit.Poll(context.Background(), 30*time.Second, func() bool { code, body = get("readyz"); return code == http.StatusOK }) != nil {
		t.Fatalf("/readyz still %d after 30 s: %s", code, body)
	}
	if code, body := get(""); code != http.StatusOK || !strings.Contains(body, "gcscope") {
		t.Errorf("/: %d, page without gcscope in it", code)
	}
	if !strings.Contains(out.String(), "engine in shadow mode") {
		t.Errorf("the dashboard does not say its engine runs in shadow mode:\n%s", out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop within 10 s of its context's end")
	}
}

// TestProgressCadence: on a pipe, progress starts only once a sync is slow (2 s) and
// then prints a line every 5 s at most, closed by a summary; on a terminal one line is
// rewritten in place and cleared at the end.
func TestProgressCadence(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }

	var pipe bytes.Buffer
	p := newProgress(&pipe, false, clock)
	for _, at := range []time.Duration{0, time.Second, 2500 * time.Millisecond, 4 * time.Second, 7600 * time.Millisecond} {
		now = start.Add(at)
		p.syncing(37, 12, int(at/time.Millisecond)*5)
	}
	p.finish(37, 12000, 8*time.Second)
	want := "syncing 37 resources (12 listed)… 12,500 objects\n" +
		"syncing 37 resources (12 listed)… 38,000 objects\n" +
		"synced 37 resources: 12,000 objects in 8s\n"
	if pipe.String() != want {
		t.Errorf("on a pipe:\n%q\nwant\n%q", pipe.String(), want)
	}

	var tty bytes.Buffer
	now = start
	p = newProgress(&tty, true, clock)
	p.syncing(37, 0, 0) // too early to show
	now = start.Add(time.Second)
	p.syncing(37, 36, 1200)
	now = start.Add(2 * time.Second)
	p.settling(1200, 3)
	p.finish(37, 1200, 2*time.Second)
	want = "\r\x1b[Ksyncing 37 resources (36 listed)… 1,200 objects" +
		"\r\x1b[Kchecking owners… 1,200 objects, 3 queued" + "\r\x1b[K"
	if tty.String() != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", tty.String(), want)
	}

	var quiet bytes.Buffer
	now = start
	p = newProgress(&quiet, false, clock)
	now = start.Add(time.Second)
	p.syncing(5, 5, 40)
	p.finish(5, 40, time.Second)
	if quiet.Len() != 0 {
		t.Errorf("a fast sync on a pipe printed %q, want nothing", quiet.String())
	}
}

// TestColorChoice: --color=auto colours only a terminal, never when NO_COLOR is set or
// TERM is dumb; always and never win.
func TestColorChoice(t *testing.T) {
	env := map[string]string{}
	o := &options{getenv: func(k string) string { return env[k] }}
	var buf bytes.Buffer
	for _, c := range []struct {
		color string
		w     io.Writer
		env   map[string]string
		want  bool
	}{
		{"auto", &buf, nil, false}, // a pipe or a buffer
		{"always", &buf, nil, true},
		{"always", &buf, map[string]string{"NO_COLOR": "1"}, true},
		{"never", os.Stdout, nil, false},
	} {
		o.color, env = c.color, c.env
		if got := o.colored(c.w); got != c.want {
			t.Errorf("--color=%s with %v on %T: %v, want %v", c.color, c.env, c.w, got, c.want)
		}
	}
	// A terminal: the plugin's own pseudo-terminal, when the machine gives one.
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		t.Logf("no terminal to test --color=auto on: %v", err)
		return
	}
	defer tty.Close()
	o.color = "auto"
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{{nil, true}, {map[string]string{"NO_COLOR": "1"}, false}, {map[string]string{"TERM": "dumb"}, false}} {
		env = c.env
		if got := o.colored(tty); got != c.want {
			t.Errorf("--color=auto on a terminal with %v: %v, want %v", c.env, got, c.want)
		}
	}
}

// TestForbiddenResourcesAreReported: a user who may list Deployments, ReplicaSets and
// ConfigMaps but nothing else still gets the tree, without the Pods, and one warning line
// naming the resources it could not list.
func TestForbiddenResourcesAreReported(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "plugin-limited"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}}
	if _, err := e.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "plugin-limited"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "plugin-limited"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "limited"}}}
	if _, err := e.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver's RBAC caches take a moment to see the binding.
	limited := e.cluster.RESTConfig()
	limited.Impersonate.UserName = "limited"
	lc, err := kubernetes.NewForConfig(limited)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, "the binding takes effect", func() bool {
		_, err := lc.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil
	})
	stdout, stderr, code := e.run(t, "tree", "deploy/web", "--as", "limited")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "└─ReplicaSet/web-7d9") || !strings.Contains(stdout, "ConfigMap/web-config") || strings.Contains(stdout, "Pod/") {
		t.Errorf("want the tree without the Pods the user may not list:\n%s", stdout)
	}
	// stderr: progress lines (the sync is slow: the engine's workers wait 5 s for the
	// monitors that never sync), then one warning.
	var warnings []string
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if strings.HasPrefix(line, "warning: ") {
			warnings = append(warnings, line)
		} else if !strings.HasPrefix(line, "syncing ") && !strings.HasPrefix(line, "checking owners") && !strings.HasPrefix(line, "synced ") {
			t.Errorf("stderr line %q is neither progress nor a warning", line)
		}
	}
	t.Logf("the warning: %s", warnings)
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "warning: could not list ") ||
		!strings.Contains(warnings[0], "; forbidden: v1/endpoints, ") || !strings.Contains(warnings[0], "v1/pods, ") ||
		strings.Contains(warnings[0], "v1/configmaps") || len(warnings[0]) > 1000 {
		t.Errorf("want one short warning naming v1/pods as forbidden (and not v1/configmaps), got %q", warnings)
	}

	// Without list on the named object's own resource, there is nothing to answer from.
	_, stderr, code = e.run(t, "tree", "pod/web-7d9-a", "--as", "limited")
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if code != exitError || !strings.HasPrefix(last, "error: the engine could not list pods across all namespaces, as the collector needs to: ") ||
		!strings.Contains(last, "forbidden") || strings.Contains(stderr, "warning:") {
		t.Errorf("tree of a Pod the user may get but not list: exit %d, stderr %q; want exit 1 and an error line saying so", code, stderr)
	}
	t.Logf("the error: %s", last)

	// Without get on it, the plugin stops at once.
	_, stderr, code = e.run(t, "tree", "deploy/web", "--as", "nobody-at-all")
	if code != exitError || !strings.HasPrefix(stderr, "error: forbidden: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("tree of a Deployment the user may not get: exit %d, stderr %q; want exit 1 and one error line", code, stderr)
	}
}

// TestInterruptedExits130: Ctrl-C before the answer ends with "interrupted" and 130.
func TestInterruptedExits130(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs syncBuffer
	if code := run(ctx, []string{"why", "deploy/web"}, e.getenv, &out, &errs); code != exitInterrupted || errs.String() != "interrupted\n" || out.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130 and interrupted", code, out.String(), errs.String())
	}
}

// sortRuns sorts each run of consecutive lines that contain marker: the stuck list puts a
// group's oldest first, and the fixtures' deletions a few milliseconds apart may or may not
// fall in the same second of deletionTimestamp.
func sortRuns(s, marker string) string {
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.Contains(lines[j], marker) {
			j++
		}
		if j > i {
			slices.Sort(lines[i:j])
			i = j
		} else {
			i++
		}
	}
	return strings.Join(lines, "\n")
}
