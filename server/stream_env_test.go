package server

// The stream tests' harness: the hub runs over a fake engine (fakeEngine: a feed ring and
// the graph state it describes, changed together under one lock, as the engine does) and
// real websocket clients talk to it; streamModel applies their frames and checks the
// sequence rules.

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// fakeEngine is an EventSource and a Snapshot func whose state always matches its feed:
// a real gc.Feed, and the graph state it describes, changed together under one lock.
type fakeEngine struct {
	mu     sync.Mutex
	feed   *gc.Feed
	nodes  map[types.UID]gc.NodeState
	queues []gc.QueueState
	sync   gc.SyncState
	log    []gc.Event // every event ever published, log[i].Seq == i+1
	noLog  bool       // benchmarks keep no history
}

func newFakeEngine(size int) *fakeEngine {
	return &fakeEngine{
		feed:   gc.NewFeed(size),
		nodes:  map[types.UID]gc.NodeState{},
		queues: []gc.QueueState{{Name: gc.GraphChanges}, {Name: gc.AttemptToDelete}, {Name: gc.AttemptToOrphan}},
		sync:   gc.SyncState{Resources: []string{"v1/pods"}},
	}
}

// publish appends events atomically and returns the seq of the last one. It never waits.
func (f *fakeEngine) publish(events ...gc.Event) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.feed.Publish(events...)
	for i, e := range events {
		e.Seq = last - uint64(len(events)-1-i)
		applyEvent(f.nodes, e)
		if e.Sync != nil {
			f.sync = *e.Sync
		}
		if e.Queue != nil {
			q := &f.queues[slices.IndexFunc(f.queues, func(q gc.QueueState) bool { return q.Name == e.Queue.Queue })]
			q.Adds++
			q.Items = append(q.Items, gc.QueueItem{Object: e.Queue.Object, Queued: true})
		}
		if !f.noLog {
			f.log = append(f.log, e)
		}
	}
	return last
}

func (f *fakeEngine) LastSeq() uint64 { return f.feed.LastSeq() }

func (f *fakeEngine) Since(seq uint64, max int) ([]gc.Event, error) { return f.feed.Since(seq, max) }

func (f *fakeEngine) Wait(ctx context.Context, seq uint64) error { return f.feed.Wait(ctx, seq) }

func (f *fakeEngine) Snapshot() gc.Snapshot {
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

// node returns the current state of uid.
func (f *fakeEngine) node(uid types.UID) (gc.NodeState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[uid]
	return n, ok
}

// history returns the events published so far.
func (f *fakeEngine) history() []gc.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// applyEvent applies a node event to a state; other events change no node.
func applyEvent(nodes map[types.UID]gc.NodeState, e gc.Event) {
	switch e.Type {
	case gc.NodeAdded, gc.NodeUpdated:
		nodes[e.Node.UID] = *e.Node
	case gc.NodeRemoved:
		delete(nodes, e.Node.UID)
	}
}

func mkNode(uid, ns, kind string, owners ...string) *gc.NodeState {
	n := &gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: ns, Name: "n-" + uid, UID: types.UID(uid)}, Observed: true}
	for _, o := range owners {
		n.Owners = append(n.Owners, gc.OwnerRef{APIVersion: "v1", Kind: "ReplicaSet", Name: "n-" + o, UID: types.UID(o)})
	}
	return n
}

// addNode is a NodeAdded event followed by its EdgeAdded events, as the engine publishes them.
func addNode(n *gc.NodeState) []gc.Event {
	evs := []gc.Event{{Type: gc.NodeAdded, Node: n}}
	for _, o := range n.Owners {
		evs = append(evs, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID}})
	}
	return evs
}

func removeNode(n *gc.NodeState) []gc.Event {
	evs := []gc.Event{{Type: gc.NodeRemoved, Node: n}}
	for _, o := range n.Owners {
		evs = append(evs, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID}})
	}
	return evs
}

func queueEvent(ref gc.ObjectRef) gc.Event {
	return gc.Event{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.AttemptToDelete, Op: gc.QueueAdded, Object: ref}}
}

func actionEvent(ref gc.ObjectRef) gc.Event {
	return gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbKeep, Object: ref}}
}

func syncEvent(resources ...string) gc.Event {
	return gc.Event{Type: gc.SyncChange, Sync: &gc.SyncState{Resources: resources}}
}

// streamEnv is a hub over a fake engine, served by an httptest server.
type streamEnv struct {
	eng *fakeEngine
	hub *hub
	srv *httptest.Server
	reg *prometheus.Registry
	// stop ends the hub and the server (at the latest when the test ends).
	stop func()
}

func newStreamEnv(t testing.TB, ringSize int, o hubOptions) *streamEnv {
	t.Helper()
	e := &streamEnv{eng: newFakeEngine(ringSize), reg: prometheus.NewRegistry()}
	o.Snapshot, o.Feed, o.Registerer = e.eng.Snapshot, e.eng, e.reg
	o.Summary = func() gc.Summary { // the snapshot counted, as for an engine without kept counts
		s := e.eng.Snapshot()
		var z gc.Summarizer
		for i := range s.Nodes {
			z.Add(&s.Nodes[i])
		}
		return z.Summary(s.Seq)
	}
	if o.Batch == 0 {
		o.Batch = 5 * time.Millisecond
	}
	e.hub = newHub(o)
	e.srv = httptest.NewUnstartedServer(e.hub)
	return e
}

// start runs the hub and the server until the test ends.
func (e *streamEnv) start(t testing.TB) *streamEnv {
	t.Helper()
	e.srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.hub.run(ctx); close(done) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			e.srv.Close()
		})
	}
	t.Cleanup(e.stop)
	return e
}

