package server

// The process's probes and its metrics.

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authorizationv1 "k8s.io/api/authorization/v1"
)

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
			writeUnchecked(w, err)
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

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}
