package web_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/server"
)

// The UI render benchmark: the real server over a synthetic engine (no apiserver), the
// page in headless Chromium. For each graph size it measures
//
//   - the first frame: window.gcscope.perf.firstFrameMs, the time from navigation start
//     until the first frame showing the snapshot finished drawing, against the baseline
//     snapshot-received (perf.snapshotMs, when the snapshot frame was parsed) in the same
//     load;
//   - the frame rate while the feed carries 1,000 mutations a second for 5 s, counted in
//     the page with requestAnimationFrame (frames per second, the worst and the 95th
//     percentile gap between frames, the longest task the page ran), and perf.applied,
//     which must grow: first at the view the page opens on (readable workloads), then
//     with the whole graph in view (fit: every object a cell), fps-fit;
//
// The case cascade-2k-selected is the 10k graph plus one owner with 2,000 blocking
// dependents, deleted in the foreground and selected (?sel=), so the object panel follows
// its cascade: the 1,000 events a second are that cascade's (attemptToDelete transitions,
// deletions and removals, 20 dependents in flight), about 170 dependents gone a second.
//
// `make bench` runs it once per size (-benchtime 1x). It asserts no timings; it fails if
// the page never sets window.gcscope.ready or applies no event.

const (
	mutationRate   = 1000 // feed events per second
	mutationPeriod = 5 * time.Second
	readyTimeout   = 60 * time.Second
)

// perf is window.gcscope.perf.
type perf struct {
	SnapshotMs   *float64 `json:"snapshotMs"`
	FirstFrameMs *float64 `json:"firstFrameMs"`
	Applied      int      `json:"applied"`
	Drawn        int      `json:"drawn"`
}

// frameStats is what the page's requestAnimationFrame counter measured.
type frameStats struct {
	Frames   int     `json:"frames"`
	Ms       float64 `json:"ms"`
	FPS      float64 `json:"fps"`
	WorstGap float64 `json:"worstGap"`
	P95Gap   float64 `json:"p95Gap"`
	// LongTasks and LongestTask: the page's tasks over 50 ms (PerformanceObserver).
	LongTasks   int     `json:"longTasks"`
	LongestTask float64 `json:"longestTask"`
}

// renderCase is one sub-benchmark: a synthetic graph of n objects; with cascade > 0, plus
// an owner of that many blocking dependents, selected, whose foreground cascade is the
// mutation stream.
type renderCase struct {
	name    string
	n       int
	cascade int
}

// renderResult is one page load's measurements.
type renderResult struct {
	firstFrame, baseline float64 // ms from navigation start
	drawn                int
	frames               frameStats
	fitFrames            frameStats // the same load with the whole graph in view
	published, applied   int
}

func BenchmarkUIRender(b *testing.B) {
	for _, size := range []renderCase{
		{name: "10k", n: 10_000}, {name: "50k", n: 50_000}, {name: "150k", n: 150_000},
		{name: "cascade-2k-selected", n: 10_000, cascade: 2_000},
	} {
		b.Run(size.name, func(b *testing.B) {
			browsertest.Require(b)
			var results []renderResult
			for i := range b.N {
				results = append(results, renderOnce(b, size, i))
			}
			mean := func(f func(r renderResult) float64) float64 {
				var sum float64
				for _, r := range results {
					sum += f(r)
				}
				return sum / float64(len(results))
			}
			first, base := mean(func(r renderResult) float64 { return r.firstFrame }), mean(func(r renderResult) float64 { return r.baseline })
			fps := mean(func(r renderResult) float64 { return r.frames.FPS })
			b.ReportMetric(first, "first-frame-ms")
			b.ReportMetric(base, "baseline-ms")
			b.ReportMetric(first/base, "ratio")
			b.ReportMetric(fps, "fps")
			if size.cascade == 0 {
				b.ReportMetric(mean(func(r renderResult) float64 { return r.fitFrames.FPS }), "fps-fit")
			}
			b.ReportMetric(mean(func(r renderResult) float64 { return r.frames.P95Gap }), "p95-gap-ms")
			b.ReportMetric(mean(func(r renderResult) float64 { return r.frames.WorstGap }), "worst-gap-ms")
			b.ReportMetric(mean(func(r renderResult) float64 { return r.frames.LongestTask }), "longest-task-ms")
			b.ReportMetric(mean(func(r renderResult) float64 { return float64(r.frames.LongTasks) }), "long-tasks")
			b.Logf("%s: first frame %.0f ms (%.1f× baseline:snapshot-received %.0f ms); %.1f fps under %d mutations/s",
				size.name, first, first/base, base, fps, mutationRate)
		})
	}
}

