package difftest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gcscope/gcscope/gc"
)

// The engine's lag: from a write's answer to the feed event that shows it in the graph.
// The feed is recorded while the workload runs and matched with the writes afterwards, so
// the reader costs the engine only a copy of each event of the namespace.

// nodeSeen is one node event of the namespace on the engine's feed.
type nodeSeen struct {
	at           time.Time // the feed's stamp: when the graph had it
	removed      bool
	observed     bool
	beingDeleted bool
	owners       uint64 // ownersKey of the node's owners
}

// feedRecorder keeps the node events of one namespace, by uid, in feed order.
type feedRecorder struct {
	ns    string
	mu    sync.Mutex
	byUID map[types.UID][]nodeSeen
	// queued: when each object's observed changes entered the engine's graphChanges
	// queue, to split a lag into the informer's part and the queue's.
	queued   map[types.UID][]time.Time
	maxDepth int // of graphChanges
	lost     int // times the reader fell behind the ring and lost events
	stop     context.CancelFunc
	done     chan struct{}
}

// recordFeed follows feed from its newest event until stopped.
func recordFeed(ctx context.Context, feed *gc.Feed, ns string) *feedRecorder {
	ctx, stop := context.WithCancel(ctx)
	r := &feedRecorder{ns: ns, byUID: map[types.UID][]nodeSeen{}, queued: map[types.UID][]time.Time{}, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		feed.Follow(ctx, feed.LastSeq(), gc.Follower{
			Events: func(_ context.Context, events []gc.Event) error {
				r.mu.Lock()
				defer r.mu.Unlock()
				for _, e := range events {
					if q := e.Queue; q != nil && q.Queue == gc.GraphChanges && q.Op == gc.QueueAdded && q.Object.Namespace == ns {
						r.queued[q.Object.UID] = append(r.queued[q.Object.UID], e.Time)
						if q.Counts != nil {
							r.maxDepth = max(r.maxDepth, q.Counts.Depth)
						}
					}
					if e.Node == nil || e.Node.Namespace != ns {
						continue
					}
					owners := make([]types.UID, len(e.Node.Owners))
					for i, o := range e.Node.Owners {
						owners[i] = o.UID
					}
					r.byUID[e.Node.UID] = append(r.byUID[e.Node.UID], nodeSeen{at: e.Time, removed: e.Type == gc.NodeRemoved,
						observed: e.Node.Observed, beingDeleted: e.Node.BeingDeleted, owners: ownersKey(owners)})
				}
				return nil
			},
			Resync: func(context.Context) (uint64, error) {
				r.mu.Lock()
				r.lost++
				r.mu.Unlock()
				return feed.LastSeq(), nil
			},
		})
	}()
	return r
}

// close stops the reader; what it recorded stays.
func (r *feedRecorder) close() {
	r.stop()
	<-r.done
}

// churnLags are the engine's lags of one run, sorted.
type churnLags struct {
	all  []time.Duration
	byOp map[churnOp][]time.Duration
	// The two parts: from the write's answer into graphChanges (the apiserver's watch and
	// the engine's informer), and from there into the graph (the engine's queue).
	informer, queue []time.Duration
	unmatched       int       // writes the graph never showed
	maxDepth        int       // of graphChanges during the run
	lost            int       // times the reader fell behind the feed
	sixths          []float64 // the p99 in each sixth of the writes, in the order they were sent (ms)
}

func (l churnLags) String() string {
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d writes (create p99 %.1f, ownerReferences patch %.1f, delete %.1f); "+
		"p99 of its parts: to graphChanges %.1f ms, in graphChanges %.1f ms (deepest %d); %d never shown, reader resynced %d times; p99 in each sixth of the run %.1f ms",
		quantileMs(l.all, 0.5), quantileMs(l.all, 0.99), quantileMs(l.all, 1), len(l.all),
		quantileMs(l.byOp[churnCreate], 0.99), quantileMs(l.byOp[churnPatch], 0.99), quantileMs(l.byOp[churnDelete], 0.99),
		quantileMs(l.informer, 0.99), quantileMs(l.queue, 0.99), l.maxDepth, l.unmatched, l.lost, l.sixths)
}

