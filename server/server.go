// Package server is gcscope's HTTP face, composed here from rooms of its own: New builds
// them (server.go) and routes.go mounts them, the whole URL table in one place. The
// request edge (authentication, CSRF, Host and Origin checks, audit) is server/edge; the
// API's resources are server/objects, server/deletions, server/graph, server/recording
// and server/demo; the live stream is server/stream. This package keeps the clusters
// served (clusters.go), the page (pages.go), the probes and the metrics. It never reaches
// into the engine: it uses gc's exported read API and event types only.
package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/deletions"
	"github.com/gcscope/gcscope/server/demo"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/graph"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/recording"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/served"
	"github.com/gcscope/gcscope/server/stream"
)

// Options are what the server needs from the rest of gcscope.
type Options struct {
	Logger *slog.Logger
	// Engine, Kube, Authorizer, Scenarios, Deletions and History are the one cluster's
	// (registry.Cluster says what each is for), named ClusterName, when Clusters is nil.
	Engine registry.Engine
	Kube   *rest.Config
	// Ready reports nil once gcscope can serve its purpose, else what it waits for.
	Ready func() error
	// Version is gcscope's own version.
	Version    string
	Authorizer security.Authorizer
	// ReadOnly rejects every write to the cluster and to the engine's settings (dismissing
	// orphan marks, gcscope's own memory, stays allowed); the engine itself goes on
	// collecting.
	ReadOnly bool
	// Scenarios plays garbage-collection scenarios on the cluster with gcscope's own
	// credentials: give it only for gcscope's embedded cluster.
	Scenarios registry.ScenarioPlayer
	// Auth authenticates requests; nil means none (loopback only, enforced by the caller).
	Auth security.Authenticator
	// SSO, with Auth, signs users in through an OpenID provider (server/edge/sso.go): its
	// ID token is their credential, reviewed by Auth as a pasted token is.
	SSO *security.SSO
	// Listen is the address gcscope listens on: its host is a Host the server answers to.
	Listen string
	// AllowedHosts are further Host names the server answers to (path.Match patterns,
	// e.g. "gcscope.example.com"), besides localhost, loopback addresses and Listen. Any
	// other Host is refused: the DNS-rebinding defence.
	AllowedHosts []string
	// AllowedOrigins are extra origins allowed for websockets and writes, besides the
	// request's own scheme and host: "https://gcscope.example.com", or a host pattern
	// ("*.example.com") that matches over https (and http when gcscope serves http).
	AllowedOrigins []string
	// MaxStreams bounds the websocket stream clients in all (0: 256), and
	// MaxStreamsPerUser those of one user (0: 32).
	MaxStreams, MaxStreamsPerUser int
	// PageFullGraph is the most objects the page holds whole; past it, the page is summary
	// first (docs/stream.md). 0: the page's default, 20,000.
	PageFullGraph int
	// Audit receives one JSON line per write; nil means the logger.
	Audit io.Writer
	// StreamBatch is how often, at most, the stream flushes deltas to clients while one
	// lags (every 20 ms while all keep up, or StreamBatch when shorter); 0: 50 ms.
	StreamBatch time.Duration
	// ClientBuffer is how many frames a stream client may have pending before it is
	// considered behind and resynced with a snapshot; 0: 256.
	ClientBuffer int
	// StreamCompression says whether the stream's frames are deflated for browsers that
	// offer permessage-deflate; the zero value is the default (see stream.Compression).
	StreamCompression stream.Compression
	// StreamCredentialsInterval is how often an open stream's credentials are checked
	// again with authentication; default 30 s.
	StreamCredentialsInterval time.Duration
	Deletions                 registry.Deletions
	History                   registry.History
	// Replay: the server shows an imported recording (gcscope replay), with no engine;
	// the engine's routes say so, and the page is told.
	Replay bool

	// Clusters, when set, are several clusters the server serves, each with its own engine
	// (clusters.go); Engine, Kube, Authorizer, Scenarios, Deletions and History are then
	// each cluster's and are not given here. Nil: one cluster, named ClusterName.
	Clusters registry.Clusters
	// ClusterName names the one cluster without Clusters (its kubeconfig context, say).
	ClusterName string
	// Remotes are clusters served by other gcscopes (--remote): listed after the local
	// ones (Clusters, or Engine's; neither: a hub of remotes alone) and proxied
	// (server/remote). Their names must differ from the local ones'.
	Remotes *remote.Set
}

// Server serves gcscope's HTTP surface.
type Server struct {
	opts    Options
	log     *slog.Logger
	handler http.Handler
	audit   *edge.Audit
	// failures bounds failed authentications per remote address.
	failures *security.FailureLimiter
	// processKey signs what gcscope hands the browser and must get back unchanged (CSRF
	// tokens, the single sign-on flow, the cluster cookie); made at start-up, never sent.
	processKey []byte
	// sessions are the browsers signed in through /login.
	sessions *security.Sessions
	metrics  *serverMetrics
	// exports holds a token per history export in progress (recording.MaxExports).
	exports chan struct{}
	// streamSeats bound the streams of every cluster together.
	streamSeats *stream.Seats

	// The clusters served (a registry of one without Options.Clusters), and those opened.
	clusters registry.Clusters
	several  bool // Options.Clusters: the page has a picker, the metrics a cluster label
	hubs     *hubs

	// The rooms routes.go mounts.
	edge      *edge.Edge
	objects   *objects.Resource
	deletions *deletions.Resource
	graph     *graph.Resource
	recording *recording.Resource
	demo      *demo.Resource
}

