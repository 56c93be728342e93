package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// readingSizes are the widths a new user tried the page at (issue 24), each in both themes.
var readingSizes = []struct{ w, h int64 }{{1600, 1000}, {1280, 720}, {800, 900}}

// atEachSize shows path at each of readingSizes in each theme, does what brings up the
// view (after the page is ready), and takes the screenshots name-<width>-<theme>.
func atEachSize(t *testing.T, d uiDriver, base, path, name string, view ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for _, theme := range []string{"light", "dark"} {
		for _, size := range readingSizes {
			d.run(t, fmt.Sprintf("%s at %d px, %s", name, size.w, theme), append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(base + path + sep + "theme=" + theme), uiReady}, view...)...)
			browsertest.Screenshot(t, d.ctx, fmt.Sprintf("%s-%d-%s", name, size.w, theme))
		}
	}
	d.run(t, "back to 1600 px", chromedp.EmulateViewport(1600, 1000))
}

// TestUIReadsAsANewUserExpects checks, on one gcscope, what the graph drew where a new
// user misread it.
func TestUIReadsAsANewUserExpects(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo")
	kube := clientFor(t, kubeconfig)
	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-reading-failed"}
	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))

	t.Run("a foreground prediction in steps", func(t *testing.T) { predictionInSteps(t, d, base, kube) })
	t.Run("the first screen leads to what needs attention", func(t *testing.T) { firstScreenLeads(t, d, base, kube) })
	t.Run("a cycle is drawn as one", func(t *testing.T) { cycleDrawnAsOne(t, d, base, kube) })
	t.Run("long names keep their tails", func(t *testing.T) { namesKeepTheirTails(t, d, base, kube) })
	t.Run("a Pod removed at once is seen being deleted", func(t *testing.T) { podSeenBeingDeleted(t, d, base, kube) })
	t.Run("namespace titles stay in their boxes", func(t *testing.T) { titlesStayInTheirBoxes(t, d, base) })
	t.Run("an object selected as it arrives is centred", func(t *testing.T) { centredAsItArrives(t, d, base, kube) })
	page.NoErrors(t)
}

