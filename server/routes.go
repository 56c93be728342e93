package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/httpapi"
)

// routes is gcscope's whole URL surface.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(escapedRouting)
	r.Use(middleware.RequestID)
	r.Use(s.logRequests)
	r.Use(middleware.Recoverer)
	r.Use(securityHeaders)
	r.Use(s.startUnauthenticated)
	r.Use(s.checkHost) // DNS rebinding: only hosts gcscope answers to, on every route
	// The API answers in JSON even for a route it does not have (the scenario player's, say,
	// on a cluster that is not the embedded one).
	r.NotFound(noRoute)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		httpapi.WriteJSON(w, http.StatusMethodNotAllowed, httpapi.ErrMethodNotAllowed(fmt.Sprintf("%s is not allowed on %s", r.Method, httpapi.QuoteClip(r.URL.Path))))
	})

	r.Get("/healthz", s.handleHealthz) // the process is alive (no auth: for probes)
	r.Get("/readyz", s.handleReadyz)   // the engine has synced and gcscope serves (no auth)
	r.Get("/login", s.handleLoginForm) // the login form (with auth)
	r.Post("/login", s.handleLogin)    // form field token: trade it for a session cookie (with auth)
	r.Post("/logout", s.handleLogout)  // end the browser's session
	if s.opts.SSO != nil && s.opts.Auth != nil {
		r.Get("/login/sso", s.handleSSOStart)             // to the identity provider (sso.go)
		r.Get("/login/sso/callback", s.handleSSOCallback) // its answer: the code for an ID token, then a session
	}
	// The UI's embedded assets: no secrets, so no auth, and gzipped for clients that ask
	// (the script is 280 KB, the first thing a page over a slow link waits for).
	r.With(middleware.Compress(5, "text/javascript", "text/css", "image/svg+xml")).Handle("/static/*", s.handleStatic())

	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.auditRefusedWrites)
		r.Get("/", s.handleIndex)                                             // the UI (?cluster=)
		r.With(httpapi.NoQuery, s.guardRead).Get("/metrics", s.handleMetrics) // Prometheus: the engines' and the server's metrics
		r.With(s.guardRead, s.inCluster, s.requireEngine, s.visibleReads).
			Get("/debug/controllers/garbagecollector/graph", s.handleDOT) // upstream's DOT debug graph (?uid=), of the default cluster
		r.Route("/api/v1", func(r chi.Router) {
			r.Use(s.guardRead)                                         // reads from gcscope's own page only (writes: guardWrite)
			r.With(httpapi.NoQuery).Get("/clusters", s.handleClusters) // the clusters and where each is (clusters.go)
			// Every cluster's routes: the default cluster's under /api/v1, any one's under
			// /api/v1/clusters/{cluster}.
			r.With(s.inCluster).Group(s.clusterRoutes)
			r.Route("/clusters/{cluster}", func(r chi.Router) {
				r.Use(s.inNamedCluster)
				s.clusterRoutes(r)
				r.With(s.requireEngine, s.visibleReads).
					Get("/debug/controllers/garbagecollector/graph", s.handleDOT) // the DOT debug graph of this cluster
			})
		})
	})
	return r
}

// noRoute answers a path the server has no route for.
func noRoute(w http.ResponseWriter, r *http.Request) {
	if t := trailOf(r); t != nil {
		t.noRoute.Store(true)
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		http.NotFound(w, r)
		return
	}
	httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("no such route: %s (see docs/api.md; the scenario player's exist only on the embedded cluster)", httpapi.QuoteClip(r.URL.Path))))
}

// clusterRoutes are the routes of one cluster (clusterFrom).
func (s *Server) clusterRoutes(r chi.Router) {
	r.With(s.requireEngine).Get("/stream", s.handleStream) // websocket: snapshot, then deltas (the hub asks what the user may see)
	r.With(s.requireHistory, s.visibleReads).
		Get("/history/export", s.handleHistoryExport) // a window of the recording as a file (no 30 s bound: it streams)

	r.Group(func(r chi.Router) {
		r.Use(middleware.Timeout(30 * time.Second))
		// The large reads are gzipped for clients that ask (an explanation of 2,000
		// blockers, refreshed every second, is 350 KB of JSON). Not /session: it carries
		// the CSRF token, and compressed secrets invite BREACH.
		zip := middleware.Compress(5, "application/json")
		r.With(httpapi.NoQuery).Get("/session", s.handleSession) // who you are, the mode, and the CSRF token for writes
		r.With(httpapi.NoQuery, middleware.RequestSize(maxBodyBytes), s.guardWrite).
			Post("/slow-motion", s.handleSlowMotion) // switch the engine's action delay on or off

		// The engine's state, narrowed to what the user may list.
		r.Group(func(r chi.Router) {
			r.Use(s.requireEngine, zip, s.visibleReads)
			r.Get("/graph", s.handleGraph)                          // nodes and edges, filtered, paged
			r.With(s.requireDeletions).Get("/stuck", s.handleStuck) // objects stuck in deletion (?olderThan=), by cause
		})
		r.With(httpapi.NoQuery).Group(func(r chi.Router) {
			r.Use(s.requireEngine, zip, s.visibleReads)
			r.Get("/queues", s.handleQueues)   // the three work queues
			r.Get("/summary", s.handleSummary) // the graph counted per namespace and kind
			r.Get("/shadow", s.handleShadow)   // shadow mode: the cluster's collector against the engine's decisions
			r.Get("/health", s.handleHealth)   // API groups discovery cannot read, APIServices at fault, stuck count
		})

		// The recording, narrowed to what the user may list.
		r.Group(func(r chi.Router) {
			r.Use(s.requireHistory, zip, s.visibleReads)
			r.Get("/history", s.handleHistory)                  // the recorded feed: events by time, object, verb, result, queue; paged
			r.Get("/history/state", s.handleHistoryState)       // the graph and queues as they were at a recorded moment
			r.Get("/history/timeline", s.handleHistoryTimeline) // events, deletes and errors per time bucket; cascades, gaps
			r.Get("/history/cascades", s.handleHistoryCascades) // cascades, newest first (?uid=: those an object was in)
		})

		// Several objects predicted together and deleted with one confirmation.
		r.With(httpapi.NoQuery, s.requireEngine, s.withVisibility, middleware.RequestSize(maxSetBodyBytes), s.guardWrite).
			Post("/deletions", s.handleDeleteSet) // {uids, propagationPolicy, dryRun} (deletions_set.go)

		// The scenario player: on the embedded cluster only.
		r.Route("/scenarios", s.scenarioRoutes)
		// One object; it serves a write, so objectCtx checks permissions itself.
		r.Route("/objects/{uid}", func(r chi.Router) {
			r.Use(httpapi.NoQuery, s.requireEngine, s.withVisibility, s.objectCtx)
			r.With(zip).Get("/", s.handleObject)         // one object as the engine sees it
			r.With(zip).Get("/explain", s.handleExplain) // why it still exists, what it waits for
			r.With(middleware.RequestSize(maxBodyBytes), s.guardWrite).
				Post("/delete", s.handleDelete) // predict, and unless dryRun perform, a delete
			r.With(middleware.RequestSize(maxBodyBytes), s.guardWrite).
				Post("/orphan-marks/dismiss", s.handleDismissOrphanMarks) // forget its orphan marks (gcscope's memory only)
		})
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
