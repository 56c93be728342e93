package gc

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func absentRef(i int, ns string) objectReference {
	return refIdentity("apps/v1", "ReplicaSet", ns, fmt.Sprintf("rs-%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
}

func TestReferenceCacheEvictsLeastRecentlyUsed(t *testing.T) {
	if absentOwnerCacheSize != 500 {
		t.Fatalf("absentOwnerCacheSize = %d, want upstream's 500", absentOwnerCacheSize)
	}
	c := NewReferenceCache(absentOwnerCacheSize)
	for i := range absentOwnerCacheSize {
		c.Add(absentRef(i, "a"))
	}
	if c.Len() != 500 {
		t.Fatalf("Len = %d after 500 adds, want 500", c.Len())
	}
	// Has refreshes: ref 0 becomes the most recently used, ref 1 the least.
	if !c.Has(absentRef(0, "a")) {
		t.Fatal("ref 0 missing before any eviction")
	}
	c.Add(absentRef(500, "a")) // the 501st
	if c.Len() != 500 {
		t.Errorf("Len = %d after 501 adds, want 500", c.Len())
	}
	if c.Has(absentRef(1, "a")) {
		t.Error("ref 1, the least recently used, survived the 501st add")
	}
	for _, i := range []int{0, 2, 499, 500} {
		if !c.Has(absentRef(i, "a")) {
			t.Errorf("ref %d was evicted", i)
		}
	}
	// Without a refresh the oldest goes: after the Has calls above, ref 3 is the oldest.
	c.Add(absentRef(501, "a"))
	if c.Has(absentRef(3, "a")) {
		t.Error("ref 3, now the least recently used, survived")
	}
	if !c.Has(absentRef(4, "a")) || !c.Has(absentRef(501, "a")) {
		t.Error("a more recent ref was evicted instead of the least recently used")
	}
	// Adding a held ref again refreshes it rather than growing the cache: ref 5 is the
	// oldest now; re-added, it survives and ref 6 goes instead.
	c.Add(absentRef(5, "a"))
	c.Add(absentRef(502, "a"))
	if !c.Has(absentRef(5, "a")) {
		t.Error("re-adding ref 5 did not refresh it")
	}
	if c.Has(absentRef(6, "a")) {
		t.Error("ref 6, the least recently used after ref 5 was re-added, survived")
	}
	if c.Len() != 500 {
		t.Errorf("Len = %d, want 500", c.Len())
	}
}

func TestReferenceCacheKeysIncludeNamespace(t *testing.T) {
	c := NewReferenceCache(absentOwnerCacheSize)
	c.Add(absentRef(1, "a"))
	if !c.Has(absentRef(1, "a")) {
		t.Error("absent in namespace a is not found in namespace a")
	}
	if c.Has(absentRef(1, "b")) {
		t.Error("absent in namespace a is taken for absent in namespace b")
	}
	if c.Has(absentRef(1, "")) {
		t.Error("absent in namespace a is taken for absent cluster-wide")
	}
	// Every coordinate counts.
	other := absentRef(1, "a")
	other.Kind = "Deployment"
	if c.Has(other) {
		t.Error("an identity differing only in kind is taken for absent")
	}
	other = absentRef(1, "a")
	other.APIVersion = "apps/v1beta2"
	if c.Has(other) {
		t.Error("an identity differing only in apiVersion is taken for absent")
	}
	if c.Len() != 1 {
		t.Errorf("Len = %d, want 1", c.Len())
	}
}

func TestReferenceCacheClusterScopedKey(t *testing.T) {
	c := NewReferenceCache(absentOwnerCacheSize)
	ns := refIdentity("v1", "Namespace", "", "team", "uid-ns")
	c.Add(ns)
	if !c.Has(ns) {
		t.Error("cluster-scoped absent owner not found under its cluster-scoped key")
	}
	inNS := ns
	inNS.Namespace = "a"
	if c.Has(inNS) {
		t.Error("a cluster-scoped key answers for a namespaced one")
	}
	c2 := NewReferenceCache(absentOwnerCacheSize)
	c2.Add(inNS)
	if c2.Has(ns) {
		t.Error("a namespaced key answers for the cluster-scoped one")
	}
}
