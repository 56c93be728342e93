package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/server"
	"github.com/gcscope/gcscope/server/stream"
)

// The snapshot benchmark: what the stream's compression (its own deflate, which the page
// asks for: encoding=deflate) costs or saves from opening the page to its first frame, at
// 150k objects held whole (the server's PageFullGraph at that size, as --ui-full-graph
// set by a user who wants the whole graph; by default such a page is summary first), over
// loopback and over slower links. The real server streams a synthetic engine's graph (as
// BenchmarkUIRender, no mutations) to the page in headless Chromium, through the real
// websocket: the snapshot is encoded, deflated or not, sent, inflated and parsed as in use.
//
// For each link the page is loaded snapshotRounds times with deflate off (the baseline)
// and on, alternately, each in a fresh browser and a fresh server, and measured:
//
//   - in the page, from navigation start: the stream open (the websocket's open event),
//     the snapshot received (the largest message's event, before the page parses it), the
//     snapshot applied (perf.snapshotMs) and the first frame (perf.firstFrameMs);
//   - at the server's listener: the bytes of the stream's connection each way until the
//     first frame (down: the handshake's answer and the snapshot; up: the handshake),
//     and the bytes of the page's other requests (HTML, script, style).
//
// The slower links are a shaping proxy on loopback (link_test.go): bandwidth each way and a
// round trip, for every byte of the page and the stream. (Chromium's own network emulation
// was tried first, Network.emulateNetworkConditionsByRule in Chromium 156: it delivered
// the 7 MiB deflated snapshot at about 3.5 Mbit/s on a 20 Mbit/s setting, and the 37 MiB
// plain one at 10-56 Mbit/s on a 100 Mbit/s setting, so it does not emulate a link for
// large websocket messages.)
//
// It reports medians, and the ratio on/off of each. It asserts no timings; a load that
// shows no first frame (the snapshot's write timed out and the page reconnected, or
// nothing within snapshotWait) is reported as such, and fails the benchmark only when
// deflate is on.

const (
	snapshotObjects = 150_000
	snapshotRounds  = 3
	snapshotWait    = 90 * time.Second
)

// link is a network between the browser and gcscope.
type link struct {
	name string
	// down and up are bits per second; 0: not throttled (loopback).
	down, up float64
	rtt      time.Duration
}

// snapshotLinks: loopback (gcscope on the operator's machine, the embedded cluster), a
// fast link (100 Mbit/s, 10 ms: an office network or a VPN to a cluster in the same
// region) and a slower one (20 Mbit/s down, 5 Mbit/s up, 40 ms: a home connection over a
// VPN, or a port-forward through a busy apiserver).
var snapshotLinks = []link{
	{name: "loopback"},
	{name: "100Mbit", down: 100e6, up: 100e6, rtt: 10 * time.Millisecond},
	{name: "20Mbit", down: 20e6, up: 5e6, rtt: 40 * time.Millisecond},
}

// loadResult is one page load's measurements.
type loadResult struct {
	ok                                            bool
	why                                           string  // when not ok
	open, received, applied, firstFrame           float64 // ms from navigation start
	snapshotSize                                  int     // the snapshot message, as the page received it: chars, or bytes deflated
	snapshotDeflated                              bool    // it came as the stream's own deflate (a binary message)
	extensions                                    string  // the websocket's negotiated extensions
	streamDown, streamUp, pageDown, streamsOpened int64
}

// wsTimingJS wraps the page's WebSocket, before any of the page's scripts run, to note
// when the first stream opens, the URL it asked, and when its largest message (the
// snapshot: the page's first message is the summary that tells it to ask for the whole
// graph) arrives, before the page's own handler parses it: its size, as text (chars) or
// as the stream's own deflate (a binary message, bytes).
const wsTimingJS = `(() => {
  const t = window.__gcscopeBenchWS = { open: null, url: "", received: null, size: 0, binary: false, extensions: "" };
  const Base = window.WebSocket;
  window.WebSocket = class extends Base {
    constructor(...args) {
      super(...args);
      if (!t.url) t.url = String(args[0]);
      this.addEventListener("open", () => {
        if (t.open === null) { t.open = performance.now(); t.extensions = this.extensions; }
      });
      this.addEventListener("message", (ev) => {
        const binary = typeof ev.data !== "string", size = binary ? (ev.data.byteLength ?? ev.data.size ?? 0) : ev.data.length;
        if (size > t.size) { t.received = performance.now(); t.size = size; t.binary = binary; }
      });
    }
  };
})()`

// wsTiming is window.__gcscopeBenchWS.
type wsTiming struct {
	Open       *float64 `json:"open"`
	URL        string   `json:"url"`
	Received   *float64 `json:"received"`
	Size       int      `json:"size"`
	Binary     bool     `json:"binary"`
	Extensions string   `json:"extensions"`
}

