package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// binary is gcscope built once for this package's tests, as a user would build it.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if !flagGiven("test.parallel") {
		// The parallel tests here (parallelUI, the process tests) wait on their clusters
		// more than they compute: two at a time kept the package at 0.75 of one core (four
		// overloaded two cores).
		flag.Set("test.parallel", "3")
	}
	dir, err := os.MkdirTemp("", "gcscope-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gcscope")
	// The ldflags of `make build`, without the symbol table and DWARF the tests do not
	// read: the link, on this package's critical path, takes a quarter less.
	build := exec.Command("go", "build", "-ldflags", os.Getenv("GCSCOPE_LDFLAGS")+" -s -w", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build gcscope: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// result is how a finished gcscope run ended.
type result struct {
	code           int
	stdout, stderr string
}

// runBinary runs gcscope to completion (it must exit by itself within a minute).
func runBinary(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gcscope %v did not exit within a minute", args)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// assertOneLineError checks the error contract: non-zero exit, a short message naming the
// problem and what to do, no stack trace.
func assertOneLineError(t *testing.T, r result, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) > 2 || !strings.HasPrefix(lines[0], "gcscope: ") {
		t.Errorf("want a one-line error (plus an optional hint), got:\n%s", r.stderr)
	}
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr contains %q (a stack trace?):\n%s", bad, r.stderr)
		}
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	r := runBinary(t, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "gcscope ") {
		t.Errorf("--version: code %d, stdout %q", r.code, r.stdout)
	}
	r = runBinary(t, "-h")
	if r.code != 0 || !strings.Contains(r.stderr, "-listen") || !strings.Contains(r.stderr, "-data-dir") {
		t.Errorf("-h: code %d, stderr %q", r.code, r.stderr)
	}
}

func TestCommandLineMistakes(t *testing.T) {
	cases := []struct {
		args  []string
		wants []string
	}{
		{[]string{"--log-level=loud"}, []string{"--log-level", "debug, info, warn or error"}},
		{[]string{"--listen=0.0.0.0:8080"}, []string{"not a loopback address", "--auth-token-file"}},
		{[]string{"--auth=ldap"}, []string{`--auth "ldap"`}},
		{[]string{"--auth=kubernetes", "--auth-token-file=x"}, []string{"pick one"}},
		{[]string{"--oidc-issuer-url=https://idp.example"}, []string{"--oidc-issuer-url needs --auth=kubernetes"}},
		{[]string{"--auth=kubernetes", "--oidc-issuer-url=https://idp.example"}, []string{"--oidc-issuer-url needs --oidc-client-id"}},
		{[]string{"--auth=kubernetes", "--oidc-issuer-url=http://idp.example", "--oidc-client-id=g"}, []string{"an OpenID issuer is an https URL"}},
		{[]string{"--oidc-client-id=g"}, []string{"go with --oidc-issuer-url"}},
		{[]string{"--auth=kubernetes", "--oidc-issuer-url=https://idp.example", "--oidc-client-id=g", "--oidc-client-secret-file=/no/such/file"}, []string{"--oidc-client-secret-file"}},
		{[]string{"--listen=8080"}, []string{"host:port"}},
		{[]string{"--listen=0.0.0.0:8080", "--auth=kubernetes"}, []string{"must not cross the network in clear", "--tls-cert-file", "--insecure-allow-http"}},
		{[]string{"--tls-cert-file=cert.pem"}, []string{"--tls-cert-file and --tls-private-key-file go together"}},
		{[]string{"--max-streams-per-user=0"}, []string{"--max-streams-per-user must be at least 1"}},
		{[]string{"--kubeconfig=/x", "--write-kubeconfig=/tmp/x"}, []string{"--write-kubeconfig applies to the embedded cluster only"}},
		{[]string{"--in-cluster", "--context=c"}, []string{"--in-cluster cannot be combined"}},
		{[]string{"--context=a", "--context=a"}, []string{`--context "a" is given twice`}},
		{[]string{"--all-contexts", "--context=a"}, []string{"--all-contexts serves every context"}},
		{[]string{"--context=a", "--start-contexts=all"}, []string{"--start-contexts applies to several contexts"}},
		{[]string{"--all-contexts", "--start-contexts=some"}, []string{`--start-contexts "some": want opened or all`}},
		{[]string{"--all-contexts", "--in-cluster"}, []string{"--in-cluster cannot be combined"}},
		{[]string{"--no-such-flag"}, []string{"no-such-flag"}},
		{[]string{"--gc-mode=eager"}, []string{`--gc-mode "eager": want active or shadow`}},
		{[]string{"--workers=0"}, []string{"--workers 0: want at least 1"}},
		{[]string{"--gc-discovery-period=100ms"}, []string{"--gc-discovery-period 100ms: want at least 1s"}},
		{[]string{"--gc-action-delay=-1s"}, []string{"--gc-action-delay"}},
		{[]string{"--embedded-collector=both"}, []string{`--embedded-collector "both": want gcscope or upstream`}},
		{[]string{"--embedded-collector=upstream", "--gc-mode=active"}, []string{"would make two collectors race"}},
		{[]string{"--embedded-collector=upstream", "--kubeconfig=/x"}, []string{"--embedded-collector applies to the embedded cluster only"}},
		{[]string{"--shadow-overdue=0s"}, []string{"--shadow-overdue 0s: want a positive duration"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := runBinary(t, c.args...)
			if r.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", r.code, r.stderr)
			}
			for _, w := range c.wants {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := runBinary(t, "--listen", ln.Addr().String())
	assertOneLineError(t, r, 1, ln.Addr().String()+" is already in use", "--listen")
}

func TestBadKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertOneLineError(t, runBinary(t, "--listen", freeAddr(t), "--kubeconfig", path), 1, "cannot use "+path)
	missing := filepath.Join(t.TempDir(), "absent")
	assertOneLineError(t, runBinary(t, "--listen", freeAddr(t), "--kubeconfig", missing), 1, "cannot use "+missing, "no such file")
	assertOneLineError(t, runBinary(t, "--listen", freeAddr(t), "--kubeconfig", path, "--all-contexts"), 1, "cannot read "+path)
}

func TestUnreachableCluster(t *testing.T) {
	dead := freeAddr(t) // nothing listens there
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, dead)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, "--listen", freeAddr(t), "--kubeconfig", path)
	assertOneLineError(t, r, 1, "cannot reach the cluster at https://"+dead, "connection refused")
	r = runBinary(t, "--listen", freeAddr(t), "--kubeconfig", path, "--context", "nope")
	assertOneLineError(t, r, 1, "cannot use "+path, `"nope"`)
	// Several contexts: a name the kubeconfig lacks is a mistake said at once.
	r = runBinary(t, "--listen", freeAddr(t), "--kubeconfig", path, "--context", "c", "--context", "nope")
	assertOneLineError(t, r, 1, `--context "nope": `+path+` has no such context (it has "c")`)
}

