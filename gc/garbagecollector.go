// Package gc is gcscope's garbage-collector engine: the collector of kube-controller-manager,
// written anew and made observable. Metadata informers (monitors) feed the graphChanges
// queue; the GraphBuilder turns it into the dependency graph; workers of the
// attemptToDelete and attemptToOrphan queues delete, patch and orphan through the
// apiserver. Every graph mutation, queue transition and worker action is published on the
// Feed, the engine's only door to the rest of gcscope, next to a small read API
// (Snapshot, Node, Explain). The package knows nothing of HTTP or the UI.
package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// Mode is whether the engine acts.
type Mode string

const (
	// ModeActive: the engine deletes, patches and removes finalizers, as upstream.
	ModeActive Mode = "active"
	// ModeShadow: the engine computes every decision and records it on the feed, and
	// writes nothing; for clusters whose own controller-manager collects.
	ModeShadow Mode = "shadow"
)

// Options configure the engine. Zero values take upstream's defaults.
type Options struct {
	// Workers per queue (attemptToDelete and attemptToOrphan); default 20.
	Workers int
	Mode    Mode
	// ActionDelay waits this long before each write: slow motion for demos.
	ActionDelay time.Duration
	// SlowMotionOff starts the engine with its ActionDelay switched off, to be switched on
	// at run time (SetSlowMotion).
	SlowMotionOff bool
	// IgnoredResources are not monitored; default DefaultIgnoredResources.
	IgnoredResources []schema.GroupResource
	// DiscoveryPeriod is how often discovery is re-read; default 30 s.
	DiscoveryPeriod time.Duration
	// SyncTimeout bounds how long the engine waits for its monitors before it starts
	// collecting without the ones still missing; default 30 s.
	SyncTimeout time.Duration
	// ShadowOverdue is how long a shadow decision waits for the cluster's collector before
	// it is overdue; default DefaultShadowOverdue.
	ShadowOverdue time.Duration
	// FeedSize is how many events the feed holds; default DefaultFeedSize.
	FeedSize int
	Logger   *slog.Logger
}

