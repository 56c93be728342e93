package deletion

import (
	"context"
	"sync"
	"time"
)

// recent remembers the answers of look-ups that cost apiserver requests for a while, and
// runs one look-up per key at a time: any number of requests asking the same thing at
// once (twenty browsers polling the stuck list, say) cost what one costs. It holds at
// most max answers; expired ones are pruned as new ones come.
type recent[K comparable, V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[K]*recentEntry[V]
}

type recentEntry[V any] struct {
	done chan struct{} // closed when v is set
	v    V
	at   time.Time
}

// lookupTimeout bounds a look-up: it runs for every request that waits on it, so it is
// not cut short when the request that started it goes away.
const lookupTimeout = 20 * time.Second

func newRecent[K comparable, V any](ttl time.Duration, max int) *recent[K, V] {
	return &recent[K, V]{ttl: ttl, max: max, now: time.Now, entries: map[K]*recentEntry[V]{}}
}

// get returns key's answer: a fresh one remembered, the one being looked up now, or a new
// look-up's. A caller whose ctx ends while it waits gets the zero V and false.
func (c *recent[K, V]) get(ctx context.Context, key K, look func(context.Context) V) (V, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok || c.expired(e) {
		e = &recentEntry[V]{done: make(chan struct{})}
		c.prune()
		c.entries[key] = e
		c.mu.Unlock()
		lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		v := look(lookCtx)
		cancel()
		c.mu.Lock()
		e.v, e.at = v, c.now()
		close(e.done)
		c.mu.Unlock()
		return v, true
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.v, true
	case <-ctx.Done():
		var zero V
		return zero, false
	}
}

// expired: answered, and longer ago than the ttl. Requires mu.
func (c *recent[K, V]) expired(e *recentEntry[V]) bool {
	select {
	case <-e.done:
		return c.now().Sub(e.at) >= c.ttl
	default:
		return false // in flight
	}
}

// prune makes room for one more entry: the expired go, then, if still full, any answered
// one. Requires mu.
func (c *recent[K, V]) prune() {
	if len(c.entries) < c.max {
		return
	}
	for k, e := range c.entries {
		if c.expired(e) {
			delete(c.entries, k)
		}
	}
	for k, e := range c.entries {
		if len(c.entries) < c.max {
			return
		}
		select {
		case <-e.done:
			delete(c.entries, k)
		default:
		}
	}
}

// size is how many answers are held (answered or in flight).
func (c *recent[K, V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
