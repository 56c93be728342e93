package gc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitor watches one resource through a metadata-only informer and feeds its events to
// the graphChanges queue.
type monitor struct {
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	handle   cache.ResourceEventHandlerRegistration
	stop     chan struct{} // closed to stop the informer; nil until started
	started  time.Time

	mu      sync.Mutex
	lastErr string // the last list/watch error
}

// failing says why a monitor that has not synced is failing: its last list/watch error,
// or a list that has not completed for longer than slowAfter (a list can hang, for
// example on a custom resource whose storage needs a conversion webhook that is down).
func (m *monitor) failing(slowAfter time.Duration) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.informer.HasSynced():
		return ""
	case m.lastErr != "":
		return m.lastErr
	case !m.started.IsZero() && time.Since(m.started) > slowAfter:
		return fmt.Sprintf("the list has not completed after %s", time.Since(m.started).Round(time.Second))
	}
	return ""
}

// monitors is the set of monitors, changed as discovery changes.
type monitors struct {
	log     *slog.Logger
	client  metadata.Interface
	enqueue func(*event)

	mu       sync.Mutex
	byGVR    map[schema.GroupVersionResource]*monitor
	running  bool // start has been called: new monitors start at once
	runCtx   context.Context
	onChange func() // the set or a monitor's sync state changed
	// slowAfter: a monitor whose list has not completed by then is reported failing.
	slowAfter time.Duration
}

func newMonitors(log *slog.Logger, client metadata.Interface, enqueue func(*event)) *monitors {
	return &monitors{log: log, client: client, enqueue: enqueue, byGVR: map[schema.GroupVersionResource]*monitor{}, slowAfter: 30 * time.Second}
}

// controllerFor builds a stopped monitor for one resource.
func (ms *monitors) controllerFor(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, error) {
	m := &monitor{gvr: gvr, gvk: gvk}
	m.informer = metadatainformer.NewFilteredMetadataInformer(ms.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	// The graph needs identity, owners, finalizers and the deletion timestamp: drop the
	// rest from the cache (managed fields and annotations are most of an object's metadata).
	if err := m.informer.SetTransform(stripMetadata); err != nil {
		return nil, err
	}
	if err := m.informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		m.mu.Lock()
		changed := m.lastErr == ""
		m.lastErr = err.Error()
		m.mu.Unlock()
		if changed {
			ms.log.Warn("a monitor's list/watch fails: the engine does not see this resource until it recovers", "resource", gvr.String(), "err", err)
		} else {
			ms.log.Debug("monitor list/watch failed", "resource", gvr.String(), "err", err)
		}
		if changed && ms.onChange != nil {
			ms.onChange()
		}
	}); err != nil {
		return nil, err
	}
	handle, err := m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*metav1.PartialObjectMetadata); ok {
				ms.enqueue(&event{eventType: addEvent, obj: o, gvk: gvk})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := newObj.(*metav1.PartialObjectMetadata)
			old, ok2 := oldObj.(*metav1.PartialObjectMetadata)
			if ok1 && ok2 {
				ms.enqueue(&event{eventType: updateEvent, obj: o, oldObj: old, gvk: gvk})
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(*metav1.PartialObjectMetadata); ok {
				ms.enqueue(&event{eventType: deleteEvent, obj: o, gvk: gvk})
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("monitor %s: %w", gvr, err)
	}
	m.handle = handle
	return m, nil
}

// stripMetadata keeps, of what an informer caches, what the engine reads: identity,
// owners, finalizers, the deletion timestamp and the resourceVersion. At 150k objects the
// cache is most of the engine's memory, so the strings every object repeats (its
// namespace, its kind, its owners' kinds) are shared, and so are the flags of its
// ownerReferences.
func stripMetadata(obj any) (any, error) {
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	o.ManagedFields = nil
	o.Annotations = nil
	o.Labels = nil
	o.GenerateName = ""
	o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
	o.Namespace = intern(o.Namespace)
	for i := range o.OwnerReferences {
		r := &o.OwnerReferences[i]
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		r.Controller, r.BlockOwnerDeletion = sharedBool(r.Controller), sharedBool(r.BlockOwnerDeletion)
	}
	for i, f := range o.Finalizers {
		o.Finalizers[i] = intern(f)
	}
	return o, nil
}

func intern(s string) string { return unique.Make(s).Value() }

var sharedTrue, sharedFalse = true, false

// sharedBool points at one of two shared values: nothing writes through these pointers.
func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &sharedTrue
	}
	return &sharedFalse
}

