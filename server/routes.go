package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// routes is gcscope's whole URL surface. The resources mount their own routes (each
// package's Routes), named in the comment beside the call.
func (s *Server) routes() http.Handler {
	e := s.edge
	r := chi.NewRouter()
	r.Use(escapedRouting)
	r.Use(middleware.RequestID)
	r.Use(e.LogRequests)
	r.Use(middleware.Recoverer)
	r.Use(edge.SecurityHeaders)
	r.Use(e.StartUnauthenticated)
	r.Use(e.CheckHost) // DNS rebinding: only hosts gcscope answers to, on every route
	// The API answers in JSON even for a route it does not have (the scenario player's, say,
	// on a cluster that is not the embedded one).
	r.NotFound(edge.NoRoute)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		httpapi.WriteJSON(w, http.StatusMethodNotAllowed, httpapi.ErrMethodNotAllowed(fmt.Sprintf("%s is not allowed on %s", r.Method, httpapi.QuoteClip(r.URL.Path))))
	})

	r.Get("/healthz", s.handleHealthz) // the process is alive (no auth: for probes)
	r.Get("/readyz", s.handleReadyz)   // the engine has synced and gcscope serves (no auth)
	r.Get("/login", e.HandleLoginForm) // the login form (with auth)
	r.Post("/login", e.HandleLogin)    // form field token: trade it for a session cookie (with auth)
	r.Post("/logout", e.HandleLogout)  // end the browser's session
	if s.opts.SSO != nil && s.opts.Auth != nil {
		r.Get("/login/sso", e.HandleSSOStart)             // to the identity provider (server/edge/sso.go)
		r.Get("/login/sso/callback", e.HandleSSOCallback) // its answer: the code for an ID token, then a session
	}
	// The UI's embedded assets: no secrets, so no auth, and gzipped for clients that ask
	// (the script is 280 KB, the first thing a page over a slow link waits for).
	r.With(middleware.Compress(5, "text/javascript", "text/css", "image/svg+xml")).Handle("/static/*", s.handleStatic())

	r.Group(func(r chi.Router) {
		r.Use(e.Authenticate, e.AuditRefusedWrites)
		r.Get("/", s.handleIndex)                                             // the UI (?cluster=)
		r.With(httpapi.NoQuery, e.GuardRead).Get("/metrics", s.handleMetrics) // Prometheus: the engines' and the server's metrics
		r.With(e.GuardRead, s.inCluster, e.RequireEngine, e.VisibleReads).
			Get("/debug/controllers/garbagecollector/graph", s.graph.HandleDOT) // upstream's DOT debug graph (?uid=), of the default cluster
		r.Route("/api/v1", func(r chi.Router) {
			r.Use(e.GuardRead)                                         // reads from gcscope's own page only (writes: GuardWrite)
			r.With(httpapi.NoQuery).Get("/clusters", s.handleClusters) // the clusters and where each is (clusters.go)
			// Every cluster's routes: the default cluster's under /api/v1, any one's under
			// /api/v1/clusters/{cluster}.
			r.With(s.inCluster).Group(s.clusterRoutes)
			r.Route("/clusters/{cluster}", func(r chi.Router) {
				r.Use(s.inNamedCluster)
				s.clusterRoutes(r)
				r.With(e.RequireEngine, e.VisibleReads).
					Get("/debug/controllers/garbagecollector/graph", s.graph.HandleDOT) // the DOT debug graph of this cluster
			})
		})
	})
	return r
}

// clusterRoutes are the routes of one cluster (edge.ClusterFrom). Reads are narrowed to
// what the user may list; writes pass the CSRF guard and are audited.
func (s *Server) clusterRoutes(r chi.Router) {
	e := s.edge
	r.With(e.RequireEngine).Get("/stream", s.handleStream) // websocket: snapshot, then deltas (the hub asks what the user may see)
	r.With(e.RequireHistory, e.VisibleReads).
		Get("/history/export", s.recording.HandleExport) // a window of the recording as a file (no 30 s bound: it streams)

	r.Group(func(r chi.Router) {
		r.Use(middleware.Timeout(30 * time.Second))
		// Not compressed: it carries the CSRF token, and compressed secrets invite BREACH.
		r.With(httpapi.NoQuery).Get("/session", e.HandleSession) // who you are, the mode, and the CSRF token for writes

		s.graph.Routes(r)     // GET /graph, /queues, /summary, /shadow: the engine's state
		s.deletions.Routes(r) // GET /stuck, /health; POST /deletions: several objects predicted and deleted at once
		s.recording.Routes(r) // GET /history, /history/state, /history/timeline, /history/cascades: the recording
		s.demo.Routes(r)      // /scenarios/... (the embedded cluster only), POST /slow-motion
		// One object: GET / and /explain; POST /delete and /orphan-marks/dismiss.
		r.Route("/objects/{uid}", s.objects.Routes)
	})
}

// escapedRouting routes on the escaped path, always: a path parameter is then the segment
// as sent ("a%2Fb" one segment, not two), unescaped by its handler. (Go keeps RawPath
// only when the escaping differs from its own, and chi routes on RawPath when there is
// one: otherwise a cluster named "a%2Fb" and one named "a/b" could not be told apart.)
func escapedRouting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.RawPath = r.URL.EscapedPath()
		next.ServeHTTP(w, r)
	})
}
