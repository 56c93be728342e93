package history

import "github.com/prometheus/client_golang/prometheus"

// Why the recording misses events (the reason label of the missed and gaps counters).
const (
	gapBehind = "behind" // it fell behind the engine's feed
	gapPaused = "paused" // its writes failed and it paused
)

var gapReasons = []string{gapBehind, gapPaused}

// metrics are the recording's Prometheus metrics, on a registry of its own that the
// server exposes beside the engine's.
type metrics struct {
	registry    *prometheus.Registry
	recorded    prometheus.Counter
	missed      *prometheus.CounterVec
	gaps        *prometheus.CounterVec
	paused      prometheus.Gauge
	writeErrors prometheus.Counter
	bytes       prometheus.Gauge
	checkpoints prometheus.Counter
	pruned      prometheus.Counter
	lag         prometheus.Gauge
	write       prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_history_events_recorded_total",
			Help: "Events of the engine's feed written to the history database.",
		}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_history_events_missed_total",
			Help: "Events of the engine's feed not recorded, by why: behind (the recorder fell more than the feed's ring behind) or paused (writes failed).",
		}, []string{"reason"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_history_gaps_total",
			Help: "Gaps in the recording (each followed by a fresh checkpoint), by reason: behind or paused.",
		}, []string{"reason"}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gcscope_history_recording_paused",
			Help: "1 while the recording is paused because writes fail (size cap reached, disk full or failing); the engine runs on.",
		}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_history_write_errors_total",
			Help: "Failed writes to the history database.",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gcscope_history_database_bytes",
			Help: "Bytes the history database's files take on disk (the database, its write-ahead log and the log's index), what --history-max-size bounds.",
		}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_history_checkpoints_total",
			Help: "Graph checkpoints written.",
		}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_history_events_pruned_total",
			Help: "Recorded events dropped by retention (--history-max-age, --history-max-size).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gcscope_history_lag_events",
			Help: "Events the engine has published that the recorder has not written yet.",
		}),
		write: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gcscope_history_write_seconds",
			Help:    "Time to write one block of events (with its checkpoint, if any).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
	}
	// Every reason has its series from the start, so that the first gap is an increase
	// from 0 to an alert or a graph (a series born at 1 shows none).
	for _, reason := range gapReasons {
		m.missed.WithLabelValues(reason)
		m.gaps.WithLabelValues(reason)
	}
	m.registry.MustRegister(m.recorded, m.missed, m.gaps, m.paused, m.writeErrors, m.bytes, m.checkpoints, m.pruned, m.lag, m.write)
	return m
}

// Registry holds the recording's metrics.
func (s *Store) Registry() *prometheus.Registry { return s.metrics.registry }
