package stream

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// benchNodes publishes n nodes and returns them, for updates to pick from.
func benchNodes(eng *streamtest.Engine, n int) []*gc.NodeState {
	nodes := make([]*gc.NodeState, n)
	for i := range nodes {
		nodes[i] = streamtest.MakeNode("bench-"+strconv.Itoa(i), "ns-"+strconv.Itoa(i%10), "Pod")
		eng.Publish(gc.Event{Type: gc.NodeAdded, Node: nodes[i]})
	}
	return nodes
}

// latencyFrame is the part of a frame the latency benchmark reads.
type latencyFrame struct {
	Type   string `json:"type"`
	Seq    uint64 `json:"seq"`
	Events []struct {
		Time time.Time `json:"time"`
	} `json:"events"`
}

// BenchmarkStreamLatency: 20 websocket clients follow 5,000 mutations/s for 2 s through
// the hub at its default 50 ms batching; each event's latency is from its publication
// (stamped in Event.Time) to its receipt by a client.
func BenchmarkStreamLatency(b *testing.B) {
	const (
		clients  = 20
		rate     = 5000
		duration = 2 * time.Second
	)
	for range b.N {
		e := newStreamEnv(b, 1<<16, Options{Batch: defaultStreamBatch})
		e.eng.NoLog = true
		e.start(b)
		nodes := benchNodes(e.eng, 1000)

		var target atomic.Uint64 // the last seq, once published
		var mu sync.Mutex
		var latencies []time.Duration
		var wg sync.WaitGroup
		for range clients {
			ws := e.dial(b, "")
			wg.Go(func() {
				var mine []time.Duration
				defer func() {
					mu.Lock()
					latencies = append(latencies, mine...)
					mu.Unlock()
				}()
				var seq uint64
				for t := target.Load(); t == 0 || seq < t; t = target.Load() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, data, err := ws.conn.Read(ctx)
					at := time.Now()
					cancel()
					if err != nil {
						b.Errorf("client: %v", err)
						return
					}
					var f latencyFrame
					if err := json.Unmarshal(data, &f); err != nil {
						b.Errorf("decoding: %v", err)
						return
					}
					if f.Type == "deltas" {
						for _, ev := range f.Events {
							mine = append(mine, at.Sub(ev.Time))
						}
					}
					seq = f.Seq
				}
				ws.conn.Close(websocket.StatusNormalClosure, "")
			})
		}

		b.ResetTimer()
		rng := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		published := 0
		tick := time.NewTicker(time.Millisecond)
		for elapsed := time.Duration(0); elapsed < duration; elapsed = time.Since(start) {
			for want := int(elapsed.Seconds() * rate); published < want; published++ {
				n := *nodes[rng.IntN(len(nodes))]
				n.Finalizers = []string{"f" + strconv.Itoa(published)}
				e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
			}
			<-tick.C
		}
		tick.Stop()
		target.Store(e.eng.LastSeq())
		wg.Wait()
		b.StopTimer()

		if len(latencies) != clients*published {
			b.Fatalf("%d latencies, want %d clients × %d events", len(latencies), clients, published)
		}
		slices.Sort(latencies)
		ms := func(q float64) float64 {
			return float64(latencies[int(q*float64(len(latencies)-1))]) / float64(time.Millisecond)
		}
		b.ReportMetric(ms(0.50), "p50-ms")
		b.ReportMetric(ms(0.99), "p99-ms")
		b.ReportMetric(float64(published)/duration.Seconds(), "events/s")
		b.Logf("%d clients, %d events in %v (batch %v): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
			clients, published, duration, defaultStreamBatch, ms(0.5), ms(0.99), ms(1))
	}
}

