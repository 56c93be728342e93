package gc

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// absentOwnerCacheSize is upstream's size for the absent-owner cache.
const absentOwnerCacheSize = 500

// ReferenceCache remembers owners verified absent, so dependents naming the same missing
// owner are collected without asking the apiserver again. Keys are full identities: the
// reference's coordinates plus the namespace looked in ("" for cluster-scoped owners), so
// an owner absent from one namespace is not assumed absent from another.
// Safe for concurrent use; least recently used entries go first.
type ReferenceCache struct {
	cache *lru.Cache
}

// NewReferenceCache returns a cache that holds at most size references.
func NewReferenceCache(size int) *ReferenceCache {
	return &ReferenceCache{cache: lru.New(size)}
}

// Add records ref as absent.
func (c *ReferenceCache) Add(ref objectReference) { c.cache.Add(ref, nil) }

// Has reports whether ref was recorded absent (and refreshes it).
func (c *ReferenceCache) Has(ref objectReference) bool {
	_, ok := c.cache.Get(ref)
	return ok
}

// Len is the number of references held.
func (c *ReferenceCache) Len() int { return c.cache.Len() }

// uidSetSize bounds the uids a uidSet remembers.
const uidSetSize = 10000

// uidSet is a bounded set of uids (least recently used go first), safe for concurrent
// use. A uid is never reused, so a fact about one (seen deleted, foreground finished)
// stays true for good.
type uidSet struct {
	cache *lru.Cache
}

func newUIDSet() *uidSet { return &uidSet{cache: lru.New(uidSetSize)} }

func (s *uidSet) Add(uid types.UID) { s.cache.Add(uid, nil) }

func (s *uidSet) Has(uid types.UID) bool {
	_, ok := s.cache.Get(uid)
	return ok
}
