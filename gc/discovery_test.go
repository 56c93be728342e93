package gc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/gcscope/gcscope/internal/testkit"
)

// What the engine monitors, as discovery answers: partial or failing discovery, new
// resources, a monitor that never syncs or changes version.

// partialDiscovery is the fake discovery with some group versions failing, as an
// aggregated API that is down fails.
type partialDiscovery struct {
	*fakediscovery.FakeDiscovery
	failing map[string]error // by groupVersion
}

func (d *partialDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

func (d *partialDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	if err, ok := d.failing[gv]; ok {
		return nil, err
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

func (d *partialDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return discovery.ServerGroupsAndResources(d)
}

func (d *partialDiscovery) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return discovery.ServerGroupsAndResourcesWithContext(ctx, d)
}

func (d *partialDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResources(d)
}

func (d *partialDiscovery) ServerPreferredResourcesWithContext(ctx context.Context) ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResourcesWithContext(ctx, d)
}

var _ discovery.DiscoveryInterface = (*partialDiscovery)(nil)

func defaultIgnored() map[schema.GroupResource]bool {
	m := map[schema.GroupResource]bool{}
	for _, gr := range DefaultIgnoredResources {
		m[gr] = true
	}
	return m
}

func resourceKeys(m map[schema.GroupVersionResource]resourceInfo) []string {
	var out []string
	for gvr := range m {
		out = append(out, resourceName(gvr))
	}
	slices.Sort(out)
	return out
}

func TestDeletableResourcesWithPartialDiscovery(t *testing.T) {
	lists := append(testAPIResources(), &metav1.APIResourceList{GroupVersion: "metrics.example.com/v1beta1", APIResources: []metav1.APIResource{
		{Name: "nodemetrics", Kind: "NodeMetrics", Verbs: allVerbs},
	}})
	failure := apierrors.NewServiceUnavailable("the aggregated API is down")
	dc := &partialDiscovery{
		FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}},
		failing:       map[string]error{"metrics.example.com/v1beta1": failure},
	}
	dc.Resources = lists

	got, err := deletableResources(dc, defaultIgnored())
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		t.Fatalf("error = %v, want an ErrGroupDiscoveryFailed", err)
	}
	if _, ok := failed.Groups[schema.GroupVersion{Group: "metrics.example.com", Version: "v1beta1"}]; !ok || len(failed.Groups) != 1 {
		t.Errorf("failed groups = %v, want only metrics.example.com/v1beta1", failed.Groups)
	}
	// Preferred versions only; no events (ignored), no subresources, nothing lacking
	// delete, list or watch (bindings, componentstatuses).
	want := []string{"apps/v1/deployments", "apps/v1/replicasets", "example.com/v1/widgets", "v1/configmaps", "v1/namespaces", "v1/persistentvolumes", "v1/pods"}
	if keys := resourceKeys(got); !slices.Equal(keys, want) {
		t.Errorf("resources = %v, want %v", keys, want)
	}
	if info := got[podsGVR]; info.gvk != (schema.GroupVersionKind{Version: "v1", Kind: "Pod"}) || !info.namespaced {
		t.Errorf("pods = %+v, want kind Pod, namespaced", info)
	}
	if info := got[pvsGVR]; info.gvk.Kind != "PersistentVolume" || info.namespaced {
		t.Errorf("persistentvolumes = %+v, want kind PersistentVolume, cluster-scoped", info)
	}

	// Other ignored resources are honoured too.
	ignored := defaultIgnored()
	ignored[schema.GroupResource{Resource: "configmaps"}] = true
	got, _ = deletableResources(dc, ignored)
	if _, ok := got[configMapsGVR]; ok {
		t.Error("an ignored resource was returned")
	}
}

func TestDeletableResourcesWhenDiscoveryFails(t *testing.T) {
	dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	dc.Resources = testAPIResources()
	dc.PrependReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("apiserver is starting")
	})
	got, err := deletableResources(dc, defaultIgnored())
	if err == nil || len(got) != 0 {
		t.Errorf("deletableResources = %v, %v; want no resources and the error", resourceKeys(got), err)
	}
}

