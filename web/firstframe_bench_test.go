package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/server"
	"github.com/gcscope/gcscope/server/stream"
)

// The first-frame benchmark: a page whose cost follows what is on screen, not the
// cluster's size (docs/stream.md, summary first). The real server streams a synthetic
// engine (as BenchmarkUIRender) over the 20 Mbit/s link of BenchmarkUISnapshot (a shaping
// proxy on loopback, deflate on) to the page in headless Chromium, at 10,000 objects (the
// baseline: the page holds them all) and at GCSCOPE_UI_OBJECTS (default 150,000; the
// page is summary first). Each size is loaded firstFrameRounds times, alternately, each
// in a fresh browser and server, and measured:
//
//   - the first frame (perf.firstFrameMs from navigation start): at 10k the whole graph
//     drawn; summary first, every namespace a box with its counts;
//   - the first detail: the objects of the namespaces in view drawn (detail.js);
//   - the page's JS heap after a garbage collection, once the detail is in;
//   - at the large size, in the first round, the frame rate while the feed carries 1,000
//     events a second: panning at the view the page opens on, then zooming with the
//     whole graph in view; and, as the machine's ceiling, the frame rate of the page
//     still, with no event.
//
// It reports medians and first-frame-<large>/10k-20mbit, the ratio of the first frames
// measured in the same run. It asserts no timings.

const firstFrameRounds = 3

// firstFrameResult is one page load's measurements.
type firstFrameResult struct {
	firstFrame, detail float64 // ms from navigation start
	heapMB             float64
	idle, pan, whole   frameStats // idle: still, no event (the machine's ceiling)
}