func (o *Options) defaults() error {
	if o.Workers == 0 {
		o.Workers = 20
	}
	if o.Workers < 0 {
		return fmt.Errorf("workers: %d is negative", o.Workers)
	}
	switch o.Mode {
	case "":
		o.Mode = ModeActive
	case ModeActive, ModeShadow:
	default:
		return fmt.Errorf("mode %q: want %q or %q", o.Mode, ModeActive, ModeShadow)
	}
	if o.ActionDelay < 0 {
		return fmt.Errorf("action delay %v is negative", o.ActionDelay)
	}
	if o.IgnoredResources == nil {
		o.IgnoredResources = DefaultIgnoredResources
	}
	if o.DiscoveryPeriod == 0 {
		o.DiscoveryPeriod = 30 * time.Second
	}
	if o.SyncTimeout == 0 {
		o.SyncTimeout = 30 * time.Second
	}
	if o.ShadowOverdue < 0 {
		return fmt.Errorf("shadow overdue threshold %v is negative", o.ShadowOverdue)
	}
	if o.ShadowOverdue == 0 {
		o.ShadowOverdue = DefaultShadowOverdue
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Clients are the engine's ways to the apiserver.
type Clients struct {
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// Events receives the Warning events about invalid ownerReferences.
	Events typedcorev1.EventsGetter
}

// ClientsForConfig builds Clients from a rest.Config.
func ClientsForConfig(cfg *rest.Config) (Clients, error) {
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Metadata: md, Discovery: cs.Discovery(), Events: cs.CoreV1()}, nil
}

// GarbageCollector is the engine.
type GarbageCollector struct {
	opts      Options
	log       *slog.Logger
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	ignored   map[schema.GroupResource]bool
	feed      *Feed
	graph     *graph
	metrics   *metrics
	builder   *GraphBuilder
	recorder  record.EventRecorder
	events    record.EventBroadcaster
	// slowMotion: the ActionDelay applies (it can be switched off and on at run time).
	slowMotion atomic.Bool

	attemptToDelete *workQueue[*node]
	attemptToOrphan *workQueue[*node]
	absentOwners    *ReferenceCache
	// shadow checks the decisions of shadow mode against the cluster's collector (nil in
	// active mode).
	shadow *shadowTracker
	// finishedForeground: owners whose foregroundDeletion finalizer this engine has
	// removed. The graph still shows the finalizer until the update event arrives; a
	// dependent examined meanwhile must not take its owner for waiting (upstream's GET
	// would not).
	finishedForeground *uidSet

	// discoveryProblem, when set, says why the engine monitors nothing: discovery found no
	// resource; it retries every DiscoveryPeriod (as upstream's Sync does).
	discoveryProblem atomic.Pointer[string]
	// groupFailures are the group versions the last discovery could not read.
	groupFailures groupFailures
	// failing are the monitors last seen failing (noteRecoveredMonitors).
	failingMu sync.Mutex
	failing   map[string]string

	resourcesMu sync.RWMutex
	resources   map[schema.GroupVersionResource]resourceInfo

	rediscover chan struct{} // RefreshDiscovery's requests

	started chan struct{} // closed once the first monitor sync is over
	synced  chan struct{} // closed once every monitor has synced at least once
}

// New builds an engine; Run starts it.
func New(clients Clients, opts Options) (*GarbageCollector, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	gc := &GarbageCollector{
		opts:               opts,
		log:                opts.Logger,
		metadata:           clients.Metadata,
		discovery:          clients.Discovery,
		mapper:             restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(clients.Discovery)),
		ignored:            map[schema.GroupResource]bool{},
		feed:               newFeed(opts.FeedSize, time.Now),
		graph:              newGraph(),
		absentOwners:       NewReferenceCache(absentOwnerCacheSize),
		finishedForeground: newUIDSet(),
		rediscover:         make(chan struct{}, 1),
		started:            make(chan struct{}),
		synced:             make(chan struct{}),
	}
	for _, gr := range opts.IgnoredResources {
		gc.ignored[gr] = true
	}
	gc.slowMotion.Store(opts.ActionDelay > 0 && !opts.SlowMotionOff)
	gc.metrics = newMetrics(gc.graph)
	if opts.Mode == ModeShadow {
		gc.shadow = newShadowTracker(opts.ShadowOverdue, time.Now, gc.feed.publish, gc.metrics)
	}
	describeNode := func(n *node) (ObjectRef, string) { return refOf(n.identity), "" }
	gc.attemptToDelete = newWorkQueue(AttemptToDelete, gc.feed, gc.metrics.queues, describeNode)
	gc.attemptToOrphan = newWorkQueue(AttemptToOrphan, gc.feed, gc.metrics.queues, describeNode)
	graphChanges := newWorkQueue(GraphChanges, gc.feed, gc.metrics.queues, (*event).describe)

	if clients.Events != nil && opts.Mode == ModeActive {
		gc.events = record.NewBroadcaster()
		gc.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.Events.Events("")})
		gc.recorder = gc.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "gcscope-garbage-collector"})
	}
	gc.builder = &GraphBuilder{
		graph:            gc.graph,
		feed:             gc.feed,
		graphChanges:     graphChanges,
		attemptToDelete:  gc.attemptToDelete,
		attemptToOrphan:  gc.attemptToOrphan,
		absentOwnerCache: gc.absentOwners,
		deletedUIDs:      newUIDSet(),
		warn:             func(obj objectReference, reason, msg string) { gc.warn(GraphChanges, obj, reason, msg) },
		processed:        gc.metrics.graphProcessed.Inc,
		shadow:           gc.shadow,
	}
	gc.builder.monitors = newMonitors(opts.Logger, clients.Metadata, graphChanges.Add)
	gc.builder.monitors.onChange = gc.publishSync
	gc.builder.monitors.slowAfter = opts.SyncTimeout
	return gc, nil
}

// NewForConfig builds an engine talking to the cluster of cfg.
func NewForConfig(cfg *rest.Config, opts Options) (*GarbageCollector, error) {
	clients, err := ClientsForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return New(clients, opts)
}

