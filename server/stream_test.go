package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// The stream tests run the hub over a fake engine (fakeEngine: a feed ring and the graph
// state it describes, changed together under one lock, as the engine does) and talk to
// it with real websocket clients.

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
	if typ != websocket.MessageText {
		return streamFrame{}, fmt.Errorf("frame of type %v", typ)
	}
	var f streamFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return streamFrame{}, fmt.Errorf("decoding %s: %w", data, err)
	}
	f.raw = data
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

func TestStreamSnapshotThenDeltas(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	e.eng.publish(addNode(mkNode("d1", "a", "Deployment"))...)
	last := e.eng.publish(addNode(mkNode("r1", "a", "ReplicaSet", "d1"))...)

	c := e.dial(t, "")
	f := c.next()
	if f.Type != "snapshot" || f.Reason != reasonInitial || f.Seq != last || f.Mode != gc.ModeActive {
		t.Fatalf("first frame: %s; want the initial snapshot at seq %d", f.raw, last)
	}
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"d1", "r1"}) {
		t.Fatalf("snapshot nodes %v", got)
	}
	if len(f.Queues) != 3 || f.Sync == nil || len(f.Sync.Resources) != 1 {
		t.Fatalf("snapshot queues %v sync %v", f.Queues, f.Sync)
	}
	m := newStreamModel()
	if err := m.apply(f); err != nil {
		t.Fatal(err)
	}

	first := e.eng.publish(addNode(mkNode("p1", "a", "Pod", "r1"))...)
	upd := mkNode("p1", "a", "Pod", "r1")
	upd.Finalizers = []string{"x"}
	e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: upd})
	last = e.eng.publish(removeNode(mkNode("d1", "a", "Deployment"))...)
	events := c.untilSeq(m, last)
	if got, want := eventSeqs(events), seqRange(first-1, last); !slices.Equal(got, want) {
		t.Fatalf("deltas carried seqs %v, want %v", got, want)
	}
	want := e.eng.Snapshot()
	if got := uidsOf(m.nodes); !slices.Equal(got, nodeUIDs(want.Nodes)) {
		t.Fatalf("client holds %v, engine %v", got, nodeUIDs(want.Nodes))
	}
	if got := m.nodes["p1"].Finalizers; !slices.Equal(got, []string{"x"}) {
		t.Fatalf("p1 finalizers %v after the update", got)
	}
}

func TestStreamBatchesEvents(t *testing.T) {
	// A long batch period: events published between two flushes arrive in one frame.
	e := newStreamEnv(t, 1024, hubOptions{Batch: time.Second}).start(t)
	c := e.dial(t, "")
	m := newStreamModel()
	if err := m.apply(c.next()); err != nil {
		t.Fatal(err)
	}
	// The first event after a quiet period is flushed at once; the flush after it no
	// earlier than a second later, by then the next ten (published one by one) are in.
	s1 := e.eng.publish(addNode(mkNode("x0", "a", "Pod"))...)
	f := c.next()
	if f.Type != "deltas" || f.Seq != s1 || len(f.Events) != 1 {
		t.Fatalf("first deltas %s", f.raw)
	}
	if err := m.apply(f); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := range 10 {
		last = e.eng.publish(addNode(mkNode("x"+strconv.Itoa(i+1), "a", "Pod"))...)
	}
	f = c.next()
	if f.Type != "deltas" || f.From != s1+1 || f.Seq != last {
		t.Fatalf("batched frame %s; want deltas (%d, %d]", f.raw, s1, last)
	}
	if got, want := eventSeqs(f.Events), seqRange(s1+1, last); !slices.Equal(got, want) {
		t.Fatalf("batched events carry seqs %v, want %v", got, want)
	}
}

