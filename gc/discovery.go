package gc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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
// resets the REST mapper, resyncs the monitors and waits (bounded) for them, for the log
// and the metrics only: as in upstream v1.37.1, the workers go on meanwhile, so one
// resource that never syncs does not stall the collection of all the others.
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
		gc.noteRecoveredMonitors()
		next, err := deletableResources(gc.discovery, gc.ignored)
		if len(next) > 0 {
			gc.noteGroupFailures(err)
		}
		if len(next) == 0 {
			gc.log.Warn("discovery reported no resources; keeping the current monitors", "err", err)
			gc.metrics.syncErrors.Inc()
			if len(current) == 0 {
				gc.setDiscoveryProblem(noResourcesProblem(err, period))
			}
			continue
		}
		gc.setDiscoveryProblem("")
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

// resync applies a new set of resources.
func (gc *GarbageCollector) resync(ctx context.Context, resources map[schema.GroupVersionResource]resourceInfo, timeout time.Duration) {
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

// resetMapperEvery forgets the REST mapper's discovery every period, whatever changed, as
// kube-controller-manager resets its shared mapper every 30 s: a version a CRD stops
// serving stops being mapped, and one it starts serving becomes mappable, even when the
// preferred versions (which the monitors follow) stay the same.
func (gc *GarbageCollector) resetMapperEvery(ctx context.Context, period time.Duration) {
	wait.UntilWithContext(ctx, func(context.Context) { gc.mapper.Reset() }, period)
}

// noResourcesProblem says that discovery gave nothing, and what the engine does about it.
func noResourcesProblem(err error, period time.Duration) string {
	msg := "discovery found no resources to monitor"
	if err != nil {
		msg += ": " + err.Error()
	}
	return msg + fmt.Sprintf("; retrying every %v", period)
}

// servedNow asks discovery, bypassing every cache, whether gvr is served at this moment.
// A 404 for an object is proof of its absence only when its version and resource are
// served: an apiserver answers 404 for a version it no longer serves too.
func (gc *GarbageCollector) servedNow(gvr schema.GroupVersionResource) (bool, error) {
	list, err := gc.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}
