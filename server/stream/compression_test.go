package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// TestStreamCompressionChoice: by default, and when on, the stream deflates for a client
// that offers permessage-deflate (as browsers do), and not for one that does not; off,
// never. The snapshot, large enough to be sent in pieces, arrives whole either way, and
// the stream goes on after it.
func TestStreamCompressionChoice(t *testing.T) {
	const nodes = 6000 // a snapshot of about 640 KB: written in pieces
	for _, c := range []struct {
		mode   Compression
		offers bool
		want   bool
	}{
		{CompressionDefault, true, true},
		{CompressionDefault, false, false},
		{CompressionOn, true, true},
		{CompressionOn, false, false},
		{CompressionOff, true, false},
	} {
		t.Run(fmt.Sprintf("mode=%d/offers=%v", c.mode, c.offers), func(t *testing.T) {
			e := newStreamEnv(t, 1<<14, Options{Compression: c.mode})
			var written atomic.Int64
			e.srv.Listener = &writeCountingListener{Listener: e.srv.Listener, n: &written}
			e.start(t)
			for i := range nodes {
				e.eng.Publish(streamtest.AddNode(streamtest.MakeNode(fmt.Sprintf("uid-%05d", i), "ns-"+strconv.Itoa(i%10), "Pod"))...)
			}
			want := e.eng.Snapshot()

			opts := &websocket.DialOptions{}
			if c.offers {
				opts.CompressionMode = websocket.CompressionNoContextTakeover
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, e.url(""), opts)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.CloseNow()
			conn.SetReadLimit(-1)
			ext := resp.Header.Get("Sec-WebSocket-Extensions")
			if got := strings.Contains(ext, "permessage-deflate"); got != c.want {
				t.Fatalf("Sec-WebSocket-Extensions %q: deflate %v, want %v", ext, got, c.want)
			}
			ws := &testWS{t: t, conn: conn}

			f := ws.next()
			if f.Type != "snapshot" || f.Seq != want.Seq || len(f.Nodes) != nodes {
				t.Fatalf("first frame: %s at %d with %d nodes, want the snapshot at %d with %d", f.Type, f.Seq, len(f.Nodes), want.Seq, nodes)
			}
			for i, n := range f.Nodes {
				if n.UID != want.Nodes[i].UID || n.Namespace != want.Nodes[i].Namespace {
					t.Fatalf("node %d: %s in %q, want %s in %q", i, n.UID, n.Namespace, want.Nodes[i].UID, want.Nodes[i].Namespace)
				}
			}
			// The snapshot was deflated on the wire, or not: JSON this repetitive deflates
			// more than 3×.
			onWire, size := written.Load(), int64(len(f.Raw))
			if deflated := onWire < size/3; deflated != c.want {
				t.Errorf("%d bytes on the wire for a snapshot of %d: deflated %v, want %v", onWire, size, deflated, c.want)
			}
			t.Logf("snapshot of %d bytes: %d on the wire (%q)", size, onWire, ext)

			seq := e.eng.Publish(gc.Event{Type: gc.NodeRemoved, Node: streamtest.MakeNode("uid-00000", "ns-0", "Pod")})
			if f := ws.next(); f.Type != "deltas" || f.Seq != seq || len(f.Events) != 1 || f.Events[0].Node.UID != types.UID("uid-00000") {
				t.Fatalf("after the snapshot: %s", f.Raw)
			}
		})
	}
}

