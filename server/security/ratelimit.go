package security

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// FailureLimiter bounds, per remote address, how many failed authentications may cost a
// check: each address has a bucket of FailureBurst failures refilled at one per
// FailureRefill. An address with an empty bucket is answered 429 without asking anyone,
// unless its token is already known good. It also bounds the checks one address has in
// flight, so that one address cannot hold every TokenReview slot. The table of addresses
// is a bounded LRU. The address is the connection's (X-Forwarded-For is not trusted).
type FailureLimiter struct {
	burst    float64
	refill   time.Duration
	inFlight int
	now      func() time.Time
	table    *lru[string, *addrState]
	// held are the 429 answers being held back (see Tarpit).
	held atomic.Int64
	// HoldTime is how long a 429 is held back (tarpitTime; 0: not at all).
	HoldTime time.Duration
}

type addrState struct {
	mu       sync.Mutex
	tokens   float64 // failures this address may still make
	at       time.Time
	inFlight int
}

// The limiter's bounds: FailureBurst failures per address, one more per FailureRefill,
// AddrInFlight checks in flight per address.
const (
	FailureBurst   = 10
	FailureRefill  = 2 * time.Second
	AddrInFlight   = 4
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
		table: newLRU[string, *addrState](addrTableSize, now), HoldTime: tarpitTime}
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
			s = &addrState{tokens: l.burst, at: l.now()}
		}
		return s
	})
}

// refilled brings s's bucket up to now. Requires s.mu.
func (l *FailureLimiter) refilled(s *addrState) {
	now := l.now()
	s.tokens = min(l.burst, s.tokens+float64(now.Sub(s.at))/float64(l.refill))
	s.at = now
}

// Begin asks to check a token from ip. It returns a done func to call with the outcome,
// or, when the address has no failures left or too many checks in flight, how long to
// wait before trying again.
func (l *FailureLimiter) Begin(ip string) (done func(failed bool), retryAfter time.Duration) {
	s := l.state(ip)
	s.mu.Lock()
	defer s.mu.Unlock()
	l.refilled(s)
	switch {
	case s.tokens < 1:
		return nil, max(time.Duration((1-s.tokens)*float64(l.refill)), minRetryAfterS*time.Second)
	case s.inFlight >= l.inFlight:
		return nil, minRetryAfterS * time.Second
	}
	s.inFlight++
	return func(failed bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inFlight--
		if failed {
			l.refilled(s)
			s.tokens--
		}
	}, 0
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