func TestStreamResumeSince(t *testing.T) {
	e := newStreamEnv(t, 64, hubOptions{}).start(t)
	e.eng.publish(addNode(mkNode("a1", "a", "Pod"))...)
	c := e.dial(t, "")
	m := newStreamModel()
	mid := e.eng.publish(addNode(mkNode("a2", "a", "Pod"))...)
	c.untilSeq(m, mid)
	c.conn.Close(websocket.StatusNormalClosure, "")

	// Missed while away.
	e.eng.publish(addNode(mkNode("a3", "a", "Pod"))...)
	last := e.eng.publish(removeNode(mkNode("a1", "a", "Pod"))...)

	c = e.dial(t, "since="+strconv.FormatUint(mid, 10))
	f := c.next()
	if f.Type != "deltas" || f.From != mid+1 {
		t.Fatalf("resume: first frame %s; want deltas from %d", f.raw, mid+1)
	}
	if err := m.apply(f); err != nil {
		t.Fatal(err)
	}
	c.untilSeq(m, last)
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"a2", "a3"}) {
		t.Fatalf("after resume the client holds %v", got)
	}
	if m.frames["snapshot/"+reasonInitial] != 1 || len(m.frames) != 2 {
		t.Fatalf("frames %v: want one snapshot (the first connection) and deltas", m.frames)
	}

	// Resuming at the newest seq: an empty deltas frame confirms it.
	c = e.dial(t, "since="+strconv.FormatUint(last, 10))
	if f := c.next(); f.Type != "deltas" || f.From != last+1 || f.Seq != last || len(f.Events) != 0 {
		t.Fatalf("resume at the newest seq: %s", f.raw)
	}

	// The ring holds 64 events: resuming before them gets a snapshot.
	for i := range 100 {
		last = e.eng.publish(addNode(mkNode("b"+strconv.Itoa(i), "b", "Pod"))...)
	}
	c = e.dial(t, "since="+strconv.FormatUint(mid, 10))
	if f := c.next(); f.Type != "snapshot" || f.Reason != reasonStale || f.Seq < last {
		t.Fatalf("too old since: %s; want a stale snapshot", f.raw)
	}
	// Since in the future: a snapshot.
	c = e.dial(t, "since="+strconv.FormatUint(last+1000, 10))
	if f := c.next(); f.Type != "snapshot" || f.Seq != last {
		t.Fatalf("future since: %s; want a snapshot", f.raw)
	}
}

func TestStreamResumeWithFilterSendsLeavingNodesAsRemovals(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	// v is a virtual owner that dependents placed in namespace a; observed, it is
	// cluster-scoped and leaves the namespace view.
	v := mkNode("v", "a", "Node")
	v.Virtual, v.Observed = true, false
	e.eng.publish(addNode(v)...)
	e.eng.publish(addNode(mkNode("p", "a", "Pod", "v"))...)
	c := e.dial(t, "namespace=a")
	m := newStreamModel()
	mid := e.eng.LastSeq()
	c.untilSeq(m, mid)
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"p", "v"}) {
		t.Fatalf("namespace a holds %v", got)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")

	e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: mkNode("v", "", "Node")})
	e.eng.publish(addNode(mkNode("q", "b", "Pod"))...)
	last := e.eng.publish(addNode(mkNode("r", "a", "Pod"))...)

	c = e.dial(t, "namespace=a&since="+strconv.FormatUint(mid, 10))
	events := c.untilSeq(m, last)
	if m.frames["snapshot/"+reasonInitial] != 1 {
		t.Fatalf("frames %v: the resume sent a snapshot", m.frames)
	}
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"p", "r"}) {
		t.Fatalf("after resume namespace a holds %v; want p, r", got)
	}
	for _, ev := range events {
		if ev.Node != nil && ev.Node.UID == "q" {
			t.Fatalf("an event of namespace b reached a namespace-a client: %+v", ev)
		}
	}
}