// sync makes the monitors match resources: new ones are created (and started if the set
// is running), gone ones are stopped and their event handlers removed.
func (ms *monitors) sync(resources map[schema.GroupVersionResource]resourceInfo) error {
	ms.mu.Lock()
	var errs []error
	added, removed := 0, 0
	for gvr, info := range resources {
		if _, ok := ms.byGVR[gvr]; ok {
			continue
		}
		m, err := ms.controllerFor(gvr, info.gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms.byGVR[gvr] = m
		added++
		if ms.running {
			ms.startLocked(m)
		}
	}
	for gvr, m := range ms.byGVR {
		if _, keep := resources[gvr]; keep {
			continue
		}
		delete(ms.byGVR, gvr)
		removed++
		if succ := ms.successorLocked(gvr); succ != nil && m.stop != nil {
			// The resource moved to another version: the old monitor goes on delivering
			// until its successor has synced (upstream never stops a shared informer), so
			// a delete in between is not lost.
			go ms.retireAfter(m, succ)
			continue
		}
		ms.stopLocked(m)
	}
	ms.mu.Unlock()
	if added+removed > 0 {
		ms.log.Info("monitors synced with discovery", "added", added, "removed", removed, "total", len(resources))
		if ms.onChange != nil {
			ms.onChange()
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d monitors could not be created: %v", len(errs), errs)
	}
	return nil
}

// successorLocked returns the monitor of the same group and resource in another version,
// if any. Requires mu.
func (ms *monitors) successorLocked(gvr schema.GroupVersionResource) *monitor {
	for other, m := range ms.byGVR {
		if other.GroupResource() == gvr.GroupResource() && other.Version != gvr.Version {
			return m
		}
	}
	return nil
}

// retireAfter stops old once succ has synced (or either is stopped).
func (ms *monitors) retireAfter(old, succ *monitor) {
	ms.mu.Lock()
	oldStop, succStop := old.stop, succ.stop
	ms.mu.Unlock()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
wait:
	for !succ.informer.HasSynced() {
		select {
		case <-oldStop:
			return
		case <-succStop:
			break wait
		case <-t.C:
		}
	}
	ms.mu.Lock()
	ms.stopLocked(old)
	ms.mu.Unlock()
}

// start runs every monitor until ctx ends; monitors added later start at once.
func (ms *monitors) start(ctx context.Context) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.running, ms.runCtx = true, ctx
	for _, m := range ms.byGVR {
		ms.startLocked(m)
	}
}

func (ms *monitors) startLocked(m *monitor) {
	if m.stop != nil {
		return
	}
	m.stop = make(chan struct{})
	m.mu.Lock()
	m.started = time.Now()
	m.mu.Unlock()
	stop := m.stop
	go func() {
		select {
		case <-ms.runCtx.Done():
			ms.mu.Lock()
			ms.stopLocked(m)
			ms.mu.Unlock()
		case <-stop:
		}
	}()
	go m.informer.Run(stop)
}

func (ms *monitors) stopLocked(m *monitor) {
	if m.handle != nil {
		m.informer.RemoveEventHandler(m.handle)
		m.handle = nil
	}
	if m.stop != nil {
		select {
		case <-m.stop:
		default:
			close(m.stop)
		}
	}
}

// state reports the monitored resources, the ones not synced yet and the ones failing.
func (ms *monitors) state() SyncState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	s := SyncState{Resources: make([]string, 0, len(ms.byGVR))}
	for gvr, m := range ms.byGVR {
		name := resourceName(gvr)
		s.Resources = append(s.Resources, name)
		if !m.informer.HasSynced() {
			s.Unsynced = append(s.Unsynced, name)
			if err := m.failing(ms.slowAfter); err != "" {
				if s.Failing == nil {
					s.Failing = map[string]string{}
				}
				s.Failing[name] = err
			}
		}
	}
	slices.Sort(s.Resources)
	slices.Sort(s.Unsynced)
	return s
}

// synced reports whether every monitor's cache has synced.
func (ms *monitors) synced() bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, m := range ms.byGVR {
		if !m.informer.HasSynced() {
			return false
		}
	}
	return true
}

// isResourceSynced reports whether a monitor for gvr exists and has synced.
func (ms *monitors) isResourceSynced(gvr schema.GroupVersionResource) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.byGVR[gvr]
	return ok && m.informer.HasSynced()
}

// waitForSync waits until every monitor has synced or timeout passes, and reports which
// succeeded. Monitors that keep failing do not hold the engine: it goes on without them
// and they keep retrying in the background.
func (ms *monitors) waitForSync(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if ms.synced() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
