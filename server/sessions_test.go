package server

import (
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
		ss.start("token")
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
