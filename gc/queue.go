package gc

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// workQueue is a client-go work queue whose every transition is published to the feed.
// It applies upstream's rate limiting itself (per-item exponential backoff 5 ms → 1000 s
// and an overall 10 qps / 100 burst bucket) so that each backoff delay can be reported.
//
// Each transition and its feed event are one step under mu, so the feed tells them in
// the order they happened and a reader that follows them ends with the queue's true
// depth. Taking an item is such a step too: workers wait on ready, not inside the
// client-go queue, and take an item only when one is there, so its Get never blocks.
type workQueue[T comparable] struct {
	name     QueueName
	queue    workqueue.TypedInterface[T]
	limiter  workqueue.TypedRateLimiter[T]
	retries  workqueue.CounterMetric
	feed     *Feed
	describe func(T) (ObjectRef, string) // the item's object and, for graph changes, the change

	mu       sync.Mutex
	ready    *sync.Cond // an item may be there to take, or the queue shut down
	shutdown bool
	// waiting are the items added and not yet taken (client-go's dirty set, which its
	// depth metric counts); inFlight counts the items taken and not yet done.
	waiting  map[T]struct{}
	inFlight int
	// retryingSince: when each item requeued with backoff was first requeued since it was
	// last forgotten, i.e. since when the collector has been retrying it (its work keeps
	// failing, or waits for something). Forget ends it.
	retryingSince map[T]time.Time
	now           func() time.Time
}

func newWorkQueue[T comparable](name QueueName, feed *Feed, m workqueue.MetricsProvider, describe func(T) (ObjectRef, string)) *workQueue[T] {
	metricName := queueMetricNames[name]
	q := &workQueue[T]{
		name:     name,
		queue:    workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: metricName, MetricsProvider: m}),
		limiter:  workqueue.DefaultTypedControllerRateLimiter[T](),
		retries:  m.NewRetriesMetric(metricName),
		feed:     feed,
		describe: describe,
		waiting:  map[T]struct{}{},

		retryingSince: map[T]time.Time{},
		now:           time.Now,
	}
	q.ready = sync.NewCond(&q.mu)
	return q
}

// emit publishes one transition of item. Requires q.mu.
func (q *workQueue[T]) emit(op QueueOp, item T, delay time.Duration, merged bool) {
	obj, change := q.describe(item)
	q.feed.publish(Event{Type: QueueChange, Queue: &QueueEvent{
		Queue: q.name, Op: op, Object: obj, Change: change, Delay: delay, Retries: q.limiter.NumRequeues(item),
		Merged: merged, Counts: &QueueCounts{Depth: len(q.waiting), InFlight: q.inFlight},
	}})
}

// Add queues item now. If it is waiting already, it stays where it is; if a worker has
// it, it goes back in when the worker is done.
func (q *workQueue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	_, merged := q.waiting[item]
	q.waiting[item] = struct{}{}
	q.queue.Add(item)
	q.emit(QueueAdded, item, 0, merged)
	q.ready.Signal()
}

// AddRateLimited queues item again after its backoff.
func (q *workQueue[T]) AddRateLimited(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	delay := q.limiter.When(item)
	if _, ok := q.retryingSince[item]; !ok {
		q.retryingSince[item] = q.now()
	}
	q.retries.Inc()
	q.emit(QueueAddedAfter, item, delay, false)
	time.AfterFunc(delay, func() { q.Add(item) })
}

// Forget resets item's backoff.
func (q *workQueue[T]) Forget(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limiter.Forget(item)
	delete(q.retryingSince, item)
	q.emit(QueueForgotten, item, 0, false)
}

// retrying reports how many items the queue is retrying (requeued with backoff and not
// forgotten since) and for how long the one retried longest has been (0: none).
func (q *workQueue[T]) retrying() (items int, longest time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for _, since := range q.retryingSince {
		longest = max(longest, now.Sub(since))
	}
	return len(q.retryingSince), longest
}

// Get blocks until an item is available or the queue shuts down.
func (q *workQueue[T]) Get() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.queue.Len() == 0 && !q.shutdown {
		q.ready.Wait()
	}
	if q.queue.Len() == 0 {
		var none T
		return none, true
	}
	// Items leave the client-go queue only here, under mu: this Get returns at once.
	item, _ := q.queue.Get()
	delete(q.waiting, item)
	q.inFlight++
	q.emit(QueueTaken, item, 0, false)
	return item, false
}

// Done marks item finished; if it was added meanwhile, it goes back in.
func (q *workQueue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue.Done(item)
	q.inFlight--
	q.emit(QueueDone, item, 0, false)
	if _, again := q.waiting[item]; again {
		q.ready.Signal()
	}
}

// Len is the number of items a worker can take now.
func (q *workQueue[T]) Len() int { return q.queue.Len() }

// NumRequeues is how many times item has been added with backoff since it was last forgotten.
func (q *workQueue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// ShutDown stops the queue: later adds are dropped, and workers' Get returns shutdown once
// the items already queued are taken.
func (q *workQueue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.queue.ShutDown()
	q.ready.Broadcast()
}