// Feed is the engine's event stream.
func (gc *GarbageCollector) Feed() *Feed { return gc.feed }

// Registry holds the engine's Prometheus metrics.
func (gc *GarbageCollector) Registry() *prometheus.Registry { return gc.metrics.registry }

// Mode is the mode the engine runs in.
func (gc *GarbageCollector) Mode() Mode { return gc.opts.Mode }

// ActionDelay is the slow-motion delay before each write, as configured.
func (gc *GarbageCollector) ActionDelay() time.Duration { return gc.opts.ActionDelay }

// SlowMotion reports whether writes wait the ActionDelay now.
func (gc *GarbageCollector) SlowMotion() bool { return gc.opts.ActionDelay > 0 && gc.slowMotion.Load() }

// SetSlowMotion switches the ActionDelay on or off and reports the result: without a
// configured delay there is nothing to switch on.
func (gc *GarbageCollector) SetSlowMotion(on bool) bool {
	gc.slowMotion.Store(on)
	return gc.SlowMotion()
}

// Started is closed once the engine's workers run (after its first monitor sync, complete
// or timed out).
func (gc *GarbageCollector) Started() <-chan struct{} { return gc.started }

// Synced is closed once every monitor has synced at least once.
func (gc *GarbageCollector) Synced() <-chan struct{} { return gc.synced }

// SyncState reports the monitored resources and which have not synced.
func (gc *GarbageCollector) SyncState() SyncState {
	st := gc.builder.monitors.state()
	if p := gc.discoveryProblem.Load(); p != nil {
		st.Discovery = *p
	}
	st.DiscoveryFailures = gc.groupFailures.current()
	return st
}

func (gc *GarbageCollector) publishSync() {
	st := gc.SyncState()
	gc.failingMu.Lock()
	for r, err := range st.Failing { // remembered until noteRecoveredMonitors sees it recover
		if gc.failing == nil {
			gc.failing = map[string]string{}
		}
		gc.failing[r] = err
	}
	gc.failingMu.Unlock()
	gc.feed.publish(Event{Type: SyncChange, Sync: &st})
}

// setDiscoveryProblem records (or, with "", clears) why discovery gave nothing.
func (gc *GarbageCollector) setDiscoveryProblem(problem string) {
	old := gc.discoveryProblem.Load()
	switch {
	case problem == "" && old == nil:
		return
	case problem == "":
		gc.discoveryProblem.Store(nil)
	default:
		gc.discoveryProblem.Store(&problem)
	}
	gc.publishSync()
}

func (gc *GarbageCollector) setResources(r map[schema.GroupVersionResource]resourceInfo) {
	gc.resourcesMu.Lock()
	gc.resources = r
	gc.resourcesMu.Unlock()
}

