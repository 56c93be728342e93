package gc

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// workQueue is a client-go work queue whose every transition is published to the feed.
// It applies upstream's rate limiting itself (per-item exponential backoff 5 ms → 1000 s
// and an overall 10 qps / 100 burst bucket) so that each backoff delay can be reported.
type workQueue[T comparable] struct {
	name     QueueName
	queue    workqueue.TypedInterface[T]
	limiter  workqueue.TypedRateLimiter[T]
	retries  workqueue.CounterMetric
	feed     *Feed
	describe func(T) (ObjectRef, string) // the item's object and, for graph changes, the change
}

func newWorkQueue[T comparable](name QueueName, feed *Feed, m workqueue.MetricsProvider, describe func(T) (ObjectRef, string)) *workQueue[T] {
	metricName := queueMetricNames[name]
	return &workQueue[T]{
		name:     name,
		queue:    workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: metricName, MetricsProvider: m}),
		limiter:  workqueue.DefaultTypedControllerRateLimiter[T](),
		retries:  m.NewRetriesMetric(metricName),
		feed:     feed,
		describe: describe,
	}
}

func (q *workQueue[T]) emit(op QueueOp, item T, delay time.Duration) {
	obj, change := q.describe(item)
	q.feed.publish(Event{Type: QueueChange, Queue: &QueueEvent{
		Queue: q.name, Op: op, Object: obj, Change: change, Delay: delay, Retries: q.limiter.NumRequeues(item),
	}})
}

// Add queues item now.
func (q *workQueue[T]) Add(item T) {
	if q.queue.ShuttingDown() {
		return
	}
	q.queue.Add(item)
	q.emit(QueueAdded, item, 0)
}

// AddRateLimited queues item again after its backoff.
func (q *workQueue[T]) AddRateLimited(item T) {
	if q.queue.ShuttingDown() {
		return
	}
	delay := q.limiter.When(item)
	q.retries.Inc()
	q.emit(QueueAddedAfter, item, delay)
	time.AfterFunc(delay, func() { q.Add(item) })
}

// Forget resets item's backoff.
func (q *workQueue[T]) Forget(item T) {
	q.limiter.Forget(item)
	q.emit(QueueForgotten, item, 0)
}

// Get blocks until an item is available or the queue shuts down.
func (q *workQueue[T]) Get() (T, bool) {
	item, shutdown := q.queue.Get()
	if shutdown {
		return item, true
	}
	q.emit(QueueTaken, item, 0)
	return item, false
}

// Done marks item finished; if it was added meanwhile, it goes back in.
func (q *workQueue[T]) Done(item T) {
	q.queue.Done(item)
	q.emit(QueueDone, item, 0)
}

// Len is the number of queued items.
func (q *workQueue[T]) Len() int { return q.queue.Len() }

// NumRequeues is how many times item has been added with backoff since it was last forgotten.
func (q *workQueue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// ShutDown stops the queue; workers' Get returns shutdown once it is drained... or at once.
func (q *workQueue[T]) ShutDown() { q.queue.ShutDown() }
