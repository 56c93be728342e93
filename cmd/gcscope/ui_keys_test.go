package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUIXKeyboard presses every key the page binds, as a user would, and checks each does
// what the help says: ? opens the help (which lists exactly these keys), / searches and
// Enter goes to the first result, keys typed in the search box are text and not commands,
// f focuses, d and Delete open the delete dialog, Esc closes the help, the dialog, the
// Export and Play menus, then clears the focus, the filters and the selection, one at a
// time, + = - zoom, 0 fits everything, e opens and closes the selected owner's set of
// siblings, t switches light and dark.
func TestUIXKeyboard(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo", "--history=false") // the keys without a recording (ui_history_test.go: with one)
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	frontend, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "frontend", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An owner of 12 leaves: a set of siblings drawn as one count when zoomed out.
	const ns = "keys"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	many := createConfigMap(t, kube, ns, "many")
	var leaves []string
	for i := range 12 {
		leaves = append(leaves, string(createConfigMap(t, kube, ns, fmt.Sprintf("leaf-%02d", i), many).UID))
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-keys-failed"}
	key := func(what, keys string, then ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		d.run(t, what, append([]chromedp.Action[chromedp.Void]{chromedp.KeyEvent(keys, asTyped)}, then...)...)
	}
	poll := func(what, expr string) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	str := func(expr string) string {
		t.Helper()
		var s string
		d.eval(t, expr, &s)
		return s
	}
	num := func(expr string) float64 {
		t.Helper()
		var f float64
		d.eval(t, expr, &f)
		return f
	}
	sel := func() string { return str(`window.gcscope.view.sel || ""`) }
	settled := `!window.gcscope.renderer.anim`
	all := apiUIDs(t, base+"/api/v1/graph?limit=100000")

	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	waitDrawnEquals(t, d, all)

	// ? opens the help, which lists exactly the keys this test presses; Esc closes it.
	key("?", "?", chromedp.WaitVisible(chromedp.CSS("#help-dialog")))
	help := assertHelpIsTheTable(t, d)
	var listed []string
	helpOf := map[string]string{}
	for _, kd := range help {
		for _, k := range strings.FieldsFunc(kd[0], func(r rune) bool { return r == ',' || r == '/' && kd[0] != "/" }) {
			k = strings.NewReplacer("−", "-", "Esc", "Escape").Replace(strings.TrimSpace(k))
			listed = append(listed, k)
			helpOf[k] += kd[1] + "; "
		}
	}
	pressed := []string{"/", "Enter", "f", "Delete", "d", "Escape", "0", "+", "-", "e", "t", "s", "?"} // and = for +
	slices.Sort(listed)
	listed = slices.Compact(listed) // Esc has a row of its own in the search box
	slices.Sort(pressed)
	for _, k := range []string{"h", "Space", "←", "[", "]"} {
		if slices.Contains(listed, k) {
			t.Errorf("without a recording, the help lists time travel's key %s", k)
		}
	}
	if !slices.Equal(listed, pressed) {
		t.Errorf("the help lists the keys %q; the page binds %q", listed, pressed)
	}
	for _, what := range []string{"close", "focus", "filters", "selection"} {
		if !strings.Contains(helpOf["Escape"], what) {
			t.Errorf("the help says Esc does %q; it also clears the %s", helpOf["Escape"], what)
		}
	}
	browsertest.Screenshot(t, page.Ctx, "ui-keys-help")
	key("Esc closes the help", "\u001b", chromedp.WaitNotVisible(chromedp.CSS("#help-dialog")))

	// / goes to the search box (without typing a slash); what is typed there is text, not
	// commands ("frontend" holds f, d, e and t); Esc empties and leaves it, Enter goes to
	// the first result, which is the exact name.
	theme := str(`document.documentElement.dataset.theme || ""`)
	key("/", "/")
	poll("the search box has the focus", `document.activeElement === document.getElementById("search") && document.getElementById("search").value === ""`)
	key("type in the search box", "zzz")
	key("Esc leaves the search", "\u001b")
	poll("the search is emptied and left", `document.activeElement !== document.getElementById("search") && document.getElementById("search").value === "" && !window.gcscope.view.q`)
	key("/ again", "/")
	key("type a name", "frontend")
	poll("the results", `document.querySelector("#search-results li[data-uid]")?.dataset.uid === `+jsQuoted(string(frontend.UID)))
	if s := str(`document.documentElement.dataset.theme || ""`); s != theme || str(`window.gcscope.view.focus || ""`) != "" ||
		num(`document.querySelectorAll("dialog[open]").length`) != 0 {
		t.Errorf("typing in the search box ran commands: theme %q (was %q), focus %q", s, theme, str(`window.gcscope.view.focus || ""`))
	}
	browsertest.Screenshot(t, page.Ctx, "ui-keys-search")
	key("Enter goes to the first result", "\r")
	poll("the Deployment selected", `window.gcscope.view.sel === `+jsQuoted(string(frontend.UID))+` && document.activeElement !== document.getElementById("search")`)

	// f focuses on the selection's owners and dependents: the API's closure of it.
	closure := apiUIDs(t, base+"/api/v1/graph?limit=100000&uid="+string(frontend.UID))
	key("f", "f")
	poll("focused", `window.gcscope.view.focus === `+jsQuoted(string(frontend.UID))+` && location.search.includes("focus=")`)
	waitDrawnEquals(t, d, closure)
	browsertest.Screenshot(t, page.Ctx, "ui-keys-focus")

	// d and Delete open the delete dialog of the selection; Esc closes it and deletes nothing.
	for _, k := range []string{"d", "\u007f"} {
		key("open the delete dialog", k, chromedp.WaitVisible(chromedp.CSS("#delete-dialog")))
		if title := str(`document.getElementById("delete-title").textContent`); !strings.Contains(title, "frontend") {
			t.Errorf("key %q: the dialog says %q; want the selected Deployment frontend", k, title)
		}
		key("Esc closes the dialog", "\u001b", chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
		// The browser moves the focus out of the closed dialog at its next rendering (a
		// key pressed before would go to the dialog's radio button): as a person's next key.
		poll("the focus leaves the dialog", `!document.getElementById("delete-dialog").contains(document.activeElement)`)
	}
	if _, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "frontend", metav1.GetOptions{}); err != nil {
		t.Errorf("after the dialog was closed with Esc: %v", err)
	}

	// Esc closes an open menu, and does nothing else.
	for _, menu := range []string{"export", "play"} {
		d.run(t, "open the "+menu+" menu", click("#"+menu+"-button"), chromedp.WaitVisible(chromedp.CSS("#"+menu+"-menu")))
		key("Esc closes the "+menu+" menu", "\u001b", chromedp.WaitNotVisible(chromedp.CSS("#"+menu+"-menu")))
		if f := str(`window.gcscope.view.focus || ""`); f != string(frontend.UID) || sel() != string(frontend.UID) {
			t.Errorf("Esc on the %s menu also changed the view: focus %q, selection %q", menu, f, sel())
		}
	}
	// Then Esc clears the focus, and keeps the selection.
	key("Esc clears the focus", "\u001b")
	poll("no focus", `!window.gcscope.view.focus && !location.search.includes("focus=")`)
	waitDrawnEquals(t, d, all)
	if sel() != string(frontend.UID) {
		t.Errorf("Esc on a focus cleared the selection too: %q", sel())
	}

	// + and = zoom in, - out, by 1.4 each, about the centre.
	poll("the view settles", settled)
	k0 := num(`window.gcscope.renderer.cam.k`)
	for _, step := range []struct {
		key    string
		factor float64
	}{{"+", 1.4}, {"=", 1.4}, {"-", 1 / 1.4}, {"-", 1 / 1.4}} {
		key("zoom "+step.key, step.key)
		k := num(`window.gcscope.renderer.cam.k`)
		if k < k0*step.factor*0.999 || k > k0*step.factor*1.001 {
			t.Errorf("key %s: zoom %.3f → %.3f; want ×%.3f", step.key, k0, k, step.factor)
		}
		k0 = k
	}
	// 0 fits everything: the whole layout on screen, filling it one way (40 px in, and
	// clear of the zoom buttons' column at the right: 60 px).
	key("zoom in far", "++")
	fits := `(() => { const r = window.gcscope.renderer, b = r.layout.bounds, c = r.cam;
		const x0 = b.x * c.k + c.x, y0 = b.y * c.k + c.y, x1 = (b.x + b.w) * c.k + c.x, y1 = (b.y + b.h) * c.k + c.y;
		return x0 >= -1 && y0 >= -1 && x1 <= r.w + 1 && y1 <= r.h + 1 && (x1 - x0 >= r.w - 101 || y1 - y0 >= r.h - 81); })()`
	var fitted bool
	if d.eval(t, fits, &fitted); fitted {
		t.Fatal("zoomed in, the whole graph still fits: the test cannot tell 0 works")
	}
	key("0 fits", "0")
	poll("everything on screen", fits)
	browsertest.Screenshot(t, page.Ctx, "ui-keys-fit")

	// e opens the selected owner's set of siblings, drawn as one count when zoomed out, and
	// closes it again.
	d.run(t, "select the owner of 12", chromedp.Navigate(base+"/?sel="+string(many.UID)), uiReady)
	poll("centred on it", settled)
	key("zoom out", "---")
	collapsed := `(() => { const r = window.gcscope.renderer; return r.collapsed(r.layout.items.get(` + jsQuoted(leaves[0]) + `).block); })()`
	poll("the leaves drawn as one count", collapsed)
	t0 := num(`window.gcscope.renderer.recordDrawn(), performance.now()`)
	d.run(t, "a few frames", browsertest.Frames(5))
	drawnSince := `(t) => ` + jsArray(leaves) + `.filter((u) => (window.gcscope.drawn(u)?.at ?? -1) > t).length`
	if n := num(`(` + drawnSince + `)(` + strconv.FormatFloat(t0, 'f', 3, 64) + `)`); n != 0 {
		t.Errorf("zoomed out, %.0f leaves drawn one by one; want one count", n)
	}
	t1 := num(`performance.now()`)
	key("e opens the set", "e")
	poll("every leaf drawn", `!`+collapsed+` && (`+drawnSince+`)(`+strconv.FormatFloat(t1, 'f', 3, 64)+`) === 12`)
	browsertest.Screenshot(t, page.Ctx, "ui-keys-expanded")
	key("e closes it", "e")
	poll("one count again", collapsed)

	// t switches to dark and back: the page and the canvas.
	lum := `(() => { const d = document.getElementById("graph").getContext("2d").getImageData(2, 2, 1, 1).data;
		return (0.2126 * d[0] + 0.7152 * d[1] + 0.0722 * d[2]) / 255; })()`
	light := num(lum)
	key("t", "t")
	poll("dark", `document.documentElement.dataset.theme === "dark"`)
	d.run(t, "a frame", browsertest.Frames(3))
	if dark := num(lum); light < 0.5 || dark > 0.25 {
		t.Errorf("t: canvas luminance %.2f → %.2f; want light, then dark", light, dark)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-keys-dark")
	key("t again", "t")
	poll("light", `document.documentElement.dataset.theme === "light"`)

	// s opens the Stuck tab, and again goes back to the object.
	key("s", "s")
	poll("the Stuck tab", `document.getElementById("tab-stuck").getAttribute("aria-selected") === "true" && !document.getElementById("stuck-panel").hidden`)
	key("s again", "s")
	poll("the Object tab", `document.getElementById("tab-stuck").getAttribute("aria-selected") === "false" && document.getElementById("stuck-panel").hidden`)

	// With filters: Esc clears them, then the selection.
	d.run(t, "a filtered view", chromedp.Navigate(base+"/?ns=demo-web&sel="+string(frontend.UID)), uiReady)
	waitDrawnEquals(t, d, apiUIDs(t, base+"/api/v1/graph?limit=100000&namespace=demo-web"))
	key("Esc clears the filters", "\u001b")
	poll("no filters", `window.gcscope.view.ns.length === 0 && !location.search.includes("ns=")`)
	waitDrawnEquals(t, d, apiUIDs(t, base+"/api/v1/graph?limit=100000"))
	if sel() != string(frontend.UID) {
		t.Errorf("Esc on filters cleared the selection too: %q", sel())
	}
	key("Esc clears the selection", "\u001b")
	poll("nothing selected", `!window.gcscope.view.sel && !location.search.includes("sel=") && !document.getElementById("object-placeholder").hidden`)
	browsertest.Screenshot(t, page.Ctx, "ui-keys-cleared")
	page.NoErrors(t)
	page.Close()
}

// asTyped makes a key event what Chromium makes of a key pressed on a keyboard: a raw
// key-down, then the character, which is not typed when the page handled the key-down
// (preventDefault). A CDP keyDown would type it anyway: "/" would land in the search box
// it focuses.
func asTyped(p *input.DispatchKeyEventParams) {
	if p.Type == input.DispatchKeyEventTypeKeyDown {
		p.Type = input.DispatchKeyEventTypeRawKeyDown
	}
}

// assertHelpIsTheTable checks, with the help dialog open, that it lists exactly the rows of
// the page's table of shortcuts, in its order, and returns them: [[keys, what they do]].
func assertHelpIsTheTable(t *testing.T, d uiDriver) [][2]string {
	t.Helper()
	var help, table [][2]string
	d.eval(t, `[...document.querySelectorAll("#help-dialog dl.keys dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])`, &help)
	d.eval(t, `window.gcscope.shortcuts()`, &table)
	if len(table) == 0 || !slices.Equal(help, table) {
		t.Errorf("the help lists %q; the page's table of shortcuts is %q", help, table)
	}
	return help
}

// assertHelpListsTravelKeys opens the help of a page with a recording: it lists time
// travel's keys too, from the same table. Esc closes it.
func assertHelpListsTravelKeys(t *testing.T, d uiDriver) {
	t.Helper()
	d.run(t, "? opens the help", chromedp.KeyEvent("?", asTyped), chromedp.WaitVisible(chromedp.CSS("#help-dialog")))
	var labels []string
	for _, row := range assertHelpIsTheTable(t, d) {
		labels = append(labels, row[0])
	}
	for _, k := range []string{"h", "Space", "← / →", "[ / ]"} {
		if !slices.Contains(labels, k) {
			t.Errorf("with a recording, the help lists %q; want time travel's key %s too", labels, k)
		}
	}
	d.run(t, "Esc closes the help", chromedp.KeyEvent("\u001b", asTyped), chromedp.WaitNotVisible(chromedp.CSS("#help-dialog")))
}
