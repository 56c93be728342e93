// Package server is gcscope's HTTP face: health and readiness now; the API, the live
// stream and the UI mount here as they arrive. It never reaches into the engine.
package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// Options are what the server needs from the rest of gcscope.
type Options struct {
	Logger *slog.Logger
	// Ready reports nil once gcscope can serve its purpose, else what it is still waiting for.
	Ready func() error
	// Version is gcscope's own version, shown on the landing page.
	Version string
}

// New returns the handler for every route gcscope serves.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(requestLogger(o.Logger))
	r.Use(middleware.Recoverer)

	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) { plain(w, http.StatusOK, "ok") }) // the process is alive
	r.Get("/readyz", readyz(o.Ready))                                                                 // ready to serve: cluster reachable, demo applied
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusOK, fmt.Sprintf("gcscope %s\nhealth: /healthz\nreadiness: /readyz\n", o.Version))
	})
	return r
}

func readyz(ready func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ready != nil {
			if err := ready(); err != nil {
				plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		plain(w, http.StatusOK, "ok")
	}
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

// requestLogger logs each request at debug level with its status and duration.
func requestLogger(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
				"bytes", ww.BytesWritten(), "took", time.Since(start), "id", middleware.GetReqID(r.Context()))
		})
	}
}
