package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are the server's own metrics, beside the engine's.
type serverMetrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// authThrottled counts requests refused because their address spent its budget of
	// failed authentications.
	authThrottled prometheus.Counter
}

func newServerMetrics() *serverMetrics {
	m := &serverMetrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_http_requests_total", Help: "HTTP requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gcscope_http_request_duration_seconds", Help: "HTTP request duration by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	m.authThrottled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gcscope_auth_throttled_total", Help: "Requests refused (429) because their address had no failed authentications left.",
	})
	m.registry.MustRegister(m.requests, m.duration, m.authThrottled)
	return m
}

func (m *serverMetrics) observe(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}