// TestCopiedBinaryEmbeddedClusterPersistsAcrossRestart is the user's first run: the binary
// alone, in a fresh directory, no Go toolchain or module cache, HOME empty. It must reach
// /readyz, serve a working kubeconfig, keep what was stored across a restart with the same
// --data-dir, and shut down on SIGTERM and SIGINT within 5 s leaving no port open.
func TestCopiedBinaryEmbeddedClusterPersistsAcrossRestart(t *testing.T) {
	// Its own gcscope process, data dir and port: it runs beside the other process tests,
	// after the browser tests, which stay serial (they time what the page draws).
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "bin", "gcscope")
	copyFile(t, binary, bin)
	env := []string{
		"PATH=/usr/bin:/bin", // no go
		"HOME=" + mkdir(t, root, "home"),
		"GOMODCACHE=" + mkdir(t, root, "empty-modcache"),
		"GOPATH=" + mkdir(t, root, "empty-gopath"),
		"TMPDIR=" + mkdir(t, root, "tmp"),
	}
	dataDir := filepath.Join(root, "data")
	kubeconfig := filepath.Join(root, "out", "kubeconfig")
	args := func(addr string) []string {
		return []string{"--listen", addr, "--data-dir", dataDir, "--write-kubeconfig", kubeconfig}
	}

	addr := freeAddr(t)
	p := startProcess(t, root, env, bin, args(addr)...)
	p.waitReady(t, addr)
	if !strings.Contains(p.stdout(), "kubectl: export KUBECONFIG="+kubeconfig) {
		t.Errorf("stdout does not say where the kubeconfig is:\n%s", p.stdout())
	}
	// The stuck-deletion metric is served, a series per cause even with nothing stuck.
	if metrics := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(metrics, `gcscope_stuck_objects{cause="namespace",finalizer=""} 0`) {
		t.Errorf("/metrics lacks gcscope_stuck_objects:\n%.2000s", metrics)
	}
	cs := clientFor(t, kubeconfig)
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survives-restart"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiserver := apiserverAddr(t, kubeconfig)
	p.stop(t, syscall.SIGTERM, addr, apiserver)

	addr = freeAddr(t)
	p = startProcess(t, root, env, bin, args(addr)...)
	p.waitReady(t, addr)
	if !strings.Contains(p.stdout(), "demo workloads in namespaces") {
		t.Errorf("demo did not re-apply cleanly on an existing data dir:\n%s\n%s", p.stdout(), p.stderrText())
	}
	cs = clientFor(t, kubeconfig)
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap lost across restart: %v", err)
	}
	if got.UID != cm.UID || got.Data["k"] != "v" {
		t.Fatalf("configmap changed across restart: uid %s→%s data %v", cm.UID, got.UID, got.Data)
	}
	p.stop(t, syscall.SIGINT, addr, apiserverAddr(t, kubeconfig))

	if _, err := os.Stat(filepath.Join(dataDir, "etcd")); err != nil {
		t.Errorf("--data-dir must be kept: %v", err)
	}
}

