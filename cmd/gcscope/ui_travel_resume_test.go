package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUITravelResumesLiveStream runs gcscope with --history and cuts the page's stream
// while it shows a recorded moment (time travel), from before a cascade the page saw live.
// The live stream goes on underneath time travel, so when it comes back it resumes from
// the live state's sequence number, not the moment shown; and the live state takes no
// event twice. Back to live: no action listed twice, no cascade that did not happen again,
// and the live state's sequence number only ever went forward.
func TestUITravelResumesLiveStream(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo=false", "--history")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "travel-resume"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parent := createConfigMap(t, kube, ns, "parent")
	child := createConfigMap(t, kube, ns, "child", parent)
	pair := jsArray([]string{string(parent.UID), string(child.UID)})

	proxy := newCutProxy(t, strings.TrimPrefix(base, "http://"))
	page := browsertest.Start(t, browsertest.Options{})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-travel-resume-failed"}
	streams := watchStreams(t, page.Ctx)
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	d.run(t, "load the page", chromedp.Navigate(proxy.URL+"/?ns="+ns), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	poll("parent and child in the page", pair+`.every((u) => window.gcscope.live.nodes.has(u))`, 30*time.Second)
	var before float64
	d.eval(t, `Date.now()`, &before)

	// The cascade, live: the engine deletes child once parent is gone.
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "parent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the cascade over, live", pair+`.every((u) => !window.gcscope.live.nodes.has(u)) &&
		window.gcscope.live.actions.some((a) => a.object.uid === `+jsQuoted(string(child.UID))+`)`, 60*time.Second)

	// From here on, every call of the live state's applyEvents is checked: its seq never goes
	// back, and it applies exactly the events newer than the state it held.
	var ok bool
	d.eval(t, `(() => { const live = window.gcscope.live, apply = live.applyEvents.bind(live);
		window.seqFaults = [];
		live.applyEvents = (events) => {
			const seq0 = live.seq, applied0 = live.applied;
			let top = seq0, fresh = 0;
			for (const e of events) if (e.seq > top) { top = e.seq; fresh++; }
			apply(events);
			if (live.seq < seq0) window.seqFaults.push("seq went back from " + seq0 + " to " + live.seq);
			if (live.applied - applied0 !== fresh) window.seqFaults.push("at seq " + seq0 + ", applied " + (live.applied - applied0) +
				" of events " + events.map((e) => e.seq).join(",") + "; want only the " + fresh + " newer ones");
		};
		return true; })()`, &ok)
	var liveSeq uint64
	var actions, cascades int
	d.eval(t, `window.gcscope.live.seq`, &liveSeq)
	d.eval(t, `window.gcscope.live.actions.length`, &actions)
	d.eval(t, `window.gcscope.cascades.active.size + window.gcscope.cascades.finished.length`, &cascades)

	// Time travel to before the cascade: the moment shown has an older seq than the live state.
	d.eval(t, `(window.travelMark = performance.now(), window.gcscope.travel().seek(`+strconv.FormatFloat(before, 'f', -1, 64)+`), true)`, &ok)
	poll("time travel to before the cascade", `(() => { const tr = window.gcscope.travel();
		return tr.active && !tr.seeking && document.body.classList.contains("travel") && `+pair+`.every((u) => tr.store.nodes.has(u)); })()`, 20*time.Second)
	var travelSeq uint64
	d.eval(t, `window.gcscope.store.seq`, &travelSeq)
	if travelSeq >= liveSeq {
		t.Fatalf("the moment shown has seq %d, the live state %d: want an older moment", travelSeq, liveSeq)
	}

	// The stream drops while travelling, and comes back.
	asked := len(proxy.streams())
	seen := streams.count()
	proxy.cut()
	poll("the stream down", `document.getElementById("conn").dataset.state !== "live"`, 15*time.Second)
	// The live state's seq when the stream dropped: it may have gone on since it was read
	// above (the engine's own events), never back, and it holds still until the stream is back.
	d.eval(t, `window.gcscope.live.seq`, &liveSeq)
	proxy.restore()
	d.run(t, "retry from the dot", click("#conn"), chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	resumed := streams.after(t, seen)
	tried := proxy.streams()[asked:]
	want := "/api/v1/stream?since=" + strconv.FormatUint(liveSeq, 10) + "&encoding=deflate"
	if len(tried) == 0 || tried[len(tried)-1] != want {
		t.Errorf("while travelling at seq %d, the page resumed its stream with %v; want %s, the live state's seq", travelSeq, tried, want)
	}
	if resumed.Type == "deltas" && resumed.From <= liveSeq {
		t.Errorf("the resumed stream began with the deltas from %d; the live state held up to %d already", resumed.From, liveSeq)
	}

	// Back to live.
	d.run(t, "back to live", chromedp.KeyEvent("\x1b"))
	poll("live again", `!window.gcscope.travel().active && !document.body.classList.contains("travel") && window.gcscope.store === window.gcscope.live`, 10*time.Second)
	var faults []string
	d.eval(t, `window.seqFaults`, &faults)
	for _, f := range faults {
		t.Errorf("live state: %s", f)
	}
	var dup []string
	d.eval(t, `(() => { const seen = new Set(), dup = [];
		for (const a of window.gcscope.live.actions) { const k = JSON.stringify(a); if (seen.has(k)) dup.push(k); seen.add(k); }
		return dup; })()`, &dup)
	if len(dup) > 0 {
		t.Errorf("back to live, the actions list has %d duplicates, the first %s", len(dup), dup[0])
	}
	var nowActions, nowCascades int
	d.eval(t, `window.gcscope.live.actions.length`, &nowActions)
	d.eval(t, `window.gcscope.cascades.active.size + window.gcscope.cascades.finished.length`, &nowCascades)
	if nowActions != actions {
		t.Errorf("back to live, the page lists %d actions; it listed %d before time travel, and the engine did nothing since", nowActions, actions)
	}
	if nowCascades != cascades {
		t.Errorf("back to live, the page follows %d cascades; it followed %d before time travel, and nothing was deleted since", nowCascades, cascades)
	}
	var resurrected bool
	d.eval(t, pair+`.some((u) => window.gcscope.live.nodes.has(u) || window.gcscope.live.ghosts.get(u)?.at > window.travelMark)`, &resurrected)
	if resurrected {
		t.Error("back to live, parent or child is in the live state again (held, or removed again since time travel began)")
	}
	page.NoErrorsExcept(t, func(m string) bool {
		return strings.Contains(m, "WebSocket connection to") && strings.Contains(m, "/api/v1/stream")
	})
}
