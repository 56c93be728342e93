package server

// The clusters served, from the registry (server/registry): one, or several, each with its
// own engine and what is built around it, and every API and stream route exists twice,
// under /api/v1 for the default cluster and under /api/v1/clusters/{cluster} for any. A
// single cluster is a registry of one: every route takes the same path. The server's
// security (sessions, CSRF, Host and Origin checks, audit) is one for all of them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/served"
	"github.com/gcscope/gcscope/server/stream"
)

// openCluster is a cluster the server has opened: what its requests see (served.Cluster),
// and its stream hub. A cluster not open yet is served with no Cluster and its status.
type openCluster struct {
	*served.Cluster
	hub     *stream.Hub
	from    *registry.Cluster  // what the registry's Open gave
	stopHub context.CancelFunc // ends hub.Run
}

// hubs are the clusters opened so far, with their stream hubs.
type hubs struct {
	mu sync.Mutex
	by map[string]*openCluster
	// run is the context the hubs run in, once Server.Run has it; hubs of clusters opened
	// before wait in waiting.
	run     context.Context
	waiting []*openCluster
}

// defaultCluster is the name of the cluster the routes under /api/v1 serve.
func (s *Server) defaultCluster() string {
	for _, st := range s.clusters.List() {
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
	return security.CrossSite(r, s.opts.AllowedOrigins) == ""
}

// cluster resolves name to what is served of it, starting its engine when start says;
// false for no such cluster.
func (s *Server) cluster(name string, start bool) (*served.Cluster, bool) {
	c, st, known := s.clusters.Open(name, start)
	if !known {
		return nil, false
	}
	f := s.hubs
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.by[name]
	if c == nil {
		if ok { // its engine failed: so do its streams, and the page waits for it again
			f.retire(old)
		}
		return &served.Cluster{Name: name, Status: st}, true
	}
	if ok && old.from == c {
		return old.Cluster, true
	}
	if ok {
		f.retire(old) // the cluster was started again: its old engine's streams end
	}
	sv := &openCluster{Cluster: &served.Cluster{Cluster: *c, Name: name}, from: c}
	if c.Engine != nil {
		reg := prometheus.Registerer(s.metrics.registry)
		if s.several {
			reg = prometheus.WrapRegistererWith(prometheus.Labels{"cluster": name}, reg)
		}
		sv.hub = s.newHub(sv.Cluster, reg)
		sv.Stream = sv.hub
	}
	f.by[name] = sv
	if f.run != nil {
		f.start(sv)
	} else {
		f.waiting = append(f.waiting, sv)
	}
	return sv.Cluster, true
}

// retire ends the streams of a cluster whose engine is gone; f.mu held.
func (f *hubs) retire(sv *openCluster) {
	if sv.stopHub != nil {
		sv.stopHub()
	}
	f.waiting = slices.DeleteFunc(f.waiting, func(w *openCluster) bool { return w == sv })
	delete(f.by, sv.Name)
}

// start runs sv's hub until the server stops or sv is replaced; f.mu held.
func (f *hubs) start(sv *openCluster) {
	if sv.hub == nil {
		return
	}
	ctx, cancel := context.WithCancel(f.run)
	sv.stopHub = cancel
	go sv.hub.Run(ctx)
}

// runAll runs the hubs of the clusters opened so far, and of those opened later, until
// ctx ends.
func (f *hubs) runAll(ctx context.Context) {
	f.mu.Lock()
	f.run = ctx
	for _, sv := range f.waiting {
		f.start(sv)
	}
	f.waiting = nil
	f.mu.Unlock()
	<-ctx.Done()
}

// handleStream serves the request's cluster's stream (GET /api/v1/stream: server/stream).
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	edge.ClusterFrom(r).Stream.ServeHTTP(w, r)
}

// opened is every cluster served so far, in the order the registry lists them.
func (s *Server) opened() []*openCluster {
	f := s.hubs
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*openCluster
	for _, st := range s.clusters.List() {
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
		if rm, isRemote := s.opts.Remotes.Lookup(name); ok && isRemote {
			s.serveRemote(w, r, rm)
			return
		}
		var c *served.Cluster
		if ok {
			c, ok = s.cluster(name, s.mayStart(r))
		}
		if ok {
			edge.MarkCluster(r, name)
		}
		if !ok {
			httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("no cluster named %s: GET /api/v1/clusters lists them", httpapi.QuoteClip(name))))
			return
		}
		r = edge.WithCluster(r, c)
		// A cluster that decides who a user is (several under --auth=kubernetes) serves
		// the request as the user it names.
		if r, ok = s.edge.AsClusterSees(w, r, name, c.Authenticator); ok {
			next.ServeHTTP(w, r)
		}
	})
}

type clustersResponse struct {
	Clusters []registry.Status `json:"clusters"`
}

// handleClusters lists the clusters and where each is; it starts none. A remote that
// refuses the user is listed so (each asked within a bound, together).
func (s *Server) handleClusters(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, clustersResponse{Clusters: s.clustersFor(r.Context(), r)})
}

