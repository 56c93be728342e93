package remote_test

// The hub's tests run real parts end to end: two embedded control planes ("a" and "b"),
// each with its engine and its own gcscope server (server.New, with authentication and an
// audit log), and a hub gcscope (server.New with Remotes) in front of them, all on
// loopback.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
)

// A cluster's control plane and the engine started on it.
type clusterEnv struct {
	*testkit.Env
	engine *gc.GarbageCollector
}

var clusters = map[string]*clusterEnv{}
var clustersMu sync.Mutex

func clusterOptions(name string) testkit.Options {
	return testkit.Options{Name: name, Setup: func(ctx context.Context, e *testkit.Env) error {
		engine, err := gc.NewForConfig(e.Config, gc.Options{DiscoveryPeriod: 2 * time.Second})
		if err != nil {
			return err
		}
		clustersMu.Lock()
		clusters[name] = &clusterEnv{Env: e, engine: engine}
		clustersMu.Unlock()
		return e.GoReady(engine.Started(), engine.Run)
	}}
}

func TestMain(m *testing.M) { testkit.Main(m) }

// cluster is the package's control plane name ("a" or "b") with its engine.
func cluster(t testing.TB, name string) *clusterEnv {
	t.Helper()
	testkit.Shared(t, clusterOptions(name))
	clustersMu.Lock()
	defer clustersMu.Unlock()
	return clusters[name]
}

// Users: alice is known to both remotes and the hub; bob to the hub and a only.
const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
)

func tokenFile(t testing.TB, lines ...string) *security.TokenFile {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := security.LoadTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

// lockedBuffer is an audit log the test reads while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gcscope is one gcscope server on loopback that the test can take down (connections
// cut, websockets included, as a crash or a network partition does) and start again on
// the same address.
type gcscope struct {
	t       testing.TB
	handler http.Handler
	addr    string
	URL     string
	Audit   *lockedBuffer

	mu sync.Mutex
	ln *cutListener
	hs *http.Server
}

// remoteGcscope serves cluster c's engine with authentication (users of lines; none:
// without authentication, as on loopback).
func remoteGcscope(t testing.TB, c *clusterEnv, name string, users ...string) *gcscope {
	t.Helper()
	audit := &lockedBuffer{}
	opts := server.Options{Engine: c.engine, Kube: c.Config, ClusterName: name, Audit: audit}
	if len(users) > 0 {
		opts.Auth = tokenFile(t, users...)
	}
	s := server.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	g := &gcscope{t: t, handler: s, Audit: audit}
	g.start("127.0.0.1:0")
	t.Cleanup(func() { cancel(); g.down() })
	return g
}

func (g *gcscope) start(addr string) {
	g.t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		g.t.Fatal(err)
	}
	ln := &cutListener{Listener: l}
	hs := &http.Server{Handler: g.handler, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	g.mu.Lock()
	g.ln, g.hs, g.addr, g.URL = ln, hs, l.Addr().String(), "http://"+l.Addr().String()
	g.mu.Unlock()
}

// down cuts every connection, hijacked ones included, and stops listening.
func (g *gcscope) down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hs != nil {
		g.hs.Close()
		g.ln.cutAll()
		g.hs = nil
	}
}

// up listens again on the same address.
func (g *gcscope) up() { g.start(g.addr) }

// cutListener remembers its connections, to cut them all at once.
type cutListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *cutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *cutListener) cutAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// hub is a hub gcscope over remotes (name → gcscope), with alice and bob as its users.
type hub struct {
	t     testing.TB
	URL   string
	Audit *lockedBuffer
	Set   *remote.Set
}

func newHub(t testing.TB, remotes map[string]*gcscope, order ...string) *hub {
	t.Helper()
	return startHub(t, remotes, order, func(*remote.Set) security.Authenticator {
		return tokenFile(t, aliceToken+" alice", bobToken+" bob")
	})
}

// startHub is a hub gcscope over remotes whose users door signs in.
func startHub(t testing.TB, remotes map[string]*gcscope, order []string, door func(*remote.Set) security.Authenticator) *hub {
	t.Helper()
	var cfgs []remote.Config
	for _, name := range order {
		cfgs = append(cfgs, remote.Config{Name: name, URL: remotes[name].URL})
	}
	set, err := remote.NewSet(cfgs, remote.Options{Limits: remote.Limits{ProbeInterval: 200 * time.Millisecond, ProbeTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	audit := &lockedBuffer{}
	s := server.New(server.Options{Remotes: set, Auth: door(set), Audit: audit})
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	go set.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	return &hub{t: t, URL: ts.URL, Audit: audit, Set: set}
}

// user is a client of the hub as one user: bearer token, cookie jar (the CSRF cookie).
type user struct {
	t     testing.TB
	base  string
	token string
	http  *http.Client
}

func (h *hub) as(token string) *user {
	jar, _ := cookiejar.New(nil)
	return &user{t: h.t, base: h.URL, token: token, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (u *user) do(method, path string, body any, header http.Header) (int, http.Header, []byte) {
	u.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, u.base+path, rd)
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+u.token)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := u.http.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

func (u *user) getJSON(path string, v any) int {
	u.t.Helper()
	code, _, body := u.do(http.MethodGet, path, nil, nil)
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			u.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return code
}

// stream dials the stream at path through the hub.
func (u *user) stream(path string) *websocket.Conn {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u.base, "http")+path,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + u.token}}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		u.t.Fatalf("stream %s: %v (status %d)", path, err, status)
	}
	conn.SetReadLimit(64 << 20)
	u.t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// frame is the part of a stream frame the tests read.
type frame struct {
	Type   string         `json:"type"`
	Seq    uint64         `json:"seq"`
	Nodes  []gc.NodeState `json:"nodes"`
	Events []gc.Event     `json:"events"`
}

func readFrame(t testing.TB, c *websocket.Conn) (frame, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.DefaultWait)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame: %v in %.200s", err, data)
	}
	return f, nil
}

func namespace(t testing.TB, c *clusterEnv) string {
	t.Helper()
	ns, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "hub-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func configMap(t testing.TB, c *clusterEnv, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes "+name, func() bool {
		n, ok := c.engine.Node(cm.UID)
		return ok && n.Observed
	})
	return cm
}