// untilHandedOut waits until the hub has handed the events up to seq to its clients (at
// most a minute: a test that needs more fails on what it then misses).
func (e *streamEnv) untilHandedOut(seq uint64) {
	testkit.Poll(context.Background(), time.Minute, func() bool { return e.hub.flushed.Load() >= seq })
}

// untilPublished waits until the fake engine has published seq, or done is closed.
func (e *streamEnv) untilPublished(seq uint64, done <-chan struct{}) {
	testkit.Poll(context.Background(), time.Minute, func() bool {
		select {
		case <-done:
			return true
		default:
			return e.eng.LastSeq() >= seq
		}
	})
}

func (e *streamEnv) url(query string) string {
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/v1/stream"
	if query != "" {
		u += "?" + query
	}
	return u
}

// streamFrame is any server frame.
type streamFrame struct {
	Type   string          `json:"type"`
	Reason string          `json:"reason"`
	Seq    uint64          `json:"seq"`
	From   uint64          `json:"from"`
	Mode   gc.Mode         `json:"mode"`
	Nodes  []gc.NodeState  `json:"nodes"`
	Queues []gc.QueueState `json:"queues"`
	Sync   *gc.SyncState   `json:"sync"`
	Events []gc.Event      `json:"events"`
	raw    []byte
	// deflated is the binary message raw was inflated from (?encoding=deflate), nil
	// for a text message.
	deflated []byte
}

// testWS is a websocket client of the stream.
type testWS struct {
	t    testing.TB
	conn *websocket.Conn
}

func (e *streamEnv) dial(t testing.TB, query string) *testWS {
	t.Helper()
	return e.dialWith(t, query, nil)
}

func (e *streamEnv) dialWith(t testing.TB, query string, opts *websocket.DialOptions) *testWS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, e.url(query), opts)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial %q: %v (HTTP %d)", query, err, code)
	}
	conn.SetReadLimit(-1)
	c := &testWS{t: t, conn: conn}
	t.Cleanup(func() { conn.CloseNow() })
	return c
}

// read reads one frame, with a generous timeout.
func (c *testWS) read() (streamFrame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		return streamFrame{}, err
	}
	var wire []byte
	if typ == websocket.MessageBinary {
		// The stream's own deflate: one raw deflate stream, ended.
		wire = data
		if data, err = io.ReadAll(flate.NewReader(bytes.NewReader(wire))); err != nil {
			return streamFrame{}, fmt.Errorf("inflating a binary frame of %d bytes: %w", len(wire), err)
		}
	}
	var f streamFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return streamFrame{}, fmt.Errorf("decoding %s: %w", data, err)
	}
	f.raw, f.deflated = data, wire
	return f, nil
}

func (c *testWS) next() streamFrame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

func (c *testWS) send(v any) {
	c.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(context.Background(), websocket.MessageText, data); err != nil {
		c.t.Fatalf("writing %s: %v", data, err)
	}
}

// untilSeq reads frames, applying them to m, until m reaches seq; it returns the events
// of the deltas frames read.
func (c *testWS) untilSeq(m *streamModel, seq uint64) []gc.Event {
	c.t.Helper()
	var events []gc.Event
	for m.seq < seq || !m.started {
		f := c.next()
		if err := m.apply(f); err != nil {
			c.t.Fatal(err)
		}
		events = append(events, f.Events...)
	}
	return events
}

// streamModel is what a client makes of the frames: the nodes it holds at seq.
type streamModel struct {
	started bool
	seq     uint64
	nodes   map[types.UID]gc.NodeState
	frames  map[string]int // by type or "snapshot/"+reason
}

func newStreamModel() *streamModel {
	return &streamModel{nodes: map[types.UID]gc.NodeState{}, frames: map[string]int{}}
}

// apply applies f and checks the sequence rules: a snapshot never goes back, a deltas
// frame starts right after the client's seq, and its events are in order within it.
func (m *streamModel) apply(f streamFrame) error {
	switch f.Type {
	case "snapshot":
		m.frames["snapshot/"+f.Reason]++
		if m.started && f.Seq < m.seq {
			return fmt.Errorf("snapshot at %d after seq %d", f.Seq, m.seq)
		}
		if f.Nodes == nil || f.Sync == nil {
			return fmt.Errorf("snapshot without nodes or sync: %s", f.raw)
		}
		clear(m.nodes)
		for _, n := range f.Nodes {
			m.nodes[n.UID] = n
		}
		m.seq, m.started = f.Seq, true
	case "deltas":
		m.frames["deltas"]++
		if !m.started {
			return fmt.Errorf("deltas before a snapshot: %s", f.raw)
		}
		if f.From != m.seq+1 {
			return fmt.Errorf("deltas from %d after seq %d", f.From, m.seq)
		}
		if f.Events == nil {
			return fmt.Errorf("deltas without events: %s", f.raw)
		}
		prev := m.seq
		for _, e := range f.Events {
			if e.Seq <= prev || e.Seq > f.Seq {
				return fmt.Errorf("event %d out of order in deltas (%d, %d]", e.Seq, m.seq, f.Seq)
			}
			prev = e.Seq
			applyEvent(m.nodes, e)
		}
		m.seq = f.Seq
	default:
		m.frames[f.Type]++
	}
	return nil
}

func uidsOf[T any](m map[types.UID]T) []string {
	var out []string
	for u := range m {
		out = append(out, string(u))
	}
	slices.Sort(out)
	return out
}

func nodeUIDs(nodes []gc.NodeState) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, string(n.UID))
	}
	slices.Sort(out)
	return out
}

func eventSeqs(events []gc.Event) []uint64 {
	var out []uint64
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func counterValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			}
		}
	}
	return total
}
