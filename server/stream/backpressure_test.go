package stream

// Slow clients and a slow hub: a client that does not read is resynced and never holds
// up the hub or the others; a hub behind the feed resyncs everyone.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

func TestStreamStalledClientDoesNotBlockHub(t *testing.T) {
	e := newStreamEnv(t, 1<<16, Options{Buffer: 4})
	e.srv.Listener = streamtest.SmallBuffers{Listener: e.srv.Listener}
	e.start(t)
	stalled := e.dialWith(t, "", streamtest.SmallReadBufferDialer())
	healthy := e.dial(t, "")
	hm := streamtest.NewModel()
	hm.Apply(healthy.next())

	// Publish fat events while the stalled client reads nothing: publishing never waits,
	// and the healthy client keeps receiving. Every 10 events the publisher lets the hub
	// hand them out, so that they reach the clients as many batches (which overflow the
	// stalled client's queue); a hub that waited on the stalled client would hold the
	// publisher here.
	fat := strings.Repeat("f", 2000)
	published := make(chan uint64)
	go func() {
		var last uint64
		for i := range 300 {
			n := streamtest.MakeNode("s"+strconv.Itoa(i), "a", "Pod")
			n.Finalizers = []string{fat}
			last = e.eng.Publish(streamtest.AddNode(n)...)
			if i%10 == 9 {
				e.untilHandedOut(last)
			}
		}
		published <- last
	}()
	var last uint64
	select {
	case last = <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher was blocked")
	}
	healthy.untilSeq(hm, last)
	if len(hm.Nodes) != 300 {
		t.Fatalf("the healthy client holds %d nodes, want 300", len(hm.Nodes))
	}

	// The stalled client reads now: what it gets includes a resync snapshot, and it ends
	// with the engine's state.
	sm := streamtest.NewModel()
	for sm.Seq < last || !sm.Started {
		if err := sm.Apply(stalled.next()); err != nil {
			t.Fatal(err)
		}
	}
	if sm.Frames["snapshot/"+string(wire.ReasonBehind)] == 0 {
		t.Fatalf("the stalled client got frames %v; want a resync snapshot", sm.Frames)
	}
	if len(sm.Nodes) != 300 {
		t.Fatalf("the resynced client holds %d nodes, want 300", len(sm.Nodes))
	}
	if v := counterValue(t, e.reg, "gcscope_stream_resyncs_total"); v < 1 {
		t.Fatalf("resyncs_total %v", v)
	}
	if v := counterValue(t, e.reg, "gcscope_stream_events_dropped_total"); v < 1 {
		t.Fatalf("events_dropped_total %v", v)
	}
}

// TestStreamClientAdmittedBeforeTheHubRuns: a client can connect before the hub's run
// goroutine has started (the server serves as soon as it is built); the events after
// its snapshot still reach it once the hub runs. The hub used to take its first cursor
// when run started, losing those events: a client waited for them for ever (the flake
// of TestStreamQueuesOffAndSubscribeFrame on a loaded machine).
func TestStreamClientAdmittedBeforeTheHubRuns(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{})
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a1", "a", "Pod"))...)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	if err := m.Apply(c.next()); err != nil {
		t.Fatal(err)
	}
	last := e.eng.Publish(streamtest.SyncEvent("v1/pods"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	events := c.untilSeq(m, last)
	if len(events) != 1 || events[0].Type != gc.SyncChange {
		t.Fatalf("after the snapshot the client received %+v, want the one sync event", events)
	}
}

func TestStreamHubFallingBehindResyncsClients(t *testing.T) {
	e := newStreamEnv(t, 16, Options{}).start(t)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	m.Apply(c.next())
	// 40 events at once overflow the 16-event ring before the hub reads any.
	var evs []gc.Event
	for i := range 40 {
		evs = append(evs, streamtest.AddNode(streamtest.MakeNode("o"+strconv.Itoa(i), "a", "Pod"))...)
	}
	last := e.eng.Publish(evs...)
	c.untilSeq(m, last)
	if m.Frames["snapshot/"+string(wire.ReasonStale)] != 1 || len(m.Nodes) != 40 {
		t.Fatalf("frames %v, %d nodes; want one stale snapshot with 40 nodes", m.Frames, len(m.Nodes))
	}
}

func TestStreamMetrics(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	c := e.dial(t, "")
	c.next()
	if v := counterValue(t, e.reg, "gcscope_stream_clients"); v != 1 {
		t.Fatalf("clients %v", v)
	}
	// The server counts a frame once its write returns, which may be after the client read it.
	testkit.Eventually(t, "one frame counted", func() bool { return counterValue(t, e.reg, "gcscope_stream_frames_total") == 1 })
	// A second hub on the same registry shares the metrics instead of panicking.
	New(Options{Snapshot: e.eng.Snapshot, Feed: e.eng, Registerer: e.reg})
	c.conn.Close(websocket.StatusNormalClosure, "")
	testkit.Eventually(t, "the client is gone", func() bool { return counterValue(t, e.reg, "gcscope_stream_clients") == 0 })
}
