package security

import (
	"fmt"
	"testing"
	"time"
)

// TestSessionsExpireAndStayBounded: a session ends after its lifetime; a full table makes
// room by dropping the session closest to its end, not by refusing sign-ins.
func TestSessionsExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ss := NewSessions()
	ss.now = func() time.Time { return now }
	first := ss.Start("token-first")
	if got := ss.Token(first); got != "token-first" {
		t.Fatalf("a new session stands for %q", got)
	}
	for i := 1; i < maxSessions; i++ {
		now = now.Add(time.Millisecond)
		ss.Start(fmt.Sprintf("token-%d", i))
	}
	now = now.Add(time.Millisecond)
	last := ss.Start("token-last")
	if len(ss.ids) != maxSessions || ss.Token(first) != "" || ss.Token(last) != "token-last" {
		t.Fatalf("a full table: %d sessions, the oldest stands for %q; want %d, the oldest dropped", len(ss.ids), ss.Token(first), maxSessions)
	}
	now = now.Add(sessionLifetime)
	if got := ss.Token(last); got != "" {
		t.Fatalf("a session past its lifetime stands for %q", got)
	}
}

// TestOneUserSigningInAgainPushesNoOneOut: one token's sessions are bounded on their own,
// so a user signing in thousands of times makes room among its own sessions only (a
// trial's 4,100 sign-ins in 0.6 s signed every other user out).
func TestOneUserSigningInAgainPushesNoOneOut(t *testing.T) {
	ss := NewSessions()
	victim := ss.Start("victim-token")
	var last string
	for range maxSessions + 100 {
		last = ss.Start("flood-token")
	}
	if ss.Token(victim) != "victim-token" {
		t.Errorf("after %d sign-ins of another token the victim's session is gone", maxSessions+100)
	}
	mine := 0
	for _, v := range ss.ids {
		if v.token == "flood-token" {
			mine++
		}
	}
	if mine != maxSessionsPerToken || ss.Token(last) != "flood-token" {
		t.Errorf("the flooding token holds %d sessions (its newest good: %v), want %d", mine, ss.Token(last) != "", maxSessionsPerToken)
	}
}