// cycleDrawnAsOne: a → b → c → a is laid out top-down as a column, so the reference that
// closes it (a's to c) runs back up: it is drawn around the right side of the column,
// with an arrowhead, in the cycle colour, as are the other references on the cycle; a
// self-reference is one too; an ordinary reference beside them is not.
func cycleDrawnAsOne(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	ctx := context.Background()
	const ns = "loop"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := createConfigMap(t, kube, ns, "a")
	b := createConfigMap(t, kube, ns, "b", a)
	c := createConfigMap(t, kube, ns, "c", b)
	yes := true
	a.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: c.UID, BlockOwnerDeletion: &yes}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	self := createConfigMap(t, kube, ns, "self")
	self.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "self", UID: self.UID}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, self, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain := createConfigMap(t, kube, ns, "plain", b) // owned by b, on no cycle

	type edge struct {
		Cycle, Back bool
		X, Y        float64
	}
	edgeOf := func(dep, owner *corev1.ConfigMap) string {
		return fmt.Sprintf(`window.gcscope.edge(%s, %s)`, jsQuoted(string(dep.UID)), jsQuoted(string(owner.UID)))
	}
	d.run(t, "show namespace loop", chromedp.Navigate(base+"/?ns="+ns), uiReady,
		chromedp.Evaluate[chromedp.Void](`window.gcscope.recordDrawn()`),
		chromedp.Poll[chromedp.Void](edgeOf(a, c)+`?.cycle && `+edgeOf(self, self)+`?.cycle && !!`+edgeOf(plain, b), chromedp.WithPollingTimeout(30*time.Second)))
	var got map[string]*edge
	d.eval(t, fmt.Sprintf(`({ca: %s, ab: %s, bc: %s, self: %s, plain: %s})`, edgeOf(a, c), edgeOf(b, a), edgeOf(c, b), edgeOf(self, self), edgeOf(plain, b)), &got)
	type box struct{ X, Y float64 }
	boxOf := func(cm *corev1.ConfigMap) (b box) {
		d.eval(t, `window.gcscope.renderer.layout.box(`+jsQuoted(string(cm.UID))+`)`, &b)
		return b
	}
	const nodeW = 180
	// Around the outside: its middle is beside a's box and c's (which are not one above the
	// other: c is b's first dependent, plain its second), not between them.
	ab, cb := boxOf(a), boxOf(c)
	if e := got["ca"]; e == nil || !e.Cycle || !e.Back || e.X > min(ab.X, cb.X)-20 && e.X < max(ab.X, cb.X)+nodeW+20 {
		t.Errorf("a's reference to c, which closes the cycle: drawn %+v; want a cycle edge run back up outside a (x %.0f) and c (x %.0f)", e, ab.X, cb.X)
	}
	for _, k := range []string{"ab", "bc"} {
		if e := got[k]; e == nil || !e.Cycle || e.Back {
			t.Errorf("%s, on the cycle and running down: drawn %+v; want a cycle edge drawn down", k, e)
		}
	}
	if sb := boxOf(self); got["self"] == nil || !got["self"].Cycle || !got["self"].Back || got["self"].X < sb.X+nodeW/2 || got["self"].Y >= sb.Y {
		t.Errorf("self's reference to itself: drawn %+v (self at %+v); want a cycle edge looping out of its top right corner", got["self"], sb)
	}
	if e := got["plain"]; e == nil || e.Cycle || e.Back {
		t.Errorf("plain's reference to b, on no cycle: drawn %+v; want an ordinary edge", e)
	}

	// What the user sees: the back edge's middle is in the cycle colour, at each size, in
	// each theme.
	for _, theme := range []string{"light", "dark"} {
		for _, size := range readingSizes {
			d.run(t, fmt.Sprintf("%d px, %s", size.w, theme), chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(fmt.Sprintf("%s/?ns=%s&theme=%s", base, ns, theme)), uiReady,
				chromedp.Evaluate[chromedp.Void](`window.gcscope.recordDrawn()`),
				chromedp.Poll[chromedp.Void](edgeOf(a, c)+`?.back`, chromedp.WithPollingTimeout(30*time.Second)),
				chromedp.Evaluate[chromedp.Void](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise))
			var hit struct {
				Found  bool
				Want   string
				Centre []int
			}
			d.eval(t, `(() => {
				const e = `+edgeOf(a, c)+`, cam = window.gcscope.renderer.cam, dpr = window.devicePixelRatio;
				const want = getComputedStyle(document.documentElement).getPropertyValue("--edge-cycle").trim();
				const rgb = [1, 3, 5].map((i) => parseInt(want.slice(i, i + 2), 16));
				const sx = Math.round((e.x * cam.k + cam.x) * dpr), sy = Math.round((e.y * cam.k + cam.y) * dpr);
				const px = document.getElementById("graph").getContext("2d").getImageData(sx - 4, sy - 4, 9, 9).data;
				let found = false;
				for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - rgb[0]) + Math.abs(px[i + 1] - rgb[1]) + Math.abs(px[i + 2] - rgb[2]) < 60) found = true;
				return { found, want, centre: [...px.slice(160, 164)] };
			})()`, &hit)
			if !hit.Found {
				t.Errorf("%s at %d px: no pixel of the cycle colour %s at the back edge's middle (the centre pixel: %v)", theme, size.w, hit.Want, hit.Centre)
			}
			browsertest.Screenshot(t, d.ctx, fmt.Sprintf("ui-cycle-%d-%s", size.w, theme))
		}
	}
	d.run(t, "back to 1600 px", chromedp.EmulateViewport(1600, 1000))
}

// namesKeepTheirTails: names too long for a box are cut in the middle, so those a
// controller made, which differ at their end, stay told apart.
func namesKeepTheirTails(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	ctx := context.Background()
	const ns = "names"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := createConfigMap(t, kube, ns, "payments-reconciliation-worker")
	tails := []string{"x2k4p", "9fj2q", "m7c1z"}
	var uids []string
	for _, tail := range tails {
		uids = append(uids, string(createConfigMap(t, kube, ns, "payments-reconciliation-worker-7d9f8b6c5-"+tail, owner).UID))
	}
	labels := fmt.Sprintf(`%s.map((u) => window.gcscope.drawn(u)?.label?.[1] || "")`, jsArray(uids))
	d.run(t, "show namespace names", chromedp.Navigate(base+"/?ns="+ns), uiReady,
		chromedp.Evaluate[chromedp.Void](`window.gcscope.recordDrawn()`),
		chromedp.Poll[chromedp.Void](labels+`.every((l) => l !== "")`, chromedp.WithPollingTimeout(30*time.Second)))
	var got []string
	d.eval(t, labels, &got)
	for i, l := range got {
		if !strings.Contains(l, "…") || !strings.HasPrefix(l, "payments-") || !strings.HasSuffix(l, tails[i]) {
			t.Errorf("the box of …-%s reads %q; want it cut in the middle, its tail kept", tails[i], l)
		}
	}
	// The legend open beside them: the states' colours, the edges (a cycle's among them).
	atEachSize(t, d, base, "/?ns="+ns, "ui-long-names", chromedp.Evaluate[chromedp.Void](`window.gcscope.recordDrawn()`),
		chromedp.Poll[chromedp.Void](labels+`.every((l) => l !== "")`, chromedp.WithPollingTimeout(30*time.Second)),
		click("#legend summary"), chromedp.WaitVisible(chromedp.CSS("#legend-body .edge.cycle")))
}

