package static_test

// The page on a real engine: gcscope's server (server.New, its page and app.js as embedded
// here) over an engine and the deletion explainer on the package's embedded control plane
// (kube-controller-manager's controllers run: a ReplicaSet makes its Pods), driven in
// headless Chromium with real input events.

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// ui is gcscope on the shared control plane: its engine and its URL.
var ui struct {
	env    *testkit.Env
	engine *gc.GarbageCollector
	base   string
	// historyBase is a second gcscope on the same engine, recording it (--history).
	historyBase string
}

var uiOptions = testkit.Options{Controllers: true, Setup: func(ctx context.Context, e *testkit.Env) error {
	// Slow motion offered, switched off: TestOneCascadeOneCount switches it on.
	engine, err := gc.NewForConfig(e.Config, gc.Options{ActionDelay: slowMotion, SlowMotionOff: true})
	if err != nil {
		return err
	}
	x, err := deletion.New(engine, e.Config)
	if err != nil {
		return err
	}
	if err := e.GoReady(engine.Started(), engine.Run); err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := server.New(server.Options{Engine: engine, Kube: e.Config, Deletions: x, Logger: quiet, Audit: io.Discard})
	e.Go(func(ctx context.Context) error { s.Run(ctx); return nil })
	ts := httptest.NewServer(s)
	e.Cleanup(ts.Close)
	ui.env, ui.engine, ui.base = e, engine, ts.URL
	return startHistoryUI(e, engine, x)
}}

// uiPage is the page on the shared gcscope, a browser of w×h px on it.
type uiPage struct {
	t    *testing.T
	page *browsertest.Page
	ctx  context.Context
}

func openUI(t *testing.T, w, h int, query string) *uiPage {
	t.Helper()
	testkit.Shared(t, uiOptions)
	page := browsertest.Start(t, browsertest.Options{Width: w, Height: h})
	ctx, cancel := context.WithTimeout(page.Ctx, 3*time.Minute)
	t.Cleanup(cancel)
	p := &uiPage{t: t, page: page, ctx: ctx}
	p.run("load the page", chromedp.Navigate(ui.base+"/"+query),
		chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	return p
}

func (p *uiPage) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	for i, a := range actions {
		if err := chromedp.Do(p.ctx, a); err != nil {
			browsertest.Screenshot(p.t, p.page.Ctx, "ui-select-failed")
			p.t.Fatalf("%s: step %d of %d: %v", what, i+1, len(actions), err)
		}
	}
}

// eval evaluates expr (awaiting a promise) into a T.
func eval[T any](p *uiPage, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until polls the page until expr is true.
func (p *uiPage) until(what, expr string) {
	p.t.Helper()
	p.run(what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second)))
}

// shiftClick shift-clicks uid's box, as a user would: a press and a release at its middle,
// the Shift key held, once the page draws it on the canvas.
func (p *uiPage) shiftClick(uid types.UID) {
	p.t.Helper()
	p.until("the box of "+string(uid)+" on screen", `window.gcscope.screenOf(`+strconv.Quote(string(uid))+`) !== null`)
	at := eval[struct{ X, Y float64 }](p, `window.gcscope.screenOf(`+strconv.Quote(string(uid))+`)`)
	p.run("shift-click "+string(uid), chromedp.MouseClickXY(at.X, at.Y, chromedp.ButtonModifiers(chromedp.ModifierShift)))
}

func (p *uiPage) text(sel string) string {
	p.t.Helper()
	return eval[string](p, `document.querySelector(`+strconv.Quote(sel)+`)?.textContent ?? ""`)
}

// uidsJS is a JS array of uids.
func uidsJS(uids ...types.UID) string {
	s := make([]string, len(uids))
	for i, u := range uids {
		s[i] = strconv.Quote(string(u))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := ui.env.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// configMap creates a ConfigMap owned by owners (blocking) and waits for the engine to observe it.
func configMap(t *testing.T, ns, name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true)})
	}
	cm, err := ui.env.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes "+name, func() bool {
		n, ok := ui.engine.Node(cm.UID)
		return ok && n.Observed
	})
	return cm
}