// BenchmarkStalledClient: the engine must not notice a client that never reads. Each
// round runs a fresh hub with one reading client, without (the baseline) and then with
// one more client that never reads:
//   - flat out: how many events/s the fake engine publishes through the feed while the
//     hub fans them out; the ratio stalled/none (median over rounds) should be about 1;
//   - paced at 50,000 events/s: the reading client must receive every event as deltas,
//     without a resync, however stalled the other one is.
func BenchmarkStalledClient(b *testing.B) {
	const (
		rounds = 5
		window = 500 * time.Millisecond
		paced  = 50000
	)
	type result struct {
		published       float64 // flat out, events/s
		delivered       float64 // paced: events received as deltas by the reading client, per second
		resyncs, missed int     // paced: snapshots the reading client needed; events it did not get as deltas
		dropped         float64 // events the hub dropped from client queues (the stalled client's)
	}
	measure := func(stalled bool) result {
		e := newStreamEnv(b, 1<<18, Options{Batch: defaultStreamBatch})
		e.eng.NoLog = true
		e.start(b)
		defer e.stop()
		nodes := benchNodes(e.eng, 1000)
		if stalled {
			// Only this client has a small receive buffer: it stalls the server's writes
			// to it soon; the reading client is not slowed by its own connection.
			e.dialWith(b, "", streamtest.SmallReadBufferDialer()) // never reads
		}
		healthy := e.dial(b, "")
		first, err := healthy.read()
		if err != nil || first.Type != "snapshot" {
			b.Fatalf("first frame %+v: %v", first, err)
		}
		var r result

		// Paced.
		from := e.eng.LastSeq()
		start := time.Now()
		n := 0
		tick := time.NewTicker(time.Millisecond)
		for elapsed := time.Duration(0); elapsed < window; elapsed = time.Since(start) {
			for want := int(elapsed.Seconds() * paced); n < want; n++ {
				e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: nodes[n%len(nodes)]})
			}
			<-tick.C
		}
		tick.Stop()
		last := e.eng.LastSeq()
		got := 0
		for seq := from; seq < last; {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, data, err := healthy.conn.Read(ctx)
			cancel()
			if err != nil {
				b.Fatalf("reading client: %v", err)
			}
			var f latencyFrame
			if err := json.Unmarshal(data, &f); err != nil {
				b.Fatal(err)
			}
			if f.Type == "snapshot" {
				r.resyncs++
			}
			got += len(f.Events)
			seq = f.Seq
		}
		r.delivered = float64(got) / window.Seconds()
		r.missed = int(last-from) - got

		// Flat out. The reading client leaves first: with it, the measure is mostly how the
		// scheduler shares the CPUs between the publisher and its encoding.
		healthy.conn.Close(websocket.StatusNormalClosure, "")
		testkit.Eventually(b, "the reading client to leave", func() bool { return e.hub.clientCount() == map[bool]int{false: 0, true: 1}[stalled] })
		runtime.GC()
		start = time.Now()
		n = 0
		for ; n%256 != 0 || time.Since(start) < window; n++ {
			e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: nodes[n%len(nodes)]})
		}
		r.published = float64(n) / time.Since(start).Seconds()
		r.dropped = counterValue(b, e.reg, "gcscope_stream_events_dropped_total")
		return r
	}
	for range b.N {
		var none, with result
		var ratios []float64
		for range rounds {
			base, st := measure(false), measure(true)
			ratios = append(ratios, st.published/base.published)
			for _, p := range []struct {
				acc *result
				r   result
			}{{&none, base}, {&with, st}} {
				p.acc.published += p.r.published / rounds
				p.acc.delivered += p.r.delivered / rounds
				p.acc.resyncs += p.r.resyncs
				p.acc.missed += p.r.missed
				p.acc.dropped += p.r.dropped
			}
		}
		slices.Sort(ratios)
		ratio := ratios[len(ratios)/2]
		b.ReportMetric(ratio, "stalled/none")
		b.ReportMetric(with.delivered/none.delivered, "delivered-stalled/none")
		b.ReportMetric(none.published, "events/s-none")
		b.ReportMetric(with.published, "events/s-stalled")
		b.Logf("baseline: no stalled client: flat out %.0f events/s published; paced at %d/s the reading client got %.0f events/s as deltas (%d resyncs, %d missed)",
			none.published, paced, none.delivered, none.resyncs, none.missed)
		b.Logf("one stalled client: flat out %.0f events/s published; paced the reading client got %.0f events/s as deltas (%d resyncs, %d missed); the hub dropped %.0f events from the stalled client's queue",
			with.published, with.delivered, with.resyncs, with.missed, with.dropped)
		b.Logf("published stalled/none per round %.3f, median %.3f", ratios, ratio)
	}
}

