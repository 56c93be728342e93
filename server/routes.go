package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// routes is gcscope's whole URL surface.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(s.logRequests)
	r.Use(middleware.Recoverer)
	r.Use(securityHeaders)
	r.Use(s.startUnauthenticated)
	r.Use(s.checkHost) // DNS rebinding: only hosts gcscope answers to, on every route
	// The API answers in JSON even for a route it does not have (the scenario player's, say,
	// on a cluster that is not the embedded one).
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.NotFound(w, r)
			return
		}
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("no such route: %s (see docs/api.md; the scenario player's exist only on the embedded cluster)", quoteClip(r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, quoteClip(r.URL.Path)))
	})

	r.Get("/healthz", s.handleHealthz)      // the process is alive (no auth: for probes)
	r.Get("/readyz", s.handleReadyz)        // the engine has synced and gcscope serves (no auth)
	r.Get("/login", s.handleLoginForm)      // the login form (with auth)
	r.Post("/login", s.handleLogin)         // form field token: trade it for a session cookie (with auth)
	r.Post("/logout", s.handleLogout)       // end the browser's session
	r.Handle("/static/*", s.handleStatic()) // the UI's embedded assets (no secrets: no auth)

	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		r.Get("/", s.handleIndex)                        // the UI
		r.With(noQuery).Get("/metrics", s.handleMetrics) // Prometheus: the engine's and the server's metrics
		r.With(s.requireEngine, s.visibleReads).
			Get("/debug/controllers/garbagecollector/graph", s.handleDOT) // upstream's DOT debug graph (?uid=)
		r.With(s.requireEngine).Get("/api/v1/stream", s.handleStream) // websocket: snapshot, then deltas (the hub asks what the user may see)
		r.With(s.requireHistory, s.visibleReads).
			Get("/api/v1/history/export", s.handleHistoryExport) // a window of the recording as a file (no 30 s bound: it streams)

		r.Route("/api/v1", func(r chi.Router) {
			r.Use(middleware.Timeout(30 * time.Second))
			// The large reads are gzipped for clients that ask (an explanation of 2,000
			// blockers, refreshed every second, is 350 KB of JSON). Not /session: it carries
			// the CSRF token, and compressed secrets invite BREACH.
			zip := middleware.Compress(5, "application/json")
			r.With(noQuery).Get("/session", s.handleSession) // who you are, the mode, and the CSRF token for writes
			r.With(noQuery, middleware.RequestSize(maxBodyBytes), s.guardWrite).
				Post("/slow-motion", s.handleSlowMotion) // switch the engine's action delay on or off

			// The engine's state, narrowed to what the user may list.
			r.Group(func(r chi.Router) {
				r.Use(s.requireEngine, zip, s.visibleReads)
				r.Get("/graph", s.handleGraph)                          // nodes and edges, filtered, paged
				r.With(s.requireDeletions).Get("/stuck", s.handleStuck) // objects stuck in deletion (?olderThan=), by cause
			})
			r.With(noQuery).Group(func(r chi.Router) {
				r.Use(s.requireEngine, zip, s.visibleReads)
				r.Get("/queues", s.handleQueues) // the three work queues
				r.Get("/shadow", s.handleShadow) // shadow mode: the cluster's collector against the engine's decisions
				r.Get("/health", s.handleHealth) // API groups discovery cannot read, APIServices at fault, stuck count
			})

			// The recording, narrowed to what the user may list.
			r.Group(func(r chi.Router) {
				r.Use(s.requireHistory, zip, s.visibleReads)
				r.Get("/history", s.handleHistory)                  // the recorded feed: events by time, object, verb, result, queue; paged
				r.Get("/history/state", s.handleHistoryState)       // the graph and queues as they were at a recorded moment
				r.Get("/history/timeline", s.handleHistoryTimeline) // events, deletes and errors per time bucket; cascades, gaps
				r.Get("/history/cascades", s.handleHistoryCascades) // cascades, newest first (?uid=: those an object was in)
			})

			if s.opts.Scenarios != nil {
				r.Route("/scenarios", s.scenarioRoutes) // the scenario player: on the embedded cluster only
			}
			// One object; it serves a write, so objectCtx checks permissions itself.
			r.Route("/objects/{uid}", func(r chi.Router) {
				r.Use(noQuery, s.requireEngine, s.withVisibility, s.objectCtx)
				r.With(zip).Get("/", s.handleObject)         // one object as the engine sees it
				r.With(zip).Get("/explain", s.handleExplain) // why it still exists, what it waits for
				r.With(middleware.RequestSize(maxBodyBytes), s.guardWrite).
					Post("/delete", s.handleDelete) // predict, and unless dryRun perform, a delete
			})
		})
	})
	return r
}

// securityHeaders: no response is sniffed, cached or framed (pages and assets set their
// own policy on top).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// maxBodyBytes bounds request bodies (the delete request is a few dozen bytes).
const maxBodyBytes = 64 << 10

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	plain(w, http.StatusOK, "ok")
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	plain(w, http.StatusOK, "ok")
}

// metricsPath is the non-resource URL a user must be allowed to `get` to read /metrics
// with --auth=kubernetes, as for the apiserver's own.
const metricsPath = "/metrics"

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Authorizer != nil {
		u := userFrom(r)
		ok, err := s.opts.Authorizer.Allowed(r.Context(), u, nil, &authorizationv1.NonResourceAttributes{Verb: "get", Path: metricsPath})
		switch {
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "cannot check your permissions with the cluster: "+err.Error())
			return
		case !ok:
			writeError(w, http.StatusForbidden, codeForbidden, fmt.Sprintf("%s may not get %s: grant it a ClusterRole with nonResourceURLs [%q] and verbs [get]", u.Name, metricsPath, metricsPath))
			return
		}
	}
	gatherers := prometheus.Gatherers{s.metrics.registry}
	if s.opts.Engine != nil {
		gatherers = append(gatherers, s.opts.Engine.Registry())
	}
	if s.opts.History != nil {
		gatherers = append(gatherers, s.opts.History.Registry())
	}
	promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(w, r)
}

