package stream

// The stream's protocol: a snapshot then deltas, resuming with since, filters, the
// subscribe and ping frames, and what the server refuses (bad frames, other origins,
// bad queries, silent clients). The harness is in env_test.go and package streamtest.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

func TestStreamSnapshotThenDeltas(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("d1", "a", "Deployment"))...)
	last := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("r1", "a", "ReplicaSet", "d1"))...)

	c := e.dial(t, "")
	f := c.next()
	if f.Type != "snapshot" || f.Reason != string(wire.ReasonInitial) || f.Seq != last || f.Mode != gc.ModeActive {
		t.Fatalf("first frame: %s; want the initial snapshot at seq %d", f.Raw, last)
	}
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"d1", "r1"}) {
		t.Fatalf("snapshot nodes %v", got)
	}
	if len(f.Queues) != 3 || f.Sync == nil || len(f.Sync.Resources) != 1 {
		t.Fatalf("snapshot queues %v sync %v", f.Queues, f.Sync)
	}
	m := streamtest.NewModel()
	if err := m.Apply(f); err != nil {
		t.Fatal(err)
	}

	first := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("p1", "a", "Pod", "r1"))...)
	upd := streamtest.MakeNode("p1", "a", "Pod", "r1")
	upd.Finalizers = []string{"x"}
	e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: upd})
	last = e.eng.Publish(streamtest.RemoveNode(streamtest.MakeNode("d1", "a", "Deployment"))...)
	events := c.untilSeq(m, last)
	if got, want := eventSeqs(events), seqRange(first-1, last); !slices.Equal(got, want) {
		t.Fatalf("deltas carried seqs %v, want %v", got, want)
	}
	want := e.eng.Snapshot()
	if got := uidsOf(m.Nodes); !slices.Equal(got, nodeUIDs(want.Nodes)) {
		t.Fatalf("client holds %v, engine %v", got, nodeUIDs(want.Nodes))
	}
	if got := m.Nodes["p1"].Finalizers; !slices.Equal(got, []string{"x"}) {
		t.Fatalf("p1 finalizers %v after the update", got)
	}
}

func TestStreamBatchesEvents(t *testing.T) {
	// A long batch period: events published between two flushes arrive in one frame.
	e := newStreamEnv(t, 1024, Options{Batch: time.Second}).start(t)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	if err := m.Apply(c.next()); err != nil {
		t.Fatal(err)
	}
	// The first event after a quiet period is flushed at once; the flush after it no
	// earlier than a second later, by then the next ten (published one by one) are in.
	s1 := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("x0", "a", "Pod"))...)
	f := c.next()
	if f.Type != "deltas" || f.Seq != s1 || len(f.Events) != 1 {
		t.Fatalf("first deltas %s", f.Raw)
	}
	if err := m.Apply(f); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := range 10 {
		last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("x"+strconv.Itoa(i+1), "a", "Pod"))...)
	}
	f = c.next()
	if f.Type != "deltas" || f.From != s1+1 || f.Seq != last {
		t.Fatalf("batched frame %s; want deltas (%d, %d]", f.Raw, s1, last)
	}
	if got, want := eventSeqs(f.Events), seqRange(s1+1, last); !slices.Equal(got, want) {
		t.Fatalf("batched events carry seqs %v, want %v", got, want)
	}
}

func TestStreamResumeSince(t *testing.T) {
	e := newStreamEnv(t, 64, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a1", "a", "Pod"))...)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	mid := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a2", "a", "Pod"))...)
	c.untilSeq(m, mid)
	c.conn.Close(websocket.StatusNormalClosure, "")

	// Missed while away.
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a3", "a", "Pod"))...)
	last := e.eng.Publish(streamtest.RemoveNode(streamtest.MakeNode("a1", "a", "Pod"))...)

	c = e.dial(t, "since="+strconv.FormatUint(mid, 10))
	f := c.next()
	if f.Type != "deltas" || f.From != mid+1 {
		t.Fatalf("resume: first frame %s; want deltas from %d", f.Raw, mid+1)
	}
	if err := m.Apply(f); err != nil {
		t.Fatal(err)
	}
	c.untilSeq(m, last)
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"a2", "a3"}) {
		t.Fatalf("after resume the client holds %v", got)
	}
	if m.Frames["snapshot/"+string(wire.ReasonInitial)] != 1 || len(m.Frames) != 2 {
		t.Fatalf("frames %v: want one snapshot (the first connection) and deltas", m.Frames)
	}

	// Resuming at the newest seq: an empty deltas frame confirms it.
	c = e.dial(t, "since="+strconv.FormatUint(last, 10))
	if f := c.next(); f.Type != "deltas" || f.From != last+1 || f.Seq != last || len(f.Events) != 0 {
		t.Fatalf("resume at the newest seq: %s", f.Raw)
	}

	// The ring holds 64 events: resuming before them gets a snapshot.
	for i := range 100 {
		last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b"+strconv.Itoa(i), "b", "Pod"))...)
	}
	c = e.dial(t, "since="+strconv.FormatUint(mid, 10))
	if f := c.next(); f.Type != "snapshot" || f.Reason != string(wire.ReasonStale) || f.Seq < last {
		t.Fatalf("too old since: %s; want a stale snapshot", f.Raw)
	}
	// Since in the future: a snapshot.
	c = e.dial(t, "since="+strconv.FormatUint(last+1000, 10))
	if f := c.next(); f.Type != "snapshot" || f.Seq != last {
		t.Fatalf("future since: %s; want a snapshot", f.Raw)
	}
}

