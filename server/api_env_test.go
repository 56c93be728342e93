package server

// The server's tests share one embedded control plane (testkit's) with the engine running
// active; env hands it out, serve builds a server on it, client is a browser-like
// HTTP client.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/edge"
)

type apiEnv struct {
	config *rest.Config
	client kubernetes.Interface
	engine *gc.GarbageCollector
}

// theEnv is the engine that apiOptions' Setup starts on the package's shared control plane.
var theEnv *apiEnv

var apiOptions = testkit.Options{Setup: func(ctx context.Context, e *testkit.Env) error {
	engine, err := gc.NewForConfig(e.Config, gc.Options{DiscoveryPeriod: 2 * time.Second})
	if err != nil {
		return err
	}
	theEnv = &apiEnv{config: e.Config, client: e.Client, engine: engine}
	return e.GoReady(engine.Started(), engine.Run)
}}

func TestMain(m *testing.M) { testkit.Main(m) }

// env is the shared control plane with the engine running active, started for the first
// test that needs it.
func env(t testing.TB) *apiEnv {
	t.Helper()
	testkit.Shared(t, apiOptions)
	return theEnv
}

// serve starts a gcscope server over the shared engine.
func (e *apiEnv) serve(t testing.TB, o Options) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	audit := &lockedBuffer{}
	o.Engine, o.Kube, o.Audit = e.engine, e.config, audit
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	return ts, &audit.buf
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (e *apiEnv) namespace(t testing.TB) string {
	t.Helper()
	ns, err := e.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func (e *apiEnv) configMap(t *testing.T, ns, name string, finalizers []string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true)})
	}
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs, Finalizers: finalizers}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes "+name, func() bool {
		n, ok := e.engine.Node(cm.UID)
		return ok && n.Observed
	})
	return cm
}

func (e *apiEnv) exists(t *testing.T, cm *corev1.ConfigMap) bool {
	t.Helper()
	got, err := e.client.CoreV1().ConfigMaps(cm.Namespace).Get(context.Background(), cm.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.UID == cm.UID
}

// client is a browser-like HTTP client: a cookie jar, and the page's origin.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newClient(t *testing.T, ts *httptest.Server) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: ts.URL, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (c *client) do(method, path string, body any, header http.Header) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			j, _ := json.Marshal(b)
			rd = bytes.NewReader(j)
		}
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (c *client) getJSON(path string, v any) int {
	c.t.Helper()
	code, body := c.do(http.MethodGet, path, nil, nil)
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			c.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return code
}

// login posts the login form as the page does (following the redirect to the UI), with
// extra headers; it returns the final status.
func (c *client) login(token string, header http.Header) int {
	c.t.Helper()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for k, v := range header {
		h[k] = v
	}
	code, _ := c.do(http.MethodPost, "/login", url.Values{"token": {token}}.Encode(), h)
	return code
}

// session fetches the CSRF token (and its cookie), as the page does.
func (c *client) session() edge.SessionResponse {
	c.t.Helper()
	var s edge.SessionResponse
	if code := c.getJSON("/api/v1/session", &s); code != http.StatusOK {
		c.t.Fatalf("session: %d", code)
	}
	c.csrf = s.CSRFToken
	return s
}

// deleteObj posts a delete the way the UI does: same origin, with the CSRF token.
func (c *client) deleteObj(uid types.UID, body any) (int, []byte) {
	c.t.Helper()
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}, edge.CSRFHeader: {c.csrf}}
	return c.do(http.MethodPost, "/api/v1/objects/"+string(uid)+"/delete", body, h)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
