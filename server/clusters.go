package server

// Several clusters in one gcscope: each has its own engine and what is built around it
// (a Cluster), and every API and stream route exists twice, under /api/v1 for the
// default cluster and under /api/v1/clusters/{cluster} for any. The server's security
// (sessions, CSRF, Host and Origin checks, audit) is one for all of them.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// Cluster is what the server serves of one cluster: its engine and what is built around
// it. Every field but Engine may be nil (see Options).
type Cluster struct {
	Engine     Engine
	Kube       *rest.Config
	Authorizer Authorizer
	Scenarios  ScenarioPlayer
	Deletions  Deletions
	History    History
}

// ClusterState is where a cluster's engine is.
type ClusterState string

const (
	ClusterIdle       ClusterState = "idle"       // not started: it starts when first opened
	ClusterConnecting ClusterState = "connecting" // asking the apiserver who it is
	ClusterSyncing    ClusterState = "syncing"    // the engine fills its graph
	ClusterReady      ClusterState = "ready"
	ClusterFailed     ClusterState = "failed" // see Reason; opened again, it is retried
)

// ClusterStatus is one cluster as GET /api/v1/clusters lists it.
type ClusterStatus struct {
	Name    string       `json:"name"`
	Server  string       `json:"server,omitempty"` // the apiserver's URL
	State   ClusterState `json:"state"`
	Reason  string       `json:"reason,omitempty"` // why it failed, or what it waits for
	Since   time.Time    `json:"since,omitzero"`   // when it entered State
	Default bool         `json:"default,omitempty"`
}

// Clusters are the clusters one gcscope serves (cmd/gcscope's --context, given more than
// once). The server asks for a cluster on each request to it.
type Clusters interface {
	// List is every cluster, the default one first.
	List() []ClusterStatus
	// Open returns name's cluster, with start starting its engine when it is idle or
	// failed; the cluster is nil until it has an engine. known is false for no such
	// cluster.
	Open(name string, start bool) (c *Cluster, st ClusterStatus, known bool)
}

// served is a cluster the server serves: its Cluster, and its stream hub and REST mapper,
// made once for it. A cluster not open yet is served with no Cluster and its status.
type served struct {
	Cluster
	name   string
	status ClusterStatus // for a cluster not open yet
	hub    *hub
	mapper restMapper

	from    *Cluster           // what Clusters.Open gave (several clusters)
	stopHub context.CancelFunc // ends hub.run (several clusters)
}

type clusterKey struct{}

// clusterFrom is the cluster of a request (inCluster). Routes outside any cluster have
// the default one.
func clusterFrom(r *http.Request) *served {
	if c, ok := r.Context().Value(clusterKey{}).(*served); ok {
		return c
	}
	return &served{}
}

// pending reports whether the cluster has no engine yet because it is starting or failed.
func (c *served) pending() bool {
	return c.Engine == nil && c.status.State != "" && c.status.State != ClusterReady
}

// notReady answers 503 for a cluster without an engine yet, with when to ask again.
func notReady(w http.ResponseWriter, c *served) {
	msg := fmt.Sprintf("cluster %q is %s", c.name, c.status.State)
	if c.status.State == ClusterFailed {
		msg = fmt.Sprintf("cluster %q failed to start", c.name)
	}
	switch {
	case c.status.State == ClusterIdle:
		msg += ": its engine starts when gcscope's page (or a client that is not a browser) opens it, not on another site's request"
	case c.status.Reason != "":
		msg += ": " + c.status.Reason
	}
	if c.status.State != ClusterIdle { // asked again, an idle cluster stays idle
		w.Header().Set("Retry-After", strconv.Itoa(2))
	}
	writeError(w, http.StatusServiceUnavailable, codeClusterNotReady, msg)
}

// fleet is the server's side of Options.Clusters: a served per cluster once it opens.
type fleet struct {
	src Clusters
	mu  sync.Mutex
	by  map[string]*served
	// run is the context the hubs run in, once Server.Run has it; hubs of clusters opened
	// before wait in waiting.
	run     context.Context
	waiting []*served
}

// multi reports whether the server serves several clusters (Options.Clusters).
func (s *Server) multi() bool { return s.fleet != nil }

// defaultCluster is the name of the cluster the routes under /api/v1 serve.
func (s *Server) defaultCluster() string {
	if !s.multi() {
		return s.single.name
	}
	for _, st := range s.fleet.src.List() {
		if st.Default {
			return st.Name
		}
	}
	return ""
}

// mayStart reports whether r may start a cluster's engine: not a request another site
// made the browser send (a link, an image, a form, a websocket; by its Origin or its
// Sec-Fetch-Site), which would start collectors at will on every context of the
// kubeconfig; the user's own navigation, gcscope's page and clients that are not
// browsers may.
func (s *Server) mayStart(r *http.Request) bool {
	return crossSite(r, s.opts.AllowedOrigins) == ""
}