// churnMix is a stream of events shaped like the churn benchmark's
// (internal/difftest BenchmarkChurn) as one client of the page's subscription sees it:
// per write, about one node event, one edge event, eight queue transitions (each observed
// change is graphChanges' added, taken and done; deletions and orphanings pass through
// attemptToDelete and attemptToOrphan too) and an action every other write.
type churnMix struct {
	rng   *rand.Rand
	nodes []*gc.NodeState
	n     int
}

func newChurnMix() *churnMix {
	m := &churnMix{rng: rand.New(rand.NewPCG(26, 1))}
	for i := range 600 {
		m.nodes = append(m.nodes, m.node(i))
	}
	return m
}

// uid is a random uid, as the apiserver's: the part of a frame deflate cannot shrink.
func (m *churnMix) uid() types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", m.rng.Uint32(), m.rng.Uint32()&0xffff, m.rng.Uint32()&0xffff, m.rng.Uint32()&0xffff, m.rng.Uint64()&0xffffffffffff))
}

func (m *churnMix) node(i int) *gc.NodeState {
	owner := gc.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("g%d-a", i), UID: m.uid(), Controller: true, BlockOwnerDeletion: true}
	return &gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "churn-stream", Name: fmt.Sprintf("g%d-dep-%d", i, i%3), UID: m.uid()},
		Owners: []gc.OwnerRef{owner}, Observed: true}
}

// write returns the events of one write.
func (m *churnMix) write() []gc.Event {
	m.n++
	i := m.rng.IntN(len(m.nodes))
	n := m.nodes[i]
	var evs []gc.Event
	switch m.n % 3 {
	case 0:
		evs = append(evs, gc.Event{Type: gc.NodeAdded, Node: n}, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: n.UID, Owner: n.Owners[0].UID}})
	case 1:
		u := *n
		u.Finalizers = []string{"foregroundDeletion"}
		evs = append(evs, gc.Event{Type: gc.NodeUpdated, Node: &u})
	default:
		evs = append(evs, gc.Event{Type: gc.NodeRemoved, Node: n}, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: n.UID, Owner: n.Owners[0].UID}})
		m.nodes[i] = m.node(m.n)
	}
	depth := m.rng.IntN(50)
	for k, q := range []gc.QueueName{gc.GraphChanges, gc.GraphChanges, gc.AttemptToDelete} {
		// As the engine's queues make them: a worker forgets the item it took, then is done.
		for j, op := range []gc.QueueOp{gc.QueueAdded, gc.QueueTaken, gc.QueueForgotten, gc.QueueDone} {
			if k == 2 && j == 2 && m.n%2 == 0 {
				break // ten transitions a write
			}
			qe := &gc.QueueEvent{Queue: q, Op: op, Object: n.ObjectRef, Counts: &gc.QueueCounts{Depth: depth, InFlight: []int{0, 1, 1, 0}[j]}}
			if q == gc.GraphChanges {
				qe.Change = "update"
			}
			evs = append(evs, gc.Event{Type: gc.QueueChange, Queue: qe})
		}
	}
	if m.n%2 == 0 {
		evs = append(evs, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: n.ObjectRef,
			Policy: "Background", Reason: "all owners are gone", Duration: time.Duration(m.rng.IntN(5e6))}})
	}
	return evs
}

