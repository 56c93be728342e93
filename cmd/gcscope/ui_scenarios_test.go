package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/scenario"
)

// TestUIScenarioPlayer plays "foreground with a held Pod" from the header's Play menu, in
// headless Chromium at 1280 px against gcscope on its embedded cluster, as a user would:
// slow motion switched on from the menu, the run's Deployment selected, drawn waiting on
// its blocking dependents while the finalizer holds the Pod, the hold released from the
// card, the cascade finished in the apiserver and on the canvas, the run cleaned up. A
// gcscope on that same cluster through a kubeconfig (a real cluster, to it) has no player.
func TestUIScenarioPlayer(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo=false", "--gc-action-delay", "300ms")
	kube := clientFor(t, kubeconfig)

	page := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 800})
	ctx := page.Ctx
	d := uiDriver{ctx: page.Ctx, failShot: "ui-scenario-failed"}
	poll := func(what, expr string) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(90*time.Second)))
	}
	slowMotion := func() bool {
		t.Helper()
		var s struct {
			SlowMotion bool `json:"slowMotion"`
		}
		mustGetJSON(t, base+"/api/v1/session", &s)
		return s.SlowMotion
	}

	d.run(t, "load the page", chromedp.Navigate(base+"/"),
		chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS("#play-button")))
	// The header stays on one row at 1280 px with the Play button in it.
	var rows struct {
		OneRow  bool     `json:"oneRow"`
		Height  float64  `json:"height"`
		Search  float64  `json:"search"`
		Overrun float64  `json:"overrun"`
		Widths  []string `json:"widths"`
	}
	d.eval(t, `(() => { const bar = document.querySelector("header.bar");
		const els = [...bar.children].filter((e) => { const b = e.getBoundingClientRect(); return b.width && b.height; });
		const r = els.map((e) => e.getBoundingClientRect());
		return { oneRow: Math.max(...r.map((b) => b.top)) < Math.min(...r.map((b) => b.bottom)),
			height: bar.getBoundingClientRect().height, search: document.querySelector(".search").getBoundingClientRect().width,
			overrun: Math.max(...r.map((b) => b.right)) - bar.getBoundingClientRect().right,
			widths: els.map((e, i) => (e.id || e.className) + " " + Math.round(r[i].width)) }; })()`, &rows)
	if !rows.OneRow || rows.Overrun > 0 || rows.Search < 120 {
		browsertest.Screenshot(t, ctx, "ui-scenario-header")
		t.Errorf("the header at 1280 px: one row %v, %.0f px high, %.0f px past its edge, search box %.0f px wide; widths %v",
			rows.OneRow, rows.Height, rows.Overrun, rows.Search, rows.Widths)
	}
	t.Logf("header at 1280 px with slow motion and Play: %.0f px high, search box %.0f px", rows.Height, rows.Search)

	// Slow motion off first (the delay flag starts it on), so that the menu's box turns it on.
	d.run(t, "slow motion off", click("#slow-motion"))
	testkit.EventuallyWithin(t, 10*time.Second, "the header's switch to turn slow motion off", func() bool { return !slowMotion() })
	// The header's menu of scenarios is not a second "▶ Play" beside the timeline's.
	var labels []string
	d.eval(t, `[...document.querySelectorAll("button")].filter((b) => b.offsetParent).map((b) => b.textContent.trim())`, &labels)
	if n := len(slices.DeleteFunc(slices.Clone(labels), func(l string) bool { return l != "▶ Play" })); n > 1 {
		t.Errorf("%d buttons on the page read ▶ Play: %q", n, labels)
	}
	if !slices.Contains(labels, "Scenarios ▾") {
		t.Errorf("the header has no Scenarios ▾ menu: %q", labels)
	}
	d.run(t, "open the Play menu", click("#play-button"),
		chromedp.WaitVisible(chromedp.CSS(`#play-menu .play-item[data-scenario="foreground-held"]`)))
	var items []string
	d.eval(t, `[...document.querySelectorAll("#play-menu .play-item")].map((b) => b.dataset.scenario)`, &items)
	if want := []string{scenario.Dangling, scenario.ForegroundHeld, scenario.Orphan, scenario.Cycle, scenario.CrossNamespace, scenario.CRDDeleted, scenario.NamespaceHeld, scenario.NamespaceBlocked}; !slices.Equal(items, want) {
		t.Errorf("the menu lists %v, want %v", items, want)
	}
	var boxChecked bool
	d.eval(t, `document.getElementById("play-slow").checked`, &boxChecked)
	if boxChecked {
		t.Error("the menu's slow-motion box is checked while slow motion is off")
	}
	browsertest.Screenshot(t, ctx, "ui-scenario-menu")

	var recording bool
	d.eval(t, `(window.gcscope.recordDrawn(), true)`, &recording)
	d.run(t, "play it in slow motion", click("#play-slow"),
		click(`#play-menu .play-item[data-scenario="foreground-held"]`),
		chromedp.WaitVisible(chromedp.CSS("#scenario-card")))
	if !slowMotion() {
		t.Error("playing with the box checked did not turn slow motion on")
	}
	var menuHidden bool
	d.eval(t, `document.getElementById("play-menu").hidden`, &menuHidden)
	if !menuHidden {
		t.Error("the menu stays open after playing")
	}

	// The run, as the server reports it; its main object is the Deployment.
	var r scenario.Run
	if testkit.Poll(context.Background(), time.Minute, func() bool {
		var list struct {
			Runs []scenario.Run `json:"runs"`
		}
		mustGetJSON(t, base+"/api/v1/scenarios", &list)
		for _, x := range list.Runs {
			if x.Scenario == scenario.ForegroundHeld {
				r = x
			}
		}
		return r.Focus != ""
	}) != nil {
		t.Fatalf("no foreground-held run with a main object: %+v", r)
	}
	dep := string(r.Focus)
	poll("the player selects the Deployment", `window.gcscope.view.sel === `+jsQuoted(dep))
	// …and brings it to the middle of the graph, without the card's Show (it was selected
	// in the frame the page first had it, not laid out yet, and the view stayed put).
	poll("the Deployment in the middle of the graph", `(() => { const r = window.gcscope.renderer, b = r.layout.box(`+jsQuoted(dep)+`);
		return !!b && !r.anim && Math.abs((b.x + b.w / 2) * r.cam.k + r.cam.x - r.w / 2) < 40 && Math.abs((b.y + b.h / 2) * r.cam.k + r.cam.y - r.h / 2) < 40; })()`)

	// Held: the Pod drawn held by its finalizer, the Deployment drawn waiting on blocking
	// dependents, and the card offering to release the hold.
	poll("the Deployment drawn waiting while the Pod is held", `(() => {
		const s = window.gcscope.store, d = window.gcscope.drawn(`+jsQuoted(dep)+`);
		const pod = [...s.nodes.values()].find((n) => n.kind === "Pod" && n.namespace === `+jsQuoted(r.ID)+`);
		const p = pod && window.gcscope.drawn(pod.uid);
		return d && d.state === "waiting" && p && p.state === "held" && !!document.getElementById("scenario-release"); })()`)
	var now string
	d.eval(t, `document.getElementById("scenario-now").textContent`, &now)
	if !strings.HasPrefix(now, "step 5/6: Waiting for you") {
		t.Errorf("the card says %q; want step 5/6 waiting for the user", now)
	}
	web, err := kube.AppsV1().Deployments(r.ID).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || web.DeletionTimestamp == nil || !slices.Contains(web.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("the Deployment in the apiserver: %v, %+v; want it waiting in the foreground", err, web)
	}
	browsertest.Screenshot(t, ctx, "ui-scenario-held")

	d.run(t, "release the hold", click("#scenario-release"))
	if testkit.Poll(context.Background(), 2*time.Minute, func() bool {
		bg := context.Background()
		_, err := kube.AppsV1().Deployments(r.ID).Get(bg, "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false
		}
		rss, err1 := kube.AppsV1().ReplicaSets(r.ID).List(bg, metav1.ListOptions{})
		pods, err2 := kube.CoreV1().Pods(r.ID).List(bg, metav1.ListOptions{})
		return err1 == nil && err2 == nil && len(rss.Items) == 0 && len(pods.Items) == 0
	}) != nil {
		browsertest.Screenshot(t, ctx, "ui-scenario-stuck")
		t.Fatal("the cascade did not finish in the apiserver after the release")
	}
	poll("the card says done and the graph has the cascade gone", `(() => {
		const card = document.getElementById("scenario-card"), s = window.gcscope.store;
		return card.dataset.state === "done" && ![...s.nodes.values()].some((n) => n.namespace === `+jsQuoted(r.ID)+`
			&& ["Deployment", "ReplicaSet", "Pod"].includes(n.kind))
			&& !window.gcscope.drawnUIDs().includes(`+jsQuoted(dep)+`); })()`)
	d.eval(t, `document.getElementById("scenario-now").textContent`, &now)
	if !strings.HasPrefix(now, "Done.") {
		t.Errorf("the card says %q at the end", now)
	}
	browsertest.Screenshot(t, ctx, "ui-scenario-done")

	d.run(t, "clean up", click("#scenario-cleanup"), chromedp.WaitNotVisible(chromedp.CSS("#scenario-card")))
	if testkit.Poll(context.Background(), time.Minute, func() bool {
		ns, err := kube.CoreV1().Namespaces().Get(context.Background(), r.ID, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil)
	}) != nil {
		t.Errorf("namespace %s not deleted by the clean-up", r.ID)
	}
	page.NoErrorsExcept(t, explainOvertaken)

	// The same cluster through a kubeconfig: not gcscope's own, so no player.
	other := freeAddr(t)
	q := startProcess(t, t.TempDir(), nil, binary, "--listen", other, "--kubeconfig", kubeconfig, "--log-level", "warn")
	q.waitReady(t, other)
	defer q.stop(t, syscall.SIGTERM)
	for _, path := range []string{"/api/v1/scenarios", "/api/v1/scenarios/runs/" + r.ID} {
		resp, err := http.Get("http://" + other + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on a kubeconfig cluster: %s; want 404", path, resp.Status)
		}
	}
	d.run(t, "load the page of a kubeconfig cluster", chromedp.Navigate("http://"+other+"/"),
		chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second)))
	var hasPlayer bool
	d.eval(t, `!!document.getElementById("play-button") || !!document.getElementById("scenario-card")`, &hasPlayer)
	if hasPlayer {
		t.Error("the page of a kubeconfig cluster has the scenario player")
	}
	page.NoErrorsExcept(t, explainOvertaken)
	page.Close()
}

func mustGetJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func jsQuoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