// TestWriteSnapshotIsJSON: the snapshot written a piece at a time is exactly what
// json.Marshal makes of the frame, at any number of nodes around the piece size.
func TestWriteSnapshotIsJSON(t *testing.T) {
	for _, n := range []int{0, 1, 2, snapshotPieceNodes - 1, snapshotPieceNodes, snapshotPieceNodes + 1, 2*snapshotPieceNodes + 7} {
		for _, queues := range []bool{false, true} {
			f := wire.SnapshotFrame{Type: wire.FrameSnapshot, Reason: wire.ReasonInitial, Seq: 4711, Mode: gc.ModeActive, Nodes: []gc.NodeState{},
				Sync: gc.SyncState{Resources: []string{"v1/pods"}, Unsynced: []string{}}}
			for i := range n {
				f.Nodes = append(f.Nodes, *streamtest.MakeNode(fmt.Sprintf("uid-%05d", i), "ns", "Pod", "owner"))
			}
			if queues {
				// Names that look like the frame's own keys must not confuse it.
				f.Queues = []gc.QueueState{{Name: gc.AttemptToDelete, Depth: 1,
					Items: []gc.QueueItem{{Object: gc.ObjectRef{Kind: "Pod", Namespace: "ns", Name: `"nodes":[]`}}}}}
			}
			want, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := writeSnapshot(&got, f); err != nil {
				t.Fatalf("%d nodes: %v", n, err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%d nodes, queues %v: written\n%.300s\nwant\n%.300s", n, queues, got.Bytes(), want)
			}
		}
	}
}

// writeCountingListener counts the bytes its connections write.
type writeCountingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeCountingConn{Conn: c, n: l.n}, nil
}

type writeCountingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *writeCountingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestStreamOwnDeflate: a client that asks for the stream's own deflate (?encoding=deflate,
// as the page does) is not offered permessage-deflate even when it offers it; its frames
// of deflateAtLeast bytes or more arrive as binary messages, each a raw deflate stream that
// inflates on its own to the very JSON a text client receives, the snapshot (written in
// pieces) among them, and smaller ones as text. With compression off it gets text alone.
func TestStreamOwnDeflate(t *testing.T) {
	const nodes = 6000 // a snapshot of about 640 KB: written in pieces
	for _, mode := range []Compression{CompressionDefault, CompressionOff} {
		t.Run(fmt.Sprintf("mode=%d", mode), func(t *testing.T) {
			e := newStreamEnv(t, 1<<14, Options{Compression: mode}).start(t)
			for i := range nodes {
				e.eng.Publish(streamtest.AddNode(streamtest.MakeNode(fmt.Sprintf("uid-%05d", i), "ns-"+strconv.Itoa(i%10), "Pod"))...)
			}
			offers := &websocket.DialOptions{CompressionMode: websocket.CompressionNoContextTakeover}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, e.url("encoding=deflate"), offers)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			t.Cleanup(func() { conn.CloseNow() })
			conn.SetReadLimit(-1)
			if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
				t.Errorf("Sec-WebSocket-Extensions %q with encoding=deflate; want none (never deflated twice)", ext)
			}
			own := &testWS{t: t, conn: conn}
			plain := e.dial(t, "")
			want := mode != CompressionOff

			snap, plainSnap := own.next(), plain.next()
			if snap.Type != "snapshot" || len(snap.Nodes) != nodes || !bytes.Equal(snap.Raw, plainSnap.Raw) {
				t.Fatalf("snapshot: %s with %d nodes, the same JSON as a text client's %v", snap.Type, len(snap.Nodes), bytes.Equal(snap.Raw, plainSnap.Raw))
			}
			if (snap.Deflated != nil) != want || (want && len(snap.Deflated) > len(snap.Raw)/3) {
				t.Errorf("snapshot of %d bytes: a binary message of %d deflated bytes; want deflated %v (to less than a third)", len(snap.Raw), len(snap.Deflated), want)
			}

			// A batch large enough to be deflated, then, once it arrived, one small event.
			var many []gc.Event
			for i := range 20 {
				many = append(many, streamtest.AddNode(streamtest.MakeNode(fmt.Sprintf("late-%02d", i), "ns-late", "ConfigMap"))...)
			}
			for _, step := range []struct {
				name     string
				events   []gc.Event
				deflated bool
			}{
				{"20 nodes added", many, want},
				{"one removed", []gc.Event{{Type: gc.NodeRemoved, Node: streamtest.MakeNode("uid-00000", "ns-0", "Pod")}}, false},
			} {
				e.eng.Publish(step.events...)
				got, text := nextDeltas(t, own, plain)
				if !bytes.Equal(got.Raw, text.Raw) {
					t.Errorf("%s: the deflating client's frame inflates to\n%.300s\na text client's is\n%.300s", step.name, got.Raw, text.Raw)
				}
				if (got.Deflated != nil) != step.deflated {
					t.Errorf("%s: a frame of %d bytes arrived deflated %v; want %v", step.name, len(got.Raw), got.Deflated != nil, step.deflated)
				}
			}
		})
	}
}