func TestStreamFiltersNamespaceAndKind(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	e.eng.publish(addNode(mkNode("a-pod", "a", "Pod"))...)
	e.eng.publish(addNode(mkNode("a-rs", "a", "ReplicaSet"))...)
	e.eng.publish(addNode(mkNode("b-pod", "b", "Pod"))...)
	e.eng.publish(addNode(mkNode("cluster", "", "Node"))...)

	c := e.dial(t, "namespace=a&kind=pod")
	f := c.next()
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"a-pod"}) {
		t.Fatalf("snapshot of namespace a, kind pod: %v", got)
	}
	m := newStreamModel()
	m.apply(f)

	aPod2 := mkNode("a-pod2", "a", "Pod", "a-rs")
	e.eng.publish(addNode(mkNode("b-pod2", "b", "Pod"))...)
	e.eng.publish(addNode(mkNode("a-rs2", "a", "ReplicaSet"))...)
	e.eng.publish(queueEvent(mkNode("b-pod", "b", "Pod").ObjectRef), actionEvent(mkNode("b-pod", "b", "Pod").ObjectRef))
	e.eng.publish(queueEvent(mkNode("a-pod", "a", "Pod").ObjectRef), actionEvent(mkNode("a-pod", "a", "Pod").ObjectRef))
	e.eng.publish(syncEvent("v1/pods", "apps/v1/replicasets"))
	last := e.eng.publish(addNode(aPod2)...)
	events := c.untilSeq(m, last)

	var got []string
	for _, ev := range events {
		switch {
		case ev.Node != nil:
			got = append(got, string(ev.Type)+":"+string(ev.Node.UID))
		case ev.Edge != nil:
			got = append(got, string(ev.Type)+":"+string(ev.Edge.Dependent))
		case ev.Queue != nil:
			got = append(got, "queue:"+string(ev.Queue.Object.UID))
		case ev.Action != nil:
			got = append(got, "action:"+string(ev.Action.Object.UID))
		default:
			got = append(got, string(ev.Type))
		}
	}
	want := []string{"queue:a-pod", "action:a-pod", "sync", "nodeAdded:a-pod2", "edgeAdded:a-pod2"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestStreamFiltersUIDClosure(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	e.eng.publish(addNode(mkNode("dep", "a", "Deployment"))...)
	e.eng.publish(addNode(mkNode("rs", "a", "ReplicaSet", "dep"))...)
	e.eng.publish(addNode(mkNode("p1", "a", "Pod", "rs"))...)
	e.eng.publish(addNode(mkNode("other", "a", "Pod"))...)
	e.eng.publish(addNode(mkNode("other-child", "a", "Pod", "other"))...)

	c := e.dial(t, "uid=rs")
	f := c.next()
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"dep", "p1", "rs"}) {
		t.Fatalf("closure of rs: %v", got)
	}
	m := newStreamModel()
	m.apply(f)

	// A new dependent joins; an unrelated object does not.
	e.eng.publish(addNode(mkNode("unrelated", "a", "Pod"))...)
	last := e.eng.publish(addNode(mkNode("p2", "a", "Pod", "rs"))...)
	events := c.untilSeq(m, last)
	for _, ev := range events {
		if ev.Node != nil && ev.Node.UID == "unrelated" {
			t.Fatal("an object outside the closure was sent")
		}
	}
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"dep", "p1", "p2", "rs"}) {
		t.Fatalf("after p2: %v", got)
	}

	// An existing object is adopted: it joins with its own dependents, by a snapshot.
	adopted := mkNode("other", "a", "Pod", "rs")
	last = e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: adopted}, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: "other", Owner: "rs"}})
	c.untilSeq(m, last)
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"dep", "other", "other-child", "p1", "p2", "rs"}) {
		t.Fatalf("after adoption: %v", got)
	}
	if m.frames["snapshot/"+reasonComponent] != 1 {
		t.Fatalf("frames %v: want one component snapshot", m.frames)
	}

	// A uid subscription resumes from a snapshot: its component is the graph's.
	c2 := e.dial(t, "uid=rs&since="+strconv.FormatUint(last, 10))
	if f := c2.next(); f.Type != "snapshot" {
		t.Fatalf("uid resume: %s", f.raw)
	}
}

func TestStreamQueuesOffAndSubscribeFrame(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	e.eng.publish(addNode(mkNode("a1", "a", "Pod"))...)
	e.eng.publish(addNode(mkNode("b1", "b", "Pod"))...)
	c := e.dial(t, "queues=false")
	f := c.next()
	if f.Type != "snapshot" || f.Queues != nil || strings.Contains(string(f.raw), `"queues"`) {
		t.Fatalf("queues=false snapshot carries queues: %s", f.raw)
	}
	m := newStreamModel()
	m.apply(f)
	ref := mkNode("a1", "a", "Pod").ObjectRef
	e.eng.publish(queueEvent(ref), actionEvent(ref))
	last := e.eng.publish(syncEvent("v1/pods"))
	for _, ev := range c.untilSeq(m, last) {
		if ev.Type != gc.SyncChange {
			t.Fatalf("queues=false received %s", ev.Type)
		}
	}

	// Ping, then narrow to namespace b with queues: a pong and a fresh snapshot.
	c.send(map[string]any{"type": "ping"})
	c.send(map[string]any{"type": "subscribe", "namespaces": []string{"b"}, "queues": true})
	var snap streamFrame
	pongs := 0
	for snap.Type == "" {
		f := c.next()
		switch f.Type {
		case "pong":
			pongs++
		case "snapshot":
			snap = f
		}
	}
	if pongs != 1 || snap.Reason != reasonSubscribe || len(snap.Queues) != 3 {
		t.Fatalf("pongs %d, snapshot %s", pongs, snap.raw)
	}
	if got := nodeUIDs(snap.Nodes); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("subscribed to b: %v", got)
	}
	m.apply(snap)
	bref := mkNode("b1", "b", "Pod").ObjectRef
	e.eng.publish(queueEvent(ref))
	last = e.eng.publish(queueEvent(bref))
	events := c.untilSeq(m, last)
	if len(events) != 1 || events[0].Queue == nil || events[0].Queue.Object.UID != "b1" {
		t.Fatalf("namespace b with queues received %+v", events)
	}
}