// clustersFor is the clusters as r's user sees them: those that do not accept the user's
// credential are refused. Each is asked within ctx, together with the others; one that
// has not answered by then is listed as it is for everyone.
func (s *Server) clustersFor(ctx context.Context, r *http.Request) []registry.Status {
	list := s.refusedHere(ctx, r, s.clusters.List())
	if s.opts.Remotes != nil {
		list = s.opts.Remotes.ForUser(ctx, list, s.remoteCredential(r))
	}
	return list
}

// refusedHere marks refused the clusters built here that review credentials themselves
// and do not accept r's (each asked together; their reviewers keep answers a minute).
func (s *Server) refusedHere(ctx context.Context, r *http.Request, list []registry.Status) []registry.Status {
	if s.opts.Auth == nil {
		return list
	}
	token := s.edge.Token(r)
	var wg sync.WaitGroup
	for i, st := range list {
		if st.State != registry.Ready {
			continue
		}
		c, _, _ := s.clusters.Open(st.Name, false) // starts none
		if c == nil || c.Authenticator == nil {
			continue
		}
		wg.Go(func() {
			if _, err := c.Authenticator.Authenticate(ctx, token); errors.Is(err, security.ErrUnauthenticated) {
				list[i].State, list[i].Reason = registry.Refused, edge.RefusedBy(st.Name)
			}
		})
	}
	wg.Wait()
	return list
}

// serveRemote hands a request to a remote cluster (server/remote) once the hub's own
// checks have passed (Host, Origin, authentication: before this); a write's CSRF token is
// checked here, as GuardWrite does on the local routes, the hub's --read-only holds for
// remotes too, and its audit line names user and cluster.
func (s *Server) serveRemote(w http.ResponseWriter, r *http.Request, rm *remote.Remote) {
	name := rm.Name()
	edge.MarkCluster(r, name)
	r = edge.WithCluster(r, &served.Cluster{Name: name})
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The path below the cluster's /api/v1: /api/v1/clusters/NAME/graph and, for the
		// default cluster, /api/v1/graph are /graph (the DOT graph's /debug/... stays).
		path := r.URL.EscapedPath()
		if seg := chi.URLParam(r, "cluster"); seg != "" {
			path = strings.TrimPrefix(path, "/api/v1/clusters/"+seg)
		} else {
			path = strings.TrimPrefix(path, "/api/v1")
		}
		rm.Serve(w, r, remote.Call{
			Path: path, User: edge.UserFrom(r).Name, Credential: s.remoteCredential(r),
			ReadOnly: s.opts.ReadOnly, Seats: s.streamSeats,
			CSRFToken: func() string { return s.edge.CSRFToken(w, r) },
			Recheck:   s.edge.Credentials(r),
			Audit: func(wr remote.Write) {
				e := edge.EntryFor(r, edge.WriteAction(r))
				e.Policy, e.DryRun, e.Status, e.Error, e.Result = wr.Policy, wr.DryRun, wr.Status, wr.Error, "ok"
				switch {
				case wr.Status == 0 || wr.Status >= http.StatusInternalServerError:
					e.Result = "error"
				case wr.Status >= http.StatusBadRequest:
					e.Result = "denied"
				}
				s.audit.Write(e)
			},
		})
	})
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.edge.GuardWrite(proxy).ServeHTTP(w, r)
		return
	}
	proxy.ServeHTTP(w, r)
}

// remoteCredential is what a remote may be given of r's user: the token the hub
// authenticated them with (none without authentication), and whether it is single
// sign-on's ID token.
func (s *Server) remoteCredential(r *http.Request) remote.Credential {
	if s.opts.Auth == nil {
		return remote.Credential{}
	}
	token := s.edge.Token(r)
	c := remote.Credential{Token: token}
	if s.opts.SSO != nil {
		c.IDToken = remote.IsIDTokenOf(token, s.opts.SSO.Issuer())
	}
	return c
}

// clusterStateDesc: a cluster's state, for alerts on a cluster that failed or cannot see
// (the engines' own series exist only for clusters that run).
var clusterStateDesc = prometheus.NewDesc("gcscope_cluster_state",
	"Where each cluster's engine is (several clusters): 1 for its state (idle, connecting, syncing, ready, failed); unhealthy 1 when a ready one cannot see all it monitors or its apiserver does not answer.",
	[]string{"cluster", "state", "unhealthy"}, nil)

// clusterStates exports Clusters' states as gcscope_cluster_state.
type clusterStates struct{ src registry.Clusters }

func (c clusterStates) Describe(ch chan<- *prometheus.Desc) { ch <- clusterStateDesc }

func (c clusterStates) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.src.List() {
		unhealthy := "0"
		if st.State == registry.Ready && st.Reason != "" {
			unhealthy = "1"
		}
		ch <- prometheus.MustNewConstMetric(clusterStateDesc, prometheus.GaugeValue, 1, st.Name, string(st.State), unhealthy)
	}
}
