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
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// Now is the clock of what the engine remembers over time: the times of orphan marks
	// and their expiry (OrphanMarkTTL); default time.Now. Tests pass their own.
	Now    func() time.Time
	Logger *slog.Logger
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
	if o.Now == nil {
		o.Now = time.Now
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
	gc.metrics.registerRetrying(
		retryingQueue{AttemptToDelete, gc.attemptToDelete.retrying},
		retryingQueue{AttemptToOrphan, gc.attemptToOrphan.retrying},
	)

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
		now:              opts.Now,
	}
	gc.builder.formerOwner = gc.formerOwner
	gc.builder.monitors = newMonitors(opts.Logger, clients.Metadata, graphChanges.Add)
	gc.builder.monitors.onChange = gc.publishSync
	gc.builder.monitors.slowAfter = opts.SyncTimeout
	gc.metrics.registerSync(gc.SyncState)
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

// now is the engine's clock (Options.Now).
func (gc *GarbageCollector) now() time.Time { return gc.opts.Now() }

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
// Close releases an engine that will not be run (what was built around it failed): its
// work queues' goroutines end. Run does the same when it returns.
func (gc *GarbageCollector) Close() {
	if gc.events != nil {
		gc.events.Shutdown()
	}
	gc.builder.graphChanges.ShutDown()
	gc.attemptToDelete.ShutDown()
	gc.attemptToOrphan.ShutDown()
}

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
	wg.Go(func() { gc.expireOrphanMarksEvery(ctx, orphanMarkSweep) })
	<-ctx.Done()
	return nil
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