func TestStreamResumeWithFilterSendsLeavingNodesAsRemovals(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	// v is a virtual owner that dependents placed in namespace a; observed, it is
	// cluster-scoped and leaves the namespace view.
	v := streamtest.MakeNode("v", "a", "Node")
	v.Virtual, v.Observed = true, false
	e.eng.Publish(streamtest.AddNode(v)...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("p", "a", "Pod", "v"))...)
	c := e.dial(t, "namespace=a")
	m := streamtest.NewModel()
	mid := e.eng.LastSeq()
	c.untilSeq(m, mid)
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"p", "v"}) {
		t.Fatalf("namespace a holds %v", got)
	}
	c.conn.Close(websocket.StatusNormalClosure, "")

	e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: streamtest.MakeNode("v", "", "Node")})
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("q", "b", "Pod"))...)
	last := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("r", "a", "Pod"))...)

	c = e.dial(t, "namespace=a&since="+strconv.FormatUint(mid, 10))
	events := c.untilSeq(m, last)
	if m.Frames["snapshot/"+string(wire.ReasonInitial)] != 1 {
		t.Fatalf("frames %v: the resume sent a snapshot", m.Frames)
	}
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"p", "r"}) {
		t.Fatalf("after resume namespace a holds %v; want p, r", got)
	}
	for _, ev := range events {
		if ev.Node != nil && ev.Node.UID == "q" {
			t.Fatalf("an event of namespace b reached a namespace-a client: %+v", ev)
		}
	}
}

func TestStreamFiltersNamespaceAndKind(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod", "a", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-rs", "a", "ReplicaSet"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod", "b", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("cluster", "", "Node"))...)

	c := e.dial(t, "namespace=a&kind=pod")
	f := c.next()
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"a-pod"}) {
		t.Fatalf("snapshot of namespace a, kind pod: %v", got)
	}
	m := streamtest.NewModel()
	m.Apply(f)

	aPod2 := streamtest.MakeNode("a-pod2", "a", "Pod", "a-rs")
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod2", "b", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-rs2", "a", "ReplicaSet"))...)
	e.eng.Publish(streamtest.QueueEvent(streamtest.MakeNode("b-pod", "b", "Pod").ObjectRef), streamtest.ActionEvent(streamtest.MakeNode("b-pod", "b", "Pod").ObjectRef))
	e.eng.Publish(streamtest.QueueEvent(streamtest.MakeNode("a-pod", "a", "Pod").ObjectRef), streamtest.ActionEvent(streamtest.MakeNode("a-pod", "a", "Pod").ObjectRef))
	e.eng.Publish(streamtest.SyncEvent("v1/pods", "apps/v1/replicasets"))
	last := e.eng.Publish(streamtest.AddNode(aPod2)...)
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
	e := newStreamEnv(t, 1024, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("dep", "a", "Deployment"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("rs", "a", "ReplicaSet", "dep"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("p1", "a", "Pod", "rs"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("other", "a", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("other-child", "a", "Pod", "other"))...)

	c := e.dial(t, "uid=rs")
	f := c.next()
	if got := nodeUIDs(f.Nodes); !slices.Equal(got, []string{"dep", "p1", "rs"}) {
		t.Fatalf("closure of rs: %v", got)
	}
	m := streamtest.NewModel()
	m.Apply(f)

	// A new dependent joins; an unrelated object does not.
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("unrelated", "a", "Pod"))...)
	last := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("p2", "a", "Pod", "rs"))...)
	events := c.untilSeq(m, last)
	for _, ev := range events {
		if ev.Node != nil && ev.Node.UID == "unrelated" {
			t.Fatal("an object outside the closure was sent")
		}
	}
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"dep", "p1", "p2", "rs"}) {
		t.Fatalf("after p2: %v", got)
	}

	// An existing object is adopted: it joins with its own dependents, by a snapshot.
	adopted := streamtest.MakeNode("other", "a", "Pod", "rs")
	last = e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: adopted}, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: "other", Owner: "rs"}})
	c.untilSeq(m, last)
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"dep", "other", "other-child", "p1", "p2", "rs"}) {
		t.Fatalf("after adoption: %v", got)
	}
	if m.Frames["snapshot/"+string(wire.ReasonComponent)] != 1 {
		t.Fatalf("frames %v: want one component snapshot", m.Frames)
	}

	// A uid subscription resumes from a snapshot: its component is the graph's.
	c2 := e.dial(t, "uid=rs&since="+strconv.FormatUint(last, 10))
	if f := c2.next(); f.Type != "snapshot" {
		t.Fatalf("uid resume: %s", f.Raw)
	}
}

