package static_test

// Issue 36, item 4, the page's part: an object whose owner reference the collector removed
// (an Orphan delete of its owner) is drawn with the orphan mark and its panel says from
// which owner, by whom, when and why, until Dismiss makes the engine forget the marks.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestTheOrphanMarkInGraphAndPanel: a ConfigMap owner is deleted with
// propagationPolicy=Orphan through the API; the collector removes its dependent's
// reference. The canvas draws the dependent with the orphan mark (and a plain sibling
// without), its panel says "Orphaned from ConfigMap <ns>/owner" (a name: the owner is gone),
// by the garbage collector, a relative time that ticks with the time itself on hover, and
// the Orphan delete as the reason, in place of "none: a root"; the legend lists the mark.
// Dismiss (through the API helper, with the CSRF token) makes the engine forget the mark:
// the drawing and the panel lose it. Screenshots at 1600 and 800 px, light and dark.
func TestTheOrphanMarkInGraphAndPanel(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "orphan-mark-")
	owner := configMap(t, ns, "owner")
	dep := configMap(t, ns, "kept", owner)
	plain := configMap(t, ns, "plain")
	uid, plainUID := strconv.Quote(string(dep.UID)), strconv.Quote(string(plain.UID))

	p := openUI(t, 1600, 1000, "?ns="+ns)
	eval[bool](p, `(window.gcscope.recordDrawn(), true)`)
	p.until("the dependent drawn, without a mark", `window.gcscope.drawn(`+uid+`)?.orphaned === false`)

	if err := ui.env.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), owner.Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine marks the dependent orphaned", func() bool {
		n, ok := ui.engine.Node(dep.UID)
		return ok && len(n.Orphaned) > 0 && len(n.Owners) == 0
	})
	p.until("the dependent drawn with the orphan mark", `window.gcscope.drawn(`+uid+`)?.orphaned === true`)
	if eval[bool](p, `window.gcscope.drawn(`+plainUID+`)?.orphaned !== false`) {
		t.Errorf("a ConfigMap that never had an owner is drawn with the orphan mark (or not drawn)")
	}
	p.run("open the legend", chromedp.Evaluate[chromedp.Void](`document.getElementById("legend").open = true`))
	if legend := p.text("#legend-body"); !strings.Contains(legend, "orphaned (owner reference removed)") {
		t.Errorf("the legend says %q; want the orphan mark listed", legend)
	}

	p.clickBox(string(dep.UID))
	p.until("the panel's orphan section", `!!document.querySelector("#orphan-marks .orphan-mark")`)
	type section struct {
		Head, By, Reason, Cause, Ago, Title, Owners string
		Link                                        bool
		Dismiss                                     bool
	}
	read := `(() => { const m = document.querySelector("#orphan-marks .orphan-mark"), ago = m.querySelector("[data-ago]");
		return { head: m.querySelector(".orphan-head").textContent, by: m.children[1].textContent, reason: m.children[2].textContent,
			cause: m.dataset.cause, ago: ago.textContent, title: ago.title, link: !!m.querySelector(".orphan-head a"),
			owners: [...document.querySelectorAll("#object-body h3")].find((h) => h.textContent.startsWith("Owners")).nextElementSibling.textContent,
			dismiss: !!document.getElementById("dismiss-orphan") }; })()`
	s := eval[section](p, read)
	wantHead := "Orphaned from ConfigMap " + ns + "/owner"
	if s.Head != wantHead || s.Link || s.Cause != "orphanDelete" || !strings.Contains(s.By, "garbage collector") ||
		!strings.Contains(s.Reason, "Orphan delete") || !strings.Contains(s.Title, "20") || !s.Dismiss || strings.Contains(s.Owners, "a root") {
		t.Errorf("the panel's orphan section: %+v; want %q (a name, not a link: the owner is gone), by the garbage collector, the Orphan delete as the reason, a time with the date on hover, Dismiss, and no \"a root\"", s, wantHead)
	}
	if s.Ago != "just now" && !strings.HasSuffix(s.Ago, "s ago") {
		t.Errorf("the mark's time says %q; want a relative time", s.Ago)
	}
	// The relative time keeps ticking.
	p.until("the relative time ticks", `document.querySelector("#orphan-marks [data-ago]").textContent !== `+strconv.Quote(s.Ago))

	for _, theme := range []string{"light", "dark"} {
		p.run("theme", chromedp.Evaluate[chromedp.Void](`for (let i = 0; i < 2 && document.documentElement.dataset.theme !== "`+theme+`"; i++) document.getElementById("theme-toggle").click()`))
		for _, sz := range [][2]int64{{1600, 1000}, {800, 900}} {
			p.run("size", chromedp.EmulateViewport(sz[0], sz[1]), browsertest.Frames(2))
			browsertest.Screenshot(t, p.ctx, fmt.Sprintf("ui-orphan-mark-%d-%s", sz[0], theme))
		}
	}
	p.run("size", chromedp.EmulateViewport(1600, 1000), browsertest.Frames(2))

	p.click("#dismiss-orphan")
	p.until("the mark gone from the panel", `!document.getElementById("orphan-marks")`)
	p.until("the mark gone from the drawing", `window.gcscope.drawn(`+uid+`)?.orphaned === false`)
	if n, ok := ui.engine.Node(dep.UID); !ok || len(n.Orphaned) != 0 {
		t.Errorf("after Dismiss the engine's node has marks %+v", n.Orphaned)
	}
	if owners := eval[string](p, `[...document.querySelectorAll("#object-body h3")].find((h) => h.textContent.startsWith("Owners")).nextElementSibling.textContent`); owners != "none: a root" {
		t.Errorf("after Dismiss the owners say %q; want \"none: a root\"", owners)
	}
	browsertest.Screenshot(t, p.ctx, "ui-orphan-mark-dismissed")
	p.page.NoErrors(t)
}
