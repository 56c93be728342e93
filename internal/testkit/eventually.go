package testkit

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultWait bounds Eventually: long enough for a cascade on a loaded two-core machine.
const DefaultWait = 2 * time.Minute

// Eventually polls cond until it holds, and fails the test naming what never happened.
// It waits for a condition, never for a time: cond is checked at once, then every 20 ms
// at first and at most every 250 ms.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, DefaultWait, what, cond)
}

// EventuallyWithin is Eventually with its own bound, for a test whose point is a deadline.
func EventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Poll(context.Background(), limit, cond); err != nil {
		t.Fatalf("not within %s: %s", limit, what)
	}
}

// Poll is Eventually's loop for code that has no testing.TB (a TestMain, a helper that
// returns an error): nil once cond holds, the context's or the limit's error otherwise.
func Poll(ctx context.Context, limit time.Duration, cond func() bool) error {
	backoff := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1.5, Steps: 1 << 30, Cap: 250 * time.Millisecond}
	return poll(ctx, limit, backoff.Step, cond)
}

// Consistently checks that cond holds throughout d, and fails the test naming what stopped
// holding. It is how a test shows that something does NOT happen (an owner that waits, a
// deletion that is held): a window is the only evidence of an absence. cond is checked at
// once, every 100 ms, and once more at the end.
func Consistently(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if !cond() {
			t.Fatalf("did not hold for %s: %s", d, what)
		}
		if !time.Now().Before(deadline) {
			return
		}
		<-tick.C
	}
}

// EventuallyEvery is Eventually at a fixed pace, for a passing state (a cascade half done)
// that the backed-off checks of Eventually could step over, or a wait a benchmark times.
func EventuallyEvery(t testing.TB, every time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := PollEvery(context.Background(), every, DefaultWait, cond); err != nil {
		t.Fatalf("not within %s: %s", DefaultWait, what)
	}
}

// PollEvery is Poll at a fixed pace: cond is checked at once, then every every.
func PollEvery(ctx context.Context, every, limit time.Duration, cond func() bool) error {
	return poll(ctx, limit, func() time.Duration { return every }, cond)
}

// poll checks cond until it holds, waiting interval() between checks, for at most limit.
func poll(ctx context.Context, limit time.Duration, interval func() time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval()):
		}
	}
	return nil
}
