package security

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// FailureLimiter bounds how many failed authentications may cost a check, per remote
// address and for all addresses together.
//
// Each address has a bucket of FailureBurst failures refilled at one per FailureRefill,
// and may have AddrInFlight checks in flight, so that one address cannot hold every
// TokenReview slot. Addresses are cheap to an attacker (a flood from rotating addresses
// passes any per-address bound), so every check of an unknown token also takes one from a
// bucket shared by all addresses (AllBurst, one back per AllRefill), given back when the
// token proves good: the reviews a flood can cause are bounded in total. A request over
// either bound is answered 429 without asking anyone, unless its token is already known
// good; signed-in users' requests never come here. The table of addresses is a bounded
// LRU. The address is the connection's (X-Forwarded-For is not trusted).
type FailureLimiter struct {
	burst    float64
	refill   time.Duration
	inFlight int
	now      func() time.Time
	table    *lru[string, *addrState]
	allMu    sync.Mutex
	all      bucket // checks of unknown tokens from every address
	// held are the 429 answers being held back (see Tarpit).
	held atomic.Int64
	// HoldTime is how long a 429 is held back (tarpitTime; 0: not at all).
	HoldTime time.Duration
}

type addrState struct {
	mu       sync.Mutex
	bucket   // failures this address may still make
	inFlight int
}

// bucket is a token bucket: tokens, as of at.
type bucket struct {
	tokens float64
	at     time.Time
}

// refilled brings b up to now, one token per refill, at most burst.
func (b *bucket) refilled(now time.Time, burst float64, refill time.Duration) {
	b.tokens = min(burst, b.tokens+float64(now.Sub(b.at))/float64(refill))
	b.at = now
}

// wait is how long until b holds one token.
func (b *bucket) wait(refill time.Duration) time.Duration {
	return max(time.Duration((1-b.tokens)*float64(refill)), minRetryAfterS*time.Second)
}

// The limiter's bounds: FailureBurst failures per address, one more per FailureRefill,
// AddrInFlight checks in flight per address; AllBurst checks of unknown tokens from all
// addresses together, one more per AllRefill (10 TokenReviews a second at most, a fifth of
// the review client's QPS).
const (
	FailureBurst   = 10
	FailureRefill  = 2 * time.Second
	AddrInFlight   = 4
	AllBurst       = 50
	AllRefill      = 100 * time.Millisecond
	addrTableSize  = 10000
	addrStateTTL   = 10 * time.Minute
	minRetryAfterS = 1
	// A 429 is held back this long, for at most maxHeld requests at once: a flooding
	// client then waits instead of spending the CPU good users need (an idle goroutine
	// costs next to nothing; an answered request invites the next at once).
	tarpitTime = 500 * time.Millisecond
	maxHeld    = 1024
)

// NewFailureLimiter limits failures as time goes by now (nil: the wall clock).
func NewFailureLimiter(now func() time.Time) *FailureLimiter {
	if now == nil {
		now = time.Now
	}
	return &FailureLimiter{burst: FailureBurst, refill: FailureRefill, inFlight: AddrInFlight, now: now,
		table: newLRU[string, *addrState](addrTableSize, now), all: bucket{tokens: AllBurst, at: now()}, HoldTime: tarpitTime}
}

// RemoteIP is the address part of a RemoteAddr.
func RemoteIP(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

func (l *FailureLimiter) state(ip string) *addrState {
	return l.table.update(ip, addrStateTTL, func(s *addrState, ok bool) *addrState {
		if !ok {
			s = &addrState{bucket: bucket{tokens: l.burst, at: l.now()}}
		}
		return s
	})
}

// Throttled is why Begin refused a check.
type Throttled struct {
	RetryAfter time.Duration
	// Everyone: the budget of all addresses together is spent, not this address's.
	Everyone bool
}

// Begin asks to check a token from ip. It returns a done func to call with the outcome,
// or, when the address has no failures left or too many checks in flight, or all
// addresses together have none left, why and how long to wait before trying again.
func (l *FailureLimiter) Begin(ip string) (done func(failed bool), refused *Throttled) {
	s := l.state(ip)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refilled(l.now(), l.burst, l.refill)
	switch {
	case s.tokens < 1:
		return nil, &Throttled{RetryAfter: s.wait(l.refill)}
	case s.inFlight >= l.inFlight:
		return nil, &Throttled{RetryAfter: minRetryAfterS * time.Second}
	}
	// The shared bucket is paid up front: checks in flight from many addresses must not
	// all pass on the same last token.
	l.allMu.Lock()
	l.all.refilled(l.now(), AllBurst, AllRefill)
	if l.all.tokens < 1 {
		wait := l.all.wait(AllRefill)
		l.allMu.Unlock()
		return nil, &Throttled{RetryAfter: wait, Everyone: true}
	}
	l.all.tokens--
	l.allMu.Unlock()
	s.inFlight++
	return func(failed bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inFlight--
		if failed {
			s.refilled(l.now(), l.burst, l.refill)
			s.tokens--
			return
		}
		l.allMu.Lock()
		l.all.tokens = min(AllBurst, l.all.tokens+1)
		l.allMu.Unlock()
	}, nil
}

// Tarpit holds back a 429 answer for HoldTime (unless too many are held already, or the
// request ends).
func (l *FailureLimiter) Tarpit(ctx context.Context, status int) {
	if status != http.StatusTooManyRequests || l.HoldTime <= 0 {
		return
	}
	if l.held.Add(1) > maxHeld {
		l.held.Add(-1)
		return
	}
	defer l.held.Add(-1)
	t := time.NewTimer(l.HoldTime)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
