package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/wire"
)

// clusterSet is a Clusters of fixed statuses; a cluster is open once open has it.
type clusterSet struct {
	mu      sync.Mutex
	status  []registry.Status
	open    map[string]*registry.Cluster
	started []string // names Open was asked to start
}

func (c *clusterSet) List() []registry.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]registry.Status(nil), c.status...)
}

func (c *clusterSet) Open(name string, start bool) (*registry.Cluster, registry.Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if start {
		c.started = append(c.started, name)
	}
	for _, st := range c.status {
		if st.Name == name {
			return c.open[name], st, true
		}
	}
	return nil, registry.Status{}, false
}

func (c *clusterSet) set(name string, cl *registry.Cluster, state registry.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open[name] = cl
	for i := range c.status {
		if c.status[i].Name == name {
			c.status[i].State, c.status[i].Reason = state, ""
		}
	}
}

// TestSeveralClustersScopeEveryRoute serves east (the shared engine) and west (connecting,
// then open): the default routes are east's, the scoped ones each cluster's; a cluster
// without an engine answers 503 with Retry-After and the page waits for it; the page's
// cluster is in its URL and remembered; writes are audited with their cluster; /metrics
// tells the engines' series apart.
func TestSeveralClustersScopeEveryRoute(t *testing.T) {
	e := env(t)
	set := &clusterSet{status: []registry.Status{
		{Name: "east", State: registry.Ready, Default: true},
		{Name: "west", State: registry.Connecting, Reason: "asking https://west for its version"},
		{Name: "admin@kubernetes", State: registry.Ready}, {Name: "a/b", State: registry.Ready},
		{Name: "a%2Fb", State: registry.Ready}, {Name: "arn:aws:eks:x", State: registry.Ready},
		{Name: "down", State: registry.Failed, Reason: "cannot reach https://down"},
	}, open: map[string]*registry.Cluster{"east": {Engine: e.engine, Kube: e.config}}}
	for _, name := range []string{"admin@kubernetes", "a/b", "a%2Fb", "arn:aws:eks:x"} {
		set.open[name] = &registry.Cluster{Engine: e.engine, Kube: e.config}
	}
	audit := &lockedBuffer{}
	s := New(Options{Clusters: set, Audit: audit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	c := newClient(t, ts)
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	var list clustersResponse
	if code := c.getJSON("/api/v1/clusters", &list); code != 200 || len(list.Clusters) != 7 || list.Clusters[1].State != registry.Connecting {
		t.Fatalf("GET /api/v1/clusters: %d %+v", code, list)
	}
	ns := e.namespace(t)
	cm := e.configMap(t, ns, "in-east", nil)
	for _, path := range []string{"/api/v1/objects/" + string(cm.UID), "/api/v1/clusters/east/objects/" + string(cm.UID)} {
		if code, body := c.do(http.MethodGet, path, nil, nil); code != 200 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := c.do(http.MethodGet, "/api/v1/clusters/west/objects/"+string(cm.UID), nil, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"cluster_not_ready"`) || !strings.Contains(string(body), "asking https://west") {
		t.Errorf("west before its engine: %d %s; want 503 cluster_not_ready with its reason", code, body)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/clusters/south/queues", nil, nil); code != http.StatusNotFound {
		t.Errorf("a cluster not served: %d, want 404", code)
	}
	// Another site's request does not start an engine; gcscope's page and the user's own
	// navigation do.
	set.mu.Lock()
	set.started = nil
	set.mu.Unlock()
	for _, site := range []string{"cross-site", "same-site"} {
		c.do(http.MethodGet, "/api/v1/clusters/west/graph", nil, http.Header{"Sec-Fetch-Site": {site}})
		c.do(http.MethodGet, "/?cluster=west", nil, http.Header{"Sec-Fetch-Site": {site}})
	}
	c.do(http.MethodGet, "/api/v1/clusters/west/graph", nil, http.Header{"Origin": {"https://evil.example"}}) // no Sec-Fetch-Site: an older browser
	crossNav := httptest.NewRequest(http.MethodGet, ts.URL+"/?cluster=west", nil)
	crossNav.Host, crossNav.Header["Sec-Fetch-Site"] = "127.0.0.1:8080", []string{"cross-site"}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, crossNav)
	if ck := rec.Result().Cookies(); len(ck) != 0 && slices.ContainsFunc(ck, func(k *http.Cookie) bool { return k.Name == clusterCookie }) {
		t.Error("another site's link chose the cluster the user lands on next (set gcscope_cluster)")
	}
	c.do(http.MethodGet, "/api/v1/clusters/west/graph", nil, http.Header{"Sec-Fetch-Site": {"same-origin"}})
	c.do(http.MethodGet, "/?cluster=west", nil, http.Header{"Sec-Fetch-Site": {"none"}})
	set.mu.Lock()
	if want := []string{"west", "west"}; !slices.Equal(set.started, want) {
		t.Errorf("engines started by %v; want by gcscope's page and the user's navigation only", set.started)
	}
	set.started = nil
	set.mu.Unlock()

	// Names as kubeconfigs have them: the path segment is the name escaped, one segment
	// even with a slash; "a/b" and "a%2Fb" are two clusters; an empty name is none.
	for path, name := range map[string]string{
		"/api/v1/clusters/admin%40kubernetes/queues": "admin@kubernetes",
		"/api/v1/clusters/a%2Fb/queues":              "a/b",
		"/api/v1/clusters/a%252Fb/queues":            "a%2Fb",
		"/api/v1/clusters/arn:aws:eks:x/queues":      "arn:aws:eks:x",
	} {
		set.mu.Lock()
		set.started = nil
		set.mu.Unlock()
		code, body := c.do(http.MethodGet, path, nil, nil)
		set.mu.Lock()
		if code != http.StatusOK || !slices.Equal(set.started, []string{name}) {
			t.Errorf("%s: %d %s, opened %v; want cluster %q", path, code, body, set.started, name)
		}
		set.mu.Unlock()
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/clusters//queues", nil, nil); code != http.StatusNotFound {
		t.Errorf("an empty cluster name: %d, want 404", code)
	}

	// The page: its cluster in the URL, remembered; a cluster without an engine waits.
	code, _ = c.do(http.MethodGet, "/", nil, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("/: %d, want 303 to the default cluster's page", code)
	}
	code, body = c.do(http.MethodGet, "/?cluster=west", nil, nil)
	if code != 200 || !strings.Contains(string(body), `id="cluster-banner"`) || !strings.Contains(string(body), `data-cluster-state="connecting"`) ||
		!strings.Contains(string(body), `<option value="west"`) {
		t.Errorf("west's page before its engine: %d, without the banner, its state or the picker", code)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/?cluster=west" {
		t.Errorf("/ after looking at west: to %q, want /?cluster=west (remembered)", loc)
	}
	// A cookie gcscope did not sign (another application on this host planted it) does not
	// choose the cluster: the page goes to the default, and the named cluster's engine is
	// not asked to start.
	set.mu.Lock()
	set.started = nil
	set.mu.Unlock()
	for _, planted := range []string{"west", "west.forged", url.QueryEscape("admin@kubernetes") + "." + s.clusterMAC("west")} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/", nil)
		req.AddCookie(&http.Cookie{Name: clusterCookie, Value: planted})
		resp, err := (&http.Client{CheckRedirect: c.http.CheckRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "/?cluster=east" {
			t.Errorf("/ with a planted cluster cookie %q: to %q, want the default /?cluster=east", planted, loc)
		}
	}
	set.mu.Lock()
	if slices.ContainsFunc(set.started, func(n string) bool { return n != "east" }) {
		t.Errorf("planted cluster cookies started %v", set.started)
	}
	set.mu.Unlock()
	if code, _ := c.do(http.MethodGet, "/?cluster=west&cluster=east", nil, nil); code != http.StatusBadRequest {
		t.Errorf("the page of two clusters: %d, want 400", code)
	}
	if code, _ := c.do(http.MethodGet, "/?cluster=south", nil, nil); code != http.StatusNotFound {
		t.Errorf("the page of a cluster not served: %d, want 404", code)
	}

	// West opens (the same engine behind it here): its routes answer.
	set.set("west", &registry.Cluster{Engine: e.engine, Kube: e.config}, registry.Ready)
	if code, body := c.do(http.MethodGet, "/api/v1/clusters/west/queues", nil, nil); code != 200 {
		t.Errorf("west's queues once open: %d %s", code, body)
	}
	code, body = c.do(http.MethodGet, "/?cluster=west", nil, nil)
	if code != 200 || strings.Contains(string(body), `id="cluster-banner"`) || !strings.Contains(string(body), `data-cluster="west"`) {
		t.Errorf("west's page once open: %d, or still waiting", code)
	}

	// A write names its cluster in the audit log.
	var sess edge.SessionResponse
	c.getJSON("/api/v1/clusters/west/session", &sess)
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}, edge.CSRFHeader: {sess.CSRFToken}}
	start := len(audit.String()) // after the refused reads' lines
	if code, body := c.do(http.MethodPost, "/api/v1/clusters/west/objects/"+string(cm.UID)+"/delete", wire.DeleteRequest{PropagationPolicy: "Background", DryRun: true}, h); code != 200 {
		t.Errorf("dry run on west: %d %s", code, body)
	}
	var line struct{ Cluster, Action string }
	json.Unmarshal([]byte(audit.String()[start:]), &line)
	if line.Cluster != "west" || line.Action != "delete" {
		t.Errorf("audit line %q: want the delete, naming west", audit.String())
	}
	// A write refused before any handler audits it (its cluster failed) names its cluster too.
	before := len(audit.String())
	c.do(http.MethodPost, "/api/v1/clusters/down/objects/"+string(cm.UID)+"/delete", wire.DeleteRequest{PropagationPolicy: "Background", DryRun: true}, h)
	var refused struct {
		Cluster, Result string
		Status          int
	}
	json.Unmarshal([]byte(audit.String()[before:]), &refused)
	if refused.Cluster != "down" || refused.Status != http.StatusServiceUnavailable {
		t.Errorf("the refused write's audit line %q: want 503, naming down", audit.String()[before:])
	}

	if code, dot := c.do(http.MethodGet, "/api/v1/clusters/west/debug/controllers/garbagecollector/graph", nil, nil); code != 200 || !strings.Contains(string(dot), "digraph") {
		t.Errorf("west's DOT graph: %d", code)
	}
	_, metrics := c.do(http.MethodGet, "/metrics", nil, nil)
	for _, want := range []string{`cluster="east"`, `cluster="west"`, `gcscope_cluster_state{cluster="west",state="ready",unhealthy="0"} 1`, `gcscope_cluster_state{cluster="east",state="ready",unhealthy="0"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no series with %s", want)
		}
	}
}

// With one cluster, GET /api/v1/clusters lists it, named, in the state Ready says, and
// the page has no picker.
func TestOneClusterIsListed(t *testing.T) {
	e := env(t)
	var waiting error = errSyncing
	ts, _ := e.serve(t, Options{ClusterName: "kind-kind", Ready: func() error { return waiting }})
	c := newClient(t, ts)
	var list clustersResponse
	if code := c.getJSON("/api/v1/clusters", &list); code != 200 || len(list.Clusters) != 1 {
		t.Fatalf("GET /api/v1/clusters: %d %+v", code, list)
	}
	if st := list.Clusters[0]; st.Name != "kind-kind" || !st.Default || st.State != registry.Syncing || st.Reason != errSyncing.Error() || st.Server != e.config.Host {
		t.Errorf("the one cluster while it syncs: %+v", st)
	}
	waiting = nil
	var ready clustersResponse
	c.getJSON("/api/v1/clusters", &ready)
	if st := ready.Clusters[0]; st.State != registry.Ready || st.Reason != "" {
		t.Errorf("the one cluster once ready: %+v", st)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/clusters/kind-kind/queues", nil, nil); code != 200 {
		t.Errorf("its scoped route: %d", code)
	}
	if _, page := c.do(http.MethodGet, "/", nil, nil); strings.Contains(string(page), "cluster-picker") {
		t.Error("the page of one cluster has a cluster picker")
	}
}

var errSyncing = errors.New("garbage collector syncing its monitors")

// TestStreamCapsHoldAcrossClusters: the bounds of streams per user and in all count every
// cluster's streams together; a user cannot hold the per-user bound once per cluster.
func TestStreamCapsHoldAcrossClusters(t *testing.T) {
	e := env(t)
	for _, tc := range []struct {
		all, perUser int
		refusal      string
	}{
		{all: 10, perUser: 2, refusal: "too many streams for this user"},
		{all: 2, perUser: 10, refusal: "the server holds its maximum of 2"},
	} {
		set := &clusterSet{status: []registry.Status{{Name: "east", State: registry.Ready, Default: true}, {Name: "west", State: registry.Ready}},
			open: map[string]*registry.Cluster{"east": {Engine: e.engine, Kube: e.config}, "west": {Engine: e.engine, Kube: e.config}}}
		s := New(Options{Clusters: set, MaxStreams: tc.all, MaxStreamsPerUser: tc.perUser, Logger: slog.New(slog.DiscardHandler)})
		ctx, cancel := context.WithCancel(context.Background())
		go s.Run(ctx)
		ts := httptest.NewServer(s)
		dial := func(cluster string) (*websocket.Conn, error) {
			readCtx, done := context.WithTimeout(ctx, 30*time.Second)
			defer done()
			conn, _, err := websocket.Dial(readCtx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/v1/clusters/"+cluster+"/stream", nil)
			if err != nil {
				t.Fatalf("dialling %s: %v", cluster, err)
			}
			conn.SetReadLimit(-1)
			_, _, err = conn.Read(readCtx)
			return conn, err
		}
		for _, cluster := range []string{"east", "west"} {
			conn, err := dial(cluster)
			if err != nil {
				t.Fatalf("bounds %d/%d: the stream of %s: %v, want its first frame", tc.all, tc.perUser, cluster, err)
			}
			defer conn.CloseNow()
		}
		for _, cluster := range []string{"east", "west"} {
			conn, err := dial(cluster)
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, tc.refusal) {
				t.Errorf("bounds %d/%d: a third stream, on %s: %v; want it closed with 1013 saying %q", tc.all, tc.perUser, cluster, err, tc.refusal)
			}
			conn.CloseNow()
		}
		ts.Close()
		cancel()
	}
}