// podSeenBeingDeleted: a Pod no kubelet runs is removed a millisecond after its deletion
// began (kubectl -w: Terminating, then gone), and the stream brings both in one frame; the
// canvas draws it being deleted for a quarter of a second, then removed, the stream's order.
func podSeenBeingDeleted(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	ctx := context.Background()
	const ns = "pods"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := createConfigMap(t, kube, ns, "owner") // a Pod with an owner is drawn in a tree, not folded into a kind's count
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(pod.UID)
	d.run(t, "show namespace pods", chromedp.Navigate(base+"/?ns="+ns), uiReady,
		chromedp.Poll[chromedp.Void](`window.gcscope.store.nodes.has(`+jsQuoted(uid)+`)`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate[chromedp.Void](`window.gcscope.trace([`+jsQuoted(uid)+`])`),
		// The page holds it before it is laid out (a busy page lays out every few frames):
		// the deletion starts once the Pod is drawn.
		chromedp.Poll[chromedp.Void](`window.gcscope.traceLog().drawn.some((c) => c.state === "normal")`, chromedp.WithPollingTimeout(30*time.Second)))
	if err := kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.run(t, "the Pod drawn removed", chromedp.Poll[chromedp.Void](`window.gcscope.traceLog().drawn.some((c) => c.state === "removed")`, chromedp.WithPollingTimeout(30*time.Second)),
		browsertest.Frames(3)) // the frames a late state may be drawn in (drawDeadline)
	var log traceLog
	d.eval(t, `window.gcscope.traceLog()`, &log)
	var states []string
	var deleting, removed float64
	for _, c := range log.Drawn {
		states = append(states, c.State)
		switch c.State {
		case "deleting":
			deleting = c.T
		case "removed":
			removed = c.T
		}
	}
	// Held from when the page saw the deletion begin (a frame drawn late under load shows
	// it for less): removed no sooner than that plus deletionSeenMs, less a frame.
	began := -1.0
	for _, c := range log.Engine {
		if c.State == "deleting" {
			began = c.T
		}
	}
	if !slices.Equal(states, []string{"normal", "deleting", "removed"}) || began < 0 || removed < began+deletionSeenMs-17 {
		t.Errorf("the Pod was drawn %v (deleting at %.0f ms, removed at %.0f ms); want normal, deleting until %d ms after the page saw it begin, removed (the stream: %+v)", states, deleting, removed, deletionSeenMs, log.Engine)
	}
	assertDrawnInTime(t, log)
}

// titlesStayInTheirBoxes: at "fit", each namespace box on screen wide enough for a few
// letters and high enough for 8 px type has its title (most vanished), cut short if need
// be; and a title pinned to the left edge of a box partly off screen ends inside that box
// (it ran into the next one).
func titlesStayInTheirBoxes(t *testing.T, d uiDriver, base string) {
	type drawnTitle struct {
		NS, Text                    string
		X, Right, BoxRight          float64
		BoxLeft, BoxTop, BoxW, BoxH float64
	}
	// titles are the boxes on screen, with what their title drew (if anything).
	titles := func() (out []drawnTitle) {
		d.run(t, "a frame", chromedp.Evaluate[chromedp.Void](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise))
		d.eval(t, `(() => { const r = window.gcscope.renderer, out = [];
			for (const g of r.layout.groups.values()) {
				const sx = g.x * r.cam.k + r.cam.x, sw = g.w * r.cam.k, sy = g.y * r.cam.k + r.cam.y, sh = g.h * r.cam.k;
				if (sx + sw < 0 || sx > r.w || sy + sh < 0 || sy > r.h) continue;
				const t = window.gcscope.nsDrawn(g.ns);
				out.push({ ns: g.ns, text: t?.text || "", x: t?.x ?? 0, right: t?.right ?? 0, boxRight: t?.boxRight ?? 0, boxLeft: sx, boxTop: sy, boxW: Math.min(sx + sw, r.w) - Math.max(sx, 0), boxH: Math.min(sy + sh, r.h) - Math.max(sy, 0) });
			}
			return out; })()`, &out)
		return out
	}
	inTheirBoxes := func(when string, ts []drawnTitle) {
		t.Helper()
		for _, x := range ts {
			if x.Text != "" && x.Right > x.BoxRight+1 {
				t.Errorf("%s: namespace %q's title %q ends at %.0f px, past its box's right edge at %.0f px", when, x.NS, x.Text, x.Right, x.BoxRight)
			}
		}
	}
	d.run(t, "the whole demo, fitted", chromedp.EmulateViewport(1600, 1000), chromedp.Navigate(base+"/"), uiReady,
		chromedp.Evaluate[chromedp.Void](`window.gcscope.recordDrawn()`), click("#zoom-fit"),
		chromedp.Poll[chromedp.Void](`!window.gcscope.renderer.anim`, chromedp.WithPollingTimeout(10*time.Second)))
	fitted := titles()
	untitled := 0
	for _, x := range fitted {
		if x.Text == "" && x.BoxW >= 70 && x.BoxH >= 13 && x.BoxTop >= 0 {
			untitled++
			t.Errorf("at fit, namespace %q's box is %.0f × %.0f px on screen and has no title", x.NS, x.BoxW, x.BoxH)
		}
	}
	inTheirBoxes("at fit", fitted)
	t.Logf("at fit: %d boxes on screen, %d of them 70 px or wider untitled", len(fitted), untitled)
	browsertest.Screenshot(t, d.ctx, "ui-titles-fit")

	// Zoomed in on the first box's right half, its left half off screen.
	d.run(t, "a box half off screen", chromedp.Evaluate[chromedp.Void](`(() => { const r = window.gcscope.renderer;
		const g = [...r.layout.groups.values()].sort((a, b) => a.y - b.y || a.x - b.x)[0], k = 0.8;
		r.moveTo({ k, x: -(g.x + g.w / 2) * k, y: 80 - g.y * k }, false); })()`))
	half := titles()
	if !slices.ContainsFunc(half, func(x drawnTitle) bool { return x.BoxLeft < 0 && x.Text != "" }) {
		t.Fatalf("no titled box partly off screen to the left: %+v", half)
	}
	inTheirBoxes("a box half off screen", half)
	browsertest.Screenshot(t, d.ctx, "ui-titles-half-off")
}

// centredAsItArrives: a scenario selects its main object as soon as the page has it, before
// the layout has placed it (the layout of a namespace waits while a cascade in it settles);
// the view goes to it once it is placed (it stayed put until the card's Show was pressed).
func centredAsItArrives(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	ctx := context.Background()
	d.run(t, "the whole demo, fitted", chromedp.Navigate(base+"/"), uiReady, click("#zoom-fit"),
		chromedp.Poll[chromedp.Void](`!window.gcscope.renderer.anim`, chromedp.WithPollingTimeout(10*time.Second)),
		// Select it in the events' own turn, as the scenario card may: the layout runs at the next frame.
		chromedp.Evaluate[chromedp.Void](`(() => { const g = window.gcscope, live = g.live, apply = live.applyEvents.bind(live);
			live.applyEvents = (events) => { apply(events);
				const e = events.find((e) => e.type === "nodeAdded" && e.node.name === "late-comer");
				if (e) { window.lateComer = { uid: e.node.uid, placed: !!g.renderer.layout.box(e.node.uid) }; g.select(e.node.uid); } }; })()`))
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "arrivals"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, kube, "arrivals", "late-comer")
	d.run(t, "it arrives", chromedp.Poll[chromedp.Void](`!!window.lateComer`, chromedp.WithPollingTimeout(30*time.Second)))
	var early struct {
		UID    string
		Placed bool
	}
	d.eval(t, `window.lateComer`, &early)
	if early.Placed {
		t.Fatal("the object was laid out already when it was selected: the test did not select it early")
	}
	d.run(t, "the view goes to it", chromedp.Poll[chromedp.Void](`(() => { const r = window.gcscope.renderer, b = r.layout.box(`+jsQuoted(early.UID)+`);
		return !!b && !r.anim && Math.abs((b.x + b.w / 2) * r.cam.k + r.cam.x - r.w / 2) < 40 && Math.abs((b.y + b.h / 2) * r.cam.k + r.cam.y - r.h / 2) < 40; })()`,
		chromedp.WithPollingTimeout(15*time.Second)))
	browsertest.Screenshot(t, d.ctx, "ui-centred-on-arrival")
}