// TestSelectSeveralAndDeleteThem: three ConfigMaps shift-clicked on the canvas are drawn
// selected and counted in the bar; "Delete selected…" predicts their union (a ConfigMap two
// of them own goes, as it would with neither alone, and a dependent of the third), again
// when the policy changes (Orphan orphans those two), and asks "delete 5 objects" to be
// typed; the delete starts each one's deletion, says so per object, and the canvas stops
// drawing all five once the collector has taken the dependents. Screenshots of the
// prediction at 1600 and 800 px.
func TestSelectSeveralAndDeleteThem(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "select-")
	a := configMap(t, ns, "a")
	b := configMap(t, ns, "b")
	shared := configMap(t, ns, "shared", a, b)
	c := configMap(t, ns, "c")
	child := configMap(t, ns, "c-child", c)
	all := []types.UID{a.UID, b.UID, shared.UID, c.UID, child.UID}

	p := openUI(t, 1600, 1000, "?ns="+ns)
	p.until("the page draws the five", `(() => { const d = new Set(window.gcscope.drawnUIDs()); return `+uidsJS(all...)+`.every((u) => d.has(u)); })()`)
	eval[bool](p, `(window.gcscope.recordDrawn(), true)`)
	for _, u := range []types.UID{a.UID, b.UID, c.UID} {
		p.shiftClick(u)
	}
	p.until("three selected, in the bar and on the canvas", `(() => {
		const g = window.gcscope, want = `+uidsJS(a.UID, b.UID, c.UID)+`;
		return JSON.stringify(g.selected()) === JSON.stringify(want) && want.every((u) => g.drawn(u)?.multi) &&
			!g.drawn(`+strconv.Quote(string(shared.UID))+`)?.multi && document.getElementById("selection-count")?.textContent === "3 selected";
	})()`)
	if sel := eval[*string](p, `window.gcscope.view.sel`); sel != nil {
		t.Errorf("shift-clicks selected %s as the one object of the panel; want them only selected together", *sel)
	}

	// The set's prediction: the union, before anything is deleted.
	p.run("open the set dialog", chromedp.Click(chromedp.CSS("#delete-selected")), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")))
	p.until("the prediction", `document.getElementById("delete-summary")?.textContent.startsWith("Background")`)
	if got, want := p.text("#delete-title"), "Delete 3 selected objects"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got, want := p.text("#delete-summary"), "Background: 5 objects will be deleted (the 3 selected and 2 with them)."; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	preview := p.text("#delete-preview")
	for _, want := range []string{"Selected, deleted (3)", "Deleted with them (2)", ns + "/shared", ns + "/c-child"} {
		if !strings.Contains(preview, want) {
			t.Errorf("the prediction does not say %q: %q", want, preview)
		}
	}
	type confirmState struct {
		Typed    bool
		Phrase   string
		Disabled bool
	}
	confirm := func() confirmState {
		return eval[confirmState](p, `({ typed: !document.getElementById("delete-typed").hidden, phrase: document.getElementById("delete-typed-name").textContent,
			disabled: document.getElementById("delete-confirm").disabled })`)
	}
	if got := confirm(); !got.Typed || got.Phrase != "delete 5 objects" || !got.Disabled {
		t.Errorf("confirm: %+v, want the phrase \"delete 5 objects\" asked and Delete disabled until it is typed", got)
	}
	for _, w := range []int64{1600, 800} {
		p.run("resize", chromedp.EmulateViewport(w, 760), browsertest.Frames(3))
		browsertest.Screenshot(t, p.page.Ctx, "ui-delete-set-"+strconv.FormatInt(w, 10))
	}
	p.run("back to 1600 px", chromedp.EmulateViewport(1600, 1000))

	// Another policy, another prediction: with Orphan the two dependents stay.
	p.run("choose Orphan", chromedp.Click(chromedp.CSS(`#delete-form input[value="Orphan"]`)))
	p.until("the Orphan prediction", `document.getElementById("delete-summary")?.textContent.startsWith("Orphan")`)
	if got, want := p.text("#delete-summary"), "Orphan: 3 objects will be deleted (the 3 selected), 2 orphaned."; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := confirm(); got.Phrase != "delete 3 objects" {
		t.Errorf("with Orphan the phrase is %q, want \"delete 3 objects\"", got.Phrase)
	}
	p.run("back to Background", chromedp.Click(chromedp.CSS(`#delete-form input[value="Background"]`)))
	p.until("the Background prediction", `document.getElementById("delete-summary")?.textContent.startsWith("Background")`)

	// Typed, confirmed: each target's outcome, then the cascade in the graph.
	p.run("type the phrase", chromedp.SendKeys(chromedp.CSS("#delete-confirm-input"), "delete 4 objects"))
	if !confirm().Disabled {
		t.Error("Delete enabled with the wrong count typed")
	}
	eval[bool](p, `(document.getElementById("delete-confirm-input").value = "", true)`)
	p.run("type it right", chromedp.SendKeys(chromedp.CSS("#delete-confirm-input"), "delete 5 objects"))
	if confirm().Disabled {
		t.Fatal("Delete still disabled with \"delete 5 objects\" typed")
	}
	p.run("delete", chromedp.Click(chromedp.CSS("#delete-confirm")))
	p.until("each target's outcome", `document.getElementById("delete-outcome-summary")?.textContent === "Background: 3 deletions started of 3."`)
	browsertest.Screenshot(t, p.page.Ctx, "ui-delete-set-outcomes")
	if got := eval[[]string](p, `[...document.querySelectorAll("#delete-outcomes li")].map((li) => li.dataset.outcome)`); len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return s != "started" }) {
		t.Errorf("outcomes %q, want 3 started", got)
	}
	p.run("close", chromedp.Click(chromedp.CSS("#delete-cancel")), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	p.until("none of the five drawn", `(() => { const d = new Set(window.gcscope.drawnUIDs()); return `+uidsJS(all...)+`.every((u) => !d.has(u)); })()`)
	if got := eval[[]string](p, `window.gcscope.selected()`); len(got) != 0 || !eval[bool](p, `document.getElementById("selection-bar").hidden || document.getElementById("selection-count").hidden`) {
		t.Errorf("after the delete, still selected: %q", got)
	}
	for _, cm := range []*corev1.ConfigMap{a, b, shared, c, child} {
		if _, err := ui.env.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s: %v, want it gone", cm.Name, err)
		}
	}
	p.page.NoErrorsExcept(t, explainOvertaken)
}

