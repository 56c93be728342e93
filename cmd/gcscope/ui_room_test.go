package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/scenario"
)

// TestUIURLWinsAndTheSmallOnes runs gcscope on its embedded cluster with the demo and the
// history (issue 36, items 5 and 9), with "A namespace held by a finalizer" played and
// waiting for the user:
//   - a page opened on /?sel=<another object> keeps that object selected, and /?tab=stuck
//     stays on the Stuck tab, though the run is picked up (its card shows);
//   - the card's patch command wraps: the card never scrolls sideways;
//   - "▶ Replay its last cascade" is offered for an object the recording has in a cascade
//     (the demo's stuck Deployment, deleted in the foreground) and not for one never in one;
//   - at 1280×800 the timeline's legend is whole, and fitting the graph (0) draws no box
//     under the zoom buttons.
//
// Screenshots of the page with an object selected at 1600×1000, 1280×800 and 800 px, in
// both themes.
func TestUIURLWinsAndTheSmallOnes(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	frontend, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "frontend", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stuck, err := kube.AppsV1().Deployments("demo-stuck").Get(ctx, "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-room-failed"}
	// The scenario, played from the header's menu, until it waits for the user.
	d.run(t, "play the scenario", chromedp.Navigate(base+"/"), uiReady, click("#play-button"),
		click(`#play-menu .play-item[data-scenario="`+scenario.NamespaceHeld+`"]`), chromedp.WaitVisible(chromedp.CSS("#scenario-card")))
	var run scenario.Run
	if testkit.Poll(ctx, 2*time.Minute, func() bool {
		var list struct {
			Runs []scenario.Run `json:"runs"`
		}
		mustGetJSON(t, base+"/api/v1/scenarios", &list)
		for _, r := range list.Runs {
			if r.Scenario == scenario.NamespaceHeld {
				run = r
			}
		}
		return run.State == "waiting" && run.Focus != ""
	}) != nil {
		t.Fatalf("the scenario does not wait for the user: %+v", run)
	}

	poll := func(what, expr string) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second)))
	}
	// The player has decided about its object once it selected it, or declined to.
	decided := `(() => { const c = document.getElementById("scenario-card"); return !!c && !c.hidden && (c.dataset.focus === "decided" || window.gcscope.view.sel === ` + jsQuoted(string(run.Focus)) + `); })()`

	// --- ?sel= wins.
	d.run(t, "open the page on frontend", chromedp.Navigate(base+"/?sel="+string(frontend.UID)), uiReady)
	poll("the run picked up", decided)
	var sel string
	d.eval(t, `window.gcscope.view.sel || ""`, &sel)
	if sel != string(frontend.UID) {
		t.Errorf("opened on /?sel=frontend while %s waits, the page selected %s; want frontend (the URL wins)", run.ID, sel)
	}
	// The card's command wraps: no sideways scrolling.
	var card struct{ Scroll, Client float64 }
	d.run(t, "open the steps", click("#scenario-card summary"))
	d.eval(t, `(() => { const c = document.getElementById("scenario-card"); return { scroll: c.scrollWidth, client: c.clientWidth }; })()`, &card)
	if card.Scroll > card.Client+1 {
		browsertest.Screenshot(t, d.ctx, "ui-room-card")
		t.Errorf("the scenario card is %.0f px wide inside and %.0f px shown: its command scrolls sideways", card.Scroll, card.Client)
	}
	// Never in a cascade: no replay offered.
	poll("the recording asked about frontend", `document.querySelector("#object-body .actions-row")?.dataset.replay === "no"`)
	var offered bool
	d.eval(t, `!!document.getElementById("replay-button")`, &offered)
	if offered {
		t.Error("\"Replay its last cascade\" is offered for frontend, which no cascade has touched")
	}

	// --- ?tab=stuck wins.
	d.run(t, "open the page on the Stuck tab", chromedp.Navigate(base+"/?tab=stuck"), uiReady)
	poll("the run picked up", decided)
	var tab struct {
		Tab string
		Sel string
	}
	d.eval(t, `({ tab: document.querySelector('.tabs [aria-selected="true"]').id, sel: window.gcscope.view.sel || "" })`, &tab)
	if tab.Tab != "tab-stuck" || tab.Sel != "" {
		t.Errorf("opened on /?tab=stuck while %s waits: tab %s, selection %q; want the Stuck tab and nothing selected", run.ID, tab.Tab, tab.Sel)
	}
	// The Stuck tab says "no running controller found" once per group, not twice.
	d.run(t, "the stuck list at 0s", click(`#stuck-panel [data-threshold="0s"]`))
	poll("the stuck list", `!!document.querySelector('#stuck-panel .stuck-group[data-cause="finalizer"] .origin')`)
	var repeats []int
	d.eval(t, `[...document.querySelectorAll('#stuck-panel .stuck-group')].map((g) => g.textContent.split("no running controller found").length - 1)`, &repeats)
	for i, n := range repeats {
		if n > 1 {
			t.Errorf("stuck group %d says \"no running controller found\" %d times", i, n)
		}
	}

	// --- The demo's stuck Deployment: deleted in the foreground, a cascade recorded.
	d.run(t, "open the stuck Deployment", chromedp.Navigate(base+"/?sel="+string(stuck.UID)), uiReady)
	poll("replay offered for a deletion recorded", `!!document.getElementById("replay-button")`)

	// --- 1280×800: the timeline's legend, the zoom buttons.
	d.run(t, "1280×800", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/?sel="+string(frontend.UID)), uiReady, browsertest.Frames(3))
	var legend struct {
		Shown                bool
		Left, Right, TlRight float64
	}
	d.eval(t, `(() => { const l = document.querySelector(".tl-legend"), b = l.getBoundingClientRect(), tl = document.getElementById("timeline").getBoundingClientRect();
		return { shown: getComputedStyle(l).display !== "none" && b.width > 200, left: b.left, right: b.right, tlRight: tl.right }; })()`, &legend)
	if !legend.Shown || legend.Right > legend.TlRight {
		t.Errorf("at 1280×800 the timeline's legend: shown %v, from %.0f to %.0f px, the timeline ends at %.0f; want it whole", legend.Shown, legend.Left, legend.Right, legend.TlRight)
	}
	d.run(t, "fit everything", chromedp.Focus(chromedp.CSS("#graph")), chromedp.KeyEvent("0"), browsertest.Frames(30))
	poll("the fit done", `!window.gcscope.renderer.anim`)
	var under []string
	d.eval(t, `(() => { const r = window.gcscope.renderer, z = document.querySelector(".zoom").getBoundingClientRect(), g = document.getElementById("graph").getBoundingClientRect();
		const out = [];
		for (const grp of r.layout.groups.values()) {
			const x = g.left + grp.x * r.cam.k + r.cam.x, y = g.top + grp.y * r.cam.k + r.cam.y, w = grp.w * r.cam.k, h = grp.h * r.cam.k;
			if (x < z.right && x + w > z.left && y < z.bottom && y + h > z.top) out.push(grp.ns);
		}
		return out; })()`, &under)
	if len(under) > 0 {
		browsertest.Screenshot(t, d.ctx, "ui-room-zoom")
		t.Errorf("fitted at 1280×800, the zoom buttons cover the namespace boxes %v", under)
	}

	// Screenshots: an object selected, at each size, in both themes.
	for _, theme := range []string{"light", "dark"} {
		for _, s := range [][2]int64{{1600, 1000}, {1280, 800}, {800, 900}} {
			d.run(t, fmt.Sprintf("frontend at %d px, %s", s[0], theme), chromedp.EmulateViewport(s[0], s[1]),
				chromedp.Navigate(base+"/?sel="+string(frontend.UID)+"&theme="+theme), uiReady, browsertest.Frames(5))
			poll("the recording asked", `document.querySelector("#object-body .actions-row")?.dataset.replay === "no"`)
			browsertest.Screenshot(t, d.ctx, fmt.Sprintf("ui-room-selected-%d-%s", s[0], theme))
		}
	}
	page.NoErrorsExcept(t, explainOvertaken)
	page.Close()
}
