package gc

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
)

// The engine's own gauges for what alerts need and nothing else says: the items the
// workers retry and since when, what discovery cannot read, and a series for every shadow
// outcome from the start.

func TestRetryingItemsAndTheOldest(t *testing.T) {
	h := newEngineHarness(t, Options{Mode: ModeShadow})
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := t0
	q := h.gc.attemptToDelete
	q.now = func() time.Time { return now }
	item := func(uid string) *node {
		return &node{identity: objectReference{OwnerReference: metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: uid, UID: types.UID(uid)}, Namespace: "a"}}
	}
	a, b := item("uid-a"), item("uid-b")

	check := func(when string, items int, oldest time.Duration) {
		t.Helper()
		want := `
# HELP gcscope_gc_retrying_items Items of a worker queue requeued with backoff and not done with since: the collector retries them (their work fails, or waits for something).
# TYPE gcscope_gc_retrying_items gauge
gcscope_gc_retrying_items{queue="attemptToDelete"} ` + strconv.Itoa(items) + `
gcscope_gc_retrying_items{queue="attemptToOrphan"} 0
# HELP gcscope_gc_retrying_oldest_seconds Seconds since the item of a worker queue retried the longest was first requeued with backoff; 0 when none is retried.
# TYPE gcscope_gc_retrying_oldest_seconds gauge
gcscope_gc_retrying_oldest_seconds{queue="attemptToDelete"} ` + strconv.Itoa(int(oldest.Seconds())) + `
gcscope_gc_retrying_oldest_seconds{queue="attemptToOrphan"} 0
`
		if err := testutil.GatherAndCompare(h.gc.Registry(), strings.NewReader(want), "gcscope_gc_retrying_items", "gcscope_gc_retrying_oldest_seconds"); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}

	check("nothing retried", 0, 0)
	q.AddRateLimited(a)
	now = t0.Add(time.Minute)
	q.AddRateLimited(b)
	now = t0.Add(2 * time.Minute)
	q.AddRateLimited(a) // retried again: it has been retried since its first requeue
	now = t0.Add(5 * time.Minute)
	check("a retried since t0, b since t0+1m", 2, 5*time.Minute)
	q.Forget(a) // its work succeeded
	check("a done with", 1, 4*time.Minute)
	q.Forget(b)
	check("both done with", 0, 0)
	q.Add(a) // added without backoff: not a retry
	check("a added again", 0, 0)
}

func TestSyncGaugesAndShadowOutcomes(t *testing.T) {
	h := newEngineHarness(t, Options{Mode: ModeShadow})
	stale := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
	h.gc.groupFailures.update(stale, time.Now())
	want := `
# HELP gcscope_gc_discovery_failing_group_versions API group versions discovery cannot read now (an APIService whose backend is gone, say): their resources are not monitored, and no namespace can finish deleting while one fails.
# TYPE gcscope_gc_discovery_failing_group_versions gauge
gcscope_gc_discovery_failing_group_versions 1
# HELP gcscope_gc_monitored_resources Resources the engine monitors (a metadata informer each); 0 while discovery finds none.
# TYPE gcscope_gc_monitored_resources gauge
gcscope_gc_monitored_resources 0
# HELP gcscope_gc_monitors_failing Monitored resources whose list or watch keeps failing (a broken conversion webhook, a missing permission): their objects are missing from the graph.
# TYPE gcscope_gc_monitors_failing gauge
gcscope_gc_monitors_failing 0
`
	if err := testutil.GatherAndCompare(h.gc.Registry(), strings.NewReader(want),
		"gcscope_gc_discovery_failing_group_versions", "gcscope_gc_monitored_resources", "gcscope_gc_monitors_failing"); err != nil {
		t.Error(err)
	}
	h.gc.groupFailures.update(nil, time.Now())
	if err := testutil.GatherAndCompare(h.gc.Registry(), strings.NewReader(`
# HELP gcscope_gc_discovery_failing_group_versions API group versions discovery cannot read now (an APIService whose backend is gone, say): their resources are not monitored, and no namespace can finish deleting while one fails.
# TYPE gcscope_gc_discovery_failing_group_versions gauge
gcscope_gc_discovery_failing_group_versions 0
`), "gcscope_gc_discovery_failing_group_versions"); err != nil {
		t.Errorf("after discovery recovered: %v", err)
	}

	// Before any decision, every outcome has its series at 0: the first diverged decision
	// is then an increase from 0 (a series born at 1 shows no increase to an alert).
	if n := testutil.CollectAndCount(h.gc.metrics.shadowDecisions); n != len(shadowOutcomes) {
		t.Errorf("gcscope_shadow_decisions_total has %d series before any decision, want one per outcome (%d)", n, len(shadowOutcomes))
	}
}
