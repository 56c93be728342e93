package edge

// The server-wide middleware: security headers, request logging, the bound on bodies,
// the answer to a path with no route.

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/httpapi"
)

// SecurityHeaders: no response is sniffed, cached or framed (pages and assets set their
// own policy on top).
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// MaxBodyBytes bounds request bodies (the delete request is a few dozen bytes).
const MaxBodyBytes = 64 << 10

// LogRequests logs each request at debug level and counts it.
func (e *Edge) LogRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		e.opts.Observe(r.Method, route, ww.Status(), time.Since(start))
		e.log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
			"bytes", ww.BytesWritten(), "took", time.Since(start), "id", middleware.GetReqID(r.Context()))
	})
}

// NoRoute answers a path the server has no route for: in JSON under /api/ (the scenario
// player's, say, on a cluster that is not the embedded one). It is not a write's refusal.
func NoRoute(w http.ResponseWriter, r *http.Request) {
	MarkNoRoute(r)
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		http.NotFound(w, r)
		return
	}
	httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("no such route: %s (see docs/api.md; the scenario player's exist only on the embedded cluster)", httpapi.QuoteClip(r.URL.Path))))
}
