package gc

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// followed runs Follow in a goroutine of the test's bubble and records what it did.
type followed struct {
	mu      sync.Mutex
	seqs    []uint64 // every event given to Events, in order
	batches []int    // the size of each batch
	resyncs int
	done    chan error
}

func (r *followed) got() ([]uint64, []int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seqs), slices.Clone(r.batches), r.resyncs
}

// follow starts f.Follow from `from` with Max max; resync returns the feed's LastSeq (a
// reader that takes a fresh snapshot), and events, when set, decides what Events returns.
func follow(ctx context.Context, f *Feed, from uint64, max int, events func(batch []Event) error) *followed {
	r := &followed{done: make(chan error, 1)}
	fl := Follower{
		Max: max,
		Resync: func(context.Context) (uint64, error) {
			r.mu.Lock()
			r.resyncs++
			r.mu.Unlock()
			return f.LastSeq(), nil
		},
		Events: func(_ context.Context, batch []Event) error {
			r.mu.Lock()
			r.seqs = append(r.seqs, seqsOf(batch)...)
			r.batches = append(r.batches, len(batch))
			r.mu.Unlock()
			if events != nil {
				return events(batch)
			}
			return nil
		},
	}
	go func() { r.done <- f.Follow(ctx, from, fl) }()
	return r
}

func TestFollowDeliversEveryEventInOrderThenWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		f := newFeed(16, time.Now)
		publishN(f, 5)
		r := follow(ctx, f, 0, 2, nil)
		synctest.Wait() // Follow has read everything and waits
		seqs, batches, resyncs := r.got()
		if !slices.Equal(seqs, seqRange(1, 5)) || !slices.Equal(batches, []int{2, 2, 1}) || resyncs != 0 {
			t.Fatalf("events %v in batches %v, %d resyncs; want 1..5 in batches of at most 2, no resync", seqs, batches, resyncs)
		}
		publishN(f, 3)
		synctest.Wait()
		if seqs, _, _ := r.got(); !slices.Equal(seqs, seqRange(1, 8)) {
			t.Fatalf("after 3 more: events %v, want 1..8", seqs)
		}
		cancel()
		if err := <-r.done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Follow returned %v once ctx ended, want context.Canceled", err)
		}
	})
}

func TestFollowContinuesAfterItsStartingSeq(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(16, time.Now)
		publishN(f, 6)
		r := follow(t.Context(), f, 4, 0, nil) // a reader seeded with the snapshot at 4
		synctest.Wait()
		if seqs, _, resyncs := r.got(); !slices.Equal(seqs, []uint64{5, 6}) || resyncs != 0 {
			t.Fatalf("from 4: events %v, %d resyncs; want [5 6], none", seqs, resyncs)
		}
	})
}

func TestFollowResyncsWhenTheEventsLeftTheRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(4, time.Now)
		publishN(f, 10) // events 1..6 are gone
		r := follow(t.Context(), f, 0, 0, nil)
		synctest.Wait()
		if seqs, _, resyncs := r.got(); len(seqs) != 0 || resyncs != 1 {
			t.Fatalf("from 0 with 1..6 gone: events %v, %d resyncs; want none and one resync (to 10)", seqs, resyncs)
		}
		publishN(f, 2)
		synctest.Wait()
		if seqs, _, resyncs := r.got(); !slices.Equal(seqs, []uint64{11, 12}) || resyncs != 1 {
			t.Fatalf("after the resync to 10: events %v, %d resyncs; want [11 12], one", seqs, resyncs)
		}
	})
}

func TestFollowResyncsAReaderThatFellBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(4, time.Now)
		publishN(f, 2)
		release := make(chan struct{})
		r := follow(t.Context(), f, 0, 0, func(batch []Event) error {
			if batch[0].Seq == 1 {
				<-release // the reader is slow with its first batch
			}
			return nil
		})
		synctest.Wait()
		publishN(f, 8) // meanwhile the ring moves past 2: 3..6 are gone
		close(release)
		synctest.Wait()
		seqs, _, resyncs := r.got()
		if !slices.Equal(seqs, []uint64{1, 2}) || resyncs != 1 {
			t.Fatalf("events %v, %d resyncs; want [1 2], then a resync (to 10) for the events it missed", seqs, resyncs)
		}
		publishN(f, 1)
		synctest.Wait()
		if seqs, _, _ := r.got(); !slices.Equal(seqs, []uint64{1, 2, 11}) {
			t.Fatalf("after the resync: events %v, want [1 2 11]", seqs)
		}
	})
}

func TestFollowResyncsWhenTheReaderAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(16, time.Now)
		publishN(f, 3)
		asked := false
		r := follow(t.Context(), f, 0, 1, func(batch []Event) error {
			if batch[0].Seq == 2 && !asked {
				asked = true
				publishN(f, 2) // the resync's snapshot is at 5
				return ErrResync
			}
			return nil
		})
		synctest.Wait()
		if seqs, _, resyncs := r.got(); !slices.Equal(seqs, []uint64{1, 2}) || resyncs != 1 {
			t.Fatalf("events %v, %d resyncs; want [1 2] and one resync (to 5) after ErrResync", seqs, resyncs)
		}
	})
}

func TestFollowEndsWithTheReadersError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(16, time.Now)
		publishN(f, 3)
		broken := errors.New("broken")
		r := follow(t.Context(), f, 0, 1, func([]Event) error { return broken })
		if err := <-r.done; !errors.Is(err, broken) {
			t.Fatalf("Follow returned %v, want the reader's error", err)
		}
		if seqs, _, _ := r.got(); !slices.Equal(seqs, []uint64{1}) {
			t.Fatalf("events %v, want only [1]: Follow stops at the error", seqs)
		}
	})
}

func TestFollowCallsIdleWhenCaughtUpAndWaitsNoLongerThanItSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFeed(16, time.Now)
		var idles []time.Duration // when Idle was called, since the start
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			done <- f.Follow(t.Context(), 0, Follower{
				Resync: func(context.Context) (uint64, error) { return f.LastSeq(), nil },
				Events: func(context.Context, []Event) error { return nil },
				Idle: func(context.Context) (time.Duration, error) {
					idles = append(idles, time.Since(start))
					if len(idles) == 4 {
						return 0, errors.New("enough")
					}
					return time.Minute, nil
				},
			})
		}()
		if err := <-done; err == nil || err.Error() != "enough" {
			t.Fatalf("Follow returned %v, want Idle's error", err)
		}
		if want := []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute}; !slices.Equal(idles, want) {
			t.Fatalf("Idle called at %v, want %v: once caught up, then after each wait it allowed", idles, want)
		}
	})
}