// smallBuffers makes the kernel buffer little for a connection, so that a client that
// does not read blocks the server's writes after a few frames.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// smallReadBufferDialer dials with a small receive buffer, set before the connection is
// made (shrinking it afterwards can leave the TCP window shut).
func smallReadBufferDialer() *websocket.DialOptions {
	d := &net.Dialer{Control: smallReceiveBuffer}
	return &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}}
}

// smallReceiveBuffer is a net.Dialer's Control that makes the receive buffer little.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var err error
	c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	return err
}

func TestStreamStalledClientDoesNotBlockHub(t *testing.T) {
	e := newStreamEnv(t, 1<<16, hubOptions{Buffer: 4})
	e.srv.Listener = smallBuffers{e.srv.Listener}
	e.start(t)
	stalled := e.dialWith(t, "", smallReadBufferDialer())
	healthy := e.dial(t, "")
	hm := newStreamModel()
	hm.apply(healthy.next())

	// Publish fat events while the stalled client reads nothing: the publisher never
	// waits, and the healthy client keeps receiving.
	fat := strings.Repeat("f", 2000)
	published := make(chan uint64)
	go func() {
		var last uint64
		for i := range 300 {
			n := mkNode("s"+strconv.Itoa(i), "a", "Pod")
			n.Finalizers = []string{fat}
			last = e.eng.publish(addNode(n)...)
			if i%10 == 9 {
				time.Sleep(2 * time.Millisecond)
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
	if len(hm.nodes) != 300 {
		t.Fatalf("the healthy client holds %d nodes, want 300", len(hm.nodes))
	}

	// The stalled client reads now: what it gets includes a resync snapshot, and it ends
	// with the engine's state.
	sm := newStreamModel()
	for sm.seq < last || !sm.started {
		if err := sm.apply(stalled.next()); err != nil {
			t.Fatal(err)
		}
	}
	if sm.frames["snapshot/"+reasonBehind] == 0 {
		t.Fatalf("the stalled client got frames %v; want a resync snapshot", sm.frames)
	}
	if len(sm.nodes) != 300 {
		t.Fatalf("the resynced client holds %d nodes, want 300", len(sm.nodes))
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
	e := newStreamEnv(t, 1024, hubOptions{})
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.eng.publish(addNode(mkNode("a1", "a", "Pod"))...)
	c := e.dial(t, "")
	m := newStreamModel()
	if err := m.apply(c.next()); err != nil {
		t.Fatal(err)
	}
	last := e.eng.publish(syncEvent("v1/pods"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.hub.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	events := c.untilSeq(m, last)
	if len(events) != 1 || events[0].Type != gc.SyncChange {
		t.Fatalf("after the snapshot the client received %+v, want the one sync event", events)
	}
}

func TestStreamHubFallingBehindResyncsClients(t *testing.T) {
	e := newStreamEnv(t, 16, hubOptions{}).start(t)
	c := e.dial(t, "")
	m := newStreamModel()
	m.apply(c.next())
	// 40 events at once overflow the 16-event ring before the hub reads any.
	var evs []gc.Event
	for i := range 40 {
		evs = append(evs, addNode(mkNode("o"+strconv.Itoa(i), "a", "Pod"))...)
	}
	last := e.eng.publish(evs...)
	c.untilSeq(m, last)
	if m.frames["snapshot/"+reasonStale] != 1 || len(m.nodes) != 40 {
		t.Fatalf("frames %v, %d nodes; want one stale snapshot with 40 nodes", m.frames, len(m.nodes))
	}
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

func TestStreamMetrics(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	c := e.dial(t, "")
	c.next()
	if v := counterValue(t, e.reg, "gcscope_stream_clients"); v != 1 {
		t.Fatalf("clients %v", v)
	}
	// The server counts a frame once its write returns, which may be after the client read it.
	waitUntil(t, "one frame counted", func() bool { return counterValue(t, e.reg, "gcscope_stream_frames_total") == 1 })
	// A second hub on the same registry shares the metrics instead of panicking.
	newHub(hubOptions{Snapshot: e.eng.Snapshot, Feed: e.eng, Registerer: e.reg})
	c.conn.Close(websocket.StatusNormalClosure, "")
	waitUntil(t, "the client is gone", func() bool { return counterValue(t, e.reg, "gcscope_stream_clients") == 0 })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStreamBadFramesClose(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	cases := []struct {
		name   string
		typ    websocket.MessageType
		data   []byte
		code   websocket.StatusCode
		reason string
	}{
		{"invalid JSON", websocket.MessageText, []byte(`{"type":`), websocket.StatusPolicyViolation, "bad frame: invalid JSON"},
		{"unknown type", websocket.MessageText, []byte(`{"type":"x"}`), websocket.StatusPolicyViolation, `bad frame: unknown type "x"`},
		{"unknown field", websocket.MessageText, []byte(`{"type":"subscribe","namespace":["a"]}`), websocket.StatusPolicyViolation, "bad frame: invalid JSON"},
		{"bad namespace", websocket.MessageText, []byte(`{"type":"subscribe","namespaces":["No_Such"]}`), websocket.StatusPolicyViolation, `bad frame: namespace "No_Such" is not a valid namespace name`},
		{"binary", websocket.MessageBinary, []byte(`{"type":"ping"}`), websocket.StatusUnsupportedData, "bad frame: binary frames are not accepted"},
		{"oversized", websocket.MessageText, []byte(`{"type":"subscribe","uids":["` + strings.Repeat("u", 70<<10) + `"]}`), websocket.StatusMessageTooBig, "read limited at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dial(t, "")
			c.next()
			if err := c.conn.Write(context.Background(), tc.typ, tc.data); err != nil {
				t.Fatal(err)
			}
			var err error
			for err == nil {
				_, err = c.read()
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("read error %v; want a close frame", err)
			}
			if ce.Code != tc.code || !strings.HasPrefix(ce.Reason, tc.reason) {
				t.Fatalf("closed with %d %q; want %d %q", ce.Code, ce.Reason, tc.code, tc.reason)
			}
		})
	}
}

func TestStreamCrossOrigin(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{OriginPatterns: []string{"trusted.example"}}).start(t)
	ctx := context.Background()
	_, resp, err := websocket.Dial(ctx, e.url(""), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: err %v, response %v; want 403", err, resp)
	}
	c := e.dialWith(t, "", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://trusted.example"}}})
	if f := c.next(); f.Type != "snapshot" {
		t.Fatalf("allowed origin: %s", f.raw)
	}
	// The server's own host is always allowed.
	c = e.dialWith(t, "", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {e.srv.URL}}})
	if f := c.next(); f.Type != "snapshot" {
		t.Fatalf("same origin: %s", f.raw)
	}
}

func TestStreamInvalidQueryIs400(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{}).start(t)
	for _, q := range []string{"since=abc", "since=-1", "queues=maybe", "namespace=Not_A_Namespace", "uid=a%20b", "nope=1"} {
		_, resp, err := websocket.Dial(context.Background(), e.url(q), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%s: err %v, response %v; want 400", q, err, resp)
			continue
		}
		var body apiError
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Code != "bad_request" || body.Message == "" {
			t.Errorf("?%s: body %+v (%v)", q, body, err)
		}
	}
}

func TestStreamKeepaliveClosesSilentClient(t *testing.T) {
	e := newStreamEnv(t, 1024, hubOptions{PingInterval: 50 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}).start(t)
	live := e.dial(t, "")
	live.next()
	liveDone := make(chan error, 1)
	go func() {
		for {
			if _, err := live.read(); err != nil {
				liveDone <- err
				return
			}
		}
	}()
	e.dial(t, "") // never reads, so never answers a ping
	waitUntil(t, "the silent client is closed", func() bool { return e.hub.clientCount() == 1 })
	select {
	case err := <-liveDone:
		t.Fatalf("the client that reads was closed: %v", err)
	default:
	}
}

// churnSub is a subscription of the property test and the filter it must amount to.
type churnSub struct {
	query string
	pass  func(n gc.NodeState) bool
	uids  []types.UID // a closure subscription
}

// TestStreamPropertyChurn: under concurrent churn, with clients connecting at random
// moments, pausing, and resuming with since, every client's state after every frame is
// the engine's state at that frame's seq, through the client's filter.
func TestStreamPropertyChurn(t *testing.T) {
	// Small socket buffers and client queues: clients that pause fall behind.
	e := newStreamEnv(t, 4096, hubOptions{Buffer: 8})
	e.srv.Listener = smallBuffers{e.srv.Listener}
	e.start(t)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var rngMu sync.Mutex
	rnd := func(n int) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(n)
	}
	namespaces := []string{"a", "b", "c", ""}
	kinds := []string{"Pod", "ReplicaSet", "Deployment"}
	e.eng.publish(addNode(mkNode("seed", "a", "Deployment"))...)

	// The churn: random adds, updates (some moving a node to another namespace or kind,
	// as a virtual node's identity is corrected), removals, re-parenting, queue, action
	// and sync events.
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		var live []types.UID
		live = append(live, "seed")
		for i := range 3000 {
			if i%5 == 0 {
				time.Sleep(time.Millisecond)
			}
			op := rnd(100)
			switch {
			case op < 35 || len(live) < 3:
				var owners []string
				for range rnd(3) {
					owners = append(owners, string(live[rnd(len(live))]))
				}
				n := mkNode("n"+strconv.Itoa(i), namespaces[rnd(4)], kinds[rnd(3)], owners...)
				e.eng.publish(addNode(n)...)
				live = append(live, n.UID)
			case op < 70:
				uid := live[rnd(len(live))]
				cur, _ := e.eng.node(uid)
				n := cur
				n.Finalizers = []string{"f" + strconv.Itoa(i)}
				if rnd(10) == 0 {
					n.Namespace = namespaces[rnd(4)]
				}
				if rnd(10) == 0 {
					n.Kind = kinds[rnd(3)]
				}
				evs := []gc.Event{}
				if rnd(5) == 0 {
					o := live[rnd(len(live))]
					if o != uid {
						n.Owners = append(slices.Clone(n.Owners), gc.OwnerRef{Kind: "ReplicaSet", UID: o})
						evs = append(evs, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: uid, Owner: o}})
					}
				}
				evs = append(evs, gc.Event{Type: gc.NodeUpdated, Node: &n})
				e.eng.publish(evs...)
			case op < 88:
				k := 1 + rnd(len(live)-1) // the seed stays, for the closure subscription
				cur, _ := e.eng.node(live[k])
				live = slices.Delete(live, k, k+1)
				e.eng.publish(removeNode(&cur)...)
			case op < 94:
				cur, _ := e.eng.node(live[rnd(len(live))])
				e.eng.publish(queueEvent(cur.ObjectRef))
			case op < 99:
				cur, _ := e.eng.node(live[rnd(len(live))])
				e.eng.publish(actionEvent(cur.ObjectRef))
			default:
				e.eng.publish(syncEvent("v1/pods", strconv.Itoa(i)))
			}
		}
	}()

	subs := []churnSub{
		{query: "", pass: func(gc.NodeState) bool { return true }},
		{query: "queues=false", pass: func(gc.NodeState) bool { return true }},
		{query: "namespace=a", pass: func(n gc.NodeState) bool { return n.Namespace == "a" }},
		{query: "namespace=b&namespace=&kind=Pod", pass: func(n gc.NodeState) bool {
			return (n.Namespace == "b" || n.Namespace == "") && n.Kind == "Pod"
		}},
		{query: "kind=replicaset", pass: func(n gc.NodeState) bool { return n.Kind == "ReplicaSet" }},
		{query: "uid=seed", uids: []types.UID{"seed"}},
		{query: "", pass: func(gc.NodeState) bool { return true }},
		{query: "namespace=c", pass: func(n gc.NodeState) bool { return n.Namespace == "c" }},
	}
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() {
			time.Sleep(time.Duration(rnd(600)) * time.Millisecond)
			churnClient(t, e, i, sub, rnd, churnDone)
		})
	}
	wg.Wait()
}