// renderOnce serves a fresh synthetic graph of c.n objects, loads the page in a fresh
// browser, and measures it.
func renderOnce(b *testing.B, c renderCase, iteration int) renderResult {
	name, n := c.name, c.n
	g := buildGraph(n)
	var source interface{ next() []gc.Event }
	var selected types.UID
	if c.cascade > 0 {
		owner, deps := g.cascadeOwner(c.cascade)
		source = &cascader{left: deps, owner: owner}
		selected = owner.UID
	}
	eng := newSynthEngine()
	eng.load(g)
	if source == nil {
		source = newMutator(eng, g)
	}

	srv, stopHub := runServer(eng, server.Options{})
	ts := httptest.NewServer(srv) // 127.0.0.1
	defer func() {
		stopHub()
		ts.Close()
	}()

	page := browsertest.Start(b, browsertest.Options{Width: 1400, Height: 900})
	defer page.Close()
	ctx := page.Ctx
	shot := fmt.Sprintf("%s-%d", b.Name(), iteration)

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/")); err != nil {
		b.Fatalf("loading the page: %v", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	_, err := chromedp.Run(waitCtx, chromedp.Poll[bool](`window.gcscope?.ready === true`,
		chromedp.WithPollingTimeout(readyTimeout), chromedp.WithPollingInterval(10*time.Millisecond)))
	cancel()
	if err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](
			`typeof window.gcscope === "undefined" ? "undefined" : JSON.stringify(window.gcscope)`))
		browsertest.Screenshot(b, ctx, shot+"-not-ready")
		if errors.Is(err, chromedp.ErrPollingTimeout) || errors.Is(err, context.DeadlineExceeded) {
			b.Fatalf("%s: page never set window.gcscope.ready within %v (window.gcscope: %s)", name, readyTimeout, state)
		}
		b.Fatalf("%s: waiting for window.gcscope.ready: %v (window.gcscope: %s)", name, err, state)
	}
	p, err := chromedp.Run(ctx, chromedp.Evaluate[perf](`window.gcscope.perf`))
	if err != nil {
		b.Fatalf("%s: reading window.gcscope.perf: %v", name, err)
	}
	if p.SnapshotMs == nil || p.FirstFrameMs == nil {
		b.Fatalf("%s: window.gcscope is ready but perf.snapshotMs or perf.firstFrameMs is null: %+v", name, p)
	}
	r := renderResult{firstFrame: *p.FirstFrameMs, baseline: *p.SnapshotMs, drawn: p.Drawn}
	b.Logf("%s: snapshot of %d objects parsed at %.0f ms, first frame at %.0f ms, %d drawn",
		name, n, r.baseline, r.firstFrame, p.Drawn)
	if selected != "" {
		// The user clicks the owner; the frames are counted once its panel has the
		// engine's explanation.
		selCtx, cancel := context.WithTimeout(ctx, readyTimeout)
		err := chromedp.Do(selCtx, chromedp.Evaluate[chromedp.Void](`window.gcscope.select(`+strconv.Quote(string(selected))+`)`),
			chromedp.Poll[chromedp.Void](`(document.querySelector("#explain")?.textContent || "").includes("Next step")`,
				chromedp.WithPollingTimeout(readyTimeout), chromedp.WithPollingInterval(10*time.Millisecond)))
		cancel()
		if err != nil {
			browsertest.Screenshot(b, ctx, shot+"-no-explanation")
			b.Fatalf("%s: selecting the owner: its panel shows no explanation: %v", name, err)
		}
	}
	browsertest.Screenshot(b, ctx, shot+"-loaded")

	// The mutation phase: count frames in the page while the feed carries mutationRate
	// events a second.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](frameCounterJS)); err != nil {
		b.Fatalf("%s: starting the frame counter: %v", name, err)
	}
	applied0 := p.Applied
	published := mutate(eng, source, mutationRate, mutationPeriod)
	r.frames, err = chromedp.Run(ctx, chromedp.Evaluate[frameStats](`window.__gcscopeBenchFrames.stop()`))
	if err != nil {
		b.Fatalf("%s: reading the frame counter: %v", name, err)
	}
	r.published = published

	// The last batches may still be on their way: give them a few seconds.
	var applied int
	deadline := time.Now().Add(5 * time.Second)
	for {
		applied, err = chromedp.Run(ctx, chromedp.Evaluate[int](`window.gcscope.perf.applied`))
		if err != nil {
			b.Fatalf("%s: reading perf.applied: %v", name, err)
		}
		if applied-applied0 >= published || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.applied = applied - applied0
	if r.applied <= 0 {
		browsertest.Screenshot(b, ctx, shot+"-no-events")
		b.Fatalf("%s: perf.applied stayed at %d while %d events were published", name, applied, published)
	}
	drawn, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.gcscope.perf.drawn`))
	browsertest.Screenshot(b, ctx, shot+"-after-mutations")
	b.Logf("%s: %d frames in %.0f ms under %d events/s: %.1f fps, p95 gap %.1f ms, worst %.1f ms, %d long tasks (longest %.0f ms); %d of %d events applied; %d drawn",
		name, r.frames.Frames, r.frames.Ms, mutationRate, r.frames.FPS, r.frames.P95Gap, r.frames.WorstGap,
		r.frames.LongTasks, r.frames.LongestTask, r.applied, published, drawn)
	if c.cascade > 0 {
		panel, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#explain")?.textContent || ""`))
		b.Logf("%s: the panel's explanation after the cascade's events: %.300q", name, panel)
	} else {
		// The page opens on readable workloads; the whole graph in view (fit, every object a
		// cell) is the frame rate's worst case: measured again under the same load.
		err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("zoom-fit").click()`), chromedp.Sleep(time.Second),
			chromedp.Evaluate[chromedp.Void](frameCounterJS))
		if err != nil {
			b.Fatalf("%s: fitting the whole graph: %v", name, err)
		}
		mutate(eng, source, mutationRate, mutationPeriod)
		if r.fitFrames, err = chromedp.Run(ctx, chromedp.Evaluate[frameStats](`window.__gcscopeBenchFrames.stop()`)); err != nil {
			b.Fatalf("%s: reading the frame counter: %v", name, err)
		}
		browsertest.Screenshot(b, ctx, shot+"-fit")
		b.Logf("%s, whole graph in view: %.1f fps, p95 gap %.1f ms, worst %.1f ms, %d long tasks (longest %.0f ms)",
			name, r.fitFrames.FPS, r.fitFrames.P95Gap, r.fitFrames.WorstGap, r.fitFrames.LongTasks, r.fitFrames.LongestTask)
	}
	if errs := page.Errors(); len(errs) > 0 {
		b.Logf("%s: the page logged %d console errors or exceptions (above)", name, len(errs))
	}
	return r
}

// frameCounterJS starts counting animation frames; stop() ends the count and returns
// frameStats.
const frameCounterJS = `(() => {
  const gaps = [], tasks = [];
  let last = null, frames = 0, running = true, start = performance.now();
  const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) tasks.push(e.duration); });
  observer.observe({ type: "longtask" });
  const tick = (t) => {
    if (!running) return;
    if (last !== null) gaps.push(t - last);
    last = t;
    frames++;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  window.__gcscopeBenchFrames = {
    stop() {
      running = false;
      for (const e of observer.takeRecords()) tasks.push(e.duration);
      observer.disconnect();
      const ms = performance.now() - start;
      const sorted = gaps.slice().sort((a, b) => a - b);
      const p95 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)] : 0;
      return { frames, ms, fps: frames * 1000 / ms, worstGap: sorted.length ? sorted[sorted.length - 1] : 0, p95Gap: p95,
        longTasks: tasks.length, longestTask: tasks.length ? Math.max(...tasks) : 0 };
    },
  };
})()`

// mutate publishes rate events a second from m for d through the engine's feed, in small
// steps, and returns how many it published.
func mutate(e *synthEngine, m interface{ next() []gc.Event }, rate int, d time.Duration) int {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	published := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= d {
			elapsed = d
		}
		due := int(math.Round(elapsed.Seconds() * float64(rate)))
		for published < due {
			evs := m.next() // reads the graph: publish each mutation before the next
			e.publish(evs...)
			published += len(evs)
		}
		if elapsed >= d {
			return published
		}
		<-tick.C
	}
}
