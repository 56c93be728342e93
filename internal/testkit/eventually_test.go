package testkit

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	if err := Poll(context.Background(), time.Minute, func() bool { calls++; return calls == 3 }); err != nil {
		t.Fatalf("Poll = %v, want nil", err)
	}
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3 (it stops at the first true)", calls)
	}
}

func TestPollGivesUpAtItsLimit(t *testing.T) {
	err := Poll(context.Background(), 30*time.Millisecond, func() bool { return false })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll = %v, want context.DeadlineExceeded", err)
	}
}

func TestPollStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Poll(ctx, time.Minute, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll = %v, want context.Canceled", err)
	}
}

func TestConsistentlyChecksThroughoutTheWindow(t *testing.T) {
	calls := 0
	Consistently(t, "always", 250*time.Millisecond, func() bool { calls++; return true })
	if calls < 3 {
		t.Fatalf("cond called %d times in 250 ms, want at least 3 (start, ticks, end)", calls)
	}
}

func TestPollEveryGivesUpAtItsLimit(t *testing.T) {
	calls := 0
	err := PollEvery(context.Background(), 5*time.Millisecond, 50*time.Millisecond, func() bool { calls++; return false })
	if !errors.Is(err, context.DeadlineExceeded) || calls < 5 {
		t.Fatalf("PollEvery = %v after %d checks, want context.DeadlineExceeded after about 10", err, calls)
	}
}
