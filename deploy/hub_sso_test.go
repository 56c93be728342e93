package deploy_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The chart's hub mode without a token file (hub.authTokenSecret.name empty): the hub runs
// --auth=kubernetes and the remotes decide who a user is, with single sign-on
// (hub.singleSignOn, testdata/hub-sso.yaml and hub-sso-public.yaml) or without
// (testdata/hub-kubernetes.yaml); the values the chart refuses (testdata/refused.txt); and
// the binary run with those args against stand-in remotes and a real OpenID provider.

// hubHost is the hub's public name in testdata/hub-sso.yaml (allowedHosts), where the
// provider sends users back.
const hubHost = "gcscope.example.com"

// hubWithoutTokenFile are the rendered hubs without a token file (deploy/render.go).
var hubWithoutTokenFile = []struct {
	file string
	args []string // wanted among the container's args
	// files: each flag naming a file → the volume holding it (read-only mounted)
	files  map[string]corev1.VolumeSource
	absent []string // no arg starts with one of these
}{
	{"testdata/hub-sso.yaml",
		[]string{"--auth=kubernetes", "--oidc-issuer-url=https://sso.example.com/realms/platform", "--oidc-client-id=gcscope-hub",
			"--oidc-display-name=Example SSO", "--oidc-scopes=email,groups,offline_access"},
		map[string]corev1.VolumeSource{
			"--oidc-client-secret-file": {Secret: &corev1.SecretVolumeSource{SecretName: "gcscope-hub-oidc", DefaultMode: ptr.To[int32](0o440),
				Items: []corev1.KeyToPath{{Key: "secret", Path: "client-secret"}}}},
			"--oidc-ca-file": {Secret: &corev1.SecretVolumeSource{SecretName: "sso-ca", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
		[]string{"--auth-token-file"}},
	{"testdata/hub-sso-public.yaml",
		[]string{"--auth=kubernetes", "--oidc-issuer-url=https://sso.example.com", "--oidc-client-id=gcscope-hub"},
		map[string]corev1.VolumeSource{
			"--oidc-ca-file": {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sso-ca"},
				Items: []corev1.KeyToPath{{Key: "ca.pem", Path: "ca.crt"}}}},
		},
		// A public client: no secret. gcscope's own button text and scopes.
		[]string{"--auth-token-file", "--oidc-client-secret-file", "--oidc-display-name", "--oidc-scopes"}},
	{"testdata/hub-kubernetes.yaml", []string{"--auth=kubernetes"}, nil, []string{"--auth-token-file", "--oidc-"}},
}

// TestRenderedHubWithoutTokenFile: without hub.authTokenSecret.name the hub runs
// --auth=kubernetes and mounts no token file; with hub.singleSignOn it passes the
// provider's flags, the client secret and the issuer's CA being files of read-only mounts
// of the Secret and ConfigMap the values name; the pod has no other volume than the TLS
// Secret's and the remotes' CAs.
func TestRenderedHubWithoutTokenFile(t *testing.T) {
	for _, h := range hubWithoutTokenFile {
		t.Run(filepath.Base(h.file), func(t *testing.T) {
			d := checkHubGrantsNothing(t, load(t, h.file))
			spec := d.Spec.Template.Spec
			c := spec.Containers[0]
			for _, a := range h.args {
				if n := countArgs(c.Args, a); n != 1 {
					t.Errorf("the container args %q hold %s %d times, want once", c.Args, a, n)
				}
			}
			for _, a := range c.Args {
				for _, no := range append([]string{"--in-cluster", "--gc-mode", "--history-dir", "--read-only"}, h.absent...) {
					if strings.HasPrefix(a, no) {
						t.Errorf("the args hold %s: %q", a, c.Args)
					}
				}
			}
			want := []string{"tls", "remote-ca-0"} // west's CA: the system roots
			for flag, source := range h.files {
				var file string
				for _, a := range c.Args {
					if f, ok := strings.CutPrefix(a, flag+"="); ok {
						if file != "" {
							t.Errorf("%s given twice: %q", flag, c.Args)
						}
						file = f
					}
				}
				if file == "" {
					t.Errorf("no %s in %q", flag, c.Args)
					continue
				}
				name, got := mountedFile(t, spec, file)
				want = append(want, name)
				if !equalJSON(got, source) {
					t.Errorf("%s=%s: the file of volume %s %s; want %s", flag, file, name, asJSON(got), asJSON(source))
				}
			}
			var volumes, mounts []string
			for _, v := range spec.Volumes {
				volumes = append(volumes, v.Name)
			}
			for _, vm := range c.VolumeMounts {
				mounts = append(mounts, vm.Name)
				if !vm.ReadOnly {
					t.Errorf("volume %s is mounted writable at %s", vm.Name, vm.MountPath)
				}
			}
			slices.Sort(want)
			slices.Sort(volumes)
			slices.Sort(mounts)
			if !slices.Equal(volumes, want) || !slices.Equal(mounts, want) {
				t.Errorf("volumes %q, mounted %q; want %q (no token file)", volumes, mounts, want)
			}
		})
	}
	// The hub's public name is one it answers to: the provider sends users back there.
	c := load(t, "testdata/hub-sso.yaml").deployment(t).Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.Args, func(a string) bool {
		hosts, ok := strings.CutPrefix(a, "--allowed-hosts=")
		return ok && slices.Contains(strings.Split(hosts, ","), hubHost)
	}) {
		t.Errorf("the args %q do not allow Host %s (allowedHosts)", c.Args, hubHost)
	}
}

func countArgs(args []string, a string) int {
	n := 0
	for _, x := range args {
		if x == a {
			n++
		}
	}
	return n
}

// mountedFile is the volume whose mount holds file (the mount's path, then an item's
// path), and its source.
func mountedFile(t *testing.T, spec corev1.PodSpec, file string) (string, corev1.VolumeSource) {
	t.Helper()
	dir, base := filepath.Split(file)
	for _, vm := range spec.Containers[0].VolumeMounts {
		if filepath.Clean(vm.MountPath) != filepath.Clean(dir) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			var items []corev1.KeyToPath
			switch {
			case v.Secret != nil:
				items = v.Secret.Items
			case v.ConfigMap != nil:
				items = v.ConfigMap.Items
			}
			if !slices.ContainsFunc(items, func(i corev1.KeyToPath) bool { return i.Path == base }) {
				t.Errorf("%s: volume %s (%s) has no item at %s", file, v.Name, asJSON(v.VolumeSource), base)
			}
			return v.Name, v.VolumeSource
		}
	}
	t.Errorf("%s is on no mounted volume", file)
	return "", corev1.VolumeSource{}
}

