package streamtest

// A fake engine whose feed and graph change together, builders of its nodes and events,
// and connections with small kernel buffers (a client that does not read).

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// Engine is a fake engine for the stream: an EventSource and a Snapshot func whose state always matches its feed:
// a real gc.Feed, and the graph state it describes, changed together under one lock.
type Engine struct {
	mu     sync.Mutex
	feed   *gc.Feed
	nodes  map[types.UID]gc.NodeState
	queues []gc.QueueState
	sync   gc.SyncState
	log    []gc.Event // every event ever published, log[i].Seq == i+1
	NoLog  bool       // benchmarks keep no history
}

// NewEngine is a test builder.
func NewEngine(size int) *Engine {
	return &Engine{
		feed:   gc.NewFeed(size),
		nodes:  map[types.UID]gc.NodeState{},
		queues: []gc.QueueState{{Name: gc.GraphChanges}, {Name: gc.AttemptToDelete}, {Name: gc.AttemptToOrphan}},
		sync:   gc.SyncState{Resources: []string{"v1/pods"}},
	}
}

// Publish appends events atomically and returns the seq of the last one. It never waits.
func (f *Engine) Publish(events ...gc.Event) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.feed.Publish(events...)
	for i, e := range events {
		e.Seq = last - uint64(len(events)-1-i)
		ApplyEvent(f.nodes, e)
		if e.Sync != nil {
			f.sync = *e.Sync
		}
		if e.Queue != nil {
			q := &f.queues[slices.IndexFunc(f.queues, func(q gc.QueueState) bool { return q.Name == e.Queue.Queue })]
			q.Adds++
			q.Items = append(q.Items, gc.QueueItem{Object: e.Queue.Object, Queued: true})
		}
		if !f.NoLog {
			f.log = append(f.log, e)
		}
	}
	return last
}

func (f *Engine) LastSeq() uint64 { return f.feed.LastSeq() }

func (f *Engine) Since(seq uint64, max int) ([]gc.Event, error) { return f.feed.Since(seq, max) }

func (f *Engine) Wait(ctx context.Context, seq uint64) error { return f.feed.Wait(ctx, seq) }

func (f *Engine) Snapshot() gc.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := gc.Snapshot{Seq: f.feed.LastSeq(), Mode: gc.ModeActive, Sync: f.sync, Nodes: make([]gc.NodeState, 0, len(f.nodes))}
	for _, n := range f.nodes {
		s.Nodes = append(s.Nodes, n)
	}
	slices.SortFunc(s.Nodes, func(a, b gc.NodeState) int { return strings.Compare(string(a.UID), string(b.UID)) })
	for _, q := range f.queues {
		q.Items = slices.Clone(q.Items)
		s.Queues = append(s.Queues, q)
	}
	return s
}

// Node returns the current state of uid.
func (f *Engine) Node(uid types.UID) (gc.NodeState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[uid]
	return n, ok
}

// History returns the events published so far.
func (f *Engine) History() []gc.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// MakeNode is a test builder.
func MakeNode(uid, ns, kind string, owners ...string) *gc.NodeState {
	n := &gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: ns, Name: "n-" + uid, UID: types.UID(uid)}, Observed: true}
	for _, o := range owners {
		n.Owners = append(n.Owners, gc.OwnerRef{APIVersion: "v1", Kind: "ReplicaSet", Name: "n-" + o, UID: types.UID(o)})
	}
	return n
}

// AddNode is a NodeAdded event followed by its EdgeAdded events, as the engine publishes them.
func AddNode(n *gc.NodeState) []gc.Event {
	evs := []gc.Event{{Type: gc.NodeAdded, Node: n}}
	for _, o := range n.Owners {
		evs = append(evs, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID}})
	}
	return evs
}

// RemoveNode is a test builder.
func RemoveNode(n *gc.NodeState) []gc.Event {
	evs := []gc.Event{{Type: gc.NodeRemoved, Node: n}}
	for _, o := range n.Owners {
		evs = append(evs, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID}})
	}
	return evs
}

// QueueEvent is a test builder.
func QueueEvent(ref gc.ObjectRef) gc.Event {
	return gc.Event{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.AttemptToDelete, Op: gc.QueueAdded, Object: ref}}
}

// ActionEvent is a test builder.
func ActionEvent(ref gc.ObjectRef) gc.Event {
	return gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbKeep, Object: ref}}
}

// SyncEvent is a test builder.
func SyncEvent(resources ...string) gc.Event {
	return gc.Event{Type: gc.SyncChange, Sync: &gc.SyncState{Resources: resources}}
}

// SmallBuffers makes the kernel buffer little for a connection, so that a client that
// does not read blocks the server's writes after a few frames.
type SmallBuffers struct{ net.Listener }

func (l SmallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// SmallReadBufferDialer dials with a small receive buffer, set before the connection is
// made (shrinking it afterwards can leave the TCP window shut).
func SmallReadBufferDialer() *websocket.DialOptions {
	d := &net.Dialer{Control: SmallReceiveBuffer}
	return &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}}
}

// SmallReceiveBuffer is a net.Dialer's Control that makes the receive buffer little.
func SmallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var err error
	c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	return err
}

// Feed is the engine's feed.
func (f *Engine) Feed() *gc.Feed { return f.feed }