// variant is a way the server streams the snapshot.
type variant struct {
	name        string
	compression stream.Compression
}

// snapshotVariants: the first is the baseline of the ratios.
var snapshotVariants = []variant{
	{name: "off", compression: stream.CompressionOff},
	{name: "on", compression: stream.CompressionOn},
}

func BenchmarkUISnapshot(b *testing.B) {
	browsertest.Require(b)
	g := buildGraph(snapshotObjects)
	eng := newSynthEngine()
	eng.load(g)
	for _, l := range snapshotLinks {
		b.Run(l.name, func(b *testing.B) {
			for range b.N {
				results := make([][]loadResult, len(snapshotVariants))
				for round := range snapshotRounds {
					// Rotate which goes first, so that none always meets a warmer machine.
					for i := range snapshotVariants {
						v := (round + i) % len(snapshotVariants)
						results[v] = append(results[v], loadSnapshot(b, eng, l, snapshotVariants[v]))
					}
				}
				reportSnapshot(b, l, results)
			}
		})
	}
}

// reportSnapshot reports a link's medians, and the ratios to the baseline (the first
// variant).
func reportSnapshot(b *testing.B, l link, results [][]loadResult) {
	med := func(rs []loadResult, f func(loadResult) float64) float64 {
		var v []float64
		for _, r := range rs {
			if r.ok {
				v = append(v, f(r))
			}
		}
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	first := func(r loadResult) float64 { return r.firstFrame }
	openToFirst := func(r loadResult) float64 { return r.firstFrame - r.open }
	openToReceived := func(r loadResult) float64 { return r.received - r.open }
	down := func(r loadResult) float64 { return float64(r.streamDown) }
	up := func(r loadResult) float64 { return float64(r.streamUp) }
	page := func(r loadResult) float64 { return float64(r.pageDown) }
	base := results[0]
	fmt.Printf("%s: medians of %d loads; ms from navigation start: stream open → snapshot received → applied → first frame\n", l.name, snapshotRounds)
	for i, v := range snapshotVariants {
		rs := results[i]
		failed := 0
		var loads []string
		for _, r := range rs {
			if !r.ok {
				failed++
				loads = append(loads, "no first frame: "+r.why)
				continue
			}
			loads = append(loads, fmt.Sprintf("%.0f → %.0f → %.0f → %.0f", r.open, r.received, r.applied, r.firstFrame))
		}
		if failed > 0 && v.compression != stream.CompressionOff {
			b.Errorf("%s, %s: %d of %d loads showed no first frame", l.name, v.name, failed, len(rs))
		}
		b.ReportMetric(med(rs, first), "first-frame-ms-"+v.name)
		b.ReportMetric(med(rs, openToFirst), "open-to-first-frame-ms-"+v.name)
		b.ReportMetric(med(rs, openToReceived), "open-to-received-ms-"+v.name)
		b.ReportMetric(med(rs, down)/(1<<20), "stream-MiB-"+v.name)
		b.ReportMetric(float64(failed), "no-first-frame-"+v.name)
		ratio := ""
		if i > 0 && med(base, first) > 0 && med(rs, first) > 0 {
			r := med(rs, first) / med(base, first)
			b.ReportMetric(r, "first-frame-"+v.name+"/"+snapshotVariants[0].name)
			b.ReportMetric(med(rs, openToReceived)/med(base, openToReceived), "open-to-received-"+v.name+"/"+snapshotVariants[0].name)
			b.ReportMetric(med(rs, down)/med(base, down), "bytes-"+v.name+"/"+snapshotVariants[0].name)
			ratio = fmt.Sprintf(" (%.2f× %s)", r, snapshotVariants[0].name)
		}
		fmt.Printf("%s  %-11s first frame %.0f ms%s, open → first frame %.0f ms, open → snapshot received %.0f ms; stream %.2f MiB down, %.0f B up; page %.0f KiB; %d failed; loads: %s\n",
			l.name, v.name, med(rs, first), ratio, med(rs, openToFirst), med(rs, openToReceived), med(rs, down)/(1<<20), med(rs, up),
			med(rs, page)/1024, failed, strings.Join(loads, "; "))
	}
}

// loadSnapshot serves eng streamed as v says, loads the page in a fresh browser over l,
// and measures it.
func loadSnapshot(b *testing.B, eng *synthEngine, l link, v variant) loadResult {
	name := l.name + ", " + v.name
	c := v.compression
	srv, stopHub := runServer(eng, server.Options{StreamCompression: c, PageFullGraph: snapshotObjects})
	wire := &wireCounter{}
	ts := httptest.NewUnstartedServer(wire.handler(srv))
	wire.wrap(ts)
	ts.Start() // 127.0.0.1
	defer func() {
		stopHub()
		ts.Close()
	}()

	p := browsertest.Start(b, browsertest.Options{Width: 1400, Height: 900})
	defer p.Close()
	ctx := p.Ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: wsTimingJS}); err != nil {
		b.Fatalf("%s: adding the timing script: %v", name, err)
	}
	url := ts.URL
	if l.down > 0 {
		px := startLinkProxy(b, ts.Listener.Addr().String(), l)
		defer px.Close()
		url = "http://" + px.Addr().String()
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		b.Fatalf("%s: loading the page: %v", name, err)
	}
	r := loadResult{}
	deadline := time.Now().Add(snapshotWait)
	for {
		ready, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.gcscope?.ready === true`))
		if err != nil {
			b.Fatalf("%s: reading window.gcscope.ready: %v", name, err)
		}
		if ready {
			r.ok = true
			break
		}
		if n := wire.streams(); n > 1 {
			r.why = fmt.Sprintf("the page opened %d streams: the first ended before its snapshot arrived", n)
			break
		}
		if time.Now().After(deadline) {
			r.why = fmt.Sprintf("not ready after %v", snapshotWait)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.streamDown, r.streamUp, r.pageDown, r.streamsOpened = wire.totals()
	if !r.ok {
		b.Logf("%s: %s (stream: %d B down)", name, r.why, r.streamDown)
		browsertest.Screenshot(b, ctx, strings.ReplaceAll(b.Name(), "/", "-")+"-"+v.name+"-no-first-frame")
		return r
	}
	pf, err := chromedp.Run(ctx, chromedp.Evaluate[perf](`window.gcscope.perf`))
	if err != nil || pf.SnapshotMs == nil || pf.FirstFrameMs == nil {
		b.Fatalf("%s: reading window.gcscope.perf: %+v, %v", name, pf, err)
	}
	t, err := chromedp.Run(ctx, chromedp.Evaluate[wsTiming](`window.__gcscopeBenchWS`))
	if err != nil || t.Open == nil || t.Received == nil {
		b.Fatalf("%s: reading the stream's timing: %+v, %v", name, t, err)
	}
	r.open, r.received, r.applied, r.firstFrame = *t.Open, *t.Received, *pf.SnapshotMs, *pf.FirstFrameMs
	r.snapshotSize, r.snapshotDeflated, r.extensions = t.Size, t.Binary, t.Extensions
	// The page asks for the stream's own deflate (encoding=deflate); a server with
	// compression off sends text all the same.
	if !strings.Contains(t.URL, "encoding=deflate") {
		b.Fatalf("%s: the page's stream %q does not ask for the stream's own deflate", name, t.URL)
	}
	if wantDeflate := c == stream.CompressionOn; r.snapshotDeflated != wantDeflate || r.extensions != "" {
		b.Fatalf("%s: the snapshot came deflated by the stream: %v, by the websocket: %q; want %v by the stream only", name, r.snapshotDeflated, r.extensions, wantDeflate)
	}
	as := "as text, MiB of chars"
	if r.snapshotDeflated {
		as = "deflated, MiB"
	}
	b.Logf("%s: open %.0f ms, snapshot (%.1f %s) received %.0f ms, applied %.0f ms, first frame %.0f ms; stream %d B down, %d B up; page %d B",
		name, r.open, float64(r.snapshotSize)/(1<<20), as, r.received, r.applied, r.firstFrame, r.streamDown, r.streamUp, r.pageDown)
	return r
}

// wireCounter counts the bytes of a test server's connections at its listener, the
// stream's connection apart from the others.
type wireCounter struct {
	mu    sync.Mutex
	conns []*countedConn
}

type connKey struct{}

// wrap has ts accept through the counter; call before ts.Start.
func (w *wireCounter) wrap(ts *httptest.Server) {
	ts.Listener = &countingListener{Listener: ts.Listener, w: w}
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
}

// handler marks the connection of each stream request before h serves it.
func (w *wireCounter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/stream" {
			if c, ok := r.Context().Value(connKey{}).(*countedConn); ok {
				c.stream.Store(true)
			}
		}
		h.ServeHTTP(rw, r)
	})
}

// streams is how many stream connections were opened.
func (w *wireCounter) streams() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conns {
		if c.stream.Load() {
			n++
		}
	}
	return n
}

// totals: the bytes the stream connections wrote (down) and read (up), those the other
// connections wrote, and the number of stream connections.
func (w *wireCounter) totals() (streamDown, streamUp, pageDown, streams int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		if c.stream.Load() {
			streamDown += c.written.Load()
			streamUp += c.read.Load()
			streams++
		} else {
			pageDown += c.written.Load()
		}
	}
	return
}

type countingListener struct {
	net.Listener
	w *wireCounter
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countedConn{Conn: c}
	l.w.mu.Lock()
	l.w.conns = append(l.w.conns, cc)
	l.w.mu.Unlock()
	return cc, nil
}

// countedConn counts what passes through it.
type countedConn struct {
	net.Conn
	read, written atomic.Int64
	stream        atomic.Bool
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}
