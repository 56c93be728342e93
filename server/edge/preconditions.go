package edge

// Preconditions of route groups (each resource's Routes): a handler under RequireEngine
// may use its cluster's Engine (ClusterFrom), one under RequireHistory its History, one
// under RequireDeletions its Deletions; one under VisibleReads reads what its user may
// list from VisibilityFrom(r) and never answers with what a failed permission check left
// out.

import (
	"maps"
	"net/http"

	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/served"
)

// RequireEngine answers 503 when the server runs without an engine.
func (e *Edge) RequireEngine(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := ClusterFrom(r)
		switch {
		case c.Engine == nil && e.opts.Replay:
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("this is a replay of a recording: there is no live engine"))
		case c.Pending():
			served.NotReady(w, c)
		case c.Engine == nil:
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("the garbage-collector engine is not running"))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// RequireHistory answers 503 when gcscope runs without a recording.
func (e *Edge) RequireHistory(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch c := ClusterFrom(r); {
		case c.Pending():
			served.NotReady(w, c)
			return
		case c.History == nil:
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("the engine's history is not recorded: gcscope was started with --history=false"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireDeletions answers 503 when the server cannot explain deletions (no cluster).
func (e *Edge) RequireDeletions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ClusterFrom(r).Deletions == nil {
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("gcscope has no cluster connection to explain deletions with"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WithVisibility puts what the request's user may list in its context (VisibilityFrom).
func (e *Edge) WithVisibility(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, withVisibility(r, e.VisibilityFor(r, ClusterFrom(r))))
	})
}

// VisibleReads is WithVisibility for reads that fail closed: when a permission check
// failed while the handler filtered, its answer (whatever it is) is replaced by 503, as
// an empty answer would look like "you may see nothing". The check is made when the
// handler starts its answer, after it has filtered. Not for writes: a write's effect
// cannot be taken back by its answer.
func (e *Edge) VisibleReads(next http.Handler) http.Handler {
	return e.WithVisibility(failClosed(next))
}

// failClosed is VisibleReads past WithVisibility.
func failClosed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vis := VisibilityFrom(r)
		if vis == nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&failClosedWriter{ResponseWriter: w, vis: vis, header: w.Header().Clone()}, r)
	})
}

// failClosedWriter answers 503 in place of a handler's answer when vis failed by the
// time the answer starts; the handler's headers and body are then dropped.
type failClosedWriter struct {
	http.ResponseWriter
	vis     *access.Visibility
	header  http.Header // the headers before the handler ran
	started bool
	refused bool
}

func (w *failClosedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// start decides, once, whether the handler's answer goes out.
func (w *failClosedWriter) start() {
	if w.started {
		return
	}
	w.started = true
	if err := w.vis.Err(); err != nil {
		w.refused = true
		h := w.ResponseWriter.Header()
		clear(h)
		maps.Copy(h, w.header)
		WriteUnchecked(w.ResponseWriter, err)
	}
}

func (w *failClosedWriter) WriteHeader(status int) {
	if w.start(); !w.refused {
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *failClosedWriter) Write(p []byte) (int, error) {
	if w.start(); w.refused {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *failClosedWriter) Flush() {
	if w.start(); !w.refused {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}