// nextDeltas reads the next frame of each of two clients: deltas frames of the same events.
func nextDeltas(t *testing.T, a, b *testWS) (streamtest.Frame, streamtest.Frame) {
	t.Helper()
	fa, fb := a.next(), b.next()
	if fa.Type != "deltas" || fb.Type != "deltas" || fa.From != fb.From || fa.Seq != fb.Seq {
		t.Fatalf("frames %s (%d..%d) and %s (%d..%d); want the same deltas", fa.Type, fa.From, fa.Seq, fb.Type, fb.From, fb.Seq)
	}
	return fa, fb
}

// TestALaggingDeflatingClientTakesEachBatchsFrame: a client on the stream's own deflate
// that fell behind (it did not read while batches came) is sent, once it reads, the
// frames every client that kept up was sent, batch by batch and byte for byte (each
// deflated once for them all), where it used to join the batches that waited into a
// frame of its own and deflate it for itself alone.
func TestALaggingDeflatingClientTakesEachBatchsFrame(t *testing.T) {
	e := newStreamEnv(t, 1<<16, Options{})
	e.srv.Listener = streamtest.SmallBuffers{Listener: e.srv.Listener}
	e.start(t)
	healthy := e.dial(t, "encoding=deflate")
	lagging := e.dialWith(t, "encoding=deflate", streamtest.SmallReadBufferDialer())
	healthy.next()
	lagging.next()

	// Batches one at a time (each once the healthy client has it), each deflating to a few
	// KB, while the lagging client reads nothing: its writer blocks on the full socket.
	type sent struct {
		from, seq uint64
		deflated  string
	}
	var frames []sent
	const batches = 24
	for i := range batches {
		var evs []gc.Event
		for j := range 60 {
			evs = append(evs, streamtest.AddNode(streamtest.MakeNode(fmt.Sprintf("b%02d-%02d-%x", i, j, i*7919+j*104729), fmt.Sprintf("ns-%d-%d", i, j%7), "ConfigMap"))...)
		}
		seq := e.eng.Publish(evs...)
		f := healthy.next()
		if f.Type != "deltas" || f.Seq != seq || f.Deflated == nil {
			t.Fatalf("batch %d: the healthy client got %s to %d (deflated %v); want its deflated deltas to %d", i, f.Type, f.Seq, f.Deflated != nil, seq)
		}
		frames = append(frames, sent{f.From, f.Seq, string(f.Deflated)})
	}
	var got []sent
	for len(got) == 0 || got[len(got)-1].seq < frames[len(frames)-1].seq {
		f := lagging.next()
		if f.Type != "deltas" {
			t.Fatalf("the lagging client got a %s frame (reason %q) after %d deltas", f.Type, f.Reason, len(got))
		}
		got = append(got, sent{f.From, f.Seq, string(f.Deflated)})
	}
	if len(got) != len(frames) {
		t.Errorf("the lagging client got %d frames for %d batches", len(got), len(frames))
	}
	for i := range min(len(got), len(frames)) {
		if got[i].from != frames[i].from || got[i].seq != frames[i].seq || got[i].deflated != frames[i].deflated {
			t.Errorf("frame %d: the lagging client got %d..%d (%d bytes), the healthy one %d..%d (%d bytes), same bytes %v",
				i, got[i].from, got[i].seq, len(got[i].deflated), frames[i].from, frames[i].seq, len(frames[i].deflated), got[i].deflated == frames[i].deflated)
		}
	}
}
