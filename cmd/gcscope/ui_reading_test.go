package main

import (
	"context"
	"fmt"
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

// TestUIReadsAsANewUserExpects checks, on one gcscope, what the graph drew where a new
// user misread it.
func TestUIReadsAsANewUserExpects(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo=false")
	kube := clientFor(t, kubeconfig)
	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-reading-failed"}
	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))

	t.Run("a cycle is drawn as one", func(t *testing.T) { cycleDrawnAsOne(t, d, base, kube) })
	t.Run("long names keep their tails", func(t *testing.T) { namesKeepTheirTails(t, d, base, kube) })
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
	browsertest.Screenshot(t, d.ctx, "ui-long-names")
}
