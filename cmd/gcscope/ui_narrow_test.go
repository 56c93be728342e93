package main

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUIAt800Pixels: at 800 px the header stays one row with the namespace and kind
// filters in it, and the side panel folds away (› in its tabs) to give the graph the
// whole width, and comes back (‹ by the zoom buttons), in both themes.
func TestUIAt800Pixels(t *testing.T) {
	parallelUI(t)
	base, _ := startEmbedded(t, "--demo")
	page := browsertest.Start(t, browsertest.Options{Width: 800, Height: 900})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-narrow-failed"}
	d.run(t, "load the page", chromedp.Navigate(base+"/?ns=demo-web"), uiReady,
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	type box struct{ X, Y, W, H float64 }
	rect := func(sel string) box {
		t.Helper()
		var b box
		d.eval(t, `(() => { const e = document.querySelector("`+sel+`"); if (!e || !e.offsetParent) return {x: -1, y: -1, w: 0, h: 0};
			const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; })()`, &b)
		return b
	}
	for _, theme := range []string{"light", "dark"} {
		for range 3 { // the toggle, as a user would: the canvas reads its colors again
			var now string
			d.eval(t, `document.documentElement.dataset.theme || ""`, &now)
			if now == theme {
				break
			}
			d.run(t, "the theme toggle", click("#theme-toggle"))
		}
		bar := rect("header.bar")
		for _, sel := range []string{"#filter-ns", "#filter-kind", "#search", "#export-button", "#conn"} {
			if b := rect(sel); b.W == 0 || b.X < 0 || b.X+b.W > 800 || b.Y+b.H > bar.Y+bar.H {
				t.Errorf("%s: %s at %+v, want it in the header (%+v), on screen", theme, sel, b, bar)
			}
		}
		if bar.H > 48 {
			t.Errorf("%s: the header is %.0f px high: it wrapped to two rows", theme, bar.H)
		}
		browsertest.Screenshot(t, page.Ctx, "ui-narrow-"+theme)

		side, graph := rect("aside.side"), rect("#graph")
		if side.W == 0 || side.W > 800*0.4 {
			t.Errorf("%s: the side panel is %.0f px of 800", theme, side.W)
		}
		// The timeline's controls fit beside the panel (● Live was cut at its edge).
		for _, sel := range []string{"#tl-play", "#tl-speed", "#tl-live"} {
			if b := rect(sel); b.W == 0 || b.X+b.W > side.X {
				t.Errorf("%s: %s at %+v runs under the side panel (at x %.0f)", theme, sel, b, side.X)
			}
		}
		d.run(t, "fold the side panel", click("#side-hide"))
		d.run(t, "the graph takes the width", chromedp.Poll[chromedp.Void](`document.getElementById("graph").getBoundingClientRect().width > 780`))
		if s := rect("aside.side"); s.W != 0 {
			t.Errorf("%s: after ›, the side panel is still %+v", theme, s)
		}
		browsertest.Screenshot(t, page.Ctx, "ui-narrow-folded-"+theme)
		d.run(t, "unfold it", click("#side-show"),
			chromedp.Poll[chromedp.Void](`!!document.querySelector("aside.side").offsetParent`))
		if g := rect("#graph"); g.W != graph.W {
			t.Errorf("%s: after ‹, the graph is %.0f px wide, want %.0f as before", theme, g.W, graph.W)
		}
	}
	page.NoErrors(t)
}