// churnClient follows the stream as one client of the property test: it checks every
// frame against the engine's history, pauses now and then, and reconnects with since.
func churnClient(t *testing.T, e *streamEnv, id int, sub churnSub, rnd func(int) int, churnDone <-chan struct{}) {
	m := newStreamModel()
	replay := map[types.UID]gc.NodeState{} // the engine's state at replayed
	var replayed uint64
	var history []gc.Event
	check := func(f streamFrame) error {
		for _, ev := range f.Events {
			if ev.Type == gc.NodeAdded || ev.Type == gc.NodeUpdated {
				if sub.pass != nil && !sub.pass(*ev.Node) {
					return fmt.Errorf("received %s of %s outside the filter", ev.Type, ev.Node.UID)
				}
			}
			if !strings.Contains(sub.query, "queues=false") {
				continue
			}
			if ev.Queue != nil || ev.Action != nil {
				return fmt.Errorf("queues=false received %s", ev.Type)
			}
		}
		if err := m.apply(f); err != nil {
			return err
		}
		if f.Type != "snapshot" && f.Type != "deltas" {
			return nil
		}
		for replayed < m.seq {
			if int(replayed) >= len(history) {
				history = e.eng.history()
			}
			applyEvent(replay, history[replayed])
			replayed++
		}
		if sub.uids != nil {
			// The client holds the closure of its uids, possibly with objects that have
			// left it since, each as the engine has it.
			for uid, n := range m.nodes {
				if want, ok := replay[uid]; !ok || !equalNode(n, want) {
					return fmt.Errorf("seq %d: holds %s as %+v, engine has %+v (%v)", m.seq, uid, n, want, ok)
				}
			}
			all := slices.Collect(maps.Values(replay))
			for uid := range closure(all, sub.uids) {
				if _, ok := replay[uid]; ok && m.nodes[uid].UID == "" {
					return fmt.Errorf("seq %d: closure member %s missing", m.seq, uid)
				}
			}
			return nil
		}
		want := map[types.UID]gc.NodeState{}
		for uid, n := range replay {
			if sub.pass(n) {
				want[uid] = n
			}
		}
		if len(want) != len(m.nodes) {
			return fmt.Errorf("seq %d (%s): client holds %d nodes, engine %d through the filter\nclient %v\nengine %v",
				m.seq, f.Type, len(m.nodes), len(want), uidsOf(m.nodes), uidsOf(want))
		}
		for uid, n := range want {
			if got, ok := m.nodes[uid]; !ok || !equalNode(got, n) {
				return fmt.Errorf("seq %d: %s is %+v, engine %+v", m.seq, uid, got, n)
			}
		}
		return nil
	}

	query := sub.query
	for conn := 0; ; conn++ {
		var opts *websocket.DialOptions
		if id%2 == 0 {
			opts = smallReadBufferDialer()
		}
		ws := e.dialWith(t, query, opts)
		reconnect := false
		for !reconnect {
			f, err := ws.read()
			if err != nil {
				t.Errorf("client %d (%s): %v", id, sub.query, err)
				return
			}
			if err := check(f); err != nil {
				t.Errorf("client %d (%s): %v", id, sub.query, err)
				return
			}
			select {
			case <-churnDone:
				if m.seq == e.eng.LastSeq() {
					ws.conn.Close(websocket.StatusNormalClosure, "")
					t.Logf("client %d (%s): %d connections, frames %v, %d nodes at seq %d", id, sub.query, conn+1, m.frames, len(m.nodes), m.seq)
					return
				}
			default:
				switch rnd(20) {
				case 0: // stop reading for a while
					time.Sleep(time.Duration(20+rnd(60)) * time.Millisecond)
				case 1: // go away and come back with since
					reconnect = conn < 5
				}
			}
		}
		ws.conn.Close(websocket.StatusNormalClosure, "")
		q := "since=" + strconv.FormatUint(m.seq, 10)
		if sub.query != "" {
			q = sub.query + "&" + q
		}
		query = q
	}
}

func equalNode(a, b gc.NodeState) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