// shows says whether s is what w asked of the graph.
func (w churnWrite) shows(s nodeSeen) bool {
	switch w.op {
	case churnCreate:
		return s.observed && !s.removed
	case churnPatch:
		return !s.removed && s.owners == w.owners
	default:
		return s.removed || s.beingDeleted
	}
}

// lags matches each write with the first event, published after the write was sent, that
// shows it; the lag runs from the write's answer (0 when the graph had it before the
// answer arrived).
func (r *feedRecorder) lags(writes []churnWrite) (l churnLags) {
	l.byOp = map[churnOp][]time.Duration{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range writes {
		seen := r.byUID[w.uid]
		i := sort.Search(len(seen), func(i int) bool { return !seen[i].at.Before(w.sent) })
		j := slices.IndexFunc(seen[i:], w.shows)
		if j < 0 {
			l.unmatched++
			continue
		}
		shown := seen[i+j].at
		lag := max(0, shown.Sub(w.answered))
		l.all = append(l.all, lag)
		l.byOp[w.op] = append(l.byOp[w.op], lag)
		// The last time the object entered graphChanges before it was shown.
		q := r.queued[w.uid]
		k := sort.Search(len(q), func(k int) bool { return q[k].After(shown) })
		if k > 0 && !q[k-1].Before(w.sent) {
			l.informer = append(l.informer, max(0, q[k-1].Sub(w.answered)))
			l.queue = append(l.queue, shown.Sub(q[k-1]))
		}
	}
	l.sixths = sixthsP99(l.all)
	for _, s := range append([][]time.Duration{l.all, l.informer, l.queue}, slices.Collect(maps.Values(l.byOp))...) {
		slices.Sort(s)
	}
	l.maxDepth, l.lost = r.maxDepth, r.lost
	return l
}

// sixthsP99 is the p99 of each sixth of lags, in their order (ms): a lag that grows through
// a run is not the same bound as one that holds level.
func sixthsP99(lags []time.Duration) []float64 {
	var p []float64
	for i := range 6 {
		part := slices.Clone(lags[i*len(lags)/6 : (i+1)*len(lags)/6])
		slices.Sort(part)
		p = append(p, quantileMs(part, 0.99))
	}
	return p
}

// quantile of sorted durations, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}

// recordWatch records, as recordFeed does, what a bare metadata informer on ns's
// ConfigMaps and Secrets sees and when its handler gets it: the least lag any collector
// can have, the floor the engine's lag is compared with.
func recordWatch(ctx context.Context, cfg *rest.Config, ns string) (*feedRecorder, error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	r := &feedRecorder{ns: ns, byUID: map[types.UID][]nodeSeen{}, queued: map[types.UID][]time.Time{}, stop: stop, done: make(chan struct{})}
	seen := func(obj any, removed bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		at := time.Now()
		r.mu.Lock()
		r.byUID[m.UID] = append(r.byUID[m.UID], nodeSeen{at: at, removed: removed, observed: true,
			beingDeleted: m.DeletionTimestamp != nil, owners: ownersKey(refUIDs(m.OwnerReferences))})
		r.mu.Unlock()
	}
	var synced []cache.InformerSynced
	for _, resource := range []string{"configmaps", "secrets"} {
		inf := metadatainformer.NewFilteredMetadataInformer(client, corev1.SchemeGroupVersion.WithResource(resource), ns, 0, cache.Indexers{}, nil).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { seen(obj, false) },
			UpdateFunc: func(_, obj any) { seen(obj, false) },
			DeleteFunc: func(obj any) { seen(obj, true) },
		}); err != nil {
			stop()
			return nil, err
		}
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	close(r.done) // the informers end with ctx
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		stop()
		return nil, fmt.Errorf("the watch of %s did not sync", ns)
	}
	return r, nil
}
