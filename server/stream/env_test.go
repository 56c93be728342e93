package stream

// The stream tests' harness: the hub runs over a fake engine (streamtest.Engine: a feed ring and
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
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// streamEnv is a hub over a fake engine, served by an httptest server.
type streamEnv struct {
	eng *streamtest.Engine
	hub *Hub
	srv *httptest.Server
	reg *prometheus.Registry
	// stop ends the hub and the server (at the latest when the test ends).
	stop func()
}

func newStreamEnv(t testing.TB, ringSize int, o Options) *streamEnv {
	t.Helper()
	e := &streamEnv{eng: streamtest.NewEngine(ringSize), reg: prometheus.NewRegistry()}
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
	e.hub = New(o)
	e.srv = httptest.NewUnstartedServer(e.hub)
	return e
}

// start runs the hub and the server until the test ends.
func (e *streamEnv) start(t testing.TB) *streamEnv {
	t.Helper()
	e.srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.hub.Run(ctx); close(done) }()
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
func (c *testWS) read() (streamtest.Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		return streamtest.Frame{}, err
	}
	var wire []byte
	if typ == websocket.MessageBinary {
		// The stream's own deflate: one raw deflate stream, ended.
		wire = data
		if data, err = io.ReadAll(flate.NewReader(bytes.NewReader(wire))); err != nil {
			return streamtest.Frame{}, fmt.Errorf("inflating a binary frame of %d bytes: %w", len(wire), err)
		}
	}
	var f streamtest.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return streamtest.Frame{}, fmt.Errorf("decoding %s: %w", data, err)
	}
	f.Raw, f.Deflated = data, wire
	return f, nil
}

func (c *testWS) next() streamtest.Frame {
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
func (c *testWS) untilSeq(m *streamtest.Model, seq uint64) []gc.Event {
	c.t.Helper()
	var events []gc.Event
	for m.Seq < seq || !m.Started {
		f := c.next()
		if err := m.Apply(f); err != nil {
			c.t.Fatal(err)
		}
		events = append(events, f.Events...)
	}
	return events
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
