package static

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// retryProbe draws the timeline over a recorded history (the server's answer, faked under
// fetch) with a bucket holding one conflict the worker retried (409), one holding a real
// error, and a cascade with one of each, and reads what it drew and says on hover.
const retryProbe = `(async (theme) => {
  document.documentElement.dataset.theme = theme;
  const t0 = Date.parse("2026-11-28T09:00:00Z"), b = 30000;
  const iso = (t) => new Date(t).toISOString();
  const buckets = [];
  for (let i = 0; i < 40; i++) buckets.push({ t: iso(t0 + i * b), events: 5 + (i % 7) * 3, deletes: i % 5 ? 1 : 3, errors: i === 12 ? 1 : 0, retries: i === 20 ? 1 : i === 30 ? 2 : 0 });
  const body = { from: iso(t0), to: iso(t0 + 40 * b), bucket: b * 1e6, buckets,
    cascades: [{ id: 7, session: 1, root: { apiVersion: "apps/v1", kind: "Deployment", namespace: "demo-web", name: "api", uid: "u1" },
      policy: "Foreground", start: iso(t0 + 19 * b), end: iso(t0 + 23 * b), objects: 6, deleted: 6, actions: 7, errors: 0, retries: 1 }],
    gaps: [], recording: { state: "recording", oldest: iso(t0), newest: iso(t0 + 40 * b) } };
  window.fetch = async () => new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  document.body.replaceChildren();
  const wrap = document.createElement("div");
  wrap.id = "timeline";
  wrap.style.cssText = "position: relative; width: 1200px; padding: 8px; background: var(--panel); color: var(--fg)";
  wrap.innerHTML = '<div class="tl-bar"><span class="tl-legend"><i class="fg"></i>Foreground <i class="bg"></i>Background <i class="or"></i>Orphan <i class="dot err"></i>error <i class="dot retry"></i>retry <i class="gap"></i>not recorded</span></div>' +
    '<canvas id="timeline-canvas" style="width: 1200px; display: block"></canvas><div id="tl-tooltip" class="tl-tooltip" hidden></div>';
  document.body.append(wrap);
  const { Timeline } = await import("/timeline.js");
  const tl = new Timeline(wrap.querySelector("canvas"), wrap.querySelector("#tl-tooltip"), { seek() {}, select() {}, changed() {}, error(m) { throw new Error(m); } });
  tl.followNow = false;
  tl.setWindow(t0, t0 + 40 * b);
  for (let i = 0; i < 100 && !(tl.data && tl.dotsDrawn.length); i++) await new Promise((r) => setTimeout(r, 30));
  const cs = getComputedStyle(document.documentElement);
  const r = tl.canvas.getBoundingClientRect();
  const hover = (x, y) => { tl.move({ clientX: r.left + x, clientY: r.top + y }); return tl.tooltip.textContent; };
  const span = tl.spans[0];
  return {
    dots: tl.dotsDrawn.map((d) => ({ t: d.t - t0, errors: d.errors, retries: d.retries, colors: d.colors })),
    danger: cs.getPropertyValue("--danger").trim(), retry: cs.getPropertyValue("--retry").trim(),
    retryBucket: hover(tl.x(t0 + 20.5 * b), 10), twoRetries: hover(tl.x(t0 + 30.5 * b), 10), errorBucket: hover(tl.x(t0 + 12.5 * b), 10),
    cascade: span ? hover((span.x0 + span.x1) / 2, span.y + 2) : "",
    legend: wrap.querySelector(".tl-legend").textContent,
    legendRetry: getComputedStyle(wrap.querySelector(".tl-legend i.retry")).backgroundColor,
  };
})`

// TestTheTimelineTellsRetriesFromErrors: a conflict the worker retried (the history's
// `retries`, issue 36 item 3) is a dot of its own colour, not the errors' red, counted as
// "1 retried conflict" in the bucket's and the cascade's tooltips, never as errors; a real
// error stays a red dot and "1 error"; the legend lists both. Screenshots, light and dark.
func TestTheTimelineTellsRetriesFromErrors(t *testing.T) {
	page, ctx := modulePage(t)
	type dot struct {
		T               float64
		Errors, Retries int
		Colors          []string
	}
	type drawn struct {
		Dots                                                  []dot
		Danger, Retry                                         string
		RetryBucket, TwoRetries, ErrorBucket, Cascade, Legend string
		LegendRetry                                           string
	}
	for _, theme := range []string{"light", "dark"} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1240, 200)); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[drawn](retryProbe+`("`+theme+`")`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if got.Retry == "" || strings.EqualFold(got.Retry, got.Danger) {
			t.Fatalf("%s: the retry colour %q, the error colour %q: want a colour of its own", theme, got.Retry, got.Danger)
		}
		byT := map[float64]dot{}
		for _, d := range got.Dots {
			byT[d.T] = d
		}
		if d := byT[20*30000]; d.Retries != 1 || d.Errors != 0 || len(d.Colors) != 1 || d.Colors[0] != got.Retry {
			t.Errorf("%s: the bucket with a retried conflict is drawn %+v; want one dot in the retry colour %s", theme, d, got.Retry)
		}
		if d := byT[12*30000]; d.Errors != 1 || len(d.Colors) != 1 || d.Colors[0] != got.Danger {
			t.Errorf("%s: the bucket with an error is drawn %+v; want one red dot %s", theme, d, got.Danger)
		}
		if len(got.Dots) != 3 {
			t.Errorf("%s: %d dots drawn (%+v); want 3: one error, two buckets of retries", theme, len(got.Dots), got.Dots)
		}
		if !strings.Contains(got.RetryBucket, "· 1 retried conflict") || strings.Contains(got.RetryBucket, "error") {
			t.Errorf("%s: the retry bucket's tooltip %q; want \"1 retried conflict\" and no error", theme, got.RetryBucket)
		}
		if !strings.Contains(got.TwoRetries, "· 2 retried conflicts") {
			t.Errorf("%s: the bucket of two retries says %q; want \"2 retried conflicts\"", theme, got.TwoRetries)
		}
		if !strings.Contains(got.ErrorBucket, "· 1 error") || strings.Contains(got.ErrorBucket, "retried") {
			t.Errorf("%s: the error bucket's tooltip %q; want \"1 error\"", theme, got.ErrorBucket)
		}
		if !strings.Contains(got.Cascade, "6 of 6 gone · 1 retried conflict") || strings.Contains(got.Cascade, "error") {
			t.Errorf("%s: the cascade's tooltip %q; want \"6 of 6 gone · 1 retried conflict\" and no error", theme, got.Cascade)
		}
		if !strings.Contains(got.Legend, "error") || !strings.Contains(got.Legend, "retry") {
			t.Errorf("%s: the timeline's legend %q; want the error and retry dots listed", theme, got.Legend)
		}
		if err := chromedp.Do(ctx, browsertest.Frames(2)); err != nil {
			t.Fatal(err)
		}
		browsertest.Screenshot(t, ctx, fmt.Sprintf("ui-timeline-retry-%s", theme))
	}
	page.NoErrors(t)
}