// TestSelectAllMatching: with the graph filtered to a namespace, the search's list offers
// every match drawn ("Select all 3 matching", the web-* ConfigMaps alone); the bar then
// offers the rest the namespace filter keeps, the objects named only as owners left out;
// Esc clears the selection, and the page's other Esc steps wait for the next press.
func TestSelectAllMatching(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "matching-")
	root := configMap(t, ns, "root")
	var web, db []types.UID
	for i := range 3 {
		web = append(web, configMap(t, ns, "web-"+strconv.Itoa(i), root).UID)
	}
	for i := range 2 {
		db = append(db, configMap(t, ns, "db-"+strconv.Itoa(i), root).UID)
	}
	p := openUI(t, 1600, 1000, "?ns="+ns)
	p.until("the page draws them", `(() => { const d = new Set(window.gcscope.drawnUIDs()); return `+uidsJS(append(append([]types.UID{root.UID}, web...), db...)...)+`.every((u) => d.has(u)); })()`)

	// From the search: its list's last row.
	p.run("search web-", chromedp.Click(chromedp.CSS("#search")), chromedp.SendKeys(chromedp.CSS("#search"), "web-"),
		chromedp.WaitVisible(chromedp.CSS("#search-select-all")))
	if got := p.text("#search-select-all b"); got != "Select all 3 matching" {
		t.Errorf("the search list offers %q, want \"Select all 3 matching\"", got)
	}
	p.run("select the matches", chromedp.Click(chromedp.CSS("#search-select-all")))
	p.until("the three web-* selected", `(() => { const s = window.gcscope.selected().sort(); return JSON.stringify(s) === JSON.stringify(`+uidsJS(web...)+`.sort()); })()`)
	if got := p.text("#selection-count"); got != "3 selected" {
		t.Errorf("the bar says %q, want \"3 selected\"", got)
	}

	// From the filter: the search emptied (Esc in the box), the bar offers what the namespace keeps.
	p.run("empty the search", chromedp.Click(chromedp.CSS("#search")), chromedp.KeyEvent("\u001b"))
	p.until("the bar offers the namespace", `!document.getElementById("select-matching").hidden && window.gcscope.view.q === ""`)
	want := eval[[]string](p, `window.gcscope.drawnUIDs().filter((u) => !window.gcscope.store.nodes.get(u).virtual).sort()`)
	if len(want) < 6 {
		t.Fatalf("drawn in %s: %q, want at least the six ConfigMaps", ns, want)
	}
	if got, wantText := p.text("#select-matching"), "Select all "+strconv.Itoa(len(want))+" matching"; got != wantText {
		t.Errorf("the bar offers %q, want %q", got, wantText)
	}
	p.run("select all matching", chromedp.Click(chromedp.CSS("#select-matching")))
	p.until("everything drawn selected", `JSON.stringify(window.gcscope.selected().sort()) === JSON.stringify(`+jsStrings(want)+`)`)
	if !eval[bool](p, `document.getElementById("select-matching").hidden`) {
		t.Error("the bar still offers to select what is all selected")
	}
	// Esc on the page: the selection first; the filter stays for the next Esc.
	p.run("Esc", chromedp.KeyEvent("\u001b"))
	p.until("the selection cleared", `window.gcscope.selected().length === 0`)
	if got := eval[[]string](p, `window.gcscope.view.ns`); !slices.Equal(got, []string{ns}) {
		t.Errorf("after one Esc the namespace filter is %q, want it kept (%s)", got, ns)
	}
	browsertest.Screenshot(t, p.page.Ctx, "ui-select-matching")
	p.page.NoErrorsExcept(t, explainOvertaken)
}

