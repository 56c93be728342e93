package static_test

// Issue 36, items 7, 8 and 9, on the page over a real engine: the delete dialog's lists in
// the order of the tree, in one scroll with the confirm always in view; the object panel
// given the room while an object is selected; what became of an object told after its
// fading; an invalid reference tagged in the dependents list.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// click clicks the element sel names, as a user would (a press and a release at its middle).
func (p *uiPage) click(sel string) {
	p.t.Helper()
	p.run("click "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// clickBox clicks uid's box on the canvas once the page draws it.
func (p *uiPage) clickBox(uid string) {
	p.t.Helper()
	p.until("the box of "+uid+" on screen", `window.gcscope.screenOf(`+strconv.Quote(uid)+`) !== null`)
	at := eval[struct{ X, Y float64 }](p, `window.gcscope.screenOf(`+strconv.Quote(uid)+`)`)
	p.run("click "+uid, chromedp.MouseClickXY(at.X, at.Y))
}

// TestTheDeleteDialogGroupsByOwnerInOneScroll: a top ConfigMap owns two middles, each
// owning twelve leaves. The Background preview lists the top, then each middle followed by
// its leaves (not in uid order: a leaf, a middle, leaves of both mixed); the Foreground's
// first step gives the leaves of each middle under a caption naming that middle, never the
// leaves of the other; at 1280×800 the dialog scrolls as one (no list in it scrolls on its
// own) and the confirm, with the phrase to type, stays in view at its top and bottom.
// Screenshots at 1600, 1280 and 800 px in both themes.
func TestTheDeleteDialogGroupsByOwnerInOneScroll(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "grouped-")
	top := configMap(t, ns, "top")
	mids := []*corev1.ConfigMap{configMap(t, ns, "mid-a", top), configMap(t, ns, "mid-b", top)}
	var want []string // the Background order: top, then each middle followed by its leaves
	want = append(want, "top")
	for _, m := range mids {
		want = append(want, m.Name)
		for i := range 12 {
			leaf := configMap(t, ns, fmt.Sprintf("%s-leaf-%02d", m.Name, i), m)
			want = append(want, leaf.Name)
		}
	}
	p := openUI(t, 1280, 800, "?ns="+ns+"&sel="+string(top.UID))
	p.until("top selected", `window.gcscope.view.sel === `+strconv.Quote(string(top.UID))+` && !!document.getElementById("delete-button")`)
	p.click("#delete-button")
	p.until("the Background prediction", `(document.querySelector("#delete-summary")?.textContent || "").startsWith("Background: 27 objects")`)
	names := eval[[]string](p, `[...document.querySelectorAll("#delete-preview details.deleted li[data-uid] a")].map((a) => a.textContent.split("/").pop())`)
	if !slices.Equal(names, want) {
		t.Errorf("the Background preview lists %v; want the top, then each middle followed by its leaves: %v", names, want)
	}
	depths := eval[[]string](p, `[...document.querySelectorAll("#delete-preview details.deleted li[data-uid]")].slice(0, 3).map((li) => li.dataset.depth || "0")`)
	if !slices.Equal(depths, []string{"0", "1", "2"}) {
		t.Errorf("top, mid-a, its first leaf are indented %v; want 0, 1, 2", depths)
	}

	p.click(`#delete-form input[name="policy"][value="Foreground"]`)
	p.until("the Foreground prediction", `(document.querySelector("#delete-summary")?.textContent || "").startsWith("Foreground")`)
	// Step 1: every leaf, each middle's under a caption that names it.
	type entry struct{ Caption, Name string }
	first := eval[[]entry](p, `[...document.querySelectorAll('#delete-preview details.deleted[data-step="1"] li')].map((li) =>
		li.classList.contains("pv-owner") ? { caption: li.textContent, name: "" } : { caption: "", name: li.querySelector("a").textContent.split("/").pop() })`)
	var under string
	captions := 0
	for _, e := range first {
		if e.Caption != "" {
			captions++
			under = e.Caption
			continue
		}
		mid := e.Name[:strings.Index(e.Name, "-leaf")]
		if !strings.HasSuffix(under, "ConfigMap "+mid) {
			t.Errorf("in step 1, leaf %s is under the caption %q; want its owner %s named", e.Name, under, mid)
		}
	}
	if captions != 2 || len(first) != 26 {
		t.Errorf("step 1: %d captions over %d rows; want one per middle over its 12 leaves: %+v", captions, len(first), first)
	}
	if why := p.text(`#delete-preview details.deleted[data-step="1"] .step-why`); why != "" {
		t.Errorf("step 1 says once, under its title, %q: want no reason that names one middle over the leaves of both", why)
	}

	// One scroll: the dialog's; the confirm in view at its top and at its bottom.
	type layout struct {
		Scrolls          bool     `json:"scrolls"`
		Nested           []string `json:"nested"`
		ConfirmTop       bool     `json:"confirmTop"`
		ConfirmBottom    bool     `json:"confirmBottom"`
		TypedTop, Height float64
	}
	check := `(async () => {
		const d = document.getElementById("delete-dialog"), c = document.getElementById("delete-confirm"), typed = document.getElementById("delete-typed");
		const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
		const inView = (el) => { const b = el.getBoundingClientRect(), r = d.getBoundingClientRect(); return b.height > 0 && b.top >= r.top && b.bottom <= r.bottom && b.bottom <= innerHeight; };
		const nested = [...d.querySelectorAll("*")].filter((el) => { const s = getComputedStyle(el); return /(auto|scroll)/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 1; }).map((el) => el.tagName + "." + el.className);
		d.scrollTop = 0; await frame();
		const top = inView(c) && inView(typed);
		d.scrollTop = d.scrollHeight; await frame();
		const bottom = inView(c) && inView(typed);
		d.scrollTop = 0; await frame();
		return { scrolls: d.scrollHeight > d.clientHeight, nested, confirmTop: top, confirmBottom: bottom, height: d.getBoundingClientRect().height };
	})()`
	l := eval[layout](p, check)
	if !l.Scrolls || len(l.Nested) > 0 || !l.ConfirmTop || !l.ConfirmBottom {
		browsertest.Screenshot(t, p.page.Ctx, "ui-delete-grouped-failed")
		t.Errorf("at 1280×800 the dialog (%.0f px high) scrolls %v, lists that scroll on their own %v, the confirm and its phrase in view at the top %v and at the bottom %v; want one scroll, the dialog's, and the confirm always in view",
			l.Height, l.Scrolls, l.Nested, l.ConfirmTop, l.ConfirmBottom)
	}
	for _, theme := range []string{"light", "dark"} {
		if theme == "dark" {
			p.run("dark", chromedp.KeyEvent(kb.Escape))
			p.run("the theme", chromedp.Evaluate[chromedp.Void](`document.getElementById("theme-toggle").click()`))
			p.click("#delete-button")
			p.click(`#delete-form input[name="policy"][value="Foreground"]`)
			p.until("the Foreground prediction", `(document.querySelector("#delete-summary")?.textContent || "").startsWith("Foreground")`)
		}
		for _, s := range [][2]int64{{1600, 1000}, {1280, 800}, {800, 900}} {
			p.run("size", chromedp.EmulateViewport(s[0], s[1]), browsertest.Frames(2))
			if l := eval[layout](p, check); len(l.Nested) > 0 || !l.ConfirmTop || !l.ConfirmBottom {
				t.Errorf("at %d×%d (%s): nested scrolling %v, confirm in view at the top %v and bottom %v", s[0], s[1], theme, l.Nested, l.ConfirmTop, l.ConfirmBottom)
			}
			browsertest.Screenshot(t, p.ctx, fmt.Sprintf("ui-delete-grouped-%d-%s", s[0], theme))
		}
	}
	p.page.NoErrors(t)
}

// TestThePanelGetsTheRoom: selecting an object (a click on its box) folds the work queues
// to one line and gives the object's panel the side panel's height; the line's toggle
// opens them again, and with nothing selected they are back. An owner's dependents list
// tags a dependent whose reference to it is invalid, as the owners list does. An object
// deleted while selected keeps "What became of it" once its fading is over (it said "not
// in the graph" about 6 s after a delete). Screenshots at 1600, 1280 and 800 px in both themes.
func TestThePanelGetsTheRoom(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "room-")
	owner := configMap(t, ns, "owner")
	configMap(t, ns, "child", owner)
	// A cluster-scoped dependent of a namespaced owner: an invalid reference, which the
	// collector keeps.
	role, err := ui.env.Client.RbacV1().ClusterRoles().Create(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "room-invalid-", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ui.env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	testkit.Eventually(t, "the engine observes the ClusterRole", func() bool { n, ok := ui.engine.Node(role.UID); return ok && n.Observed })

	p := openUI(t, 1600, 1000, "?ns="+ns)
	type room struct {
		Folded               bool
		Queues, Object, Side float64
		Summary              string
	}
	measure := `(() => { const q = document.getElementById("queues-panel"), o = document.getElementById("object-panel"), s = document.querySelector("aside.side");
		return { folded: q.classList.contains("folded"), queues: q.getBoundingClientRect().height, object: o.getBoundingClientRect().height,
			side: s.getBoundingClientRect().height, summary: q.querySelector("h2").textContent }; })()`
	if r := eval[room](p, measure); r.Folded {
		t.Errorf("with nothing selected the queues are folded: %+v", r)
	}
	p.clickBox(string(owner.UID))
	p.until("the owner selected, its dependents listed", `window.gcscope.view.sel === `+strconv.Quote(string(owner.UID))+` && document.querySelectorAll("#dependents-list .vlist-row").length === 2`)
	r := eval[room](p, measure)
	if !r.Folded || r.Queues > 48 || r.Object < 0.8*r.Side || !strings.Contains(r.Summary, "queued") {
		t.Errorf("an object selected: queues folded %v, %.0f px high, saying %q; object panel %.0f of %.0f px; want the queues on one line saying what they hold, and the object's panel most of the side",
			r.Folded, r.Queues, r.Summary, r.Object, r.Side)
	}
	rows := eval[[]string](p, `[...document.querySelectorAll("#dependents-list .vlist-row")].map((e) => e.textContent)`)
	tagged := slices.IndexFunc(rows, func(s string) bool { return strings.Contains(s, role.Name) && strings.Contains(s, "invalid reference") })
	plain := slices.IndexFunc(rows, func(s string) bool { return strings.Contains(s, "child") && !strings.Contains(s, "invalid") })
	if tagged < 0 || plain < 0 {
		t.Errorf("the dependents list %q: want the ClusterRole tagged invalid reference and child not", rows)
	}
	for _, theme := range []string{"light", "dark"} {
		p.run("theme", chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.theme === "`+theme+`" || document.getElementById("theme-toggle").click()`))
		for _, s := range [][2]int64{{1600, 1000}, {1280, 800}, {800, 900}} {
			p.run("size", chromedp.EmulateViewport(s[0], s[1]), browsertest.Frames(2))
			browsertest.Screenshot(t, p.ctx, fmt.Sprintf("ui-panel-room-%d-%s", s[0], theme))
		}
	}
	p.run("back to 1600", chromedp.EmulateViewport(1600, 1000), browsertest.Frames(2))
	p.click("#queues-toggle")
	if r := eval[room](p, measure); r.Folded || r.Queues < 100 {
		t.Errorf("the toggle did not open the queues: %+v", r)
	}
	p.click("#queues-toggle")
	if r := eval[room](p, measure); !r.Folded {
		t.Errorf("the toggle did not fold the queues again: %+v", r)
	}
	// Esc clears the namespace filter first, then the selection.
	p.run("Esc, Esc", chromedp.Focus(chromedp.CSS("#graph")), chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent(kb.Escape))
	p.until("nothing selected, the queues back", `!window.gcscope.view.sel && !document.getElementById("queues-panel").classList.contains("folded")`)

	// Deleted while selected: after its fading, still what became of it.
	gone := configMap(t, ns, "gone")
	p.clickBox(string(gone.UID))
	p.until("gone selected", `window.gcscope.view.sel === `+strconv.Quote(string(gone.UID))+` && document.querySelector("#explain h3")?.textContent === "Why is it here?"`)
	if err := ui.env.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := strconv.Quote(string(gone.UID))
	p.until("removed and its fading over", `!window.gcscope.store.nodes.has(`+u+`) && !window.gcscope.store.ghosts.has(`+u+`)`)
	p.run("frames", browsertest.Frames(3))
	p.until("the panel caught up", `document.querySelector("#explain h3")?.textContent !== "Why is it here?"`)
	body := p.text("#object-body")
	if !strings.Contains(body, "What became of it") || strings.Contains(body, "not in the graph") || !strings.Contains(body, "gone") {
		t.Errorf("after the object's fading the panel says %q; want what became of it, not \"not in the graph\"", body)
	}
	p.page.NoErrorsExcept(t, explainOvertaken)
}
