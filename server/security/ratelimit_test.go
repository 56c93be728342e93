package security

import (
	"fmt"
	"testing"
	"time"
)

// TestFailureLimiterTableIsBounded: the table of addresses stays bounded.
func TestFailureLimiterTableIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewFailureLimiter(func() time.Time { return now })
	for i := range addrTableSize + 100 {
		now = now.Add(AllRefill) // the shared budget is not the point here
		done, refused := l.Begin(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
		if refused != nil {
			t.Fatalf("check %d refused: %+v", i, refused)
		}
		done(true)
	}
	if n := l.table.len(); n != addrTableSize {
		t.Errorf("address table holds %d, want its bound %d", n, addrTableSize)
	}
}

// TestFailuresFromManyAddressesShareABudget: a flood from a new address each request
// passes every per-address bound, so the checks of all addresses together are bounded:
// AllBurst at once, one more per AllRefill; a token that proves good gives its check back.
func TestFailuresFromManyAddressesShareABudget(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewFailureLimiter(func() time.Time { return now })
	addr := 0
	next := func() string { addr++; return fmt.Sprintf("127.1.%d.%d", addr/256, addr%256) }
	for i := range AllBurst {
		done, refused := l.Begin(next())
		if refused != nil {
			t.Fatalf("check %d of the burst refused: %+v", i, refused)
		}
		done(true)
	}
	_, refused := l.Begin(next())
	if refused == nil || !refused.Everyone || refused.RetryAfter <= 0 {
		t.Fatalf("check after %d failures from %d addresses: refused %+v, want refused for everyone with a Retry-After", AllBurst, AllBurst, refused)
	}
	// Checks in flight pay up front: with one token back, one check starts and the next
	// is refused before the first has failed.
	now = now.Add(AllRefill)
	first, refused := l.Begin(next())
	if refused != nil {
		t.Fatalf("after %v: refused %+v, want one check", AllRefill, refused)
	}
	if _, refused := l.Begin(next()); refused == nil {
		t.Fatal("a second check in flight on the same last token was let through")
	}
	first(false) // a good token: its check is given back
	good, refused := l.Begin(next())
	if refused != nil {
		t.Fatalf("after a good token gave its check back: refused %+v", refused)
	}
	good(true)
	// Over a long flood, the checks are the burst plus one per AllRefill.
	now = now.Add(time.Minute)
	checks := 0
	for range 10 * 60 * int(time.Second/AllRefill) {
		now = now.Add(AllRefill / 10)
		if done, refused := l.Begin(next()); refused == nil {
			checks++
			done(true)
		}
	}
	if want := AllBurst + int(time.Minute/AllRefill); checks > want+1 || checks < want-1 {
		t.Errorf("a minute of flood from rotating addresses got %d checks, want %d", checks, want)
	}
}
