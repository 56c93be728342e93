package gc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Queue names in metrics, as upstream names them.
var queueMetricNames = map[QueueName]string{
	GraphChanges:    "garbage_collector_graph_changes",
	AttemptToDelete: "garbage_collector_attempt_to_delete",
	AttemptToOrphan: "garbage_collector_attempt_to_orphan",
}

// metrics are the engine's Prometheus metrics, on a registry of its own that the server
// exposes (the process-wide one belongs to the embedded control plane, if any).
type metrics struct {
	registry       *prometheus.Registry
	queues         workqueue.MetricsProvider
	syncErrors     prometheus.Counter
	actions        *prometheus.CounterVec
	graphProcessed prometheus.Counter
	// Shadow mode's self-check (shadow.go).
	shadowDecisions *prometheus.CounterVec
	shadowLag       prometheus.Histogram
}

func newMetrics(g *graph) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		registry: reg,
		queues:   newQueueMetrics(reg),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "garbagecollector_controller_resources_sync_error_total",
			Help: "Number of garbage collector resources sync errors",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_gc_actions_total",
			Help: "Worker actions by queue, verb and result (ok, error or shadow).",
		}, []string{"queue", "verb", "result"}),
		graphProcessed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_gc_graph_changes_processed_total",
			Help: "Graph change events processed by the graph builder.",
		}),
	}
	m.shadowDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gcscope_shadow_decisions_total",
		Help: "Shadow mode: the engine's decisions by outcome, counted as they reach it (pending: decided; overdue: the cluster's collector had not acted past the threshold; confirmed, diverged or withdrawn: settled).",
	}, []string{"outcome"})
	m.shadowLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gcscope_shadow_lag_seconds",
		Help:    "Shadow mode: from the engine's decision to the cluster's collector doing the same.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 14),
	})
	reg.MustRegister(m.syncErrors, m.actions, m.graphProcessed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_gc_graph_nodes",
			Help: "Nodes in the dependency graph, virtual ones included.",
		}, func() float64 {
			g.mu.RLock()
			defer g.mu.RUnlock()
			return float64(len(g.uidToNode))
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_gc_graph_virtual_nodes",
			Help: "Virtual nodes: owners named by dependents but not observed.",
		}, func() float64 {
			g.mu.RLock()
			defer g.mu.RUnlock()
			return float64(g.virtuals)
		}),
	)
	return m
}

// retryingQueue is a worker queue and how to ask it what it retries.
type retryingQueue struct {
	name     QueueName
	retrying func() (items int, longest time.Duration)
}

// registerRetrying adds, for each worker queue, how many items it retries with backoff and
// for how long the one retried longest has been: an item whose work keeps failing (an
// owner's version the apiserver does not serve, a refused patch, a missing permission)
// is retried for ever, and nothing else says so.
func (m *metrics) registerRetrying(queues ...retryingQueue) {
	for _, q := range queues {
		labels := prometheus.Labels{"queue": string(q.name)}
		m.registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "gcscope_gc_retrying_items",
				Help:        "Items of a worker queue requeued with backoff and not done with since: the collector retries them (their work fails, or waits for something).",
				ConstLabels: labels,
			}, func() float64 { n, _ := q.retrying(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "gcscope_gc_retrying_oldest_seconds",
				Help:        "Seconds since the item of a worker queue retried the longest was first requeued with backoff; 0 when none is retried.",
				ConstLabels: labels,
			}, func() float64 { _, d := q.retrying(); return d.Seconds() }),
		)
	}
}

// registerSync adds what the engine monitors and what it cannot, from its sync state.
func (m *metrics) registerSync(state func() SyncState) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_gc_monitored_resources",
			Help: "Resources the engine monitors (a metadata informer each); 0 while discovery finds none.",
		}, func() float64 { return float64(len(state().Resources)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_gc_monitors_failing",
			Help: "Monitored resources whose list or watch keeps failing (a broken conversion webhook, a missing permission): their objects are missing from the graph.",
		}, func() float64 { return float64(len(state().Failing)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_gc_discovery_failing_group_versions",
			Help: "API group versions discovery cannot read now (an APIService whose backend is gone, say): their resources are not monitored, and no namespace can finish deleting while one fails.",
		}, func() float64 { return float64(len(state().DiscoveryFailures)) }),
	)
}

// registerShadow adds the shadow self-check's metrics; open counts its open decisions.
// Every outcome has a series from the start, so that the first decision to reach one is
// an increase (an alert on diverged decisions sees it).
func (m *metrics) registerShadow(open func() (pending, overdue int)) {
	for _, o := range shadowOutcomes {
		m.shadowDecisions.WithLabelValues(string(o))
	}
	m.registry.MustRegister(m.shadowDecisions, m.shadowLag,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_shadow_decisions_open",
			Help: "Shadow mode: decisions the cluster's collector has not acted on yet (overdue ones included).",
		}, func() float64 { p, o := open(); return float64(p + o) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gcscope_shadow_decisions_overdue",
			Help: "Shadow mode: open decisions past the overdue threshold.",
		}, func() float64 { _, o := open(); return float64(o) }),
	)
}

// queueMetrics implements client-go's workqueue.MetricsProvider with the standard
// workqueue metric names, labelled by queue name.
type queueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func newQueueMetrics(reg prometheus.Registerer) *queueMetrics {
	labels := []string{"name"}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	q := &queueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth",
			Help: "Current depth of workqueue"}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total",
			Help: "Total number of adds handled by workqueue"}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_queue_duration_seconds",
			Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: buckets}, labels),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_work_duration_seconds",
			Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration."}, labels),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running."}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total",
			Help: "Total number of retries handled by workqueue"}, labels),
	}
	reg.MustRegister(q.depth, q.adds, q.latency, q.work, q.unfinished, q.longest, q.retries)
	return q
}

func (q *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}
func (q *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}
func (q *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}
func (q *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.work.WithLabelValues(name)
}
func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}
func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}
func (q *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}

var _ workqueue.MetricsProvider = (*queueMetrics)(nil)