func TestStreamQueuesOffAndSubscribeFrame(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a1", "a", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b1", "b", "Pod"))...)
	c := e.dial(t, "queues=false")
	f := c.next()
	if f.Type != "snapshot" || f.Queues != nil || strings.Contains(string(f.Raw), `"queues"`) {
		t.Fatalf("queues=false snapshot carries queues: %s", f.Raw)
	}
	m := streamtest.NewModel()
	m.Apply(f)
	ref := streamtest.MakeNode("a1", "a", "Pod").ObjectRef
	e.eng.Publish(streamtest.QueueEvent(ref), streamtest.ActionEvent(ref))
	last := e.eng.Publish(streamtest.SyncEvent("v1/pods"))
	for _, ev := range c.untilSeq(m, last) {
		if ev.Type != gc.SyncChange {
			t.Fatalf("queues=false received %s", ev.Type)
		}
	}

	// Ping, then narrow to namespace b with queues: a pong and a fresh snapshot.
	c.send(map[string]any{"type": "ping"})
	c.send(map[string]any{"type": "subscribe", "namespaces": []string{"b"}, "queues": true})
	var snap streamtest.Frame
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
	if pongs != 1 || snap.Reason != string(wire.ReasonSubscribe) || len(snap.Queues) != 3 {
		t.Fatalf("pongs %d, snapshot %s", pongs, snap.Raw)
	}
	if got := nodeUIDs(snap.Nodes); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("subscribed to b: %v", got)
	}
	m.Apply(snap)
	bref := streamtest.MakeNode("b1", "b", "Pod").ObjectRef
	e.eng.Publish(streamtest.QueueEvent(ref))
	last = e.eng.Publish(streamtest.QueueEvent(bref))
	events := c.untilSeq(m, last)
	if len(events) != 1 || events[0].Queue == nil || events[0].Queue.Object.UID != "b1" {
		t.Fatalf("namespace b with queues received %+v", events)
	}
}

func TestStreamBadFramesClose(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
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
	e := newStreamEnv(t, 1024, Options{OriginPatterns: []string{"trusted.example"}}).start(t)
	ctx := context.Background()
	_, resp, err := websocket.Dial(ctx, e.url(""), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: err %v, response %v; want 403", err, resp)
	}
	c := e.dialWith(t, "", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://trusted.example"}}})
	if f := c.next(); f.Type != "snapshot" {
		t.Fatalf("allowed origin: %s", f.Raw)
	}
	// The server's own host is always allowed.
	c = e.dialWith(t, "", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {e.srv.URL}}})
	if f := c.next(); f.Type != "snapshot" {
		t.Fatalf("same origin: %s", f.Raw)
	}
	// Not a browser's: two Origins (the own one first), or another site said without Origin.
	for _, h := range []http.Header{
		{"Origin": {e.srv.URL, "http://evil.example"}},
		{"Sec-Fetch-Site": {"cross-site"}},
		{"Sec-Fetch-Site": {"same-origin", "cross-site"}},
	} {
		_, resp, err := websocket.Dial(ctx, e.url(""), &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("dial with %v: err %v, response %v; want 403", h, err, resp)
		}
	}
}

func TestStreamInvalidQueryIs400(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{}).start(t)
	for _, q := range []string{"since=abc", "since=-1", "queues=maybe", "namespace=Not_A_Namespace", "uid=a%20b", "nope=1", "encoding=gzip"} {
		_, resp, err := websocket.Dial(context.Background(), e.url(q), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%s: err %v, response %v; want 400", q, err, resp)
			continue
		}
		var body httpapi.Error
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Code != "bad_request" || body.Message == "" {
			t.Errorf("?%s: body %+v (%v)", q, body, err)
		}
	}
}

func TestStreamKeepaliveClosesSilentClient(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{PingInterval: 50 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}).start(t)
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
	testkit.Eventually(t, "the silent client is closed", func() bool { return e.hub.clientCount() == 1 })
	select {
	case err := <-liveDone:
		t.Fatalf("the client that reads was closed: %v", err)
	default:
	}
}