type ctxKey int

const (
	nodeKey ctxKey = iota
	visibilityKey
)

// objectCtx loads the object of the {uid} URL parameter and answers 404 early. The uid
// is unescaped: an escaped "/" (%2F) reaches it as part of the uid. A write to an object
// that is not there is audited. Under requireEngine and withVisibility.
func (s *Server) objectCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := chi.URLParam(r, "uid")
		uid, err := url.PathUnescape(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeBadRequest, fmt.Sprintf("uid %s is not validly escaped", quoteClip(raw)))
			return
		}
		n, ok := s.opts.Engine.Node(types.UID(uid))
		vis := visibilityFrom(r)
		if ok && !vis.visible(n.ObjectRef) {
			if permissionsFailed(w, vis) {
				return
			}
			ok = false // an object the user may not list is answered as one that does not exist
		}
		if !ok {
			e := &apiError{Code: codeNotFound, Message: fmt.Sprintf("no object with uid %s in the graph", quoteClip(uid))}
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.refuse(w, r, writeAction(r), http.StatusNotFound, e)
				return
			}
			writeJSON(w, http.StatusNotFound, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), nodeKey, n)))
	})
}

func nodeFrom(r *http.Request) gc.NodeDetail { return r.Context().Value(nodeKey).(gc.NodeDetail) }

// visibilityFrom is what the request's user may list, as withVisibility found it (nil:
// everything).
func visibilityFrom(r *http.Request) *visibility {
	v, _ := r.Context().Value(visibilityKey).(*visibility)
	return v
}

// objectResponse is one object; HiddenDependents counts dependents the user may not see.
type objectResponse struct {
	gc.NodeDetail
	HiddenDependents int `json:"hiddenDependents,omitempty"`
}

func (s *Server) handleObject(w http.ResponseWriter, r *http.Request) {
	resp := objectResponse{NodeDetail: nodeFrom(r)}
	resp.Dependents, resp.HiddenDependents = visibilityFrom(r).refs(resp.Dependents)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	ex, ok := s.opts.Engine.ExplainFor(nodeFrom(r).UID, visibilityFrom(r).fn())
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "the object left the graph")
		return
	}
	resp := explainResponse{Explanation: ex}
	if s.opts.Deletions != nil {
		resp.Deletion = s.opts.Deletions.Explain(r.Context(), ex, visibilityFrom(r).fn())
		resp.Deletion.Amend(&resp.Explanation)
	}
	if resp.Words == nil {
		resp.Words = []string{} // a list, even empty
	}
	resp.Text = explainText(resp.Explanation, resp.Deletion)
	writeJSON(w, http.StatusOK, resp)
}

// explainResponse is the engine's explanation in data and in words, with what package
// deletion adds (a namespace's deletion, who added the finalizers that hold it).
type explainResponse struct {
	gc.Explanation
	Deletion *deletion.Report `json:"deletion,omitempty"`
	Text     string           `json:"text"`
}

func explainText(ex gc.Explanation, d *deletion.Report) string {
	o := ex.Object
	t := fmt.Sprintf("%s %s", o.Kind, o.Name)
	if o.Namespace != "" {
		t += " in " + o.Namespace
	}
	switch {
	case d != nil && d.Namespace != nil && d.Namespace.DeletionTimestamp != nil:
		t += ": Terminating; next, " + ex.Next + "."
	case strings.HasPrefix(ex.Next, "nothing"):
		t += ": next, the engine will do " + ex.Next + "." // "nothing: an object without owners is never collected"
	default:
		t += ": next, the engine will " + ex.Next + "."
	}
	for _, w := range ex.Words {
		t += " " + capitalize(w) + "."
	}
	return t
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	snap := s.opts.Engine.Snapshot()
	queues := visibilityFrom(r).queues(snap.Queues)
	writeJSON(w, http.StatusOK, queuesResponse{Seq: snap.Seq, Mode: snap.Mode, Queues: queues, Sync: snap.Sync})
}

type queuesResponse struct {
	Seq    uint64          `json:"seq"`
	Mode   gc.Mode         `json:"mode"`
	Queues []gc.QueueState `json:"queues"`
	Sync   gc.SyncState    `json:"sync"`
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

// logRequests logs each request at debug level and counts it.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		s.metrics.observe(r.Method, route, ww.Status(), time.Since(start))
		s.log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
			"bytes", ww.BytesWritten(), "took", time.Since(start), "id", middleware.GetReqID(r.Context()))
	})
}

// handleDOT serves upstream's debug graph format; ?uid= (repeatable) narrows it to the
// objects connected to those.
func (s *Server) handleDOT(w http.ResponseWriter, r *http.Request) {
	q, perr := strictQuery(r, nil, []string{"uid"})
	if perr != nil {
		writeJSON(w, http.StatusBadRequest, perr)
		return
	}
	var uids []types.UID
	for _, u := range q["uid"] {
		uids = append(uids, types.UID(u))
	}
	snap := s.opts.Engine.Snapshot()
	nodes := visibilityFrom(r).nodes(snap.Nodes)
	w.Header().Set("Content-Type", "text/vnd.graphviz")
	if err := writeDOT(w, nodes, uids); err != nil {
		s.log.Warn("writing the DOT graph", "err", err)
	}
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	s.hub.ServeHTTP(w, r)
}
