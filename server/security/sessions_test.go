package security

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSessionsExpireAndStayBounded: a session ends after its lifetime; a full table makes
// room by dropping the session closest to its end, not by refusing sign-ins.
func TestSessionsExpireAndStayBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	ss := NewSessions()
	ss.now = func() time.Time { return now }
	first := ss.Start("token-first")
	if got := ss.Token(ctx, first); got != "token-first" {
		t.Fatalf("a new session stands for %q", got)
	}
	for i := 1; i < maxSessions; i++ {
		now = now.Add(time.Millisecond)
		ss.Start(fmt.Sprintf("token-%d", i))
	}
	now = now.Add(time.Millisecond)
	last := ss.Start("token-last")
	if len(ss.ids) != maxSessions || ss.Token(ctx, first) != "" || ss.Token(ctx, last) != "token-last" {
		t.Fatalf("a full table: %d sessions, the oldest stands for %q; want %d, the oldest dropped", len(ss.ids), ss.Token(ctx, first), maxSessions)
	}
	now = now.Add(sessionLifetime)
	if got := ss.Token(ctx, last); got != "" {
		t.Fatalf("a session past its lifetime stands for %q", got)
	}
}

// TestOneUserSigningInAgainPushesNoOneOut: one token's sessions are bounded on their own,
// so a user signing in thousands of times makes room among its own sessions only (a
// trial's 4,100 sign-ins in 0.6 s signed every other user out).
func TestOneUserSigningInAgainPushesNoOneOut(t *testing.T) {
	ctx := context.Background()
	ss := NewSessions()
	victim := ss.Start("victim-token")
	var last string
	for range maxSessions + 100 {
		last = ss.Start("flood-token")
	}
	if ss.Token(ctx, victim) != "victim-token" {
		t.Errorf("after %d sign-ins of another token the victim's session is gone", maxSessions+100)
	}
	mine := 0
	for _, v := range ss.ids {
		if v.token == "flood-token" {
			mine++
		}
	}
	if mine != maxSessionsPerToken || ss.Token(ctx, last) != "flood-token" {
		t.Errorf("the flooding token holds %d sessions (its newest good: %v), want %d", mine, ss.Token(ctx, last) != "", maxSessionsPerToken)
	}
}

// renewing is a TokenSource that gives a new token each time, until it fails.
type renewing struct {
	n    int
	fail bool
}

func (r *renewing) Token(context.Context) (string, error) {
	if r.fail {
		return "", errors.New("the provider refused the refresh token")
	}
	r.n++
	return fmt.Sprintf("id-token-%d", r.n), nil
}

// TestASessionFromASourceEndsWhenItCannotRenew: a single sign-on session stands for the
// token its source gives now; once the source fails (the provider refused to refresh),
// the session is over, not left standing for the old token.
func TestASessionFromASourceEndsWhenItCannotRenew(t *testing.T) {
	ctx := context.Background()
	ss := NewSessions()
	src := &renewing{}
	id := ss.StartFrom(src, "subject-alice")
	if got := ss.Token(ctx, id); got != "id-token-1" {
		t.Fatalf("the session stands for %q, want the source's id-token-1", got)
	}
	if got := ss.Token(ctx, id); got != "id-token-2" {
		t.Fatalf("asked again, the session stands for %q, want the source's current id-token-2", got)
	}
	src.fail = true
	if got := ss.Token(ctx, id); got != "" {
		t.Fatalf("the source failed, the session stands for %q, want nothing", got)
	}
	src.fail = false
	if got := ss.Token(ctx, id); got != "" {
		t.Fatalf("after a failed renewal the session came back (%q): it should have ended", got)
	}
}
