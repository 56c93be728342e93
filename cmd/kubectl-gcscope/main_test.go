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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
		if err := createOrphanedJob(ctx, k); err != nil {
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
		// a Job whose CronJob was deleted with --cascade=orphan: the collector removed its
		// reference, and the CronJob's trace on it says so.
		{"why_orphaned_job", []string{"why", "job/nightly-29000000", "-n", orphansNS}},
		// predict: each policy over the same Deployment, and the stuck one.
		{"predict_web_background", []string{"predict", "deploy/web"}},
		{"predict_web_foreground", []string{"predict", "deploy/web", "--cascade=foreground"}},
		{"predict_web_orphan", []string{"predict", "deploy/web", "--cascade", "orphan"}},
		{"predict_stuck_foreground", []string{"predict", "deploy/stuck", "--cascade=foreground"}},
		{"predict_web_json", []string{"predict", "deploy/web", "-o", "json", "--cascade=foreground"}},
		// what a delete does to storage: a disk destroyed with its claim, a claim left behind.
		{"predict_statefulset_data_loss", []string{"predict", "statefulset/db"}},
		{"predict_statefulset_retained", []string{"predict", "sts/archive"}},
		// a delete by label selector, predicted as one: two Pods, each replaced by their ReplicaSet.
		{"predict_selector", []string{"predict", "pods", "-l", "app=web-7d9"}},
		// what comes back: a Pod its ReplicaSet replaces.
		{"predict_pod_comes_back", []string{"predict", "pod/web-7d9-a"}},
		// sets as kubectl delete -f and helm uninstall make them: each document resolved (one
		// not found), the release read from its record (what it keeps, its hooks).
		{"predict_manifest", []string{"predict", "-f", "testdata/shop.yaml"}},
		{"predict_helm_release", []string{"predict", "--helm-release", "shop"}},
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
		{"predict", "deploy/web", "-l", "app=web"}, // -l takes types, not an object
		{"predict", "pods", "-l", "app in (("},
		{"predict", "-f", "testdata/shop.yaml", "--helm-release", "shop"},
		{"predict", "deploy/web", "-f", "testdata/shop.yaml"},
		{"predict", "-f", "testdata/absent.yaml"},
		{"tree", "deploy/web", "--frobnicate"},
		{"frobnicate"},
		{"ui", "extra"},
		{"tree", "deploy/web", "--context", "plugin", "--context", "offline"}, // several: ui only
		{"ui", "--all-contexts", "--context", "plugin"},
		{"ui", "--context", "plugin", "--context", "nosuch"},
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