// BenchmarkStreamFanOut: 50 websocket clients with the page's subscription (everything,
// queues included, the stream's own deflate) follow 1,000 writes a second of the
// churn's event mix (churnMix, about 10,500 events a second) for 3 s through the hub at
// its default batching. It reports the process's CPU per write per client (the server's
// and the clients', who inflate and scan each frame) and the lag of each frame's oldest
// event: from its publication to its receipt by a client, p99 over every client's frames.
// GCSCOPE_STREAM_BENCH_CLIENTS, _RATE and _SECONDS change the sizes;
// GCSCOPE_STREAM_BENCH_DEFLATE=permessage|none has the clients ask for permessage-deflate
// alone or no deflate (as in BenchmarkStreamFanOutCPU), and GCSCOPE_STREAM_BENCH_BATCH and _QUICK set the hub's batching (Batch, QuickBatch).
func BenchmarkStreamFanOut(b *testing.B) {
	clients, rate, seconds := 50, 1000, 3
	deflate := cmp.Or(os.Getenv("GCSCOPE_STREAM_BENCH_DEFLATE"), deflateOwn)
	query, mode := "", websocket.CompressionNoContextTakeover // a browser offers permessage-deflate
	switch deflate {
	case deflateOwn:
		query = "encoding=deflate"
	case deflatePermessage:
	case deflateNone:
		mode = websocket.CompressionDisabled
	default:
		b.Fatalf("GCSCOPE_STREAM_BENCH_DEFLATE=%q: want %s, %s or %s", deflate, deflateOwn, deflatePermessage, deflateNone)
	}
	batch, quick := defaultStreamBatch, defaultQuickBatch
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{"GCSCOPE_STREAM_BENCH_BATCH", &batch}, {"GCSCOPE_STREAM_BENCH_QUICK", &quick}} {
		if s := os.Getenv(v.name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration", v.name, s)
			}
			*v.to = d
		}
	}
	for _, v := range []struct {
		name string
		to   *int
	}{{"GCSCOPE_STREAM_BENCH_CLIENTS", &clients}, {"GCSCOPE_STREAM_BENCH_RATE", &rate}, {"GCSCOPE_STREAM_BENCH_SECONDS", &seconds}} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive number", v.name, s)
			}
			*v.to = n
		}
	}
	duration := time.Duration(seconds) * time.Second
	for range b.N {
		e := newStreamEnv(b, 1<<18, Options{Batch: batch, QuickBatch: quick, MaxClients: clients + 1, MaxClientsPerUser: clients + 1})
		e.eng.NoLog = true
		e.start(b)
		mix := newChurnMix()

		var target atomic.Uint64 // the last seq, once published
		var mu sync.Mutex
		var lags []time.Duration
		var frames, resyncs int
		var inflated int64
		var wg sync.WaitGroup
		var ready sync.WaitGroup
		ready.Add(clients)
		for range clients {
			ws := e.dialWith(b, query, &websocket.DialOptions{CompressionMode: mode})
			ws.conn.SetReadLimit(-1)
			wg.Go(func() {
				var mine []time.Duration
				var n, snaps int
				var size int64
				defer func() {
					mu.Lock()
					lags, frames, resyncs, inflated = append(lags, mine...), frames+n, resyncs+max(0, snaps-1), inflated+size
					mu.Unlock()
				}()
				var seq uint64
				var buf bytes.Buffer
				for t := target.Load(); t == 0 || seq < t; t = target.Load() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					buf.Reset()
					typ, r, err := ws.conn.Reader(ctx)
					if err == nil && typ == websocket.MessageBinary {
						r = flate.NewReader(r) // the stream's own deflate: one raw deflate stream
					}
					if err == nil {
						_, err = buf.ReadFrom(r)
					}
					at := time.Now()
					cancel()
					if err != nil {
						b.Errorf("client at seq %d (frames %d, snapshots %d), the last %d: %v", seq, n, snaps, target.Load(), err)
						return
					}
					data := buf.Bytes()
					n++
					size += int64(len(data))
					var head struct {
						Type string `json:"type"`
						Seq  uint64 `json:"seq"`
					}
					if i := bytes.Index(data, []byte(`,"events":[`)); i >= 0 {
						json.Unmarshal(append(data[:i:i], '}'), &head)
						if stamp, ok := firstEventTime(data[i:]); ok {
							mine = append(mine, at.Sub(stamp))
						}
					} else if i := bytes.Index(data, []byte(`,"mode":`)); i >= 0 {
						json.Unmarshal(append(data[:i:i], '}'), &head)
					}
					if head.Type == "snapshot" {
						if snaps++; snaps == 1 {
							ready.Done()
						}
					}
					seq = max(seq, head.Seq)
				}
				ws.conn.Close(websocket.StatusNormalClosure, "")
			})
		}
		ready.Wait()

		runtime.GC()
		b.ResetTimer()
		cpu0 := testkit.ProcessCPU()
		start := time.Now()
		writes := 0
		tick := time.NewTicker(time.Millisecond)
		for elapsed := time.Duration(0); elapsed < duration; elapsed = time.Since(start) {
			for want := int(elapsed.Seconds() * float64(rate)); writes < want; writes++ {
				e.eng.Publish(mix.write()...)
			}
			<-tick.C
		}
		tick.Stop()
		// A last event gives every client a frame to end on, whatever it has received (a
		// client may be waiting for a frame when the target is set).
		target.Store(e.eng.LastSeq() + 1)
		e.eng.Publish(streamtest.SyncEvent("v1/pods"))
		wg.Wait()
		cpu := testkit.ProcessCPU() - cpu0
		b.StopTimer()
		e.stop()

		slices.Sort(lags)
		ms := func(q float64) float64 {
			return float64(lags[int(q*float64(len(lags)-1))]) / float64(time.Millisecond)
		}
		perWriteClient := cpu / time.Duration(writes*clients)
		b.ReportMetric(float64(perWriteClient)/1e3, "cpu-µs/write/client")
		b.ReportMetric(ms(0.5), "lag-p50-ms")
		b.ReportMetric(ms(0.99), "lag-p99-ms")
		b.ReportMetric(ms(1), "lag-max-ms")
		b.Logf("batch %v (%v while the clients keep up), deflate %s; %d clients, %d writes (%d events) in %v: CPU %v (%.2f cores), %d frames, %d resyncs, %.1f MiB inflated; lag of each frame's oldest event p50 %.1f ms, p99 %.1f ms, max %.1f ms",
			batch, quick, deflate, clients, writes, e.eng.LastSeq(), duration, cpu.Round(time.Millisecond), cpu.Seconds()/duration.Seconds(), frames, resyncs,
			float64(inflated)/(1<<20), ms(0.5), ms(0.99), ms(1))
	}
}

