package gc

import (
	"context"
	"errors"
	"time"
)

// Every reader of the feed does the same thing: read the events after its position, in
// order; wait when there are none; and when it falls more than the ring behind
// (ErrTooOld), start again from a fresh snapshot. Follow is that loop, once.

// ErrResync, returned by a Follower's Events or Idle, makes Follow start the reader again
// (call Resync) as when it falls behind the ring: say, when the reader lost what it built
// from the events (a write of them failed).
var ErrResync = errors.New("gc feed: the reader starts again from a snapshot")

// DefaultFollowBatch bounds a batch of Follower.Events when Follower.Max is 0.
const DefaultFollowBatch = 4096

// Follower is a reader of the feed, as Feed.Follow drives it. Follow calls its functions
// from its own goroutine, one at a time.
type Follower struct {
	// Resync starts the reader again from a fresh state: Follow calls it when the events
	// after the reader's position have left the ring, or when Events or Idle return
	// ErrResync. It returns the seq to continue after: that of the Snapshot it took (or,
	// for a reader that keeps no state, LastSeq). An error ends Follow.
	Resync func(ctx context.Context) (uint64, error)
	// Events gets the events after the reader's position, in order, in batches of at most
	// Max; a batch is never empty. An error other than ErrResync ends Follow.
	Events func(ctx context.Context, events []Event) error
	// Idle, if set, is called each time the reader has read everything published, before
	// Follow waits for more. It returns how long Follow may wait before calling it again
	// (0 or less: until an event comes): a reader that writes what it read when it has
	// waited long enough, or does upkeep on a schedule, does it here.
	Idle func(ctx context.Context) (time.Duration, error)
	// Max bounds a batch; 0 means DefaultFollowBatch.
	Max int
}

// Follow feeds r the events after from until ctx ends or r returns an error; it returns
// that error, or ctx's. It never misses or repeats an event: after a Resync it continues
// after the seq Resync returned. A reader that starts from a snapshot passes the
// snapshot's Seq as from; one that starts from nothing passes 0 (if the events from the
// first are gone, Follow calls Resync first).
func (f *Feed) Follow(ctx context.Context, from uint64, r Follower) error {
	return Follow(ctx, f, from, r)
}

// FeedReader is what Follow reads: a Feed, or a stand-in with the same ordering
// guarantees (a test's fake feed).
type FeedReader interface {
	Since(seq uint64, max int) ([]Event, error)
	Wait(ctx context.Context, seq uint64) error
}

// Follow is Feed.Follow over any FeedReader.
func Follow(ctx context.Context, f FeedReader, from uint64, r Follower) error {
	max := r.Max
	if max <= 0 {
		max = DefaultFollowBatch
	}
	seq := from
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		events, err := f.Since(seq, max)
		if err == nil && len(events) > 0 {
			err = r.Events(ctx, events)
			seq = events[len(events)-1].Seq
		} else if err == nil {
			err = idle(ctx, f, seq, r.Idle)
		}
		switch {
		case errors.Is(err, ErrTooOld), errors.Is(err, ErrResync):
			if seq, err = r.Resync(ctx); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
}

// idle calls the reader's Idle, then waits for an event after seq as long as it says.
func idle(ctx context.Context, f FeedReader, seq uint64, onIdle func(context.Context) (time.Duration, error)) error {
	var wait time.Duration
	if onIdle != nil {
		var err error
		if wait, err = onIdle(ctx); err != nil {
			return err
		}
	}
	wctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if err := f.Wait(wctx, seq); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}
