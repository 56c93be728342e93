package server

// The process's probes and its metrics.

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
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
		u := edge.UserFrom(r)
		ok, err := s.opts.Authorizer.Allowed(r.Context(), u, nil, &authorizationv1.NonResourceAttributes{Verb: "get", Path: metricsPath})
		switch {
		case err != nil:
			edge.WriteUnchecked(w, err)
			return
		case !ok:
			httpapi.WriteJSON(w, http.StatusForbidden, httpapi.ErrForbidden(fmt.Sprintf("%s may not get %s: grant it a ClusterRole with nonResourceURLs [%q] and verbs [get]", u.Name, metricsPath, metricsPath)))
			return
		}
	}
	gatherers := prometheus.Gatherers{s.metrics.registry}
	for _, c := range s.opened() {
		var gs prometheus.Gatherers
		if c.Engine != nil {
			gs = append(gs, c.Engine.Registry())
		}
		if c.History != nil {
			gs = append(gs, c.History.Registry())
		}
		if s.several {
			gatherers = append(gatherers, labelled{gs, c.Name}) // each engine's series, told apart
		} else {
			gatherers = append(gatherers, gs...)
		}
	}
	promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(w, r)
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

// labelled gathers g's metrics with a cluster label added to each.
type labelled struct {
	g       prometheus.Gatherer
	cluster string
}

func (l labelled) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := l.g.Gather()
	name := "cluster"
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: &name, Value: &l.cluster})
			slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
	}
	return mfs, err
}
