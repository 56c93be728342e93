package deletion

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxFinalizerLabels bounds the finalizer label's values: the most frequent finalizers
// keep their name, the rest are counted as "other".
const maxFinalizerLabels = 20

var stuckDesc = prometheus.NewDesc("gcscope_stuck_objects",
	"Objects whose deletion started longer ago than the stuck threshold, by cause (finalizer, foreground, orphan, namespace, discovery, termination, unknown) and, for cause finalizer, the finalizer (the 20 most frequent; the rest as other).",
	[]string{"cause", "finalizer"}, nil)

// StuckCollector is the gcscope_stuck_objects gauge, counted from the graph at each
// scrape (no request to the apiserver).
type StuckCollector struct {
	graph     Graph
	olderThan time.Duration
	now       func() time.Time
}

// NewStuckCollector counts the objects of g stuck for longer than olderThan.
func NewStuckCollector(g Graph, olderThan time.Duration) *StuckCollector {
	return &StuckCollector{graph: g, olderThan: olderThan, now: time.Now}
}

func (c *StuckCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stuckDesc }

func (c *StuckCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.counts() {
		ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, float64(s.n), s.cause, s.finalizer)
	}
}

type stuckCount struct {
	cause, finalizer string
	n                int
}

func (c *StuckCollector) counts() []stuckCount {
	now := c.now()
	discoveryFails := len(c.graph.SyncState().DiscoveryFailures) > 0
	byKey := map[[2]string]int{}
	// Every cause but finalizer has a series, 0 included: an alert can tell "none" from
	// "not scraped".
	for _, cause := range []string{CauseForeground, CauseOrphan, CauseNamespace, CauseDiscovery, CauseTermination, CauseUnknown} {
		byKey[[2]string{cause, ""}] = 0
	}
	for _, o := range c.graph.BeingDeleted() {
		if o.DeletionTimestamp == nil || now.Sub(*o.DeletionTimestamp) < c.olderThan {
			continue
		}
		cause, f := classify(o, discoveryFails)
		byKey[[2]string{cause, f}]++
	}
	var out []stuckCount
	for k, n := range byKey {
		out = append(out, stuckCount{cause: k[0], finalizer: k[1], n: n})
	}
	slices.SortFunc(out, func(a, b stuckCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.cause, b.cause), cmp.Compare(a.finalizer, b.finalizer))
	})
	named, other := 0, 0
	kept := out[:0]
	for _, s := range out {
		if s.cause != CauseFinalizer {
			kept = append(kept, s)
			continue
		}
		if named < maxFinalizerLabels {
			named++
			kept = append(kept, s)
			continue
		}
		other += s.n
	}
	if other > 0 {
		kept = append(kept, stuckCount{cause: CauseFinalizer, finalizer: "other", n: other})
	}
	return kept
}
