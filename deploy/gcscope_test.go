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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gcscope/gcscope/internal/testkit"
)

// gcscope run as the chart's Deployment runs it, from the slim binary, and what the tests
// ask of it: readiness, deletes, the graph, the queues.

// gcscopeProc is a running gcscope binary.
type gcscopeProc struct {
	base   string // https://127.0.0.1:PORT
	client *http.Client
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

// "gcscope v0.1.0 serving on URL", "… serving a hub of remote gcscopes on URL".
var servingLine = regexp.MustCompile(`serving (?:.* )?on (https://127\.0\.0\.1:\d+)`)

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
		case arg == "--history-dir="+historyMountPath+"/history":
			arg = "--history-dir=" + filepath.Join(dir, "history")
		default:
			args = append(args, arg)
			continue
		}
		replaced[name] = true
		args = append(args, arg)
	}
	for _, n := range append([]string{"--listen", "--tls-cert-file", "--tls-private-key-file", "--history-dir"}, drop...) {
		if !replaced[n] {
			t.Fatalf("the Deployment's args %q have no %s to replace", c.Args, n)
		}
	}

	return launch(t, dir, args, c.Env, pool)
}

// launch runs the gcscope binary with args and env (HOME is dir) until the test ends, and
// returns it once it serves, with a client that trusts pool.
func launch(t testing.TB, dir string, args []string, env []corev1.EnvVar, pool *x509.CertPool) *gcscopeProc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, e := range env {
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

// certificate writes a self-signed serving certificate for localhost, 127.0.0.1, the
// Service's name and the hub's public name in testdata/hub-sso.yaml, and returns its files
// and a pool that trusts it.
func certificate(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcscope"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost", "gcscope.gcscope.svc", hubHost}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
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
