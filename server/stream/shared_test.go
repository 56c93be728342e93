package stream

import (
	"bytes"
	"testing"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/gc/feedtest"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// TestBatchFrameIsEveryClientsFrame: the deltas frame a batch encodes once for the clients
// that see everything (with and without the queues) is, byte for byte, the frame such a
// client's own filtering of the batch would send; it is built once and shared; and it is
// nil when the view selects none of the batch's events, as such a client then sends none.
func TestBatchFrameIsEveryClientsFrame(t *testing.T) {
	var events []gc.Event
	seq := uint64(10)
	for _, typ := range gc.EventTypes() {
		seq++
		e, err := feedtest.Sample(typ, seq)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	seq++
	events = append(events, gc.Event{Seq: seq, Type: gc.EventType("somethingNew"), Node: streamtest.MakeNode("x", "a", "Pod")})
	queueOnly := []gc.Event{streamtest.QueueEvent(streamtest.MakeNode("q", "a", "Pod").ObjectRef), streamtest.ActionEvent(streamtest.MakeNode("q", "a", "Pod").ObjectRef)}
	queueOnly[0].Seq, queueOnly[1].Seq = seq+1, seq+2

	for _, events := range [][]gc.Event{events, queueOnly} {
		for _, queues := range []bool{false, true} {
			b := &batch{from: events[0].Seq, to: events[len(events)-1].Seq, events: events}
			c := &streamClient{view: newView(subscription{Queues: queues}, nil), seq: b.from - 1, sent: b.from - 1}
			if !c.view.all {
				t.Fatal("a subscription to everything is not a view of everything")
			}
			c.view.reset(nil)
			c.add(b.events, b.encoded())
			var want []byte
			if len(c.pending) > 0 {
				want = deltasFrame(c.sent+1, b.to, c.pending)
			}
			got := b.frame(queues)
			if !bytes.Equal(got, want) {
				t.Errorf("queues=%v, events %d…%d: the batch's frame is\n%s\nthe client's own would be\n%s", queues, b.from, b.to, got, want)
			}
			if again := b.frame(queues); len(got) > 0 && &again[0] != &got[0] {
				t.Errorf("queues=%v: the batch's frame was built twice", queues)
			}
		}
	}
}