// firstEventTime reads the time of the first event of a deltas frame's events.
func firstEventTime(events []byte) (time.Time, bool) {
	const key = `"time":"`
	i := bytes.Index(events, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	v := events[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(v[:end]))
	return t, err == nil
}

// rawStreamClient is a stream client that does the websocket handshake itself and then
// only counts the messages it receives, without inflating or decoding them: the CPU it
// costs is next to nothing, so that a benchmark's process CPU is the server's.
type rawStreamClient struct {
	conn     net.Conn
	r        *bufio.Reader
	messages atomic.Int64 // data messages received whole
	bytes    atomic.Int64 // their payload, as sent (deflated, when it is)
}

// The stream's deflate, as a benchmark's clients ask for it.
const (
	deflateOwn        = "own"        // ?encoding=deflate, offering permessage-deflate too: the page
	deflatePermessage = "permessage" // permessage-deflate alone: the page before, a browser without DecompressionStream
	deflateNone       = "none"       // neither
)

// dialRaw opens the stream of e as a raw client that asks for the stream's deflate as
// deflate says (permessage-deflate without context takeover, as browsers are answered).
func dialRaw(t testing.TB, e *streamEnv, deflate string) *rawStreamClient {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	key := make([]byte, 16)
	for i := range key {
		key[i] = byte(rand.IntN(256))
	}
	path := "/api/v1/stream"
	if deflate == deflateOwn {
		path += "?encoding=deflate"
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + e.srv.Listener.Addr().String() +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\n"
	if deflate != deflateNone {
		req += "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; server_no_context_takeover\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	c := &rawStreamClient{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("raw stream handshake: %v %v", resp, err)
	}
	if (deflate == deflatePermessage) != strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		t.Fatalf("raw stream handshake: extensions %q", resp.Header.Get("Sec-WebSocket-Extensions"))
	}
	go c.read()
	return c
}

// read counts the server's data messages until the connection ends. Server frames are
// never masked.
func (c *rawStreamClient) read() {
	var head [8]byte
	var size int64
	for {
		if _, err := io.ReadFull(c.r, head[:2]); err != nil {
			return
		}
		fin, opcode := head[0]&0x80 != 0, head[0]&0x0f
		n := uint64(head[1] & 0x7f)
		switch n {
		case 126:
			if _, err := io.ReadFull(c.r, head[:2]); err != nil {
				return
			}
			n = uint64(binary.BigEndian.Uint16(head[:2]))
		case 127:
			if _, err := io.ReadFull(c.r, head[:8]); err != nil {
				return
			}
			n = binary.BigEndian.Uint64(head[:8])
		}
		if _, err := c.r.Discard(int(n)); err != nil {
			return
		}
		if opcode <= 2 { // continuation, text, binary
			size += int64(n)
			if fin {
				c.bytes.Add(size)
				c.messages.Add(1)
				size = 0
			}
		}
	}
}

// BenchmarkStreamFanOutCPU: the server's CPU to send the churn's event mix (churnMix) to
// 50 clients with the page's subscription, in lockstep: each op publishes one batch of
// 50 writes (50 ms of the churn at 1,000 writes a second) and waits until every client
// has received it. The clients (rawStreamClient) only count messages, so the process's
// CPU is the server's: reported per write per client, for clients that ask for the
// stream's own deflate as the page does (deflate=own: each frame deflated once for them
// all), for permessage-deflate alone (deflate=permessage: once per client), and for no
// deflate (deflate=none). GCSCOPE_STREAM_BENCH_DEFLATE=own|permessage|none runs one;
// _CLIENTS and _WRITES (a batch's writes) change the sizes.
func BenchmarkStreamFanOutCPU(b *testing.B) {
	modes := []string{deflateOwn, deflatePermessage, deflateNone}
	if m := os.Getenv("GCSCOPE_STREAM_BENCH_DEFLATE"); m != "" {
		if !slices.Contains(modes, m) {
			b.Fatalf("GCSCOPE_STREAM_BENCH_DEFLATE=%q: want one of %v", m, modes)
		}
		modes = []string{m}
	}
	for _, m := range modes {
		b.Run("deflate="+m, func(b *testing.B) { benchStreamFanOutCPU(b, m) })
	}
}

func benchStreamFanOutCPU(b *testing.B, deflate string) {
	clients, writes := 50, 50
	for _, v := range []struct {
		name string
		to   *int
	}{{"GCSCOPE_STREAM_BENCH_CLIENTS", &clients}, {"GCSCOPE_STREAM_BENCH_WRITES", &writes}} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive number", v.name, s)
			}
			*v.to = n
		}
	}
	e := newStreamEnv(b, 1<<18, Options{Batch: time.Millisecond, MaxClients: clients, MaxClientsPerUser: clients})
	e.eng.NoLog = true
	e.start(b)
	mix := newChurnMix()
	cs := make([]*rawStreamClient, clients)
	for i := range cs {
		cs[i] = dialRaw(b, e, deflate)
	}
	received := func(n int64) func() bool {
		return func() bool {
			for _, c := range cs {
				if c.messages.Load() < n {
					return false
				}
			}
			return true
		}
	}
	testkit.Eventually(b, "every client's snapshot", received(1))
	var bytes0 int64
	for _, c := range cs {
		bytes0 += c.bytes.Load()
	}
	runtime.GC()
	b.ResetTimer()
	cpu0 := testkit.ProcessCPU()
	for i := range b.N {
		var evs []gc.Event
		for range writes {
			evs = append(evs, mix.write()...)
		}
		e.eng.Publish(evs...)
		testkit.PollEvery(context.Background(), 100*time.Microsecond, time.Minute, received(int64(i+2)))
	}
	cpu := testkit.ProcessCPU() - cpu0
	b.StopTimer()
	var sent int64
	for _, c := range cs {
		sent += c.bytes.Load()
		if got := c.messages.Load(); got != int64(b.N+1) {
			b.Fatalf("a client received %d messages, want %d: one a batch", got, b.N+1)
		}
	}
	b.ReportMetric(float64(cpu)/1e3/float64(b.N*writes*clients), "cpu-µs/write/client")
	b.ReportMetric(float64(sent-bytes0)/float64(b.N*writes*clients), "wire-B/write/client")
}