// New builds the server. Run its hub with Run.
func New(o Options) *Server { return newServer(o, security.NewFailureLimiter(nil)) }

// newServer is New with the limiter of failed authentications given (tests give one with
// a clock of their own).
func newServer(o Options, failures *security.FailureLimiter) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: o, log: o.Logger, exports: recording.NewExports()}
	s.audit = edge.NewAudit(o.Audit, o.Logger)
	s.failures = failures
	s.processKey = security.NewProcessKey()
	s.sessions = security.NewSessions()
	s.metrics = newServerMetrics()
	s.edge = edge.New(edge.Options{Logger: o.Logger, Version: o.Version, ReadOnly: o.ReadOnly, Replay: o.Replay,
		Auth: o.Auth, SSO: o.SSO, AllowedOrigins: o.AllowedOrigins, Hosts: security.NewHostPolicy(o.Listen, o.AllowedHosts),
		Failures: s.failures, Sessions: s.sessions, ProcessKey: s.processKey, Audit: s.audit, Asset: assetURL,
		Throttled: s.metrics.authThrottled, Observe: s.metrics.observe})
	s.objects = objects.New(objects.Deps{Edge: s.edge, Audit: s.audit, ReadOnly: o.ReadOnly, Log: o.Logger})
	s.deletions = deletions.New(deletions.Deps{Edge: s.edge, Audit: s.audit, ReadOnly: o.ReadOnly})
	s.graph = graph.New(graph.Deps{Edge: s.edge, Log: o.Logger})
	s.recording = recording.New(recording.Deps{Edge: s.edge, Log: o.Logger, Version: o.Version, Replay: o.Replay, Exports: s.exports})
	s.demo = demo.New(demo.Deps{Edge: s.edge, Audit: s.audit, ReadOnly: o.ReadOnly})
	s.streamSeats = stream.NewSeats(o.MaxStreams, o.MaxStreamsPerUser) // every cluster's streams together
	s.hubs = &hubs{by: map[string]*openCluster{}}
	local := o.Clusters != nil || o.Engine != nil || o.Remotes == nil
	switch {
	case o.Clusters != nil:
		s.clusters, s.several = o.Clusters, true
	case local:
		s.clusters = registry.One(o.ClusterName, &registry.Cluster{Engine: o.Engine, Kube: o.Kube, Authorizer: o.Authorizer,
			Scenarios: o.Scenarios, Deletions: o.Deletions, History: o.History}, o.Ready)
	}
	if o.Remotes != nil {
		joined, err := remote.Join(s.clusters, o.Remotes)
		if err != nil {
			panic(err) // cmd/gcscope refuses such flags first
		}
		s.clusters, s.several = joined, true
	}
	if s.several {
		s.metrics.registry.MustRegister(clusterStates{s.clusters})
	}
	if o.Clusters == nil && local {
		s.cluster(o.ClusterName, true) // its engine runs already: its hub is made now, as its metrics
	}
	s.handler = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// newHub makes the stream hub of c's engine.
func (s *Server) newHub(c *served.Cluster, reg prometheus.Registerer) *stream.Hub {
	o := s.opts
	var bare func() gc.Snapshot
	if e, ok := c.Engine.(interface{ SnapshotWithoutNodes() gc.Snapshot }); ok {
		bare = e.SnapshotWithoutNodes
	}
	var subset func([]string, []types.UID) gc.Snapshot
	if e, ok := c.Engine.(interface {
		SnapshotOf([]string, []types.UID) gc.Snapshot
	}); ok {
		subset = e.SnapshotOf
	}
	return stream.New(stream.Options{
		Bare:     bare,
		Subset:   subset,
		Snapshot: c.Engine.Snapshot, Summary: graph.SummaryOf(c.Engine), Feed: c.Engine.Feed(), Logger: o.Logger,
		Batch: o.StreamBatch, Buffer: o.ClientBuffer, OriginPatterns: o.AllowedOrigins,
		Seats:      s.streamSeats,
		User:       func(r *http.Request) string { return edge.UserFrom(r).Name },
		Visibility: func(r *http.Request) *access.Visibility { return s.edge.VisibilityFor(r, c) },
		Refuse: func(w http.ResponseWriter, r *http.Request, status int, e *httpapi.Error) {
			s.audit.Refuse(w, r, "stream", status, e)
		},
		Registerer:          reg,
		Compression:         o.StreamCompression,
		Credentials:         func(r *http.Request) func(context.Context) error { return s.edge.CredentialsFor(r, c.Authenticator) },
		CredentialsInterval: o.StreamCredentialsInterval,
	})
}

// Run runs the stream hubs until ctx ends.
func (s *Server) Run(ctx context.Context) { s.hubs.runAll(ctx) }