// TestRefreshDiscoveryMonitorsNewResourcesAtOnce: with a discovery period of an hour, a
// resource that appears is monitored as soon as RefreshDiscovery is called.
func TestRefreshDiscoveryMonitorsNewResourcesAtOnce(t *testing.T) {
	h := newEngineHarness(t, Options{DiscoveryPeriod: time.Hour, SyncTimeout: 10 * time.Second})
	// Start without the widgets.
	h.disc.Resources = slices.DeleteFunc(testAPIResources(), func(l *metav1.APIResourceList) bool {
		return strings.HasPrefix(l.GroupVersion, "example.com/")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.gc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-h.gc.Started()
	if slices.Contains(h.gc.SyncState().Resources, "example.com/v1/widgets") {
		t.Fatal("widgets monitored before they exist")
	}
	h.disc.Resources = testAPIResources()
	h.gc.RefreshDiscovery()
	if testkit.Poll(context.Background(), 10*time.Second, func() bool { return slices.Contains(h.gc.SyncState().Resources, "example.com/v1/widgets") }) != nil {
		t.Fatalf("widgets not monitored after RefreshDiscovery: %v", h.gc.SyncState().Resources)
	}
}

// TestEmptyDiscoveryAtStartRetries: a discovery that reports nothing at start-up does not
// end the engine (upstream retries every period); the sync state says so until
// discovery answers, then the engine monitors what it reports.
func TestEmptyDiscoveryAtStartRetries(t *testing.T) {
	h := newEngineHarness(t, Options{DiscoveryPeriod: time.Hour, SyncTimeout: 10 * time.Second})
	h.disc.Resources = nil
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.gc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-h.gc.Started():
	case err := <-done:
		t.Fatalf("Run ended with empty discovery: %v", err)
	}
	if st := h.gc.SyncState(); !strings.Contains(st.Discovery, "no resources") || !strings.Contains(st.Discovery, "retrying every 1h0m0s") || len(st.Resources) != 0 {
		t.Fatalf("sync state %+v; want it to say discovery found nothing and is retried", st)
	}
	h.disc.Resources = testAPIResources()
	h.gc.RefreshDiscovery()
	if testkit.Poll(context.Background(), 10*time.Second, func() bool { st := h.gc.SyncState(); return st.Discovery == "" && len(st.Resources) > 0 }) != nil {
		t.Fatalf("after discovery answered: %+v", h.gc.SyncState())
	}
}

// TestWorkersGoOnWhileAMonitorNeverSyncs: as in upstream v1.37.1, the workers do not wait
// for a discovery resync: a new resource whose list never answers (the resync then waits
// up to the period, here an hour) does not hold back the collection of the others.
func TestWorkersGoOnWhileAMonitorNeverSyncs(t *testing.T) {
	h := newEngineHarness(t, Options{DiscoveryPeriod: time.Hour, SyncTimeout: 10 * time.Second})
	withoutGadgets := testAPIResources()
	h.disc.Resources = withoutGadgets
	// (The fake client serializes its calls, so the list fails rather than hangs: the
	// monitor never syncs either way.)
	listing := make(chan struct{}, 1)
	h.meta.PrependReactor("list", "gadgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		select {
		case listing <- struct{}{}:
		default:
		}
		return true, nil, apierrors.NewInternalError(errors.New("gadgets never list"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.gc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-h.gc.Started()

	withGadgets := testAPIResources()
	for _, l := range withGadgets {
		if l.GroupVersion == "example.com/v1" {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: "gadgets", SingularName: "gadget", Kind: "Gadget", Namespaced: true, Verbs: allVerbs})
		}
	}
	h.disc.Resources = withGadgets
	h.gc.RefreshDiscovery()
	select {
	case <-listing:
	case <-time.After(10 * time.Second):
		t.Fatal("the new monitor never listed")
	}
	// The resync now waits for gadgets (up to the hour). A pod whose owner is gone is
	// collected meanwhile.
	if !slices.Contains(h.gc.SyncState().Unsynced, "example.com/v1/gadgets") {
		t.Fatalf("gadgets are not syncing: %+v", h.gc.SyncState())
	}
	gone := replicaSet("a", "gone", "uid-gone")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(gone, blocking, controls)))
	h.store(p)
	if testkit.Poll(context.Background(), 10*time.Second, func() bool { _, ok := h.stored(p); return !ok }) != nil {
		t.Fatalf("the pod of a deleted owner was not collected while a monitor was syncing: %s", describeActions(h.meta.Actions()))
	}
}

// TestMonitorSwapLosesNoDelete: when a resource's preferred version changes, the old
// monitor goes on delivering until the new one has synced, so a delete in between still
// reaches the graph (upstream never stops a shared informer).
func TestMonitorSwapLosesNoDelete(t *testing.T) {
	h := newEngineHarness(t, Options{DiscoveryPeriod: time.Hour, SyncTimeout: 10 * time.Second})
	betaOnly := slices.DeleteFunc(testAPIResources(), func(l *metav1.APIResourceList) bool { return l.GroupVersion == "example.com/v1" })
	h.disc.Resources = betaOnly
	w := testObject("example.com/v1beta1", "Widget", "a", "w", "uid-w")
	h.storeAs(widgetsBetaGVR, w)
	var v1Lists atomic.Bool // the new monitor's list fails until released
	h.meta.PrependReactor("list", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Version == "v1" && !v1Lists.Load() {
			return true, nil, apierrors.NewServiceUnavailable("not yet")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.gc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-h.gc.Started()
	testkit.EventuallyWithin(t, 10*time.Second, "the widget in the graph", func() bool { _, ok := h.gc.Node("uid-w"); return ok })

	h.disc.Resources = testAPIResources() // v1 appears, preferred
	h.gc.RefreshDiscovery()
	testkit.EventuallyWithin(t, 10*time.Second, "the monitor to move to v1", func() bool {
		st := h.gc.SyncState()
		return slices.Contains(st.Resources, "example.com/v1/widgets") && !slices.Contains(st.Resources, "example.com/v1beta1/widgets")
	})
	// v1 has not synced: the delete comes through the old monitor.
	if err := h.meta.Tracker().Delete(widgetsBetaGVR, "a", "w"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 10*time.Second, "the deleted widget to leave the graph before v1 syncs", func() bool { _, ok := h.gc.Node("uid-w"); return !ok })
	if st := h.gc.SyncState(); !slices.Contains(st.Unsynced, "example.com/v1/widgets") {
		t.Fatalf("v1 synced already (%+v): the test did not cover the window", st)
	}
	v1Lists.Store(true)
}