// Run discovers the resources, starts the monitors and the graph builder, waits (bounded)
// for the monitors to sync, then runs the workers and the periodic discovery sync until
// ctx ends. It returns an error only if the engine could not start.
func (gc *GarbageCollector) Run(ctx context.Context) error {
	resources, err := deletableResources(gc.discovery, gc.ignored)
	if len(resources) == 0 {
		// As upstream: no resource yet is no reason to stop; the discovery sync retries.
		gc.log.Warn("discovery found no resources to monitor; retrying every period", "err", err, "period", gc.opts.DiscoveryPeriod)
		gc.metrics.syncErrors.Inc()
		gc.discoveryProblem.Store(ptr.To(noResourcesProblem(err, gc.opts.DiscoveryPeriod)))
	} else if err != nil {
		gc.log.Warn("partial discovery; monitoring what was found", "err", err)
		gc.metrics.syncErrors.Inc()
	}
	gc.noteGroupFailures(err)
	gc.setResources(resources)
	if err := gc.builder.monitors.sync(resources); err != nil {
		gc.log.Warn("starting monitors", "err", err)
		gc.metrics.syncErrors.Inc()
	}
	if gc.events != nil {
		defer gc.events.Shutdown()
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer gc.builder.graphChanges.ShutDown()
	defer gc.attemptToDelete.ShutDown()
	defer gc.attemptToOrphan.ShutDown()

	gc.builder.monitors.start(ctx)
	wg.Go(gc.builder.runProcessGraphChanges)

	start := time.Now()
	if gc.builder.monitors.waitForSync(ctx, gc.opts.SyncTimeout) {
		gc.log.Info("garbage collector synced", "resources", len(resources), "after", time.Since(start).Round(time.Millisecond))
		close(gc.synced)
	} else if ctx.Err() == nil {
		st := gc.builder.monitors.state()
		gc.log.Warn("starting the garbage collector without the monitors that have not synced", "unsynced", st.Unsynced, "failing", st.Failing)
		gc.metrics.syncErrors.Inc()
		wg.Go(func() {
			if gc.builder.monitors.waitForSync(ctx, 24*365*time.Hour) {
				close(gc.synced)
				gc.publishSync()
			}
		})
	}
	gc.publishSync()
	close(gc.started)

	for range gc.opts.Workers {
		wg.Go(func() { gc.runAttemptToDeleteWorker(ctx) })
		wg.Go(func() { gc.runAttemptToOrphanWorker(ctx) })
	}
	wg.Go(func() { gc.syncDiscovery(ctx, gc.opts.DiscoveryPeriod, resources) })
	if gc.shadow != nil {
		wg.Go(func() { gc.shadow.run(ctx) })
	}
	wg.Go(func() { gc.resetMapperEvery(ctx, gc.opts.DiscoveryPeriod) })
	<-ctx.Done()
	return nil
}

type workQueueItemAction int

const (
	forgetItem workQueueItemAction = iota
	requeueItem
)

func (gc *GarbageCollector) runAttemptToDeleteWorker(ctx context.Context) {
	for gc.processAttemptToDeleteWorker(ctx) {
	}
}

func (gc *GarbageCollector) processAttemptToDeleteWorker(ctx context.Context) bool {
	item, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(item)
	switch gc.attemptToDeleteWorker(ctx, item) {
	case forgetItem:
		gc.attemptToDelete.Forget(item)
	case requeueItem:
		gc.attemptToDelete.AddRateLimited(item)
	}
	return true
}

func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, item *node) workQueueItemAction {
	gc.graph.mu.RLock()
	current, inGraph := gc.graph.read(item.identity.UID)
	stale := item.virtual && (!inGraph || !current.virtual)
	gc.graph.mu.RUnlock()
	if stale {
		// A requeued virtual node whose object has since been observed (or removed): the
		// graph's own node carries on.
		return forgetItem
	}

	err := gc.attemptToDeleteItem(ctx, item)
	var mappingErr *restMappingError
	switch {
	case errors.Is(err, errEnqueuedVirtualDeleteEvent):
		return forgetItem // the graph builder takes it from here
	case errors.Is(err, errNamespacedOwnerOfClusterScopedObject):
		// Retrying cannot fix it. If the item is the virtual owner that cluster-scoped
		// dependents named, have them checked: each gets its Warning event.
		gc.graph.mu.RLock()
		deps := item.dependentList()
		virtual := item.virtual
		gc.graph.mu.RUnlock()
		if virtual {
			for _, d := range deps {
				gc.attemptToDelete.Add(d)
			}
		}
		return forgetItem
	case ctx.Err() != nil:
		return forgetItem
	case errors.As(err, &mappingErr):
		gc.requeue(AttemptToDelete, item, mappingErr.Message())
		return requeueItem
	case err != nil:
		gc.requeue(AttemptToDelete, item, err.Error())
		return requeueItem
	}
	gc.graph.mu.RLock()
	virtual := item.virtual
	gc.graph.mu.RUnlock()
	if virtual {
		// Not observed through an informer yet: check again later, or a virtual node for
		// an object created and deleted while a watch was down could stay forever.
		gc.requeue(AttemptToDelete, item, "exists but not observed by a monitor yet")
		return requeueItem
	}
	return forgetItem
}

func (gc *GarbageCollector) requeue(q QueueName, item *node, why string) {
	gc.record(Action{Queue: q, Verb: VerbRequeue, Object: refOf(item.identity), Reason: why}, time.Time{}, nil)
}

