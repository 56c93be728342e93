package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/httpapi"
)

// auditTrail says whether a request's audit line has been written: entryFor carries it
// from the request's context to the entry, and auditLog.write marks it.
type auditTrail struct {
	written atomic.Bool
	noRoute atomic.Bool            // the path is not one gcscope serves: not a write (the 404 handler says so)
	cluster atomic.Pointer[string] // the cluster the route named, once resolved (clusters.go)
}

type auditTrailKey struct{}

func trailOf(r *http.Request) *auditTrail {
	t, _ := r.Context().Value(auditTrailKey{}).(*auditTrail)
	return t
}

// auditRefusedWrites writes the audit line of a write refused where no handler wrote one
// (a query string on a route that takes none, an object the engine does not know, no
// engine yet, a method the route does not take): every refused write leaves a line.
func (s *Server) auditRefusedWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		trail := &auditTrail{}
		r = r.WithContext(context.WithValue(r.Context(), auditTrailKey{}, trail))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		body := &headOf{max: 4 << 10}
		ww.Tee(body)
		next.ServeHTTP(ww, r)
		if ww.Status() < http.StatusBadRequest || trail.written.Load() || trail.noRoute.Load() {
			return
		}
		var e httpapi.Error
		_ = json.Unmarshal(body.b, &e) // the API's refusals are JSON; the message stays empty otherwise
		entry := entryFor(r, writeAction(r))
		if c := trail.cluster.Load(); c != nil {
			entry.Cluster = *c // resolved under this middleware, in a context it does not see
		}
		entry.Result, entry.Status, entry.Error = "denied", ww.Status(), e.Message
		if ww.Status() >= http.StatusInternalServerError {
			entry.Result = "error"
		}
		s.audit.write(entry)
	})
}

// headOf keeps the first max bytes written to it.
type headOf struct {
	b   []byte
	max int
}

func (h *headOf) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
