package server

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
)

// TestStreamCompressionChoice: by default, and when on, the stream deflates for a client
// that offers permessage-deflate (as browsers do), and not for one that does not; off,
// never. The snapshot, large enough to be sent in pieces, arrives whole either way, and
// the stream goes on after it.
func TestStreamCompressionChoice(t *testing.T) {
	const nodes = 6000 // a snapshot of about 640 KB: written in pieces
	for _, c := range []struct {
		mode   StreamCompression
		offers bool
		want   bool
	}{
		{StreamCompressionDefault, true, true},
		{StreamCompressionDefault, false, false},
		{StreamCompressionOn, true, true},
		{StreamCompressionOn, false, false},
		{StreamCompressionOff, true, false},
	} {
		t.Run(fmt.Sprintf("mode=%d/offers=%v", c.mode, c.offers), func(t *testing.T) {
			e := newStreamEnv(t, 1<<14, hubOptions{Compression: c.mode})
			var written atomic.Int64
			e.srv.Listener = &writeCountingListener{Listener: e.srv.Listener, n: &written}
			e.start(t)
			for i := range nodes {
				e.eng.publish(addNode(mkNode(fmt.Sprintf("uid-%05d", i), "ns-"+strconv.Itoa(i%10), "Pod"))...)
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
			onWire, size := written.Load(), int64(len(f.raw))
			if deflated := onWire < size/3; deflated != c.want {
				t.Errorf("%d bytes on the wire for a snapshot of %d: deflated %v, want %v", onWire, size, deflated, c.want)
			}
			t.Logf("snapshot of %d bytes: %d on the wire (%q)", size, onWire, ext)

			seq := e.eng.publish(gc.Event{Type: gc.NodeRemoved, Node: mkNode("uid-00000", "ns-0", "Pod")})
			if f := ws.next(); f.Type != "deltas" || f.Seq != seq || len(f.Events) != 1 || f.Events[0].Node.UID != types.UID("uid-00000") {
				t.Fatalf("after the snapshot: %s", f.raw)
			}
		})
	}
}

// TestWriteSnapshotIsJSON: the snapshot written a piece at a time is exactly what
// json.Marshal makes of the frame, at any number of nodes around the piece size.
func TestWriteSnapshotIsJSON(t *testing.T) {
	for _, n := range []int{0, 1, 2, snapshotPieceNodes - 1, snapshotPieceNodes, snapshotPieceNodes + 1, 2*snapshotPieceNodes + 7} {
		for _, queues := range []bool{false, true} {
			f := snapshotFrame{Type: "snapshot", Reason: reasonInitial, Seq: 4711, Mode: gc.ModeActive, Nodes: []gc.NodeState{},
				Sync: gc.SyncState{Resources: []string{"v1/pods"}, Unsynced: []string{}}}
			for i := range n {
				f.Nodes = append(f.Nodes, *mkNode(fmt.Sprintf("uid-%05d", i), "ns", "Pod", "owner"))
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
