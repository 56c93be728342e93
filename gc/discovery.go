package gc

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// resourceInfo is what discovery says about a monitored resource.
type resourceInfo struct {
	gvk        schema.GroupVersionKind
	namespaced bool
}

// DefaultIgnoredResources are not monitored, as upstream: events are numerous, short-lived
// and never owners.
var DefaultIgnoredResources = []schema.GroupResource{
	{Group: "", Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
}

// deletableResources lists the preferred version of every resource that supports delete,
// list and watch, minus the ignored ones. With partial discovery (a group failing, such as
// an aggregated API that is down) it returns what it found along with the error.
func deletableResources(dc discovery.DiscoveryInterface, ignored map[schema.GroupResource]bool) (map[schema.GroupVersionResource]resourceInfo, error) {
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists)
	out := map[schema.GroupVersionResource]resourceInfo{}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || ignored[schema.GroupResource{Group: gv.Group, Resource: r.Name}] {
				continue
			}
			out[gv.WithResource(r.Name)] = resourceInfo{gvk: gv.WithKind(r.Kind), namespaced: r.Namespaced}
		}
	}
	return out, err
}

// syncDiscovery re-reads discovery every period and, when the deletable resources change,
// pauses the workers, resets the REST mapper, resyncs the monitors and waits (bounded) for
// them before letting the workers go on.
func (gc *GarbageCollector) syncDiscovery(ctx context.Context, period time.Duration, current map[schema.GroupVersionResource]resourceInfo) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-gc.rediscover:
		}
		next, err := deletableResources(gc.discovery, gc.ignored)
		if len(next) == 0 {
			gc.log.Warn("discovery reported no resources; keeping the current monitors", "err", err)
			gc.metrics.syncErrors.Inc()
			continue
		}
		var failed *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &failed) {
			// Keep the synced monitors of groups that failed this time.
			gc.metrics.syncErrors.Inc()
			for gvr, info := range current {
				if _, f := failed.Groups[gvr.GroupVersion()]; f && gc.builder.monitors.isResourceSynced(gvr) {
					next[gvr] = info
				}
			}
		}
		if maps.Equal(current, next) {
			continue
		}
		gc.resync(ctx, next, period)
		current = next
	}
}

// resync applies a new set of resources with the workers paused.
func (gc *GarbageCollector) resync(ctx context.Context, resources map[schema.GroupVersionResource]resourceInfo, timeout time.Duration) {
	gc.workerLock.Lock()
	defer gc.workerLock.Unlock()
	gc.setResources(resources)
	gc.mapper.Reset()
	if err := gc.builder.monitors.sync(resources); err != nil {
		gc.log.Warn("resyncing monitors", "err", err)
		gc.metrics.syncErrors.Inc()
	}
	if !gc.builder.monitors.waitForSync(ctx, timeout) {
		st := gc.builder.monitors.state()
		gc.log.Warn("some monitors have not synced; collecting without them", "unsynced", st.Unsynced)
		gc.metrics.syncErrors.Inc()
	}
	gc.publishSync()
}

// RefreshDiscovery asks the engine to re-read discovery now rather than at the next
// period, for example right after creating custom resource definitions.
func (gc *GarbageCollector) RefreshDiscovery() {
	select {
	case gc.rediscover <- struct{}{}:
	default: // one is already pending
	}
}
