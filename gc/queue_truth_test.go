package gc

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The feed's queue mirror must end where the work queue is: its depth is the
// workqueue_depth metric, its in-flight count the items workers hold. A transition whose
// feed event is published out of order with another transition of the same queue (an add
// told after a worker took the item) leaves the mirror wrong for good.

// truthQueue is a work queue on a feed and metrics of its own. Its describe, which runs
// between a transition and its feed event, can stall once, so that a test can let another
// transition of the queue run in that window if the queue allows it.
type truthQueue[T comparable] struct {
	*workQueue[T]
	feed  *Feed
	depth prometheus.Gauge
	stall atomic.Pointer[func()]
}

func newTruthQueue[T comparable](t *testing.T, name QueueName, describe func(T) (ObjectRef, string)) *truthQueue[T] {
	tq := &truthQueue[T]{feed: newFeed(1<<16, time.Now)}
	qm := newQueueMetrics(prometheus.NewRegistry())
	tq.depth = qm.depth.WithLabelValues(queueMetricNames[name])
	tq.workQueue = newWorkQueue(name, tq.feed, qm, func(item T) (ObjectRef, string) {
		if f := tq.stall.Swap(nil); f != nil {
			(*f)()
		}
		return describe(item)
	})
	t.Cleanup(tq.ShutDown)
	return tq
}

// stallNext makes the next describe wait until proceed is closed, or at most a while: a
// queue that makes transitions atomic keeps the other transition out until then.
func (tq *truthQueue[T]) stallNext(proceed <-chan struct{}) {
	f := func() {
		select {
		case <-proceed:
		case <-time.After(300 * time.Millisecond):
		}
	}
	tq.stall.Store(&f)
}

func (tq *truthQueue[T]) mirror() QueueState {
	tq.feed.mu.Lock()
	defer tq.feed.mu.Unlock()
	return tq.feed.queues[tq.name].state()
}

func gaugeValue(g prometheus.Gauge) int {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetGauge().GetValue())
}

// check: the mirror's depth is the depth metric, which is want, and inFlight items are in
// flight.
func (tq *truthQueue[T]) check(t *testing.T, when string, want, inFlight int) {
	t.Helper()
	m := tq.mirror()
	if got := gaugeValue(tq.depth); got != want {
		t.Fatalf("%s: workqueue_depth = %d, the test expects %d", when, got, want)
	}
	if m.Depth != want || m.InFlight != inFlight {
		t.Errorf("%s: the feed's mirror says depth %d, in flight %d; the queue has depth %d, in flight %d (items %+v)",
			when, m.Depth, m.InFlight, want, inFlight, m.Items)
	}
	if want == 0 && inFlight == 0 && len(m.Items) != 0 {
		t.Errorf("%s: the queue is empty but the mirror still lists %+v", when, m.Items)
	}
}

func truthNode(name string) *node {
	return &node{identity: objectReference{Namespace: "default", OwnerReference: metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID("uid-" + name)}}}
}

func truthEvent(name string, t eventType) *event {
	return &event{eventType: t, gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}}
}

// getAsync takes an item in a goroutine, as a worker does.
func getAsync[T comparable](q *workQueue[T]) <-chan T {
	got := make(chan T, 1)
	go func() {
		item, shutdown := q.Get()
		if !shutdown {
			got <- item
		}
		close(got)
	}()
	return got
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the queue shut down", what)
		}
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing within 5s", what)
	}
	panic("unreachable")
}

// A worker waiting for an item takes it while the add is being told: the add must still
// be told first.
func TestQueueTruthAddIsToldBeforeTheTake(t *testing.T) {
	tq := newTruthQueue(t, AttemptToDelete, describeTestNode)
	n := truthNode("a")
	got := getAsync(tq.workQueue)
	taken := make(chan struct{})
	tq.stallNext(taken)
	go func() { <-got; close(taken) }()
	tq.Add(n)
	<-taken
	tq.check(t, "added and taken", 0, 1)
	tq.Done(n)
	tq.Forget(n)
	tq.check(t, "done", 0, 0)
}

// A worker finishes an item that was added again meanwhile, and another worker takes it
// at once: the first worker's done must be told before the second one's take.
func TestQueueTruthDoneIsToldBeforeTheNextTake(t *testing.T) {
	tq := newTruthQueue(t, AttemptToDelete, describeTestNode)
	n := truthNode("a")
	tq.Add(n)
	first := recv(t, getAsync(tq.workQueue), "first worker")
	tq.Add(n) // in flight: marked to go back in when done
	tq.check(t, "added again while in flight", 1, 1)

	second := getAsync(tq.workQueue)
	taken := make(chan struct{})
	tq.stallNext(taken)
	go func() { <-second; close(taken) }()
	tq.Done(first)
	<-taken
	tq.check(t, "done and taken again", 0, 1)
	tq.Done(n)
	tq.check(t, "done again", 0, 0)
}

