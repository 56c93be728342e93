package server

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// benchNodes publishes n nodes and returns them, for updates to pick from.
func benchNodes(eng *fakeEngine, n int) []*gc.NodeState {
	nodes := make([]*gc.NodeState, n)
	for i := range nodes {
		nodes[i] = mkNode("bench-"+strconv.Itoa(i), "ns-"+strconv.Itoa(i%10), "Pod")
		eng.publish(gc.Event{Type: gc.NodeAdded, Node: nodes[i]})
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
		e := newStreamEnv(b, 1<<16, hubOptions{Batch: defaultStreamBatch})
		e.eng.noLog = true
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
				e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
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
		e := newStreamEnv(b, 1<<18, hubOptions{Batch: defaultStreamBatch})
		e.eng.noLog = true
		e.start(b)
		defer e.stop()
		nodes := benchNodes(e.eng, 1000)
		if stalled {
			// Only this client has a small receive buffer: it stalls the server's writes
			// to it soon; the reading client is not slowed by its own connection.
			e.dialWith(b, "", smallReadBufferDialer()) // never reads
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
				e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: nodes[n%len(nodes)]})
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
			e.eng.publish(gc.Event{Type: gc.NodeUpdated, Node: nodes[n%len(nodes)]})
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
