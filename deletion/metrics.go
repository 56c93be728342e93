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

var (
	stuckDesc = prometheus.NewDesc("gcscope_stuck_objects",
		"Objects whose deletion started longer ago than the stuck threshold, by cause (finalizer, foreground, orphan, namespace, discovery, termination, unknown) and, for cause finalizer, the finalizer (the 20 most frequent; the rest as other).",
		[]string{"cause", "finalizer"}, nil)
	deletingDesc = prometheus.NewDesc("gcscope_deleting_objects",
		"Objects being deleted (deletionTimestamp set, still there), however recently, by the cause that holds them (as gcscope_stuck_objects).",
		[]string{"cause"}, nil)
	deletingOldestDesc = prometheus.NewDesc("gcscope_deleting_oldest_seconds",
		"Seconds since the deletion of the oldest object still being deleted began (its deletionTimestamp), by the cause that holds it; 0 when none is.",
		[]string{"cause"}, nil)
)

// causes are every cause of a deletion that has not finished.
var causes = []string{CauseFinalizer, CauseForeground, CauseOrphan, CauseNamespace, CauseDiscovery, CauseTermination, CauseUnknown}

// StuckCollector is the gcscope_stuck_objects gauge, and how many objects are being
// deleted and for how long the oldest has been (gcscope_deleting_objects,
// gcscope_deleting_oldest_seconds), counted from the graph at each scrape (no request to
// the apiserver).
type StuckCollector struct {
	graph     Graph
	olderThan time.Duration
	now       func() time.Time
}

// NewStuckCollector counts the objects of g stuck for longer than olderThan.
func NewStuckCollector(g Graph, olderThan time.Duration) *StuckCollector {
	return &StuckCollector{graph: g, olderThan: olderThan, now: time.Now}
}

func (c *StuckCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stuckDesc
	ch <- deletingDesc
	ch <- deletingOldestDesc
}

func (c *StuckCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.tally()
	for _, s := range t.stuck {
		ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, float64(s.n), s.cause, s.finalizer)
	}
	for _, cause := range causes {
		d := t.deleting[cause]
		ch <- prometheus.MustNewConstMetric(deletingDesc, prometheus.GaugeValue, float64(d.n), cause)
		ch <- prometheus.MustNewConstMetric(deletingOldestDesc, prometheus.GaugeValue, d.oldest.Seconds(), cause)
	}
}

type stuckCount struct {
	cause, finalizer string
	n                int
}

// deletingCount is how many objects of one cause are being deleted, and for how long the
// oldest of them has been.
type deletingCount struct {
	n      int
	oldest time.Duration
}

// stuckTally is one look at the objects being deleted.
type stuckTally struct {
	stuck    []stuckCount
	deleting map[string]deletingCount // by cause
}

func (c *StuckCollector) counts() []stuckCount { return c.tally().stuck }

func (c *StuckCollector) tally() stuckTally {
	now := c.now()
	discoveryFails := len(c.graph.SyncState().DiscoveryFailures) > 0
	byKey := map[[2]string]int{}
	deleting := map[string]deletingCount{}
	// Every cause but finalizer has a series, 0 included: an alert can tell "none" from
	// "not scraped".
	for _, cause := range causes {
		if cause != CauseFinalizer {
			byKey[[2]string{cause, ""}] = 0
		}
	}
	for _, o := range c.graph.BeingDeleted() {
		if o.DeletionTimestamp == nil {
			continue
		}
		age := now.Sub(*o.DeletionTimestamp)
		cause, f := classify(o, discoveryFails)
		d := deleting[cause]
		d.n++
		d.oldest = max(d.oldest, age)
		deleting[cause] = d
		if age < c.olderThan {
			continue
		}
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
	return stuckTally{stuck: kept, deleting: deleting}
}