func (gc *GarbageCollector) keep(item *node, why string) {
	gc.record(Action{Queue: AttemptToDelete, Verb: VerbKeep, Object: refOf(item.identity), Reason: why}, time.Time{}, nil)
}

// itemView is what a worker needs of a node, copied under the graph lock.
type itemView struct {
	beingDeleted, deletingDependents bool
	dependents                       int
	anyDependentDeletingDependents   bool
	// idle blockers: blocking dependents that are not deleting dependents themselves.
	blockers, idleBlockers []*node
}

func (gc *GarbageCollector) view(n *node) itemView {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	v := itemView{beingDeleted: n.beingDeleted, deletingDependents: n.deletingDependents, dependents: len(n.dependents)}
	for d := range n.dependents {
		if d.deletingDependents {
			v.anyDependentDeletingDependents = true
		}
	}
	v.blockers = n.blockingDependents()
	for _, d := range v.blockers {
		if !d.deletingDependents {
			v.idleBlockers = append(v.idleBlockers, d)
		}
	}
	return v
}

// attemptToDeleteItem decides the fate of one item, as upstream: it communicates with the
// apiserver and may delete or patch the item.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, item *node) error {
	v := gc.view(item)
	// Being deleted is a one-way trip: wait for the final deletion, whose event queues
	// the dependents.
	if v.beingDeleted && !v.deletingDependents {
		gc.keep(item, "being deleted; waiting for its other finalizers")
		return nil
	}
	latest, observed := gc.observedMetadata(item.identity)
	var err error
	if !observed {
		gc.graph.mu.RLock()
		virtual := item.virtual
		gc.graph.mu.RUnlock()
		if !virtual {
			return nil // an observed item that left the graph: its delete was seen
		}
		latest, err = gc.getObject(ctx, AttemptToDelete, item.identity, "verify the item", nil)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Virtual nodes of owners that do not exist leave the graph this way.
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDeleteEvent
	case err != nil:
		return err
	case latest.UID != item.identity.UID:
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDeleteEvent
	}

	if v.deletingDependents {
		return gc.processDeletingDependentsItem(ctx, item, v)
	}

	refs := latest.OwnerReferences
	if len(refs) == 0 {
		gc.keep(item, "has no owners")
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, item, refs, true)
	if err != nil {
		return err
	}
	if len(solid) > 0 && (len(dangling) > 0 || len(waiting) > 0) {
		// The patch below rests on the solid owners still being there, which the graph
		// learns only when their delete events arrive: ask the apiserver about them, as
		// upstream does, so that a dependent of owners deleted together is deleted as it
		// stands rather than first stripped of the references to the ones that went first.
		// (Absent and waiting owners stay as classified: both are one-way.)
		stillSolid, nowDangling, nowWaiting, err := gc.classifyReferences(ctx, item, solid, false)
		if err != nil {
			return err
		}
		solid, dangling, waiting = stillSolid, append(dangling, nowDangling...), append(waiting, nowWaiting...)
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			gc.keep(item, "owner "+describeRefs(solid)+" exists")
			return nil
		}
		// Keep the object for its solid owners, but drop the references to absent owners,
		// and to owners waiting for their dependents, which would otherwise wait forever.
		uids := append(refUIDs(dangling), refUIDs(waiting)...)
		a := Action{Queue: AttemptToDelete, Verb: VerbRemoveRefs, Object: refOf(item.identity), Refs: uids,
			Reason: removeRefsReason(solid, append(dangling, waiting...))}
		_, err := gc.patch(ctx, a, item.identity, deleteOwnerRefStrategicMergePatch(item.identity.UID, uids...),
			func(live *metav1.PartialObjectMetadata) []byte {
				return ownerRefsJSONMergePatch(live, withoutOwners(live.OwnerReferences, uids...))
			})
		return err

	case len(waiting) > 0 && v.dependents > 0:
		if blocking := blockingRefs(refs); v.anyDependentDeletingDependents && len(blocking) > 0 {
			// A dependent of this item also waits for its dependents: there may be a cycle.
			// Stop this item blocking its owners first, so no one waits on anyone forever.
			a := Action{Queue: AttemptToDelete, Verb: VerbUnblock, Object: refOf(item.identity), Refs: refUIDs(blocking),
				Reason: "a dependent is itself deleting its dependents: unblocking owners to break a possible cycle"}
			_, err := gc.patch(ctx, a, item.identity, unblockOwnerRefsStrategicMergePatch(item.identity.UID, blocking),
				func(live *metav1.PartialObjectMetadata) []byte {
					return ownerRefsJSONMergePatch(live, unblocked(live.OwnerReferences))
				})
			if err != nil {
				return err
			}
			// As upstream, the delete below still carries the resourceVersion (and the
			// ownerReferences) the decision was made on: the patch changed both, so it
			// earns a 409 and the item is decided again on the patched object, usually
			// ending in a Background delete once the waiting owner is gone.
		}
		// Its owner waits for it, and it has dependents of its own: delete it in the
		// foreground too, so the wait extends down the chain.
		return gc.deleteObject(ctx, AttemptToDelete, item.identity, latest, metav1.DeletePropagationForeground,
			"owner "+describeRefs(waiting)+" is deleting its dependents, and this item has dependents of its own")

	default:
		// No owner left: collect it, honouring the policy its own finalizers ask for.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		why := "all owners are gone: " + describeRefs(dangling)
		if len(waiting) > 0 {
			why = "its owners are being deleted in the foreground: " + describeRefs(append(dangling, waiting...))
		}
		return gc.deleteObject(ctx, AttemptToDelete, item.identity, latest, policy, why)
	}
}

