package server

import (
	"fmt"
	"testing"
	"time"
)

// TestSessionsExpireAndStayBounded: a session ends after its lifetime; a full table makes
// room by dropping the session closest to its end, not by refusing sign-ins.
func TestSessionsExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ss := newSessions()
	ss.now = func() time.Time { return now }
	first := ss.start("token-first")
	if got := ss.token(first); got != "token-first" {
		t.Fatalf("a new session stands for %q", got)
	}
	for i := 1; i < maxSessions; i++ {
		now = now.Add(time.Millisecond)
		ss.start(fmt.Sprintf("token-%d", i))
	}
	now = now.Add(time.Millisecond)
	last := ss.start("token-last")
	if len(ss.ids) != maxSessions || ss.token(first) != "" || ss.token(last) != "token-last" {
		t.Fatalf("a full table: %d sessions, the oldest stands for %q; want %d, the oldest dropped", len(ss.ids), ss.token(first), maxSessions)
	}
	now = now.Add(sessionLifetime)
	if got := ss.token(last); got != "" {
		t.Fatalf("a session past its lifetime stands for %q", got)
	}
}

// TestOneUserSigningInAgainPushesNoOneOut: one token's sessions are bounded on their own,
// so a user signing in thousands of times makes room among its own sessions only (a
// trial's 4,100 sign-ins in 0.6 s signed every other user out).
func TestOneUserSigningInAgainPushesNoOneOut(t *testing.T) {
	ss := newSessions()
	victim := ss.start("victim-token")
	var last string
	for range maxSessions + 100 {
		last = ss.start("flood-token")
	}
	if ss.token(victim) != "victim-token" {
		t.Errorf("after %d sign-ins of another token the victim's session is gone", maxSessions+100)
	}
	mine := 0
	for _, v := range ss.ids {
		if v.token == "flood-token" {
			mine++
		}
	}
	if mine != maxSessionsPerToken || ss.token(last) != "flood-token" {
		t.Errorf("the flooding token holds %d sessions (its newest good: %v), want %d", mine, ss.token(last) != "", maxSessionsPerToken)
	}
}