// firstScreenLeads: opened with nothing selected, the side panel begins with what needs
// attention: the demo's foreground deletion that a finalizer holds (its owner one click
// away), and the object the collector retries, before the work queues (a new user's eye
// went to a demo retry in the queue panel).
func firstScreenLeads(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	dep, err := kube.AppsV1().Deployments("demo-stuck").Get(context.Background(), "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := `document.querySelector('#glance-running button[data-owner="` + string(dep.UID) + `"]')`
	for _, theme := range []string{"light", "dark"} {
		for _, size := range readingSizes {
			d.run(t, fmt.Sprintf("the first screen at %d px, %s", size.w, theme), chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(fmt.Sprintf("%s/?theme=%s", base, theme)), uiReady,
				chromedp.Poll[chromedp.Void](`!!`+running+` && !!document.getElementById("glance-retried")`, chromedp.WithPollingTimeout(30*time.Second)))
			var first struct {
				Heading, Entry string
				Above          bool // the glance is above the work queues, and on screen
			}
			d.eval(t, `(() => { const g = document.getElementById("glance"), q = document.getElementById("queues-panel"), e = `+running+`;
				const gb = g.getBoundingClientRect(), qb = q.getBoundingClientRect();
				return { heading: g.querySelector("h2").textContent, entry: e.closest("li").textContent,
					above: gb.top < qb.top && gb.top >= 0 && e.getBoundingClientRect().bottom <= window.innerHeight }; })()`, &first)
			if first.Heading != "What needs attention" || !strings.Contains(first.Entry, "Foreground") || !strings.Contains(first.Entry, "Deployment stuck") ||
				!strings.Contains(first.Entry, "held by finalizer") || !first.Above {
				t.Errorf("%s at %d px: the side panel begins %+v; want \"What needs attention\" listing the Foreground deletion of Deployment stuck held by a finalizer, on screen above the queues", theme, size.w, first)
			}
			browsertest.Screenshot(t, d.ctx, fmt.Sprintf("ui-first-screen-%d-%s", size.w, theme))
		}
	}
	d.run(t, "follow the deletion", chromedp.EmulateViewport(1600, 1000), click(`#glance-running button[data-owner="`+string(dep.UID)+`"]`),
		chromedp.Poll[chromedp.Void](`window.gcscope.view.sel === `+jsQuoted(string(dep.UID)), chromedp.WithPollingTimeout(10*time.Second)))
}

// predictionInSteps: the delete dialog's foreground prediction of the demo's Deployment api
// lists its deletions in the order they happen (the Pods, then the ReplicaSet, then the
// Deployment), and says why the demo's ClusterRole that names api as its owner stays: its
// reference is invalid, not "api still holds it".
func predictionInSteps(t *testing.T, d uiDriver, base string, kube kubernetes.Interface) {
	api, err := kube.AppsV1().Deployments("demo-web").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	openDialog := []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		click(`#delete-form input[name="policy"][value="Foreground"]`),
		chromedp.Poll[chromedp.Void](`(document.querySelector("#delete-summary")?.textContent || "").startsWith("Foreground")`,
			chromedp.WithPollingTimeout(30*time.Second))}
	path := "/?ns=demo-web&sel=" + string(api.UID)
	d.run(t, "load api, open the dialog", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(base + path), uiReady}, openDialog...)...)

	var steps [][2]string
	d.eval(t, `[...document.querySelectorAll("#delete-preview details.deleted[data-step]")].map((e) => [e.dataset.step, e.querySelector("summary").textContent + " | " + e.textContent])`, &steps)
	if len(steps) != 3 || steps[0][0] != "1" || !strings.Contains(steps[0][1], "Pod demo-web/api-") || strings.Contains(steps[0][1], "ReplicaSet demo-web/") ||
		steps[1][0] != "2" || !strings.Contains(steps[1][1], "ReplicaSet demo-web/api-") || strings.Contains(steps[1][1], "Pod demo-web/") ||
		steps[2][0] != "3" || !strings.Contains(steps[2][1], "Deployment demo-web/api") || !strings.HasPrefix(steps[2][1], "3. last") {
		t.Errorf("the dialog's steps (want the Pods, then the ReplicaSet, then api, last): %q", steps)
	}
	var order, kept string
	d.eval(t, `document.querySelector("#delete-order")?.textContent ?? ""`, &order)
	d.eval(t, `document.querySelector("#delete-preview details.kept")?.textContent ?? ""`, &kept)
	if !strings.Contains(order, "Deployment api last (step 3)") {
		t.Errorf("the dialog's order: %q", order)
	}
	if !strings.Contains(kept, "demo-invalid-owner") || !strings.Contains(kept, "is invalid") || strings.Contains(kept, "still holds it") {
		t.Errorf("the kept section (want demo-invalid-owner, kept for its invalid reference): %q", kept)
	}
	atEachSize(t, d, base, path, "ui-predict-foreground", openDialog...)
	d.run(t, "close the dialog", chromedp.KeyEvent("\x1b"))
}