// processDeletingDependentsItem finishes a foreground deletion once no blocking dependent
// remains, and otherwise makes sure the blockers are being worked on.
func (gc *GarbageCollector) processDeletingDependentsItem(ctx context.Context, item *node, v itemView) error {
	if len(v.blockers) == 0 {
		err := gc.removeFinalizer(ctx, AttemptToDelete, item.identity, metav1.FinalizerDeleteDependents,
			"no blocking dependents remain: the foreground deletion can finish")
		if err == nil && gc.opts.Mode == ModeActive {
			gc.finishedForeground.Add(item.identity.UID)
		}
		return err
	}
	gc.keep(item, "waiting for "+counted(len(v.blockers), "blocking dependent"))
	for _, dep := range v.idleBlockers {
		gc.attemptToDelete.Add(dep)
	}
	return nil
}

// classifyReferences sorts an item's live ownerReferences: solid (the owner exists and is
// not waiting for its dependents), dangling (absent: not found, another uid, or in
// another namespace) and waiting for dependents' deletion (foreground in progress).
//
// fromGraph: an owner the graph observed is taken as the graph last saw it, without asking
// the apiserver.
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference, fromGraph bool) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := gc.isDangling(ctx, ref, item, fromGraph)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) &&
			!gc.finishedForeground.Has(owner.UID):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling looks ref's owner up (in the absent-owner cache first) and reports whether