// TestChartRefusesHubValues: values the chart must not render (deploy/render.go renders
// each and fails when one renders) are refused with a message that says what to do, the
// token file and single sign-on together first; the binary refuses that pair too.
func TestChartRefusesHubValues(t *testing.T) {
	want := map[string][]string{
		"a hub's token file and single sign-on": {"hub.authTokenSecret.name and hub.singleSignOn.issuerURL are two ways to authenticate: pick one"},
		"single sign-on without a client ID":    {"hub.singleSignOn.clientID is required with issuerURL"},
		"single sign-on over http":              {"/hub/singleSignOn/issuerURL", "does not match pattern"},
		"two CAs of the issuer":                 {"hub.singleSignOn: give one of caSecret and caConfigMap"},
		"a client secret without an issuer":     {"hub.singleSignOn.clientSecret goes with hub.singleSignOn.issuerURL"},
	}
	raw, err := os.ReadFile("testdata/refused.txt")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(raw), "\n## ")[1:]
	seen := map[string]bool{}
	for _, s := range sections {
		what, rest, _ := strings.Cut(s, "\n")
		seen[what] = true
		command, message, _ := strings.Cut(rest, "\n")
		if !strings.HasPrefix(command, "# helm template ") || !strings.HasPrefix(message, "Error: ") {
			t.Errorf("%q: %q; want the command, then helm's error", what, rest)
		}
		parts, ok := want[what]
		if !ok {
			t.Errorf("testdata/refused.txt refuses %q, which this test does not check", what)
		}
		for _, p := range parts {
			if !strings.Contains(message, p) {
				t.Errorf("%q: helm said %q; want it to say %q", what, message, p)
			}
		}
	}
	for what := range want {
		if !seen[what] {
			t.Errorf("testdata/refused.txt has no %q (deploy/render.go, refusals)", what)
		}
	}

	// The binary with the token file of testdata/hub.yaml and the single sign-on of
	// testdata/hub-sso.yaml: a usage error, before it reads any file.
	args := []string{"--listen=127.0.0.1:0"}
	for _, a := range load(t, "testdata/hub.yaml").deployment(t).Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(a, "--listen=") {
			args = append(args, a)
		}
	}
	for _, a := range load(t, "testdata/hub-sso.yaml").deployment(t).Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--auth=") || strings.HasPrefix(a, "--oidc-") {
			args = append(args, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "two ways to authenticate: pick one") {
		t.Errorf("gcscope %q: %v\n%s\nwant it refused: two ways to authenticate", args, err, out)
	}
}

