// Package drivercmp measures the choice of SQLite driver for the history: modernc.org/sqlite
// (pure Go, the one gcscope ships) against github.com/mattn/go-sqlite3 (cgo: it needs a C
// compiler wherever gcscope is built). It is a module of its own, so that the second
// never becomes a dependency of gcscope; run it from this directory:
//
//	GOFLAGS=-mod=mod go test -run '^$' -bench Drivers -benchtime 1x .
package drivercmp

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
)

// drainEngine serves a feed already holding every event: the recorder goes as fast as it
// can.
type drainEngine struct{ feed *gc.Feed }

func (d drainEngine) Feed() *gc.Feed        { return d.feed }
func (d drainEngine) Snapshot() gc.Snapshot { return gc.Snapshot{Mode: gc.ModeActive} }

// events are n events of the engine's kinds, as a cascade makes them: each Pod observed,
// then looked up, deleted and removed, with its queue transitions.
func events(n int) []gc.Event {
	var out []gc.Event
	owner := gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-7d4f8b9c6d", UID: "2f0c8a5e-1b7d-4c3e-9a61-0d5b7e9f3a21"}
	q := func(name gc.QueueName, op gc.QueueOp, obj gc.ObjectRef, change string) gc.Event {
		return gc.Event{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: name, Op: op, Object: obj, Change: change, Counts: &gc.QueueCounts{Depth: 3, InFlight: 1}}}
	}
	for i := 0; len(out) < n; i++ {
		pod := gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("web-7d4f8b9c6d-%05d", i), UID: types.UID(fmt.Sprintf("8c1d2e3f-4a5b-4c6d-8e7f-%012d", i))}
		node := &gc.NodeState{ObjectRef: pod, Observed: true, Owners: []gc.OwnerRef{{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, Controller: true, BlockOwnerDeletion: true}}}
		now := time.Now().UTC().Truncate(time.Second)
		gone := *node
		gone.BeingDeleted, gone.DeletionTimestamp = true, &now
		out = append(out,
			q(gc.GraphChanges, gc.QueueAdded, pod, "add"), q(gc.GraphChanges, gc.QueueTaken, pod, "add"),
			gc.Event{Type: gc.NodeAdded, Node: node},
			gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: pod.UID, Owner: owner.UID, Controller: true, BlockOwnerDeletion: true}},
			q(gc.GraphChanges, gc.QueueDone, pod, "add"),
			q(gc.AttemptToDelete, gc.QueueAdded, pod, ""), q(gc.AttemptToDelete, gc.QueueTaken, pod, ""),
			gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: owner, For: &pod,
				Reason: "look up owner of Pod " + pod.Name + ": not found", Duration: 700 * time.Microsecond}},
			gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: pod, Policy: "Background",
				Reason: "all its owners are gone: ReplicaSet " + owner.Name, Duration: 1500 * time.Microsecond}},
			q(gc.AttemptToDelete, gc.QueueDone, pod, ""),
			q(gc.GraphChanges, gc.QueueAdded, pod, "update"), q(gc.GraphChanges, gc.QueueTaken, pod, "update"),
			gc.Event{Type: gc.NodeUpdated, Node: &gone},
			q(gc.GraphChanges, gc.QueueDone, pod, "update"),
			q(gc.GraphChanges, gc.QueueAdded, pod, "delete"), q(gc.GraphChanges, gc.QueueTaken, pod, "delete"),
			gc.Event{Type: gc.NodeRemoved, Node: &gone},
			gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: pod.UID, Owner: owner.UID, Controller: true, BlockOwnerDeletion: true}},
			q(gc.GraphChanges, gc.QueueDone, pod, "delete"),
		)
	}
	return out[:n]
}

// BenchmarkDrivers records the same 300,000 events with each driver, three times each in
// turn, and prints the median rates, their ratio and the database sizes.
func BenchmarkDrivers(b *testing.B) {
	const n = 300000
	evs := events(n)
	run := func(driver string) (float64, int64) {
		feed := gc.NewFeed(n)
		feed.Publish(evs...)
		s, err := history.Open(history.Options{Dir: b.TempDir(), Driver: driver})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- history.NewRecorder(s, drainEngine{feed}, history.RecorderOptions{}).Run(ctx) }()
		// Checked every millisecond: the wait is what the benchmark times.
		// (drivercmp is a module of its own, without internal/testkit's dependencies.)
		err = wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
			st := s.Status()
			if st.State == history.StatePaused {
				return false, fmt.Errorf("%s: %s", driver, st.Message)
			}
			return st.State == history.StateRecording && st.Seq >= feed.LastSeq(), nil
		})
		if err != nil {
			b.Fatalf("%s: the recorder did not catch up: %v", driver, err)
		}
		took := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return float64(n) / took.Seconds(), s.Status().Bytes
	}
	rates := map[string][]float64{}
	sizes := map[string]int64{}
	for range b.N {
		for range 3 {
			for _, d := range []string{"sqlite", "sqlite3"} {
				r, size := run(d)
				rates[d] = append(rates[d], r)
				sizes[d] = size
			}
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	pure, cgo := median(rates["sqlite"]), median(rates["sqlite3"])
	b.ReportMetric(pure, "modernc-events/s")
	b.ReportMetric(cgo, "mattn-events/s")
	b.ReportMetric(cgo/pure, "x-mattn/modernc")
	b.Logf("modernc.org/sqlite (pure Go): median %.0f events/s of %.0f, %d bytes; github.com/mattn/go-sqlite3 (cgo): median %.0f events/s of %.0f, %d bytes; cgo/pure Go = %.2f",
		pure, rates["sqlite"], sizes["sqlite"], cgo, rates["sqlite3"], sizes["sqlite3"], cgo/pure)
}