// it is absent. The owner is looked for in the dependent's namespace: a reference to an
// object of another namespace is dangling.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node, fromGraph bool) (bool, *metav1.PartialObjectMetadata, error) {
	key := objectReference{OwnerReference: ownerCoordinates(ref)}
	if gc.absentOwners.Has(key) {
		return true, nil, nil // a cluster-scoped owner known absent
	}
	key.Namespace = item.identity.Namespace
	if gc.absentOwners.Has(key) {
		return true, nil, nil
	}
	gvr, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && namespaced {
		// Upstream records no event here (it logs); the reason goes on the feed only.
		gc.keep(item, fmt.Sprintf("ownerRef [%s/%s, name: %s, uid: %s] is namespaced, but %s %s is cluster-scoped: the reference is invalid and the object is never collected for it",
			ref.APIVersion, ref.Kind, ref.Name, ref.UID, item.identity.Kind, item.identity.Name))
		return false, nil, errNamespacedOwnerOfClusterScopedObject
	}
	if gc.builder.deletedUIDs.Has(ref.UID) {
		gc.absentOwners.Add(key)
		return true, nil, nil // seen deleted: uids never come back
	}
	if fromGraph {
		if owner, ok := gc.observedOwner(ref, key.Namespace); ok {
			return false, owner, nil
		}
	}
	owner, err := gc.getObject(ctx, AttemptToDelete, key, lookUpOwnerOf+item.identity.Kind+" "+item.identity.Name, ptr.To(refOf(item.identity)))
	switch {
	case apierrors.IsNotFound(err):
		// The mapper may be stale: a version the apiserver stopped serving answers 404 as
		// well. Only a 404 from a version served right now proves the owner absent.
		served, derr := gc.servedNow(gvr)
		if derr != nil {
			return false, nil, derr
		}
		if !served {
			gc.mapper.Reset()
			return false, nil, &restMappingError{kind: ref.Kind, version: ref.APIVersion}
		}
		gc.absentOwners.Add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	case owner.UID != ref.UID:
		gc.absentOwners.Add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func (gc *GarbageCollector) runAttemptToOrphanWorker(ctx context.Context) {
	for gc.processAttemptToOrphanWorker(ctx) {
	}
}

func (gc *GarbageCollector) processAttemptToOrphanWorker(ctx context.Context) bool {
	item, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(item)
	err := gc.attemptToOrphanItem(ctx, item)
	if err != nil && ctx.Err() == nil {
		gc.requeue(AttemptToOrphan, item, err.Error())
		gc.attemptToOrphan.AddRateLimited(item)
		return true
	}
	gc.attemptToOrphan.Forget(item)
	return true
}

// attemptToOrphanItem removes the owner's reference from all its dependents, then the
// orphan finalizer from the owner, which lets the apiserver delete it.
func (gc *GarbageCollector) attemptToOrphanItem(ctx context.Context, owner *node) error {
	gc.graph.mu.RLock()
	deps := owner.dependentList()
	refs := make([]objectReference, len(deps))
	for i, d := range deps {
		refs[i] = d.identity
	}
	gc.graph.mu.RUnlock()
	if err := gc.orphanDependents(ctx, owner.identity, refs); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, AttemptToOrphan, owner.identity, metav1.FinalizerOrphanDependents,
		fmt.Sprintf("%d dependents orphaned", len(refs)))
}

// warn records a Warning event on obj (or, in shadow mode, only on the feed).
func (gc *GarbageCollector) warn(q QueueName, obj objectReference, reason, message string) {
	a := Action{Queue: q, Verb: VerbWarn, Object: refOf(obj), Reason: reason + ": " + message, Shadow: gc.recorder == nil}
	gc.record(a, time.Time{}, nil)
	if gc.recorder != nil {
		gc.recorder.Event(&corev1.ObjectReference{
			APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
		}, corev1.EventTypeWarning, reason, message)
	}
}

func blockingRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if isBlocking(r) {
			out = append(out, r)
		}
	}
	return out
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// removeRefsReason says why references are removed, and which: the patch removes by uid
// (as upstream's does), so a solid reference that shares its uid with a removed one goes
// too, and the reason says so rather than claim it stays.
func removeRefsReason(solid, removed []metav1.OwnerReference) string {
	gone := map[types.UID]bool{}
	for _, r := range removed {
		gone[r.UID] = true
	}
	var kept, collateral []metav1.OwnerReference
	for _, r := range solid {
		if gone[r.UID] {
			collateral = append(collateral, r)
		} else {
			kept = append(kept, r)
		}
	}
	why := "removing references to " + describeRefs(removed)
	if len(kept) > 0 {
		why = "owner " + describeRefs(kept) + " exists; " + why
	}
	if len(collateral) > 0 {
		why += fmt.Sprintf("; the reference to %s goes too: it has the same uid %s, and references are removed by uid, so both references with that uid go",
			describeRefs(collateral), collateral[0].UID)
	}
	return why
}

func describeRefs(refs []metav1.OwnerReference) string {
	s := ""
	for i, r := range refs {
		if i > 0 {
			s += ", "
		}
		s += r.Kind + " " + r.Name
	}
	return s
}