func TestTemporaryDataDirRemovedOnExit(t *testing.T) {
	// Its own gcscope process, data dir and port: it runs beside the other process tests,
	// after the browser tests, which stay serial (they time what the page draws).
	t.Parallel()
	root := t.TempDir()
	tmp := mkdir(t, root, "tmp")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, root, "home"), "TMPDIR=" + tmp}
	addr := freeAddr(t)
	p := startProcess(t, root, env, binary, "--listen", addr, "--demo=false")
	p.waitReady(t, addr)
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 {
		t.Fatalf("want one temporary data dir in %s, got %d", tmp, len(entries))
	}
	kubeconfig := filepath.Join(tmp, entries[0].Name(), "kubeconfig")
	if !strings.Contains(p.stdout(), kubeconfig) {
		t.Errorf("stdout does not name the kubeconfig %s:\n%s", kubeconfig, p.stdout())
	}
	p.stop(t, syscall.SIGTERM, addr, apiserverAddr(t, kubeconfig))
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("temporary data dir left behind: %v", entries)
	}
}

// process is a running gcscope.
type process struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has exited; waitErr is then set
	waitErr error
	mu      sync.Mutex
	out     bytes.Buffer
	errBuf  bytes.Buffer
}

func startProcess(t *testing.T, dir string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	copyLines := func(r io.Reader, buf *bytes.Buffer) {
		defer wg.Done()
		s := bufio.NewScanner(r)
		for s.Scan() {
			p.mu.Lock()
			buf.WriteString(s.Text() + "\n")
			p.mu.Unlock()
		}
	}
	wg.Add(2)
	go copyLines(stdout, &p.out)
	go copyLines(stderr, &p.errBuf)
	go func() { wg.Wait(); p.waitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *process) stdout() string     { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }
func (p *process) stderrText() string { p.mu.Lock(); defer p.mu.Unlock(); return p.errBuf.String() }

// waitReady polls /readyz until 200, failing if the process exits or two minutes pass.
func (p *process) waitReady(t *testing.T, addr string) {
	t.Helper()
	exited := false
	err := testkit.Poll(context.Background(), 2*time.Minute, func() bool {
		select {
		case <-p.exited:
			exited = true
			return true
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if exited {
		t.Fatalf("gcscope exited before ready (%v):\n%s\n%s", p.waitErr, p.stdout(), p.stderrText())
	}
	if err != nil {
		t.Fatalf("gcscope not ready after 2 minutes:\n%s\n%s", p.stdout(), p.stderrText())
	}
	// /readyz answers before gcscope prints what it serves (its last line), and its output
	// comes through a pipe: a test reading what it printed waits for that line.
	if err := testkit.Poll(context.Background(), 10*time.Second, func() bool { return strings.Contains(p.stdout(), " serving ") }); err != nil {
		t.Fatalf("ready, but gcscope did not say what it serves:\n%s", p.stdout())
	}
}

// stop sends sig and checks the process exits 0 within 5 s with its ports closed.
func (p *process) stop(t *testing.T, sig os.Signal, addrs ...string) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Errorf("exit after %v: %v\n%s", sig, p.waitErr, p.stderrText())
		}
		t.Logf("%v → exit in %v", sig, time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("still running 5 s after %v:\n%s", sig, p.stderrText())
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after exit", a)
		}
	}
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000 // client-go's default of 5 a second made the tests wait, not the cluster
	return kubernetes.NewForConfigOrDie(cfg)
}

func apiserverAddr(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Dir(to))
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSlimBuildLeavesKubernetesOut: with the noembedded tag (the in-cluster image), no
// package of k8s.io/kubernetes is linked: only cluster/ may import it.
func TestSlimBuildLeavesKubernetesOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "noembedded", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/kubernetes/") || pkg == "github.com/gcscope/gcscope/cluster" {
			t.Errorf("the slim build links %s", pkg)
		}
	}
	if !strings.Contains(string(out), "github.com/gcscope/gcscope/gc") {
		t.Error("the slim build lacks the engine: go list output looks wrong")
	}
}

// httpGet returns the body of a GET that must answer 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