// cluster resolves name to what is served of it, starting its engine when start says;
// false for no such cluster.
func (s *Server) cluster(name string, start bool) (*served, bool) {
	if !s.multi() {
		return s.single, name == s.single.name
	}
	c, st, known := s.fleet.src.Open(name, start)
	if !known {
		return nil, false
	}
	f := s.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.by[name]
	if c == nil {
		if ok { // its engine failed: so do its streams, and the page waits for it again
			f.retire(old)
		}
		return &served{name: name, status: st}, true
	}
	if ok && old.from == c {
		return old, true
	}
	if ok {
		f.retire(old) // the cluster was started again: its old engine's streams end
	}
	sv := &served{Cluster: *c, name: name, from: c}
	sv.hub = s.newHub(sv, prometheus.WrapRegistererWith(prometheus.Labels{"cluster": name}, s.metrics.registry))
	f.by[name] = sv
	if f.run != nil {
		f.start(sv)
	} else {
		f.waiting = append(f.waiting, sv)
	}
	return sv, true
}

// retire ends the streams of a cluster whose engine is gone; f.mu held.
func (f *fleet) retire(sv *served) {
	if sv.stopHub != nil {
		sv.stopHub()
	}
	f.waiting = slices.DeleteFunc(f.waiting, func(w *served) bool { return w == sv })
	delete(f.by, sv.name)
}

// start runs sv's hub until the server stops or sv is replaced; f.mu held.
func (f *fleet) start(sv *served) {
	ctx, cancel := context.WithCancel(f.run)
	sv.stopHub = cancel
	go sv.hub.run(ctx)
}

// runAll runs the hubs of the clusters opened so far, and of those opened later, until
// ctx ends.
func (f *fleet) runAll(ctx context.Context) {
	f.mu.Lock()
	f.run = ctx
	for _, sv := range f.waiting {
		f.start(sv)
	}
	f.waiting = nil
	f.mu.Unlock()
	<-ctx.Done()
}

// opened is every cluster served so far, in the order the fleet lists them.
func (s *Server) opened() []*served {
	if !s.multi() {
		return []*served{s.single}
	}
	f := s.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*served
	for _, st := range f.src.List() {
		if sv, ok := f.by[st.Name]; ok {
			out = append(out, sv)
		}
	}
	return out
}

// inCluster puts the default cluster in the request's context.
func (s *Server) inCluster(next http.Handler) http.Handler {
	return s.servingCluster(next, func(*http.Request) (string, bool) { return s.defaultCluster(), true })
}

// inNamedCluster puts the cluster the route names in the request's context. The name is
// the path segment unescaped (escapedRouting keeps "a%2Fb" one segment).
func (s *Server) inNamedCluster(next http.Handler) http.Handler {
	return s.servingCluster(next, func(r *http.Request) (string, bool) {
		name, err := url.PathUnescape(chi.URLParam(r, "cluster"))
		return name, err == nil && name != ""
	})
}

func (s *Server) servingCluster(next http.Handler, named func(*http.Request) (string, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := named(r)
		var c *served
		if ok {
			c, ok = s.cluster(name, s.mayStart(r))
		}
		if t := trailOf(r); t != nil && ok {
			t.cluster.Store(&name)
		}
		if !ok {
			writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("no cluster named %s: GET /api/v1/clusters lists them", quoteClip(name)))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clusterKey{}, c)))
	})
}

type clustersResponse struct {
	Clusters []ClusterStatus `json:"clusters"`
}

// handleClusters lists the clusters and where each is; it starts none.
func (s *Server) handleClusters(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, clustersResponse{Clusters: s.clusterList()})
}

// clusterList is the clusters with their states; a single cluster's from Ready.
func (s *Server) clusterList() []ClusterStatus {
	if s.multi() {
		return s.fleet.src.List()
	}
	st := ClusterStatus{Name: s.single.name, State: ClusterReady, Default: true}
	if s.opts.Kube != nil {
		st.Server = s.opts.Kube.Host
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			st.State, st.Reason = ClusterSyncing, err.Error()
		}
	}
	return []ClusterStatus{st}
}

// clusterStateDesc: a cluster's state, for alerts on a cluster that failed or cannot see
// (the engines' own series exist only for clusters that run).
var clusterStateDesc = prometheus.NewDesc("gcscope_cluster_state",
	"Where each cluster's engine is (several clusters): 1 for its state (idle, connecting, syncing, ready, failed); unhealthy 1 when a ready one cannot see all it monitors or its apiserver does not answer.",
	[]string{"cluster", "state", "unhealthy"}, nil)

// clusterStates exports Clusters' states as gcscope_cluster_state.
type clusterStates struct{ src Clusters }

func (c clusterStates) Describe(ch chan<- *prometheus.Desc) { ch <- clusterStateDesc }

func (c clusterStates) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.src.List() {
		unhealthy := "0"
		if st.State == ClusterReady && st.Reason != "" {
			unhealthy = "1"
		}
		ch <- prometheus.MustNewConstMetric(clusterStateDesc, prometheus.GaugeValue, 1, st.Name, string(st.State), unhealthy)
	}
}
