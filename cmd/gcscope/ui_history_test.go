package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIHistory runs gcscope with --history, in slow motion (300 ms before each write of
// the engine), and deletes the top of a tree of ConfigMaps in the foreground (top ← two
// middles ← three leaves, every reference blocking). While it runs, the page records what
// it holds live. Then, on the recording:
//   - the timeline shows the cascade; a click selects it, and dragging the cursor to the
//     moment the cascade was half done draws exactly the objects the page held live then,
//     in the states it held, under a "time travel — not live" banner, while the live state
//     (the tree gone) is kept underneath;
//   - played at 4×, the canvas draws the cascade in the recorded order (the owner waiting,
//     the middles deleting their dependents, the leaves removed, the middles removed, the
//     owner removed), each state the recording held for 100 ms drawn, about 4 times faster
//     than it happened;
//   - Esc goes back to live: the live graph, without a reload;
//   - the history view lists the collector's deletes with their reason, policy and the
//     owner whose deletion caused them, linked to the cascade.
func TestUIHistory(t *testing.T) {
	browsertest.Require(t)
	base, kubeconfig := startEmbedded(t, "--demo=false", "--history", "--gc-action-delay", "300ms")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "hist"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	top := createConfigMap(t, kube, ns, "top")
	midA := createConfigMap(t, kube, ns, "mid-a", top)
	midB := createConfigMap(t, kube, ns, "mid-b", top)
	leaves := []*corev1.ConfigMap{createConfigMap(t, kube, ns, "leaf-a1", midA), createConfigMap(t, kube, ns, "leaf-a2", midA), createConfigMap(t, kube, ns, "leaf-b1", midB)}
	owner, mids := string(top.UID), []string{string(midA.UID), string(midB.UID)}
	var leafUIDs []string
	for _, l := range leaves {
		leafUIDs = append(leafUIDs, string(l.UID))
	}
	tree := append(append([]string{owner}, mids...), leafUIDs...)
	dependents := tree[1:]

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-history-failed"}
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	d.run(t, "load the page", chromedp.Navigate(base+"/?ns="+ns), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline-canvas")), chromedp.WaitVisible(chromedp.CSS("#tab-history")))
	poll("the tree in the page", jsArray(tree)+`.every((u) => window.gcscope.live.nodes.has(u))`, 30*time.Second)

	assertHelpListsTravelKeys(t, d)

	// The cascade, live: what the page holds at each change, and the states it traces.
	var ok bool
	d.eval(t, `(() => { window.liveMoments = []; let last = "";
		window.liveSampler = setInterval(() => { const s = window.gcscope.nsStates(`+jsQuoted(ns)+`, "live"); const k = JSON.stringify(s);
			if (k !== last) { last = k; window.liveMoments.push({ seq: window.gcscope.live.seq, states: s }); } }, 5);
		window.gcscope.trace(`+jsArray(tree)+`); return true; })()`, &ok)
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "top", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	poll("the cascade over, live", jsArray(tree)+`.every((u) => !window.gcscope.live.nodes.has(u))`, 60*time.Second)
	poll("the owner drawn removed", `window.gcscope.traceLog().drawn.some((c) => c.uid === `+jsQuoted(owner)+` && c.state === "removed")`, 5*time.Second)
	var moments []liveMoment
	var liveLog traceLog
	d.eval(t, `(clearInterval(window.liveSampler), window.liveMoments)`, &moments)
	d.eval(t, `window.gcscope.traceLog()`, &liveLog)
	assertForegroundDrawn(t, liveLog, owner, dependents)

	// Recorded: the cascade ends 2 s after its last object went.
	var recording struct {
		Recording struct {
			Session int64 `json:"session"`
		} `json:"recording"`
	}
	mustGetJSON(t, base+"/api/v1/history?limit=1", &recording)
	session := recording.Recording.Session
	type event struct {
		Seq     uint64 `json:"seq"`
		Session int64  `json:"session"`
		Time    string `json:"time"`
		Type    string `json:"type"`
		Cascade int64  `json:"cascade"`
	}
	var removed struct {
		Events []event `json:"events"`
	}
	testkit.Eventually(t, "the owner's removal recorded", func() bool {
		mustGetJSON(t, base+"/api/v1/history?type=nodeRemoved&uid="+owner, &removed)
		return len(removed.Events) == 1
	})
	cascadeID := removed.Events[0].Cascade
	if cascadeID == 0 {
		t.Fatalf("the owner's removal is not tagged with a cascade: %+v", removed.Events[0])
	}

	// The half-done moment: some leaf gone, the owner and a middle still there; of those the
	// page saw, the one that lasted longest in the recording (until the next change of the
	// graph), so that a cursor dragged by pixels lands inside it.
	best := longestMoment(t, base, ns, session, moments, func(st map[string]string) bool {
		return st[owner] != "" && (st[mids[0]] != "" || st[mids[1]] != "") && slices.ContainsFunc(leafUIDs, func(u string) bool { return st[u] == "" })
	})
	if best == nil {
		t.Fatalf("the page never held the cascade half done: %+v", moments)
	}
	target := best.at.Add(best.until.Sub(best.at) / 2)
	t.Logf("half done at seq %d, %s, for %v: %v", best.m.Seq, best.at.Format("15:04:05.000"), best.until.Sub(best.at).Round(time.Millisecond), best.m.States)

	// The timeline shows the cascade; a click on it selects it.
	poll("the cascade on the timeline", `(window.gcscope.timeline().spans || []).some((s) => String(s.c.id) === "`+fmt.Sprint(cascadeID)+`")`, 30*time.Second)
	browsertest.Screenshot(t, page.Ctx, "ui-history-timeline")
	// The window follows now (it moves every 5 s): a click that a move beat is tried again.
	var spanX, spanY float64
	for try := 0; ; try++ {
		spanX, spanY = timelinePoint(t, d, `(() => { const tl = window.gcscope.timeline(); const s = tl.spans.find((s) => String(s.c.id) === "`+fmt.Sprint(cascadeID)+`");
			return [(Math.max(0, s.x0) + Math.min(tl.w - 1, s.x1)) / 2, s.y + 2]; })()`)
		d.run(t, "click the cascade", chromedp.MouseEvent(chromedp.MousePressed, spanX, spanY, chromedp.ButtonLeft), chromedp.MouseEvent(chromedp.MouseReleased, spanX, spanY, chromedp.ButtonLeft))
		var selected bool
		d.eval(t, `!!window.gcscope.timeline().selected`, &selected)
		if selected || try == 2 {
			break
		}
	}
	poll("time travel to the cascade's start", `window.gcscope.travel().active && !window.gcscope.travel().seeking && document.body.classList.contains("travel")`, 10*time.Second)
	var sel string
	d.eval(t, `window.gcscope.view.sel`, &sel)
	if sel != owner {
		t.Errorf("selecting the cascade selected %q, want its owner %s", sel, owner)
	}

	// Drag the cursor to the half-done moment.
	d.eval(t, `(window.gcscope.recordDrawn(), true)`, &ok)
	targetMs := float64(target.UnixNano()) / 1e6
	fromX, y := timelinePoint(t, d, `(() => { const tl = window.gcscope.timeline(); return [tl.x((tl.from + tl.to) / 2), 30]; })()`)
	toX, _ := timelinePoint(t, d, fmt.Sprintf(`(() => { const tl = window.gcscope.timeline(); return [tl.x(%f), 30]; })()`, targetMs))
	var steps []chromedp.Action[chromedp.Void]
	steps = append(steps, chromedp.MouseEvent(chromedp.MousePressed, fromX, y, chromedp.ButtonLeft))
	for i := 1; i <= 10; i++ {
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, fromX+(toX-fromX)*float64(i)/10, y, chromedp.ButtonLeft), chromedp.Sleep(15*time.Millisecond))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, toX, y, chromedp.ButtonLeft))
	seekStart := time.Now()
	d.run(t, "drag the cursor", steps...)
	poll("the moment shown", fmt.Sprintf(`(() => { const tr = window.gcscope.travel(); return !tr.seeking && Math.abs(tr.at - %f) < 20 && window.gcscope.travel().seq >= %d; })()`, targetMs, best.m.Seq), 10*time.Second)
	var seeks []float64
	d.eval(t, `window.gcscope.seeks`, &seeks)
	t.Logf("drag released to the state shown: %v; each seek in the page, from the ask to the state applied: %.0f ms", time.Since(seekStart).Round(time.Millisecond), seeks)
	// Two frames later the canvas has drawn it.
	d.run(t, "frames", browsertest.Frames(3))
	var shown struct {
		Drawn  []string          `json:"drawn"`
		States map[string]string `json:"states"`
		Banner string            `json:"banner"`
		Time   string            `json:"time"`
		Live   int               `json:"live"`
		Conn   string            `json:"conn"`
	}
	d.eval(t, `(() => { const g = window.gcscope; const drawn = g.drawnUIDs(); const states = {};
		for (const u of drawn) states[u] = g.drawn(u)?.state || "";
		const b = document.getElementById("travel-banner");
		return { drawn, states, banner: b.hidden ? "" : b.textContent, time: document.getElementById("travel-time").textContent,
			conn: document.getElementById("conn").textContent,
			live: `+jsArray(tree)+`.filter((u) => g.live.nodes.has(u)).length }; })()`, &shown)
	browsertest.Screenshot(t, page.Ctx, "ui-history-travel")
	d.run(t, "dark", chromedp.KeyEvent("t"), chromedp.Sleep(100*time.Millisecond))
	browsertest.Screenshot(t, page.Ctx, "ui-history-travel-dark")
	d.run(t, "light", chromedp.KeyEvent("t"))
	want := slices.Sorted(maps.Keys(best.m.States))
	if got := slices.Sorted(slices.Values(shown.Drawn)); !slices.Equal(got, want) {
		t.Errorf("at the half-done moment the canvas drew %v, want what the page held live then: %v", got, want)
	}
	if !maps.Equal(shown.States, best.m.States) {
		t.Errorf("at the half-done moment the canvas drew the states %v, want those the page held live then: %v", shown.States, best.m.States)
	}
	if !strings.Contains(shown.Banner, "Time travel — not live") || !strings.Contains(shown.Banner, "Back to live") || !strings.Contains(shown.Time, target.Local().Format("15:04:05")) {
		t.Errorf("the banner says %q (time %q), want time travel, not live, at %s, and the way back", shown.Banner, shown.Time, target.Local().Format("15:04:05.000"))
	}
	if shown.Conn != "○ live underneath" {
		t.Errorf("while travelling, the header's connection says %q, want %q: what is drawn is not live", shown.Conn, "○ live underneath")
	}
	if shown.Live != 0 {
		t.Errorf("while travelling, the live store holds %d objects of the deleted tree, want 0: the live state is kept as it is", shown.Live)
	}
	// The moment is part of the page's URL: opened again, the page shows it.
	var here string
	d.eval(t, `location.href`, &here)
	if u, err := url.Parse(here); err != nil || !sameMs(mustTime(t, u.Query().Get("at")), target.Format(time.RFC3339Nano)) {
		t.Errorf("the page's URL %s does not name the moment shown, %s", here, target.Format(time.RFC3339Nano))
	}
	d.run(t, "open the moment's URL", chromedp.Navigate(here), uiReady)
	poll("the moment shown again", fmt.Sprintf(`(() => { const tr = window.gcscope.travel(); return tr.active && !tr.seeking && Math.abs(tr.at - %f) < 1 && window.gcscope.view.sel === %s; })()`, targetMs, jsQuoted(owner)), 10*time.Second)
	d.eval(t, `(window.gcscope.recordDrawn(), true)`, &ok)
	d.run(t, "frames", browsertest.Frames(3))
	// Travelling by a link, as by a drag, the timeline's window no longer follows now.
	var following bool
	d.eval(t, `window.gcscope.timeline().followNow || !!document.querySelector('#timeline [data-range][aria-pressed="true"]')`, &following)
	if following {
		t.Errorf("opened at a recorded moment, the timeline's window still follows now")
	}
	// Paused, the cascade's elapsed times are the recording's, to the moment shown, and hold
	// still: the strip's, the one under the owner's box, the object panel's.
	var recorded struct {
		Cascades []struct {
			ID      any    `json:"id"`
			Start   string `json:"start"`
			Objects int    `json:"objects"`
		} `json:"cascades"`
	}
	mustGetJSON(t, base+"/api/v1/history/cascades?uid="+owner, &recorded)
	var began time.Time
	objects := 0
	for _, c := range recorded.Cascades {
		if fmt.Sprint(c.ID) == fmt.Sprint(cascadeID) {
			began, objects = mustTime(t, c.Start), c.Objects
		}
	}
	elapsed := func() (e struct{ Strip, Caption, Panel string }) {
		t.Helper()
		poll("the owner's caption drawn", `!!window.gcscope.caption(`+jsQuoted(owner)+`)`, 5*time.Second)
		d.eval(t, `({ strip: document.querySelector('#cascades [data-owner=`+jsQuoted(owner)+`] .muted')?.textContent || "",
			caption: window.gcscope.caption(`+jsQuoted(owner)+`), panel: document.getElementById("cascade-progress")?.textContent || "" })`, &e)
		return e
	}
	// The recorded start is known once the timeline's cascades are (a moment after the
	// seek); the panel follows the strip within 250 ms.
	if !began.IsZero() {
		poll("the strip's elapsed time from the recorded start", fmt.Sprintf(`(() => { const m = / ([\d.]+) s$/.exec(document.querySelector('#cascades [data-owner=%s] .muted')?.textContent || "");
			return m && Math.abs(Number(m[1]) - %f) <= 0.3; })()`, jsQuoted(owner), target.Sub(began).Seconds()), 5*time.Second)
		d.run(t, "the panel follows", chromedp.Sleep(300*time.Millisecond))
	}
	paused := elapsed()
	d.run(t, "paused a while", chromedp.Sleep(1500*time.Millisecond))
	if later := elapsed(); later != paused {
		t.Errorf("paused at a recorded moment, the cascade's elapsed times moved on: %+v, then %+v", paused, later)
	}
	if !regexp.MustCompile(`· ~?[\d.]+ s (so far|left)$`).MatchString(paused.Caption) {
		t.Errorf("under the owner's box the canvas drew %q: want what it waits on and its elapsed time", paused.Caption)
	}
	if m := regexp.MustCompile(`· ([\d.]+) s$`).FindStringSubmatch(paused.Strip); m == nil || began.IsZero() {
		t.Errorf("the strip says %q of the cascade (recorded from %v): want its count and elapsed time", paused.Strip, began)
	} else if got, want := parseFloat(m[1]), target.Sub(began).Seconds(); math.Abs(got-want) > 0.3 {
		t.Errorf("at the half-done moment the strip says %q: want the time since the cascade began in the recording, %.1f s", paused.Strip, want)
	}
	// Its count is the recording's: the objects gone before the moment are counted gone,
	// not left out (the page sees only the objects still there then).
	present := 0
	for _, u := range tree {
		if best.m.States[u] != "" {
			present++
		}
	}
	// Its members are counted, its owner (there at that moment) among them.
	if wantCount := fmt.Sprintf("%d of %d gone · ", objects-present, objects); objects != len(tree) || !strings.HasPrefix(paused.Strip, wantCount) {
		t.Errorf("at the half-done moment (%d of the tree's %d objects there) the strip says %q: want %q…, the recorded cascade's %d members counted",
			present, len(tree), paused.Strip, wantCount, objects)
	}
	// The strip's and the panel's bars are drawn that far along.
	var fill struct{ Strip, Panel []float64 }
	d.eval(t, `(() => { const f = (m) => { const a = m?.getBoundingClientRect(), b = m?.firstElementChild?.getBoundingClientRect(); return a && b ? [b.width / a.width, b.height] : []; };
		return { strip: f(document.querySelector('#cascades [data-owner=`+jsQuoted(owner)+`] .meter')), panel: f(document.querySelector('#cascade-progress .meter')) }; })()`, &fill)
	for what, f := range map[string][]float64{"strip": fill.Strip, "panel": fill.Panel} {
		if want := float64(objects-present) / float64(objects); len(f) != 2 || math.Abs(f[0]-want) > 0.05 || f[1] < 3 {
			t.Errorf("the %s's progress bar is drawn %v (filled part: width as a share of the bar, height in px): want %.2f of it filled, visibly", what, f, want)
		}
	}
	t.Logf("paused at the half-done moment: %+v", paused)

	// → applies the recording up to its next change of the graph; ← undoes it.
	untilMs := float64(best.until.UnixNano()) / 1e6
	d.run(t, "step", chromedp.KeyEvent(kb.ArrowRight))
	poll("stepped to the next change", fmt.Sprintf(`Math.abs(window.gcscope.travel().at - %f) < 0.01 && window.gcscope.travel().seq > %d`, untilMs, best.m.Seq), 10*time.Second)
	// The URL follows the step: a link shared now opens the moment shown (issue 36, item 6).
	urlAtIsShown := `(() => { const at = new URLSearchParams(location.search).get("at"); return !!at && Math.abs(Date.parse(at) - window.gcscope.travel().at) < 1; })()`
	poll("the URL names the moment stepped to", urlAtIsShown, 5*time.Second)
	var stepped map[string]string
	d.eval(t, `window.gcscope.nsStates(`+jsQuoted(ns)+`)`, &stepped)
	if maps.Equal(stepped, best.m.States) {
		t.Errorf("a step forward changed no object's state: %v", stepped)
	}
	d.run(t, "step back", chromedp.KeyEvent(kb.ArrowLeft))
	poll("stepped back", fmt.Sprintf(`!window.gcscope.travel().seeking && window.gcscope.travel().at < %f`, untilMs), 10*time.Second)
	poll("the URL names the moment stepped back to", urlAtIsShown, 5*time.Second)
	d.run(t, "frames", browsertest.Frames(3))
	var back1 map[string]string
	d.eval(t, `(() => { const g = window.gcscope, out = {}; for (const u of g.drawnUIDs()) out[u] = g.drawn(u)?.state || ""; return out; })()`, &back1)
	if !maps.Equal(back1, best.m.States) {
		t.Errorf("a step back drew %v, want the half-done moment again: %v", back1, best.m.States)
	}

	// The stream goes on underneath: an object created now reaches the live store, not the
	// moment shown.
	made := createConfigMap(t, kube, ns, "made-while-travelling")
	poll("the stream goes on while travelling", `window.gcscope.live.nodes.has(`+jsQuoted(string(made.UID))+`) && window.gcscope.travel().active`, 10*time.Second)
	var drawnMade bool
	d.eval(t, `window.gcscope.drawnUIDs().includes(`+jsQuoted(string(made.UID))+`)`, &drawnMade)
	if drawnMade {
		t.Errorf("an object created while travelling is drawn at the recorded moment")
	}

	// Play the cascade at 4× from its start.
	d.run(t, "speed 4x", chromedp.SetValue(chromedp.CSS("#tl-speed"), "4"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("tl-speed").dispatchEvent(new Event("change"))`))
	spanX, spanY = timelinePoint(t, d, `(() => { const tl = window.gcscope.timeline(); const s = tl.spans.find((s) => String(s.c.id) === "`+fmt.Sprint(cascadeID)+`");
		return [Math.max(0, s.x0) + 3, s.y + 2]; })()`)
	d.run(t, "select the cascade again", chromedp.MouseEvent(chromedp.MousePressed, spanX, spanY, chromedp.ButtonLeft), chromedp.MouseEvent(chromedp.MouseReleased, spanX, spanY, chromedp.ButtonLeft))
	poll("at its start", `(() => { const tr = window.gcscope.travel(); return !tr.seeking && `+jsArray(tree)+`.every((u) => tr.store.nodes.has(u)); })()`, 10*time.Second)
	d.eval(t, `(window.gcscope.trace(`+jsArray(tree)+`), window.gcscope.playFrames.length = 0, true)`, &ok)
	d.run(t, "play", click("#tl-play"))
	poll("playing", `document.body.dataset.travel === "playing"`, 5*time.Second)
	d.run(t, "mid-play", chromedp.Sleep(120*time.Millisecond))
	browsertest.Screenshot(t, page.Ctx, "ui-history-playing")
	poll("played to the end", `document.body.dataset.travel === "paused" && `+jsArray(tree)+`.every((u) => !window.gcscope.store.nodes.has(u))`, 30*time.Second)
	var played traceLog
	d.eval(t, `window.gcscope.traceLog()`, &played)
	var frames []float64
	d.eval(t, `window.gcscope.playFrames`, &frames)
	assertForegroundDrawn(t, played, owner, dependents)
	assertDrawnInTime(t, played)
	assertRemovalOrder(t, liveLog, played)
	for _, m := range mids {
		for _, l := range leafUIDs {
			ml, _ := firstDrawn(played, m, "removed")
			if ll, ok := firstDrawn(played, l, "removed"); ok && ll > ml && isDependent(l, m, leaves) {
				t.Errorf("leaf %s drawn removed after its middle %s", l, m)
			}
		}
		if at, ok := firstDrawnOf(played.Drawn, m, "waiting", "foreground", "deleting"); !ok {
			t.Errorf("middle %s never drawn deleting its dependents: %+v", m, byUID(played.Drawn)[m])
		} else if first, _ := firstLeafRemoved(played, leafUIDs); at > first {
			t.Errorf("middle %s drawn deleting (%.0f ms) after the first leaf was drawn removed (%.0f ms)", m, at, first)
		}
	}
	// Paced by the recorded times, 4 times faster. Each span, as drawn, may be a frame off
	// at either end: a frame can run late (a loaded machine, the screenshot above), and the
	// player catches up with its clock at the next one.
	liveSpan, playSpan := cascadeSpan(t, liveLog, owner), cascadeSpan(t, played, owner)
	slack := 2*longestGap(played.Frames) + 2*longestGap(liveLog.Frames)/4 + 30
	t.Logf("the cascade: %.0f ms live, %.0f ms played at 4× (%.2f×, want %.0f ± %.0f ms); %d frames drawn while playing (%.1f fps)",
		liveSpan, playSpan, liveSpan/playSpan, liveSpan/4, slack, len(frames), fps(frames))
	if math.Abs(playSpan-liveSpan/4) > slack {
		t.Errorf("played at 4×, the cascade took %.0f ms against %.0f ms live (%.2f×), want %.0f ± %.0f ms", playSpan, liveSpan, liveSpan/playSpan, liveSpan/4, slack)
	}

	// Back to live, with Esc: the live graph, no reload.
	d.eval(t, `(window.reloadMark = 1, true)`, &ok)
	d.run(t, "Esc", chromedp.KeyEvent("\u001b"))
	poll("live again", `!window.gcscope.travel().active && !document.body.classList.contains("travel") && document.getElementById("travel-banner").hidden`, 5*time.Second)
	d.run(t, "a frame", browsertest.Frames(3))
	var back struct {
		Mark  int      `json:"mark"`
		Drawn []string `json:"drawn"`
		Live  []string `json:"live"`
		Conn  string   `json:"conn"`
	}
	d.eval(t, `({ mark: window.reloadMark, drawn: window.gcscope.drawnUIDs(), live: Object.keys(window.gcscope.nsStates(`+jsQuoted(ns)+`, "live")),
		conn: document.getElementById("conn").textContent })`, &back)
	if back.Mark != 1 {
		t.Errorf("back to live reloaded the page")
	}
	if back.Conn != "● live" {
		t.Errorf("back to live, the header's connection says %q, want %q", back.Conn, "● live")
	}
	if got, want := slices.Sorted(slices.Values(back.Drawn)), slices.Sorted(slices.Values(back.Live)); !slices.Equal(got, want) || !slices.Contains(got, string(made.UID)) {
		t.Errorf("back to live, the canvas draws %v, want the live graph %v, with the object created while travelling", got, want)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-history-live")

	// A deletion stuck from now on (its dependent held by a finalizer; made only now, off the
	// timeline clicks above): a page opened later says how long it has been stuck, not how
	// long the page has seen it.
	const heldNS = "hist-held"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: heldNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := createConfigMap(t, kube, heldNS, "held")
	heldDep := createConfigMap(t, kube, heldNS, "held-dep", held)
	createConfigMap(t, kube, heldNS, "held-free", held) // collected at once: the cascade is part done, then held
	heldDep.Finalizers = []string{"gcscope.test/hold"}
	if _, err := kube.CoreV1().ConfigMaps(heldNS).Update(ctx, heldDep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	heldFrom, heldFg := time.Now(), metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(heldNS).Delete(ctx, "held", metav1.DeleteOptions{PropagationPolicy: &heldFg}); err != nil {
		t.Fatal(err)
	}
	// Part done, then held by a finalizer: it has no time left to estimate (a trial read
	// "~53 s left" after 53 s of it, growing with the wait).
	heldEntry := `document.querySelector('#cascades [data-owner=` + jsQuoted(string(held.UID)) + `]')`
	poll("the held deletion part done in the strip", heldEntry+`?.querySelector(".muted")?.textContent.startsWith("1 of 3 gone")`, 20*time.Second)
	d.run(t, "held a while", chromedp.Sleep(1500*time.Millisecond))
	var heldTitle string
	d.eval(t, heldEntry+`.title`, &heldTitle)
	if !strings.Contains(heldTitle, "held by finalizer") || !strings.HasSuffix(heldTitle, "so far") || strings.Contains(heldTitle, "left") {
		t.Errorf("the held deletion's strip entry says %q: want what holds it and how long so far, no time left", heldTitle)
	}

	// The history view: the collector's deletes, with reason, policy and owner.
	d.run(t, "open the history view", click("#tab-history"), chromedp.WaitVisible(chromedp.CSS("#history-panel")))
	poll("the deletes listed", `document.querySelectorAll("#history-list .hrow").length >= 5`, 20*time.Second)
	var rows []struct {
		UID     string `json:"uid"`
		Text    string `json:"text"`
		Result  string `json:"result"`
		Reason  string `json:"reason"`
		Cascade string `json:"cascade"`
		Owner   string `json:"owner"`
	}
	d.eval(t, `[...document.querySelectorAll("#history-list .hrow")].map((r) => ({ uid: r.dataset.uid, text: r.querySelector(".hline").textContent,
		result: r.dataset.result, reason: r.querySelector(".hwhy").textContent,
		cascade: r.querySelector("[data-cascade]")?.dataset.cascade || "", owner: r.querySelector(".cascade-link")?.textContent || "" }))`, &rows)
	browsertest.Screenshot(t, page.Ctx, "ui-history-view")
	for _, u := range dependents {
		// Each dependent deleted by the collector, in the cascade of the owner, with the
		// policy it chose (Foreground for a middle with dependents of its own) and its reason
		// (a retry after an error is a row of its own).
		policy := "Background"
		if slices.Contains(mids, u) {
			policy = "Foreground"
		}
		found := false
		for _, r := range rows {
			if r.UID != u || !strings.Contains(r.Text, "delete "+policy) || !strings.HasSuffix(r.Result, "ok") {
				continue
			}
			found = true
			if r.Cascade != fmt.Sprint(cascadeID) || r.Owner != "ConfigMap top" || r.Reason == "" || r.Reason == "—" {
				t.Errorf("the history view's row of %s: %+v; want it in cascade %d of ConfigMap top, with a reason", u, r, cascadeID)
			}
		}
		if !found {
			t.Errorf("the history view does not list the collector's delete %s of %s: %+v", policy, u, rows)
		}
	}
	// The filter by decision: the collector's removals of foregroundDeletion (the owner's and
	// the middles'), nothing else; then back to the deletes.
	d.run(t, "finalizers removed", chromedp.SetValue(chromedp.CSS("#history-verb"), "removeFinalizer"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("history-verb").dispatchEvent(new Event("change"))`))
	poll("the removals listed", `[...document.querySelectorAll("#history-list .hrow")].length > 0 && [...document.querySelectorAll("#history-list .hrow .verb")].every((v) => v.textContent.startsWith("removeFinalizer"))`, 10*time.Second)
	var removals []string
	d.eval(t, `[...document.querySelectorAll("#history-list .hrow")].map((r) => r.dataset.uid)`, &removals)
	if want := append([]string{owner}, mids...); minus(want, removals) != nil || minus(removals, want) != nil {
		t.Errorf("the finalizer removals listed are of %v, want the owner's and the middles' %v", removals, append([]string{owner}, mids...))
	}
	d.run(t, "deletes", chromedp.SetValue(chromedp.CSS("#history-verb"), "delete"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("history-verb").dispatchEvent(new Event("change"))`))
	poll("the deletes listed again", `[...document.querySelectorAll("#history-list .hrow .verb")].every((v) => v.textContent.startsWith("delete")) && document.querySelectorAll("#history-list .hrow").length >= 5`, 10*time.Second)

	// Its cascade link selects the cascade and travels to its start.
	d.run(t, "follow a row's cascade", click(`#history-list .hrow[data-uid="`+leafUIDs[0]+`"] .cascade-link`))
	poll("the cascade selected", `(() => { const tl = window.gcscope.timeline(); const tr = window.gcscope.travel();
		return tl.selected && String(tl.selected.id) === "`+fmt.Sprint(cascadeID)+`" && tr.active && !tr.seeking && Math.abs(tr.at - tl.selected.start) < 5; })()`, 10*time.Second)

	// Export the window the timeline shows (the cascade's), from the Export menu.
	dl := watchDownloads(t, page.Ctx)
	var window [2]string
	d.eval(t, `(() => { const tl = window.gcscope.timeline(); return [new Date(tl.from).toISOString(), new Date(tl.to).toISOString()]; })()`, &window)
	d.run(t, "export the history", click("#export-button"), chromedp.WaitVisible(chromedp.CSS("#export-history")),
		click("#export-history"))
	name, data := dl.next(t, 30*time.Second)
	header := exportHeader(t, data)
	if !strings.HasSuffix(name, ".jsonl.gz") || !sameMs(header.From, window[0]) || !sameMs(header.To, window[1]) {
		t.Errorf("exported %q from %s to %s, want a .jsonl.gz of the window the timeline shows, %s to %s", name, header.From, header.To, window[0], window[1])
	}
	d.run(t, "Esc", chromedp.KeyEvent("\u001b"))

	// A gone object: found in the recording from the search box, seen just before its
	// removal, and its last cascade replayed from its panel.
	gone := leafUIDs[2]
	d.run(t, "search the recording", click("#search"), chromedp.SendKeys(chromedp.CSS("#search"), "LEAF-B"), // part of its name, another case
		chromedp.WaitVisible(chromedp.CSS("#search-recording")), click("#search-recording"),
		chromedp.WaitVisible(chromedp.CSS(`#search-results li[data-uid="`+gone+`"]`)), click(`#search-results li[data-uid="`+gone+`"]`))
	poll("the gone object, just before its removal", `(() => { const g = window.gcscope, tr = g.travel();
		return tr.active && !tr.seeking && g.view.sel === `+jsQuoted(gone)+` && tr.store.nodes.has(`+jsQuoted(gone)+`); })()`, 10*time.Second)
	d.run(t, "replay its last cascade", chromedp.WaitVisible(chromedp.CSS("#replay-button")), click("#replay-button"))
	poll("its cascade played", `(() => { const g = window.gcscope, tr = g.travel(), tl = g.timeline();
		return tl.selected && String(tl.selected.id) === "`+fmt.Sprint(cascadeID)+`" && document.body.dataset.travel === "paused" && tr.at >= tl.selected.end
			&& `+jsArray(tree)+`.every((u) => !tr.store.nodes.has(u)); })()`, 20*time.Second)
	d.run(t, "Esc", chromedp.KeyEvent("\u001b"))

	// Hundreds of decisions: the history view lists them all, a screenful in the page.
	const many = 500 // the engine writes at 100 requests a second: 2 per object
	d.run(t, "slow motion off", click("#slow-motion"))
	testkit.Eventually(t, "slow motion off", func() bool {
		var sm struct {
			SlowMotion bool `json:"slowMotion"`
		}
		mustGetJSON(t, base+"/api/v1/session", &sm)
		return !sm.SlowMotion
	})
	bulkStart := time.Now()
	bulkOwner := createConfigMap(t, kube, ns, "bulk")
	var wg sync.WaitGroup
	errs := make(chan error, many)
	for w := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < many; i += 25 {
				_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%04d", i),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: bulkOwner.Name, UID: bulkOwner.UID}}}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d dependents created in %v", many, time.Since(bulkStart).Round(time.Millisecond))
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "bulk", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the bulk dependents collected", func() bool {
		list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil && !slices.ContainsFunc(list.Items, func(cm corev1.ConfigMap) bool { return strings.HasPrefix(cm.Name, "bulk") })
	})
	testkit.Eventually(t, "the bulk deletes recorded", func() bool {
		var p struct {
			Events []event `json:"events"`
		}
		mustGetJSON(t, base+"/api/v1/history?type=action&verb=delete&result=ok&order=oldest&limit=1&name=bulk-0000", &p)
		return len(p.Events) == 1
	})
	t.Logf("collected and recorded in %v", time.Since(bulkStart).Round(time.Millisecond))
	d.run(t, "the history view of the last 15 minutes", click(`#timeline [data-range="15m"]`), click("#tab-history"))
	poll("every delete listed", fmt.Sprintf(`/^[\d,]+ decisions/.test(document.getElementById("history-summary").textContent) &&
		Number(document.getElementById("history-summary").textContent.split(" ")[0].replaceAll(",", "")) >= %d`, many+len(dependents)), 30*time.Second)
	var vl struct {
		Summary string `json:"summary"`
		InDOM   int    `json:"inDOM"`
		Bottom  string `json:"bottom"`
	}
	var atTop int
	d.eval(t, `(() => { const l = document.getElementById("history-list"); const n = document.querySelectorAll("#history-list .hrow").length;
		l.scrollTop = l.scrollHeight; return n; })()`, &atTop)
	d.run(t, "scrolled", chromedp.Sleep(200*time.Millisecond))
	d.eval(t, `(() => { const rows = [...document.querySelectorAll("#history-list .hrow")];
		return { summary: document.getElementById("history-summary").textContent, inDOM: rows.length,
			bottom: rows[rows.length - 1]?.querySelector(".hobj")?.textContent || "" }; })()`, &vl)
	vl.InDOM = max(vl.InDOM, atTop)
	browsertest.Screenshot(t, page.Ctx, "ui-history-view-many")
	if vl.InDOM > 40 {
		t.Errorf("the history view puts %d rows in the page for %q: not virtualized", vl.InDOM, vl.Summary)
	}
	// Newest first: the bottom of the list is the oldest decision, a delete of the tree.
	if !strings.HasPrefix(vl.Bottom, "ConfigMap hist/") || strings.Contains(vl.Bottom, "bulk") {
		t.Errorf("scrolled to the bottom, the history view shows %q last, want the oldest delete (of the tree, before the bulk)", vl.Bottom)
	}
	t.Logf("history view: %s, %d rows in the page", vl.Summary, vl.InDOM)
	d.run(t, "back to the object panel", click("#tab-object"))
	page.NoErrorsExcept(t, explainOvertaken)

	// A moment the server refuses (before the recording): said, and dropped from the URL.
	// The page, live, says the deletion stuck above has been stuck that long, not since the
	// page was opened.
	d.run(t, "open a moment before the recording", chromedp.Navigate(base+"/?ns="+heldNS+"&at=1999-01-01T00:00:00Z"), uiReady)
	poll("the refusal said", `!document.getElementById("toast").hidden && document.getElementById("toast").textContent.startsWith("Time travel")`, 10*time.Second)
	var refused struct {
		Search string `json:"search"`
		Active bool   `json:"active"`
	}
	d.eval(t, `({ search: location.search, active: window.gcscope.travel().active })`, &refused)
	if strings.Contains(refused.Search, "at=") || refused.Active {
		t.Errorf("a refused moment left the URL %q (travelling %v): want it dropped, live", refused.Search, refused.Active)
	}
	poll("the stuck deletion in the strip", `!!document.querySelector('#cascades [data-owner=`+jsQuoted(string(held.UID))+`]')`, 10*time.Second)
	var stuck string
	d.eval(t, `document.querySelector('#cascades [data-owner=`+jsQuoted(string(held.UID))+`] .muted').textContent`, &stuck)
	if m := regexp.MustCompile(`· ([\d.]+) s$`).FindStringSubmatch(stuck); m == nil {
		t.Errorf("the strip says %q of the stuck deletion: want its elapsed time", stuck)
	} else if got, want := parseFloat(m[1]), time.Since(heldFrom).Seconds(); got < want-1.5 || got > want+1.5 {
		t.Errorf("the strip says %q of a deletion stuck for %.0f s: want that long, not since the page saw it", stuck, want)
	}
	t.Logf("a deletion stuck for %v: %q", time.Since(heldFrom).Round(time.Second), stuck)
	heldDep, err := kube.CoreV1().ConfigMaps(heldNS).Get(ctx, "held-dep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heldDep.Finalizers = nil
	if _, err := kube.CoreV1().ConfigMaps(heldNS).Update(ctx, heldDep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	allowRefused := func(m string) bool {
		return explainOvertaken(m) || strings.Contains(m, "status of 404") && strings.Contains(m, "/history/state")
	}

	// gcscope replay FILE, in this process: the page shows the recording, no live stream.
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	replayBase := startReplay(t, file)
	d.run(t, "open the replay", chromedp.Navigate(replayBase+"/?ns="+ns), uiReady)
	poll("at the recording's cascade", `(() => { const g = window.gcscope, tr = g.travel(), tl = g.timeline();
		return tr.active && !tr.seeking && tl.selected && tl.selected.root.name === "top" && `+jsArray(tree)+`.every((u) => tr.store.nodes.has(u)); })()`, 20*time.Second)
	d.run(t, "frames", browsertest.Frames(3))
	var rp struct {
		Banner     string   `json:"banner"`
		Conn       string   `json:"conn"`
		Sel        string   `json:"sel"`
		LiveNodes  int      `json:"liveNodes"`
		LiveSeq    int      `json:"liveSeq"`
		Delete     bool     `json:"delete"`
		BackToLive bool     `json:"backToLive"`
		Drawn      []string `json:"drawn"`
		Panel      string   `json:"panel"`
	}
	d.eval(t, `(() => { const g = window.gcscope; const b = document.getElementById("travel-banner");
		return { banner: b.hidden ? "" : b.textContent, conn: document.getElementById("conn").dataset.state, sel: g.view.sel || "",
			panel: document.getElementById("object-body").textContent,
			liveNodes: g.live.nodes.size, liveSeq: g.live.seq, delete: !!document.getElementById("delete-button"),
			backToLive: !document.getElementById("back-to-live").hidden, drawn: g.drawnUIDs() }; })()`, &rp)
	if !strings.Contains(rp.Banner, "Replay of a recording") || rp.Conn != "replay" || rp.BackToLive {
		t.Errorf("the replay's page: banner %q, connection %q, back to live offered %v; want a replay of a recording, no live", rp.Banner, rp.Conn, rp.BackToLive)
	}
	if rp.LiveNodes != 0 || rp.LiveSeq != 0 {
		t.Errorf("the replay's page holds a live state (%d nodes, seq %d): it opened a stream", rp.LiveNodes, rp.LiveSeq)
	}
	if strings.Contains(rp.Panel, "null") || strings.Contains(rp.Panel, "undefined") || !strings.Contains(rp.Panel, "no engine to explain") {
		t.Errorf("the replay's object panel says %q: want no null or undefined, and that a replay has no engine to explain the moment", rp.Panel)
	}
	if rp.Sel != owner || rp.Delete {
		t.Errorf("the replay starts with %q selected (want the cascade's owner %s), delete button %v (want none: read-only)", rp.Sel, owner, rp.Delete)
	}
	if missing := minus(tree, rp.Drawn); len(missing) > 0 {
		t.Errorf("at the cascade's start the replay does not draw %v", missing)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-history-replay")
	d.run(t, "speed 8x", chromedp.SetValue(chromedp.CSS("#tl-speed"), "8"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("tl-speed").dispatchEvent(new Event("change"))`))
	d.eval(t, `(window.gcscope.trace(`+jsArray(tree)+`), window.gcscope.playFrames.length = 0, true)`, &ok)
	d.run(t, "play the replay", click("#tl-play"))
	poll("playing", `document.body.dataset.travel === "playing"`, 5*time.Second)
	poll("the replay played to the end", `document.body.dataset.travel === "paused" && `+jsArray(tree)+`.every((u) => !window.gcscope.store.nodes.has(u))`, 30*time.Second)
	var replayed traceLog
	d.eval(t, `window.gcscope.traceLog()`, &replayed)
	d.eval(t, `window.gcscope.playFrames`, &frames)
	t.Logf("the replay at 8×: the cascade in %.0f ms (%.2f× live); %.1f fps", cascadeSpan(t, replayed, owner), liveSpan/cascadeSpan(t, replayed, owner), fps(frames))
	assertForegroundDrawn(t, replayed, owner, dependents)
	assertRemovalOrder(t, liveLog, replayed)

	// A replay's link to a moment (and a selection) opens there, and keeps it in the URL.
	d.run(t, "open the replay at the half-done moment", chromedp.Navigate(replayBase+"/?ns="+ns+"&sel="+mids[0]+"&at="+url.QueryEscape(target.UTC().Format("2006-01-02T15:04:05.000Z07:00"))), uiReady)
	poll("the replay at the moment linked", fmt.Sprintf(`(() => { const g = window.gcscope, tr = g.travel(); return tr.active && !tr.seeking && Math.abs(tr.at - %f) < 1; })()`, targetMs), 20*time.Second)
	var linked struct {
		Sel  string `json:"sel"`
		Href string `json:"href"`
	}
	d.eval(t, `({ sel: window.gcscope.view.sel || "", href: location.href })`, &linked)
	if u, err := url.Parse(linked.Href); err != nil || linked.Sel != mids[0] || u.Query().Get("sel") != mids[0] || !sameMs(mustTime(t, u.Query().Get("at")), target.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)) {
		t.Errorf("the replay opened at %s with %q selected, URL %s: want the moment and the selection linked, %s and %s", target.Format(time.RFC3339Nano), linked.Sel, linked.Href, target.Format(time.RFC3339Nano), mids[0])
	}
	page.NoErrorsExcept(t, allowRefused)
}