func BenchmarkUIFirstFrame(b *testing.B) {
	browsertest.Require(b)
	sizes := []int{10_000, uiObjects(b)}
	engines := map[int]*synthEngine{}
	graphs := map[int]*graphBuilder{}
	for _, n := range sizes {
		graphs[n] = buildGraph(n)
		engines[n] = newSynthEngine()
		engines[n].load(graphs[n])
		engines[n].Summary() // counted once, as the real engine keeps its counts from the start
	}
	l := snapshotLinks[2] // 20 Mbit/s
	large := sizes[1]
	for range b.N {
		results := map[int][]firstFrameResult{}
		for round := range firstFrameRounds {
			for i := range sizes {
				n := sizes[(round+i)%len(sizes)]
				var m *mutator
				if n == large && round == 0 {
					m = newMutator(engines[n], graphs[n])
				}
				results[n] = append(results[n], loadFirstFrame(b, engines[n], n, l, m))
			}
		}
		med := func(n int, f func(firstFrameResult) float64) float64 {
			var v []float64
			for _, r := range results[n] {
				v = append(v, f(r))
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		first := func(r firstFrameResult) float64 { return r.firstFrame }
		detail := func(r firstFrameResult) float64 { return r.detail }
		heap := func(r firstFrameResult) float64 { return r.heapMB }
		name := sizeName(large)
		b.ReportMetric(med(10_000, first), "first-frame-ms-10k-20mbit")
		b.ReportMetric(med(large, first), "first-frame-ms-20mbit")
		b.ReportMetric(med(large, first)/med(10_000, first), "first-frame-"+name+"/10k-20mbit")
		b.ReportMetric(med(large, detail), "first-detail-ms-20mbit")
		b.ReportMetric(med(large, heap), "browser-heap-MB")
		b.ReportMetric(med(10_000, heap), "browser-heap-MB-10k")
		r := results[large][0]
		b.ReportMetric(r.idle.FPS, "fps-idle")
		b.ReportMetric(r.pan.FPS, "fps-pan")
		b.ReportMetric(r.whole.FPS, "fps-whole")
		b.ReportMetric(r.whole.P95Gap, "p95-gap-ms-whole")
	}
}

// sizeName is 10k, 150k, 1m.
func sizeName(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("%dm", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// loadFirstFrame serves eng over l, loads the page in a fresh browser and measures it;
// with m, then the frame rates under its events.
func loadFirstFrame(b *testing.B, eng *synthEngine, n int, l link, m *mutator) firstFrameResult {
	name := fmt.Sprintf("%s over %s", sizeName(n), l.name)
	srv, stopHub := runServer(eng, server.Options{StreamCompression: stream.CompressionOn})
	ts := httptest.NewServer(srv) // 127.0.0.1
	px := startLinkProxy(b, ts.Listener.Addr().String(), l)
	defer func() {
		px.Close()
		stopHub()
		ts.Close()
	}()

	p := browsertest.Start(b, browsertest.Options{Width: 1400, Height: 900})
	defer p.Close()
	ctx := p.Ctx
	shot := fmt.Sprintf("ui-first-frame-%s", sizeName(n))
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: wsTimingJS}); err != nil {
		b.Fatalf("%s: adding the timing script: %v", name, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+px.Addr().String()+"/")); err != nil {
		b.Fatalf("%s: loading the page: %v", name, err)
	}
	wait := func(what, expr string) {
		c, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(readyTimeout), chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
			browsertest.Screenshot(b, ctx, shot+"-failed")
			b.Fatalf("%s: %s: %v", name, what, err)
		}
	}
	wait("the first frame", `window.gcscope?.ready === true`)
	browsertest.Screenshot(b, ctx, shot+"-first")
	wait("the detail in view", `(() => { const d = window.gcscope.detail(); return d.mode === "full" || (d.settled && d.answered.namespaces.length > 0 && !window.gcscope.live.dirtyNamespaces.size); })()`)
	type timing struct {
		First  float64  `json:"first"`
		Detail *float64 `json:"detail"`
		Mode   string   `json:"mode"`
		Held   int      `json:"held"`
		Size   int      `json:"size"`
		Binary bool     `json:"binary"`
		Open   float64  `json:"open"`
		Parsed float64  `json:"parsed"`
		Lost   int      `json:"lost"`
	}
	t, err := chromedp.Run(ctx, chromedp.Evaluate[timing](`({first: window.gcscope.perf.firstFrameMs, detail: window.gcscope.detail().detailMs,
		mode: window.gcscope.detail().mode, held: window.gcscope.live.nodes.size, size: window.__gcscopeBenchWS.size, binary: window.__gcscopeBenchWS.binary,
		open: window.__gcscopeBenchWS.open, parsed: window.gcscope.perf.snapshotMs, lost: window.gcscope.renderer.contextLosses})`))
	if err != nil {
		b.Fatalf("%s: reading the page's timings: %v", name, err)
	}
	r := firstFrameResult{firstFrame: t.First, detail: t.First}
	if t.Detail != nil {
		r.detail = *t.Detail
	}
	browsertest.Screenshot(b, ctx, shot+"-detail")
	if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		b.Fatalf("%s: collecting garbage: %v", name, err)
	}
	heap, err := chromedp.Call(ctx, runtime.GetHeapUsage, cdp.Empty{})
	if err != nil {
		b.Fatalf("%s: reading the heap: %v", name, err)
	}
	r.heapMB = heap.UsedSize / 1e6
	b.Logf("%s (%s): stream open %.0f ms, largest message %d %s, snapshot (or summary) applied %.0f ms, first frame %.0f ms, detail %.0f ms (%d objects held), heap %.1f MB, canvas contexts lost %d",
		name, t.Mode, t.Open, t.Size, map[bool]string{false: "chars", true: "bytes deflated"}[t.Binary], t.Parsed, r.firstFrame, r.detail, t.Held, r.heapMB, t.Lost)
	if m == nil {
		return r
	}

	// Panning at the view the page opens on, under mutationRate events a second.
	// GCSCOPE_UI_PROFILE=DIR writes Chromium's CPU profile of each (open it in DevTools).
	measure := func(phase, move string) frameStats {
		dir := os.Getenv("GCSCOPE_UI_PROFILE")
		if dir != "" {
			if _, err := chromedp.Call(ctx, profiler.Enable, cdp.Empty{}); err != nil {
				b.Fatalf("%s: starting the profiler: %v", name, err)
			}
			if _, err := chromedp.Call(ctx, profiler.Start, cdp.Empty{}); err != nil {
				b.Fatalf("%s: starting the profiler: %v", name, err)
			}
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](frameCounterJS+`;(() => { const r = window.gcscope.renderer; let i = 0;
			const step = () => { if (window.__gcscopeBenchMove === false) return; `+move+`; i++; requestAnimationFrame(step); };
			window.__gcscopeBenchMove = true; requestAnimationFrame(step); })()`)); err != nil {
			b.Fatalf("%s: starting the frame counter: %v", name, err)
		}
		mutate(eng, m, mutationRate, mutationPeriod)
		fs, err := chromedp.Run(ctx, chromedp.Evaluate[frameStats](`(window.__gcscopeBenchMove = false, window.__gcscopeBenchFrames.stop())`))
		if err != nil {
			b.Fatalf("%s: reading the frame counter: %v", name, err)
		}
		if dir != "" {
			res, err := chromedp.Call(ctx, profiler.Stop, cdp.Empty{})
			if err == nil {
				var data []byte
				if data, err = json.Marshal(res.Profile); err == nil {
					err = os.WriteFile(filepath.Join(dir, shot+"-"+phase+".cpuprofile"), data, 0o644)
				}
			}
			if err != nil {
				b.Fatalf("%s: the profile: %v", name, err)
			}
		}
		return fs
	}
	// The machine's ceiling: the same page, still, with no event.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](frameCounterJS), chromedp.Sleep(2*time.Second)); err != nil {
		b.Fatalf("%s: counting frames: %v", name, err)
	}
	if r.idle, err = chromedp.Run(ctx, chromedp.Evaluate[frameStats](`window.__gcscopeBenchFrames.stop()`)); err != nil {
		b.Fatalf("%s: reading the frame counter: %v", name, err)
	}
	r.pan = measure("pan", `r.pan(i % 240 < 120 ? -3 : 3, i % 160 < 80 ? -1 : 1)`)
	browsertest.Screenshot(b, ctx, shot+"-panned")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("zoom-fit").click()`), chromedp.Sleep(time.Second)); err != nil {
		b.Fatalf("%s: fitting the whole graph: %v", name, err)
	}
	r.whole = measure("whole", `r.zoomAt(r.w / 2, r.h / 2, i % 60 < 30 ? 1.01 : 1 / 1.01)`)
	browsertest.Screenshot(b, ctx, shot+"-whole")
	b.Logf("%s, still with no event %.1f fps; under %d events/s: panning %.1f fps (p95 gap %.1f ms, %d long tasks, longest %.0f ms); the whole graph in view, zooming %.1f fps (p95 gap %.1f ms, %d long tasks, longest %.0f ms)",
		name, r.idle.FPS, mutationRate, r.pan.FPS, r.pan.P95Gap, r.pan.LongTasks, r.pan.LongestTask, r.whole.FPS, r.whole.P95Gap, r.whole.LongTasks, r.whole.LongestTask)
	return r
}

// runServer makes gcscope's server over eng with o's stream options, and runs its stream
// hub until stop.
func runServer(eng *synthEngine, o server.Options) (srv *server.Server, stop func()) {
	o.Engine, o.Version, o.Ready = eng, "bench", func() error { return nil }
	srv = server.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	return srv, func() { cancel(); <-done }
}
