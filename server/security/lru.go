package security

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded map that forgets its least recently used entry when full, and entries
// past their expiry. Get, Put and eviction are O(1). Safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	now   func() time.Time
	order *list.List // front: most recently used
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

func newLRU[K comparable, V any](max int, now func() time.Time) *lru[K, V] {
	if now == nil {
		now = time.Now
	}
	return &lru[K, V]{max: max, now: now, order: list.New(), items: make(map[K]*list.Element, max)}
}

// get returns the live value of k.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		if c.now().Before(e.expires) {
			c.order.MoveToFront(el)
			return e.val, true
		}
		c.order.Remove(el)
		delete(c.items, k)
	}
	var zero V
	return zero, false
}

// put stores v under k for ttl, evicting the least recently used entry when full.
func (c *lru[K, V]) put(k K, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
	c.insert(k, v, ttl)
}

// remove forgets k.
func (c *lru[K, V]) remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// update changes the live value of k in place (keeping its expiry), or stores f's value
// for ttl; it returns the new value.
func (c *lru[K, V]) update(k K, ttl time.Duration, f func(v V, ok bool) V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		if c.now().Before(e.expires) {
			e.val = f(e.val, true)
			c.order.MoveToFront(el)
			return e.val
		}
		c.order.Remove(el)
		delete(c.items, k)
	}
	var zero V
	v := f(zero, false)
	c.insert(k, v, ttl)
	return v
}

// insert adds an absent key, evicting the least recently used entry when full. Requires mu.
func (c *lru[K, V]) insert(k K, v V, ttl time.Duration) {
	if c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry[K, V]).key)
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, expires: c.now().Add(ttl)})
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
