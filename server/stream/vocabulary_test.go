package stream

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// TestTheStreamWritesItsDeclaredFrames walks wire.FrameTypes: in one session (a summary
// subscription, an event, a ping) the server sends a frame of each declared type and of
// no other, and each decodes into its declared shape with no key the shape lacks (the
// deltas frame is written by hand, byte by byte). Every snapshot's reason is declared.
func TestTheStreamWritesItsDeclaredFrames(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod", "a", "Pod"))...)
	c := e.dial(t, "summary=true")
	shapes := map[wire.FrameType]any{
		wire.FrameSnapshot: &wire.SnapshotFrame{}, wire.FrameDeltas: &wire.DeltasFrame{},
		wire.FrameSummary: &wire.SummaryFrame{}, wire.FramePong: &wire.PongFrame{},
	}
	seen := map[wire.FrameType]bool{}
	asked := false
	for len(seen) < len(wire.FrameTypes()) {
		f := c.next()
		typ := wire.FrameType(f.Type)
		shape, declared := shapes[typ]
		if !declared || !slices.Contains(wire.FrameTypes(), typ) {
			t.Fatalf("a frame of undeclared type %q: %s", f.Type, f.Raw)
		}
		dec := json.NewDecoder(bytes.NewReader(f.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(shape); err != nil {
			t.Errorf("a %s frame does not decode into its declared shape: %v\n%s", typ, err, f.Raw)
		}
		if typ == wire.FrameSnapshot && !slices.Contains(wire.SnapshotReasons(), wire.SnapshotReason(f.Reason)) {
			t.Errorf("a snapshot for an undeclared reason %q", f.Reason)
		}
		seen[typ] = true
		switch {
		case typ == wire.FrameSnapshot && !asked:
			// Hold namespace a, and ping.
			asked = true
			c.send(map[string]any{"type": "subscribe", "namespaces": []string{"a"}, "summary": true})
			c.send(map[string]any{"type": "ping"})
		case typ == wire.FrameSnapshot && f.Reason == string(wire.ReasonSubscribe):
			// Held: an event there comes as deltas (published before, the snapshot would hold it).
			e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod-2", "a", "Pod"))...)
		}
	}
	var d wire.DeltasFrame
	if err := json.Unmarshal(deltasFrame(3, 5, [][]byte{[]byte(`{"seq":4}`)}), &d); err != nil || d.Type != wire.FrameDeltas || d.From != 3 || d.Seq != 5 || len(d.Events) != 1 {
		t.Errorf("deltasFrame decodes to %+v, %v", d, err)
	}
}