// standIn is a remote gcscope played by the test: it reviews each API request's bearer
// token (review) as a cluster would, and answers /session as gcscope does.
type standIn struct {
	url    string
	mu     sync.Mutex
	asked  []string // the user each API request was reviewed as ("": refused)
	review func(ctx context.Context, token string) (user string, ok bool)
}

// startStandIns serves a standIn per name over https with the key pair of certFile and
// keyFile.
func startStandIns(t *testing.T, certFile, keyFile string, names []string, review func(ctx context.Context, token string) (string, bool)) map[string]*standIn {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*standIn{}
	for _, name := range names {
		s := &standIn{review: review}
		srv := httptest.NewUnstartedServer(s)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		s.url = srv.URL
		out[name] = s
	}
	return out
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		w.Write([]byte("ok"))
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, ok := "", false
	if token != "" {
		user, ok = s.review(r.Context(), token)
	}
	s.mu.Lock()
	s.asked = append(s.asked, user)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"unauthorized","message":"the cluster does not accept this token"}`))
		return
	}
	if r.URL.Path == "/api/v1/session" {
		fmt.Fprintf(w, `{"authenticated":true,"user":{"name":%q}}`, user)
		return
	}
	w.Write([]byte(`{"nodes":[],"edges":[]}`))
}

// reviewed is the users the stand-in's API requests were reviewed as.
func (s *standIn) reviewed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// caArg is where the chart mounts a remote's CA.
var caArg = regexp.MustCompile(`^/etc/gcscope/remotes/[0-9]+/ca\.crt$`)

// localArgs are the container's args for a run in the test: gcscope on loopback with the
// test's certificate (certFile, keyFile), each --remote the stand-in of its name (whose CA
// is certFile), and each arg of files replaced by its value (each must be there).
func localArgs(t *testing.T, args []string, certFile, keyFile string, standIns map[string]string, files map[string]string) []string {
	t.Helper()
	replace := map[string]string{
		"--listen=0.0.0.0:8443":                               "--listen=127.0.0.1:0",
		"--tls-cert-file=" + tlsMountPath + "/tls.crt":        "--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + tlsMountPath + "/tls.key": "--tls-private-key-file=" + keyFile,
	}
	for k, v := range files {
		replace[k] = v
	}
	var out []string
	done := map[string]bool{}
	for _, a := range args {
		if r, ok := replace[a]; ok {
			done[a] = true
			a = r
		} else if spec, ok := strings.CutPrefix(a, "--remote="); ok {
			parts := strings.Split(spec, ",")
			name, _, _ := strings.Cut(parts[0], "=")
			if standIns[name] == "" {
				t.Fatalf("--remote %s: no stand-in", name)
			}
			parts[0] = name + "=" + standIns[name]
			for i, p := range parts[1:] {
				if f, ok := strings.CutPrefix(p, "ca="); ok {
					if !caArg.MatchString(f) {
						t.Fatalf("--remote %s: CA file %q", name, f)
					}
					parts[i+1] = "ca=" + certFile // the stand-ins' certificate is its own CA
				}
			}
			a = "--remote=" + strings.Join(parts, ",")
		}
		out = append(out, a)
	}
	for a := range replace {
		if !done[a] {
			t.Fatalf("the container args %q have no %s to replace", args, a)
		}
	}
	return out
}

// systemRoots is env with the system's roots the stand-ins' CA (certFile), for the
// remotes given no CA (west): the image's system roots trust a public certificate.
func systemRoots(env []corev1.EnvVar, certFile string) []corev1.EnvVar {
	return append(slices.Clone(env), corev1.EnvVar{Name: "SSL_CERT_FILE", Value: certFile})
}

// TestHubWithoutTokenFileWithTheChartsArgs: the binary with testdata/hub-kubernetes.yaml's
// args (no token file) is ready and signs a user in when a remote accepts their token, as
// that remote names them; a token no remote accepts is refused.
func TestHubWithoutTokenFileWithTheChartsArgs(t *testing.T) {
	m := load(t, "testdata/hub-kubernetes.yaml")
	c := m.deployment(t).Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	certFile, keyFile, pool := certificate(t, dir)
	// East's cluster knows alice's token; west takes ID tokens only, so it is never sent one.
	const aliceToken = "east-alice-token-0123456789"
	remotes := startStandIns(t, certFile, keyFile, []string{"east", "west"}, func(_ context.Context, token string) (string, bool) {
		return "alice", token == aliceToken
	})
	p := launch(t, dir, localArgs(t, c.Args, certFile, keyFile, map[string]string{"east": remotes["east"].url, "west": remotes["west"].url}, nil), systemRoots(c.Env, certFile), pool)
	p.waitReady(t, m)

	var session struct {
		Authenticated bool
		User          struct{ Name string }
	}
	if code, body := p.get(t, "/api/v1/session", aliceToken, ""); code != http.StatusOK || json.Unmarshal(body, &session) != nil || session.User.Name != "alice" {
		t.Errorf("/api/v1/session with alice's token: %d %s; want alice, as east names her", code, body)
	}
	if code, body := p.get(t, "/api/v1/session", "a-token-no-cluster-knows", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/session with a token no remote accepts: %d %s; want 401", code, body)
	}
	var list struct {
		Clusters []struct{ Name, State string }
	}
	testkit.Eventually(t, "east ready for alice, west refusing her", func() bool {
		code, body := p.get(t, "/api/v1/clusters", aliceToken, "")
		list.Clusters = nil
		return code == http.StatusOK && json.Unmarshal(body, &list) == nil && len(list.Clusters) == 2 &&
			list.Clusters[0].State == "ready" && list.Clusters[1].State == "refused"
	})
	if code, body := p.get(t, "/api/v1/clusters/east/graph", aliceToken, ""); code != http.StatusOK {
		t.Errorf("east's graph as alice: %d %s", code, body)
	}
	if got := remotes["west"].reviewed(); len(got) > 0 {
		t.Errorf("west (id-token) was asked about %q; a pasted token is not sent there", got)
	}
	if got := remotes["east"].reviewed(); !slices.Contains(got, "alice") {
		t.Errorf("east reviewed %q; want alice's token", got)
	}
}

// TestHubSingleSignOnWithTheChartsArgs: the binary with testdata/hub-sso.yaml's args (the
// issuer's URL, the client secret's and the CA's files replaced by those of a real OpenID
// provider, zitadel's example, run here over TLS with a CA of its own) is ready, its
// login page offers single sign-on, and a user signs in through the provider at the hub's
// public name (allowedHosts), coming back to https://HOST/login/sso/callback: both
// remotes, west taking ID tokens only, review the ID token (as their apiservers would,
// against the same issuer and client ID) and name the user.
func TestHubSingleSignOnWithTheChartsArgs(t *testing.T) {
	m := load(t, "testdata/hub-sso.yaml")
	c := m.deployment(t).Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	certFile, keyFile, pool := certificate(t, dir)

	// The provider, with one client: the chart's client ID, whose redirect URL is the hub's
	// at its public name.
	const clientID, clientSecret = "gcscope-hub", "hub-client-secret"
	if !slices.Contains(c.Args, "--oidc-client-id="+clientID) {
		t.Fatalf("the args %q have not --oidc-client-id=%s", c.Args, clientID)
	}
	callback := "https://" + hubHost + "/login/sso/callback"
	idp := httptest.NewUnstartedServer(nil)
	issuer := "https://" + idp.Listener.Addr().String()
	storage.RegisterClients(storage.WebClient(clientID, clientSecret, callback))
	idp.Config.Handler = exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	idp.StartTLS()
	t.Cleanup(idp.Close)
	caFile, secretFile := filepath.Join(dir, "idp-ca.pem"), filepath.Join(dir, "client-secret")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(clientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The remotes' apiservers trust the same issuer and client ID: the stand-ins check the ID
	// token so, and name its subject as an apiserver does (oidc:SUB).
	provider, err := oidc.NewProvider(oidc.ClientContext(context.Background(), idp.Client()), issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: clientID})
	remotes := startStandIns(t, certFile, keyFile, []string{"east", "west"}, func(ctx context.Context, token string) (string, bool) {
		id, err := verifier.Verify(oidc.ClientContext(ctx, idp.Client()), token)
		if err != nil {
			return "", false
		}
		return "oidc:" + id.Subject, true
	})

	args := localArgs(t, c.Args, certFile, keyFile, map[string]string{"east": remotes["east"].url, "west": remotes["west"].url}, map[string]string{
		"--oidc-issuer-url=https://sso.example.com/realms/platform":       "--oidc-issuer-url=" + issuer,
		"--oidc-client-secret-file=/etc/gcscope/sso/client/client-secret": "--oidc-client-secret-file=" + secretFile,
		"--oidc-ca-file=/etc/gcscope/sso/ca/ca.crt":                       "--oidc-ca-file=" + caFile,
	})
	p := launch(t, dir, args, systemRoots(c.Env, certFile), pool) // single sign-on reads the provider's discovery document first
	p.waitReady(t, m)

	// A browser: the hub at its public name (dialled on loopback), trusting the hub's and
	// the provider's certificates.
	hubAddr := strings.TrimPrefix(p.base, "https://")
	roots := pool.Clone()
	roots.AddCert(idp.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == hubHost+":443" {
			addr = hubAddr
		}
		if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
			return nil, fmt.Errorf("the test dials loopback only, not %s", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	jar, _ := cookiejar.New(nil)
	var visited []*url.URL
	browser := &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		visited = append(visited, req.URL)
		if len(via) >= 10 {
			return fmt.Errorf("%d redirects", len(via))
		}
		return nil
	}}
	open := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	hub := "https://" + hubHost

	// The login page offers single sign-on, named as the values say.
	if resp, body := open(browser.Get(hub + "/login")); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="sso"`) || !strings.Contains(body, "Sign in with Example SSO") {
		t.Fatalf("the hub's login page: %s; want its single sign-on button (id sso) saying Sign in with Example SSO\n%s", resp.Status, body)
	}
	// A Host it is not told to answer to is refused: the provider's redirect must come back to an allowed one.
	if code, _ := p.get(t, "/login", "", "gcscope.elsewhere.example.com"); code != http.StatusMisdirectedRequest {
		t.Errorf("/login with a Host not in allowedHosts: %d, want 421", code)
	}
	if code, _ := p.get(t, "/api/v1/clusters", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/clusters signed out: %d, want 401", code)
	}

	// The button: to the provider, asked for a code for the chart's client, returning to
	// the hub's public name.
	form, _ := open(browser.Get(hub + "/login/sso"))
	if !strings.HasPrefix(form.Request.URL.String(), issuer+"/login/username") {
		t.Fatalf("the sign-in did not reach the provider's form: %s (%s), via %v", form.Request.URL, form.Status, visited)
	}
	var authorize *url.URL
	for _, u := range visited {
		if u.Query().Get("response_type") == "code" {
			authorize = u
		}
	}
	if authorize == nil {
		t.Fatalf("no request for a code among %v", visited)
	}
	q := authorize.Query()
	if q.Get("client_id") != clientID || q.Get("redirect_uri") != callback || !slices.Contains(strings.Fields(q.Get("scope")), "groups") {
		t.Errorf("the hub asked the provider %s; want client %s, redirect %s and the values' scopes (groups)", authorize, clientID, callback)
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(issuer, "https://"), ":")
	back, body := open(browser.PostForm(issuer+"/login/username", url.Values{"id": {form.Request.URL.Query().Get("authRequestID")},
		"username": {"test-user@" + host}, "password": {"verysecure"}}))
	if back.Request.URL.Host != hubHost || back.StatusCode != http.StatusOK || strings.Contains(body, "login-error") {
		t.Fatalf("after the provider's form: %s %s, via %v\n%s", back.Request.URL, back.Status, visited, body)
	}

	// Signed in: the remotes named the user, and both are ready for them.
	var session struct {
		Authenticated bool
		User          struct{ Name string }
	}
	if resp, body := open(browser.Get(hub + "/api/v1/session")); resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &session) != nil || session.User.Name != "oidc:id1" {
		t.Fatalf("/api/v1/session after single sign-on: %s %s; want oidc:id1, as the remotes name the provider's user", resp.Status, body)
	}
	var list struct {
		Clusters []struct{ Name, State string }
	}
	testkit.Eventually(t, "east and west ready for the user", func() bool {
		resp, body := open(browser.Get(hub + "/api/v1/clusters"))
		list.Clusters = nil
		return resp.StatusCode == http.StatusOK && json.Unmarshal([]byte(body), &list) == nil && len(list.Clusters) == 2 &&
			list.Clusters[0].State == "ready" && list.Clusters[1].State == "ready"
	})
	for _, name := range []string{"east", "west"} {
		if resp, body := open(browser.Get(hub + "/api/v1/clusters/" + name + "/graph")); resp.StatusCode != http.StatusOK {
			t.Errorf("%s's graph through the hub: %s %s", name, resp.Status, body)
		}
		// Every API request the remote got bore the user's ID token.
		if got := remotes[name].reviewed(); len(got) == 0 || slices.ContainsFunc(got, func(u string) bool { return u != "oidc:id1" }) {
			t.Errorf("%s reviewed its requests as %q; want each the user's ID token (oidc:id1)", name, got)
		}
	}
}
