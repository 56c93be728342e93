package history

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

func TestTimelineBucketsSumToTheEventsInRange(t *testing.T) {
	// The recorder's windows are on the clock: synctest's, exact however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		e := newSynth(1<<16, 21)
		s := openStore(t, Options{})
		record(t, s, e, quick())
		for range 6 {
			e.churn(150, 1500)
			time.Sleep(20 * time.Millisecond) // spread the events over time: the buckets are of time
		}
		waitRecorded(t, s, e.feed.LastSeq())
		all := allPages(t, s, Query{Limit: MaxLimit})
		first, last := all[0].Time, all[len(all)-1].Time
		ctx := context.Background()
		for _, c := range []struct {
			from, to time.Time
			buckets  int
		}{
			{first, last.Add(time.Nanosecond), 120},
			{first, last.Add(time.Nanosecond), 2000},                            // buckets narrower than a block
			{first.Add(last.Sub(first) / 3), last.Add(-last.Sub(first) / 4), 7}, // cutting blocks at both ends
			{first.Add(-time.Hour), first.Add(-time.Minute), 10},                // before the recording
		} {
			tl, err := s.Timeline(ctx, TimelineQuery{From: c.from, To: c.to, Buckets: c.buckets})
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Buckets) != c.buckets {
				t.Fatalf("%d buckets, want %d", len(tl.Buckets), c.buckets)
			}
			want := allPages(t, s, Query{From: c.from, To: c.to, Limit: MaxLimit})
			deletes, errs, retries := 0, 0, 0
			for _, r := range want {
				switch {
				case r.Action == nil:
				case r.Action.Verb == "delete" && r.Action.Error == "":
					deletes++
				case r.Action.ErrorReason == "Conflict": // retried: its own count
					retries++
				case r.Action.Error != "":
					errs++
				}
			}
			var gotEvents, gotDeletes, gotErrors, gotRetries int
			for i, b := range tl.Buckets {
				gotEvents, gotDeletes, gotErrors, gotRetries = gotEvents+b.Events, gotDeletes+b.Deletes, gotErrors+b.Errors, gotRetries+b.Retries
				if want := c.from.Add(time.Duration(i) * tl.Bucket); !b.T.Equal(want) {
					t.Fatalf("bucket %d starts at %s, want %s", i, b.T, want)
				}
			}
			if gotEvents != len(want) || gotDeletes != deletes || gotErrors != errs || gotRetries != retries {
				t.Fatalf("%d buckets over %s: %d events, %d deletes, %d errors, %d retries; the range holds %d, %d, %d, %d",
					c.buckets, c.to.Sub(c.from), gotEvents, gotDeletes, gotErrors, gotRetries, len(want), deletes, errs, retries)
			}
			if c.buckets == 120 && (deletes == 0 || errs == 0 || retries == 0 || len(tl.Cascades) == 0) {
				t.Fatalf("the fixture wants deletes (%d), errors (%d), retries (%d) and cascades (%d)", deletes, errs, retries, len(tl.Cascades))
			}
		}
		if _, err := s.Timeline(ctx, TimelineQuery{From: last, To: first}); err == nil {
			t.Fatal("an empty range: no error")
		}
	})
}

// TestTheTimelineSaysWhenItsCascadesAreCapped: a window with more cascades than a timeline
// lists says so, and lists the newest; one with exactly as many does not. Single
// deletions the collector only watched (a Pod its ReplicaSet deleted) are counted, not
// listed, so that they do not crowd out the cascades it worked in.
func TestTheTimelineSaysWhenItsCascadesAreCapped(t *testing.T) {
	e := newSynth(1<<16, 22)
	s := openStore(t, Options{})
	o := quick()
	// A pause of the publisher must not end one half made: under a loaded CI run, 1 s was
	// not enough (3 of the cascades were cut between the owner's removal and its
	// dependent's delete, and counted as 6 single deletions).
	o.CascadeQuiet = 5 * time.Second
	record(t, s, e, o)
	start := time.Now()
	var roots []gc.ObjectRef
	for range maxTimelineCascades + 1 {
		tr := e.grow(1)
		e.remove(tr.owner, nil)
		e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: tr.deps[0], Policy: "Background", Reason: "all its owners are gone"})
		e.remove(tr.deps[0], []types.UID{tr.owner.UID})
		roots = append(roots, tr.owner)
	}
	var singles []gc.ObjectRef
	for range 3 {
		tr := e.grow(0)
		e.remove(tr.owner, nil)
		singles = append(singles, tr.owner)
	}
	waitRecorded(t, s, e.feed.LastSeq())
	for _, r := range []gc.ObjectRef{roots[0], singles[len(singles)-1]} {
		waitCascades(t, s, CascadeQuery{UID: string(r.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].End != nil })
	}
	ctx := context.Background()
	timeline := func(from time.Time) Timeline {
		tl, err := s.Timeline(ctx, TimelineQuery{From: from, To: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	tl := timeline(start.Add(-time.Minute))
	if len(tl.Cascades) != maxTimelineCascades || !tl.CascadesCapped || tl.Cascades[0].Root != roots[len(roots)-1] || tl.SingleDeletions != len(singles) {
		t.Fatalf("%d cascades, capped %v, the first rooted at %s, %d single deletions: want the newest %d but the singles, capped, the newest first (%s), %d singles",
			len(tl.Cascades), tl.CascadesCapped, tl.Cascades[0].Root.Name, tl.SingleDeletions, maxTimelineCascades, roots[len(roots)-1].Name, len(singles))
	}
	// From just after the first one ended: exactly as many as it lists.
	first, err := s.Cascades(ctx, CascadeQuery{UID: string(roots[0].UID)})
	if err != nil {
		t.Fatal(err)
	}
	if tl := timeline(first[0].End.Add(time.Nanosecond)); len(tl.Cascades) != maxTimelineCascades || tl.CascadesCapped {
		t.Fatalf("%d cascades, capped %v: want %d, not capped", len(tl.Cascades), tl.CascadesCapped, maxTimelineCascades)
	}
	// The singles are still there for whoever asks about them.
	if cs, err := s.Cascades(ctx, CascadeQuery{UID: string(singles[0].UID)}); err != nil || len(cs) != 1 || cs[0].Objects != 1 || cs[0].Actions != 0 {
		t.Fatalf("a single deletion's cascade: %s, %v", jsonOf(t, cs), err)
	}
}
