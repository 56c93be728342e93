package stream

import (
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// TestStreamFlushesAQuietStreamAtOnce: the first event after a quiet moment is sent at
// once, not after a batch: here both holds are an hour, and the event must come within
// the read's 10 s.
func TestStreamFlushesAQuietStreamAtOnce(t *testing.T) {
	e := newStreamEnv(t, 64, Options{Batch: time.Hour, QuickBatch: time.Hour}).start(t)
	ws := e.dial(t, "")
	if f := ws.next(); f.Type != "snapshot" {
		t.Fatalf("first frame %q, want a snapshot", f.Type)
	}
	seq := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("quiet", "a", "Pod"))...)
	f := ws.next()
	if f.Type != "deltas" || f.Seq != seq || len(f.Events) == 0 || f.Events[0].Node == nil || f.Events[0].Node.UID != "quiet" {
		t.Fatalf("after a quiet moment got %s up to seq %d with %d events, want the new node's deltas up to %d", f.Type, f.Seq, len(f.Events), seq)
	}
}

// TestStreamHoldsLongerWhileAClientLags: after a flush the hub lets events gather for
// QuickBatch while every client has taken the batches handed out before, and for Batch
// once a client has not (it is still busy with earlier frames: its next frame carries
// more events, and frames stay few).
func TestStreamHoldsLongerWhileAClientLags(t *testing.T) {
	h := New(Options{Batch: 50 * time.Millisecond, QuickBatch: 20 * time.Millisecond})
	quick := &streamClient{h: h, batches: make(chan *batch, 4), wake: make(chan struct{}, 1)}
	slow := &streamClient{h: h, batches: make(chan *batch, 4), wake: make(chan struct{}, 1)}
	h.clients[quick], h.clients[slow] = struct{}{}, struct{}{}
	mk := func(seq uint64) *batch { return &batch{from: seq, to: seq, events: []gc.Event{{Seq: seq}}} }

	if lagging := h.fanOut(mk(1)); lagging || h.holdAfter(lagging) != 20*time.Millisecond {
		t.Errorf("first batch, every queue empty: lagging %v, hold %v; want false, 20ms", lagging, h.holdAfter(lagging))
	}
	<-quick.batches // the quick client's writer takes its batch; the slow one's does not
	if lagging := h.fanOut(mk(2)); !lagging || h.holdAfter(lagging) != 50*time.Millisecond {
		t.Errorf("a client has not taken the previous batch: lagging %v, hold %v; want true, 50ms", lagging, h.holdAfter(lagging))
	}
	<-quick.batches
	<-slow.batches
	<-slow.batches
	if lagging := h.fanOut(mk(3)); lagging || h.holdAfter(lagging) != 20*time.Millisecond {
		t.Errorf("every client caught up: lagging %v, hold %v; want false, 20ms", lagging, h.holdAfter(lagging))
	}
}