// An item is added again while the worker's take of it is being told: the add finds it in
// flight (the depth metric counts it), and must be told after the take.
func TestQueueTruthTakeIsToldBeforeTheNextAdd(t *testing.T) {
	tq := newTruthQueue(t, AttemptToDelete, describeTestNode)
	n := truthNode("a")
	tq.Add(n)
	added := make(chan struct{})
	tq.stallNext(added)
	got := getAsync(tq.workQueue)
	// The worker has taken it and is telling so.
	testkit.EventuallyWithin(t, 5*time.Second, "the worker takes the item", func() bool { return tq.Len() == 0 })
	tq.Add(n)
	close(added)
	recv(t, got, "worker")
	tq.check(t, "taken and added again", 1, 1)
	tq.Done(n)
	tq.check(t, "done: back in the queue", 1, 0)
	again := recv(t, getAsync(tq.workQueue), "worker")
	tq.Done(again)
	tq.check(t, "taken and done", 0, 0)
}

// graphChanges holds one item per observed change, never merged: three changes of one
// object are three items.
func TestQueueTruthGraphChangesCountsEveryChange(t *testing.T) {
	tq := newTruthQueue(t, GraphChanges, (*event).describe)
	tq.Add(truthEvent("a", addEvent))
	tq.Add(truthEvent("a", updateEvent))
	tq.Add(truthEvent("a", updateEvent))
	tq.Add(truthEvent("b", addEvent))
	tq.check(t, "four changes of two objects", 4, 0)
	ev := recv(t, getAsync(tq.workQueue), "graph builder")
	tq.check(t, "one taken", 3, 1)
	tq.Done(ev)
	tq.Forget(ev)
	for tq.Len() > 0 {
		ev := recv(t, getAsync(tq.workQueue), "graph builder")
		tq.Done(ev)
		tq.Forget(ev)
	}
	tq.check(t, "all processed", 0, 0)
}

// A node queue holds each node once, but two nodes of one uid (a virtual owner and the
// replacement that corrects its identity) are two items.
func TestQueueTruthTwoNodesOfOneUID(t *testing.T) {
	tq := newTruthQueue(t, AttemptToDelete, describeTestNode)
	n := truthNode("a")
	replacement := n.clone()
	replacement.identity.Kind = "Secret"
	tq.Add(n)
	tq.Add(n)
	tq.check(t, "one node added twice", 1, 0)
	tq.Add(replacement)
	tq.check(t, "and its replacement", 2, 0)
	for range 2 {
		item := recv(t, getAsync(tq.workQueue), "worker")
		tq.Done(item)
		tq.Forget(item)
	}
	tq.check(t, "both processed", 0, 0)
}

// TestQueueTruthUnderChurn: producers add nodes (some again and again, some while in
// flight) and graph changes, workers take them, requeue some with backoff and finish;
// once all is done, the mirror of each queue is empty, as the queue is.
func TestQueueTruthUnderChurn(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			nodes := newTruthQueue(t, AttemptToDelete, describeTestNode)
			changes := newTruthQueue(t, GraphChanges, (*event).describe)
			pool := make([]*node, 40)
			for i := range pool {
				pool[i] = truthNode(fmt.Sprint("n", i))
			}
			const producers, workers, adds = 4, 6, 3000
			var pending sync.WaitGroup // items not done for good
			var wg sync.WaitGroup
			var remaining atomic.Int64
			remaining.Store(producers * adds)
			for p := range producers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(p)))
					for i := range adds {
						if r.IntN(3) == 0 {
							changes.Add(truthEvent(fmt.Sprint("n", r.IntN(len(pool))), eventType(r.IntN(3))))
						} else {
							nodes.Add(pool[r.IntN(len(pool))])
						}
						remaining.Add(-1)
						if i%64 == 0 {
							time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond) // jitter: other interleavings each seed
						}
					}
				})
			}
			var retried sync.Map // each node is requeued with backoff at most once
			for w := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, 100+uint64(w)))
					for {
						n, shutdown := nodes.Get()
						if shutdown {
							return
						}
						if r.IntN(4) == 0 {
							time.Sleep(time.Duration(r.IntN(100)) * time.Microsecond) // jitter, as above
						}
						if _, again := retried.LoadOrStore(n, true); !again && r.IntN(8) == 0 {
							pending.Add(1)
							nodes.AddRateLimited(n)
							time.AfterFunc(50*time.Millisecond, pending.Done) // past the limiter's first delay
						} else {
							nodes.Forget(n)
						}
						nodes.Done(n)
					}
				})
			}
			wg.Go(func() {
				for {
					ev, shutdown := changes.Get()
					if shutdown {
						return
					}
					changes.Done(ev)
					changes.Forget(ev)
				}
			})
			quiet := func() bool {
				return remaining.Load() == 0 && nodes.Len() == 0 && changes.Len() == 0 &&
					gaugeValue(nodes.depth) == 0 && gaugeValue(changes.depth) == 0
			}
			settled := 0
			testkit.EventuallyEvery(t, 10*time.Millisecond, "the queues stay quiet for 20 checks in a row", func() bool {
				if quiet() {
					settled++
				} else {
					settled = 0
				}
				return settled >= 20
			})
			pending.Wait()
			// pending's last Done comes 50 ms after its AddRateLimited: the add itself is due
			// by then, and must have been worked off too.
			testkit.EventuallyEvery(t, 10*time.Millisecond, "the queues are quiet after the retries", quiet)
			nodes.ShutDown()
			changes.ShutDown()
			wg.Wait()
			nodes.check(t, "attemptToDelete after the churn", 0, 0)
			changes.check(t, "graphChanges after the churn", 0, 0)
		})
	}
}
