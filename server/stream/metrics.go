package stream

// The stream hub's metrics.

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// streamMetrics are the hub's own metrics.
type streamMetrics struct {
	clients prometheus.Gauge
	frames  *prometheus.CounterVec
	resyncs prometheus.Counter
	dropped prometheus.Counter
	refused prometheus.Counter
}

func newStreamMetrics(reg prometheus.Registerer) *streamMetrics {
	m := &streamMetrics{
		clients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gcscope_stream_clients", Help: "Websocket stream clients connected.",
		}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_stream_frames_total", Help: "Frames sent to stream clients, by frame type.",
		}, []string{"type"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_resyncs_total", Help: "Snapshots sent because a client fell behind or the events it needed had left the feed.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_events_dropped_total", Help: "Events dropped from the queues of stream clients that fell behind.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_refused_total", Help: "Stream clients closed at once because the server's or their user's bound of streams was reached.",
		}),
	}
	if reg != nil {
		m.clients = registerOrExisting(reg, m.clients)
		m.frames = registerOrExisting(reg, m.frames)
		m.resyncs = registerOrExisting(reg, m.resyncs)
		m.dropped = registerOrExisting(reg, m.dropped)
		m.refused = registerOrExisting(reg, m.refused)
	}
	return m
}

// registerOrExisting registers c, or returns the collector already registered as c (a
// second hub on the same registry shares the first one's metrics).
func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