// TestTheDialogSaysWhatComesBack: a Pod of a live ReplicaSet, deleted from its panel's
// dialog, is said to come back (its ReplicaSet replaces it); screenshots at 1600 and 800 px.
func TestTheDialogSaysWhatComesBack(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ns := namespace(t, "comes-back-")
	labels := map[string]string{"app": "web"}
	rs, err := ui.env.Client.AppsV1().ReplicaSets(ns).Create(context.Background(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod types.UID
	testkit.Eventually(t, "a Pod of the ReplicaSet in the graph", func() bool {
		n, ok := ui.engine.Node(rs.UID)
		for _, d := range n.Dependents {
			if ok && d.Kind == "Pod" {
				pod = d.UID
				return true
			}
		}
		return false
	})
	p := openUI(t, 1600, 1000, "?ns="+ns+"&sel="+string(pod))
	p.run("open the Pod's dialog", chromedp.WaitVisible(chromedp.CSS("#delete-button")), chromedp.Click(chromedp.CSS("#delete-button")),
		chromedp.WaitVisible(chromedp.CSS("#delete-dialog")))
	p.until("what comes back", `!!document.getElementById("delete-recreated")`)
	if got := p.text("#delete-recreated"); !strings.Contains(got, "Comes back (1)") || !strings.Contains(got, "ReplicaSet web") {
		t.Errorf("comes back: %q, want the Pod, brought back by ReplicaSet web", got)
	}
	for _, w := range []int64{1600, 800} {
		p.run("resize", chromedp.EmulateViewport(w, 760), browsertest.Frames(3))
		browsertest.Screenshot(t, p.page.Ctx, "ui-delete-comes-back-"+strconv.FormatInt(w, 10))
	}
	p.run("cancel", chromedp.Click(chromedp.CSS("#delete-cancel")), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	p.page.NoErrorsExcept(t, explainOvertaken)
}

// explainOvertaken: the one console error a page that follows a deletion cannot avoid, an
// explanation asked of an object the deletion overtook (404).
func explainOvertaken(message string) bool {
	return strings.Contains(message, "status of 404") && strings.Contains(message, "/explain")
}

func jsStrings(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ",") + "]"
}
