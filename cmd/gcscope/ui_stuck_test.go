package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// stuckFinalizer holds the namespace's ConfigMap; stuckManager is the field manager that
// adds it (as a controller's client would, with its FieldManager).
const (
	stuckFinalizer = "example.com/hold"
	stuckManager   = "acme-controller"
)

// titleChange is one change of a namespace box's title as the canvas drew it
// (window.gcscope.titleLog): text "" once the box is no longer drawn.
type titleChange struct {
	Text     string  `json:"text"`
	Caption  string  `json:"caption"`
	InLayout bool    `json:"inLayout"`
	T        float64 `json:"t"`
}

// TestUIStuckNamespace deletes a namespace whose ConfigMap another controller's finalizer
// holds, from the delete dialog, in headless Chromium against gcscope on its embedded
// cluster (whose kube-controller-manager runs the namespace controller), and checks what
// the page drew, frame by frame:
//   - the dialog predicts every object of the namespace, step by step (its Pods first),
//     says the order in words and that the ConfigMap will wait on its finalizer;
//   - the namespace's box goes Terminating with its progress ("5 of 7 gone": the Namespace and its content; the page saw
//     it begin, so it knows how many there were), never going back, says what holds it,
//     and the cascades strip names it "namespace deletion"; every state the stream
//     delivered for its members was drawn within 100 ms;
//   - the Namespace's panel names the held ConfigMap, its finalizer and acme-controller,
//     the field manager that added it, and its conditions; the ConfigMap's panel says who
//     added the finalizer, whether that controller looks alive and the risk of removing it;
//   - the Stuck view (`s`) lists both at the threshold 0s, the finalizer's group with its
//     origin, and a click selects an object;
//   - once the finalizer is removed, the namespace controller finishes and the box goes.
//
// Then an APIService whose Service does not exist makes discovery fail: the banner names
// the group version, since when and why, with the APIService's problem; deleting it
// clears the banner.
func TestUIStuckNamespace(t *testing.T) {
	parallelUI(t)
	// Discovery reread every 2 s, not 30: the banner comes and goes within the test.
	base, kubeconfig := startEmbedded(t, "--demo=false", "--gc-discovery-period=2s")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "ui-stuck"

	// --- The namespace: two ConfigMaps (one held by acme-controller's finalizer) and two
	// Pods, besides what the controllers add (kube-root-ca.crt, the default ServiceAccount).
	nsObj, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsUID := string(nsObj.UID)
	testkit.Eventually(t, "the default ServiceAccount", func() bool {
		_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for _, name := range []string{"settings", "held"} {
		// With data: an object created with nothing the apiserver tracks (a name only) gets
		// no managedFields entry, and then none is recorded for its updates either.
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var podUIDs []string
	for _, name := range []string{"worker-1", "worker-2"} {
		p, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none:1"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podUIDs = append(podUIDs, string(p.UID))
	}
	held, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["`+stuckFinalizer+`"]}}`), metav1.PatchOptions{FieldManager: stuckManager})
	if err != nil {
		t.Fatal(err)
	}
	heldUID := string(held.UID)
	// Who added the finalizer comes from the object's managedFields.
	origin := stuckManager
	if !slices.ContainsFunc(held.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == stuckManager }) {
		t.Fatalf("the apiserver recorded no managedFields entry of %s for ConfigMap held (%d entries)", stuckManager, len(held.ManagedFields))
	}
	testkit.Eventually(t, "the engine to see the namespace's 6 objects", func() bool {
		return len(apiUIDs(t, base+"/api/v1/graph?limit=100000&namespace="+ns)) == 6
	})
	members := apiUIDs(t, base+"/api/v1/graph?limit=100000&namespace="+ns)
	total := len(members)

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-stuck-failed"}
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	text := func(selector string) string {
		t.Helper()
		var s string
		d.eval(t, `document.querySelector(`+strconv.Quote(selector)+`)?.textContent ?? ""`, &s)
		return s
	}
	drawnTitle := `(window.gcscope.nsDrawn(` + jsQuoted(ns) + `) || {text: "", caption: ""})`

	// The namespace alone, its Namespace selected; the canvas records what it draws.
	d.run(t, "load the namespace", chromedp.Navigate(base+"/?ns="+ns+"&sel="+nsUID), uiReady,
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	var ok bool
	d.eval(t, `(window.gcscope.recordDrawn(), window.gcscope.trace(`+jsArray(members)+`), true)`, &ok)
	poll("the page holds the namespace's objects", fmt.Sprintf(`window.gcscope.live.byNamespace.get(%s)?.size === %d`, jsQuoted(ns), total), 30*time.Second)
	poll("the box drawn", drawnTitle+`.text.startsWith("`+ns+`")`, 10*time.Second)
	poll("the Namespace's panel", `(document.querySelector("#ns-deletion")?.textContent || "").includes("Content: 6 objects")`, 20*time.Second)

	// --- The delete dialog: every object of the namespace, step by step.
	d.run(t, "open the dialog", click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")))
	poll("the prediction", `(document.querySelector("#delete-summary")?.textContent || "").startsWith("Background")`, 30*time.Second)
	if s, want := text("#delete-summary"), fmt.Sprintf("Background: %d objects will be deleted", total+1); !strings.HasPrefix(s, want) {
		t.Errorf("the dialog says %q; want %q (the namespace and everything in it)", s, want)
	}
	if s := text("#delete-order"); !strings.Contains(s, "Pods first") {
		t.Errorf("the dialog's order: %q", s)
	}
	var steps [][2]string
	d.eval(t, `[...document.querySelectorAll("#delete-preview details.deleted[data-step]")].map((e) => [e.dataset.step, e.textContent])`, &steps)
	if len(steps) < 3 || steps[0][0] != "1" || !strings.Contains(steps[0][1], "worker-1") || !strings.Contains(steps[0][1], "worker-2") ||
		!strings.Contains(steps[1][1], "held") || !strings.Contains(steps[2][1], "Namespace "+ns) {
		t.Errorf("the dialog's steps (want the Pods, then the rest, then the namespace): %q", steps)
	}
	if s := text("#delete-preview details.waiting"); !strings.Contains(s, "held") || !strings.Contains(s, stuckFinalizer) {
		t.Errorf("the dialog does not say the ConfigMap will wait on %s: %q", stuckFinalizer, s)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-dialog")
	d.run(t, "delete the namespace", click("#delete-confirm"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))

	// --- Terminating: the box says so with its progress, and what holds it.
	// The Namespace and its content are the deletion's members: all of the content but the
	// held ConfigMap gone, the Namespace not yet.
	progress := fmt.Sprintf("%d of %d gone", total-1, total+1)
	poll("the box Terminating", drawnTitle+`.text.includes("Terminating")`, 20*time.Second)
	poll("the box held by the finalizer", drawnTitle+`.text.includes("`+progress+`") && `+drawnTitle+`.caption.includes("held by finalizer `+stuckFinalizer+`")`, 60*time.Second)
	poll("the cascades strip", `(() => { const s = document.querySelector('#cascades [data-policy="Namespace"][data-state="running"]')?.textContent || "";
		return s.includes("namespace deletion") && s.includes("`+progress+`"); })()`, 5*time.Second)
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-terminating")

	// The Namespace's panel: the held ConfigMap, its finalizer and who added it.
	// The explanation is asked for again every second: until it is of the content deleted
	// but the ConfigMap, it says the namespace controller has yet to delete it all.
	poll("the namespace's report", `(() => { const s = document.querySelector("#ns-deletion")?.textContent || "";
		return s.includes("Terminating") && s.includes(`+jsQuoted(stuckFinalizer)+`) && s.includes(`+jsQuoted(origin)+`) &&
			(document.querySelector("#next-step")?.textContent || "").includes(`+jsQuoted(stuckFinalizer)+`) && !!document.querySelector("#ns-conditions li.true"); })()`, 30*time.Second)
	if s := text("#next-step"); !strings.Contains(s, stuckFinalizer) || !strings.Contains(s, "held") {
		t.Errorf("the namespace's next step: %q", s)
	}
	var facts struct {
		Holder     bool   `json:"holder"`
		Finalizers string `json:"finalizers"`
		True       int    `json:"true"`
		ByKind     string `json:"byKind"`
	}
	d.eval(t, `({ holder: !!document.querySelector('#ns-holders a[data-uid="`+heldUID+`"]'), finalizers: document.querySelector("#ns-finalizers")?.textContent || "",
		true: document.querySelectorAll("#ns-conditions li.true").length, byKind: document.querySelector("#ns-bykind")?.textContent || "" })`, &facts)
	if !facts.Holder || !strings.Contains(facts.Finalizers, "kubernetes") || facts.True == 0 || !strings.Contains(facts.ByKind, "ConfigMap") {
		t.Errorf("the namespace's report: %+v", facts)
	}
	d.eval(t, `(document.querySelector("#ns-deletion").scrollIntoView({block: "start"}), true)`, &ok)
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-namespace-panel")

	// The holder is a link: its panel says who added the finalizer, the controller's
	// liveness and the risk, beside the command that would release it.
	d.run(t, "select the held ConfigMap", click(`#ns-holders a[data-uid="`+heldUID+`"]`))
	poll("the ConfigMap's origin", `window.gcscope.view.sel === "`+heldUID+`" && (document.querySelector('#explain .hold .origin')?.textContent || "").includes(`+jsQuoted(origin)+`)`, 30*time.Second)
	if s := text("#explain .hold"); !strings.Contains(s, origin) || !strings.Contains(s, "Risk if removed by hand") || !strings.Contains(s, "kubectl patch") {
		t.Errorf("the ConfigMap's hold: %q", s)
	}
	var liveness string
	d.eval(t, `document.querySelector("#explain .origin .live")?.textContent || ""`, &liveness)
	if liveness == "" {
		t.Error("the ConfigMap's hold does not say whether acme-controller looks alive")
	}
	d.eval(t, `(document.querySelector("#explain .hold").scrollIntoView({block: "start"}), true)`, &ok)
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-held-panel")

	// --- The Stuck view, at 0s: the namespace and the held ConfigMap, by cause.
	d.run(t, "the stuck view (s)", chromedp.KeyEvent("s", asTyped), chromedp.WaitVisible(chromedp.CSS("#stuck-panel")),
		click(`#stuck-panel [data-threshold="0s"]`))
	poll("the stuck list", `!!document.querySelector('#stuck-groups .stuck-group[data-cause="finalizer"][data-finalizer="`+stuckFinalizer+`"] li[data-uid="`+heldUID+`"]')
		&& !!document.querySelector('#stuck-groups .stuck-group li[data-uid="`+nsUID+`"]')`, 30*time.Second)
	if s := text(`#stuck-groups .stuck-group[data-cause="finalizer"]`); !strings.Contains(s, origin) || !strings.Contains(s, "for ") {
		t.Errorf("the finalizer's group: %q", s)
	}
	poll("the badge counts both", `Number(document.querySelector("#stuck-count").textContent) >= 2`, 5*time.Second)
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-view")
	d.run(t, "select from the stuck view", click(`#stuck-groups .stuck-group li[data-uid="`+heldUID+`"] a`))
	poll("the ConfigMap selected, its panel shown", `window.gcscope.view.sel === "`+heldUID+`" && !document.querySelector("#object-panel").hidden`, 10*time.Second)

	// --- A page opened mid-deletion cannot know what went before it: "2 left" (the held
	// ConfigMap and the Namespace itself, a member as in "5 of 7 gone"), no "of".
	reopened, closeReopened := chromedp.NewContext(page.Ctx)
	// Its first action opens the tab, which lives as long as that action's context: this one.
	if err := chromedp.Do(reopened); err != nil {
		t.Fatal(err)
	}
	d2 := uiDriver{ctx: reopened, failShot: "ui-stuck-failed"}
	// Opened at ?tab=stuck, as an alert's runbook link opens it: on the Stuck tab.
	d2.run(t, "open a second page mid-deletion", chromedp.Navigate(base+"/?ns="+ns+"&sel="+heldUID+"&tab=stuck"), uiReady,
		chromedp.WaitVisible(chromedp.CSS("#stuck-panel")))
	d2.eval(t, `(window.gcscope.recordDrawn(), true)`, &ok)
	d2.run(t, "its box says what is left", chromedp.Poll[chromedp.Void](drawnTitle+`.text.includes("Terminating") && `+drawnTitle+`.text.includes("2 left")`,
		chromedp.WithPollingTimeout(20*time.Second)))
	var reopenedTitle string
	d2.eval(t, drawnTitle+`.text`, &reopenedTitle)
	if strings.Contains(reopenedTitle, " of ") {
		t.Errorf("a page opened mid-deletion drew %q: it cannot know how many there were", reopenedTitle)
	}
	browsertest.Screenshot(t, reopened, "ui-stuck-reopened")
	closeReopened()

	// --- The finalizer removed: the namespace controller finishes, and the box goes.
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
		metav1.PatchOptions{FieldManager: stuckManager}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the namespace to go", func() bool {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	poll("the box gone", `(() => { const l = window.gcscope.titleLog(`+jsQuoted(ns)+`); const e = l[l.length - 1]; return !!e && e.text === "" && !e.inLayout; })()`, 30*time.Second)
	browsertest.Screenshot(t, page.Ctx, "ui-stuck-gone")

	// Frame by frame: never Terminating before the delete, then the count over the 6 the
	// page saw at the start, going only up, down to all gone, and then no box.
	var titles []titleChange
	d.eval(t, `window.gcscope.titleLog(`+jsQuoted(ns)+`)`, &titles)
	assertNamespaceDrawn(t, titles, ns, total)
	var trace traceLog
	d.eval(t, `window.gcscope.traceLog()`, &trace)
	assertDrawnInTime(t, trace)
	for _, p := range podUIDs {
		if _, drawn := firstDrawn(trace, p, "removed"); !drawn {
			t.Errorf("Pod %s was never drawn removed", p)
		}
	}

	// --- Discovery failing: an APIService whose Service does not exist.
	discoveryBanner(t, d, kubeconfig)

	page.NoErrorsExcept(t, explainOvertaken)
	page.Close()
}

// assertNamespaceDrawn checks the titles drawn for namespace ns: its plain title until
// the delete, then "Terminating · N of total+1 gone" (its content and the Namespace) with N
// never going down (the page saw the deletion begin: it has its baseline and never says only
// "K left"), N at total (the content all gone) before the box goes, and no box after.
func assertNamespaceDrawn(t *testing.T, titles []titleChange, ns string, total int) {
	t.Helper()
	count := regexp.MustCompile(`(\d+) of (\d+) gone`)
	started, gone, heldShown, allGone, offScreen := false, -1, false, false, 0
	for i, c := range titles {
		switch {
		case c.Text == "" && c.InLayout:
			offScreen++ // the camera moved off it (selecting an object centres on it)
			continue
		case c.Text == "":
			if i != len(titles)-1 {
				t.Errorf("the box of %s was drawn again after it had gone (%d of %d changes): %+v", ns, i, len(titles), titles)
			}
			continue
		case !strings.Contains(c.Text, "Terminating") && !strings.Contains(c.Text, "deleted"):
			if started {
				t.Errorf("after Terminating, the box of %s was drawn %q at %.0f ms", ns, c.Text, c.T)
			}
			continue
		}
		started = true
		if strings.Contains(c.Text, "left") {
			t.Errorf("the page saw the deletion begin, yet drew %q (no baseline)", c.Text)
		}
		m := count.FindStringSubmatch(c.Text)
		if m == nil {
			t.Errorf("the box drawn %q at %.0f ms: no progress", c.Text, c.T)
			continue
		}
		n, of := atoi(m[1]), atoi(m[2])
		if of != total+1 { // the Namespace and its content
			t.Errorf("the box drawn %q: the namespace had %d objects, and is one itself", c.Text, total)
		}
		if n < gone {
			t.Errorf("the progress went back from %d to %d gone at %.0f ms", gone, n, c.T)
		}
		gone = n
		heldShown = heldShown || (n == total-1 && strings.Contains(c.Caption, "held by finalizer "+stuckFinalizer))
		allGone = allGone || n >= total // its content all gone (the Namespace goes with its box)
	}
	last := titleChange{}
	if len(titles) > 0 {
		last = titles[len(titles)-1]
	}
	if !started || !heldShown || !allGone || last.Text != "" {
		t.Errorf("the box of %s: Terminating drawn %v, held by %s drawn %v, all %d gone drawn %v, gone at the end %v; changes: %+v",
			ns, started, stuckFinalizer, heldShown, total, allGone, last.Text == "", titles)
	}
	t.Logf("the box of %s: %d changes drawn (%d times off screen)", ns, len(titles), offScreen)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// discoveryBanner creates an APIService whose Service does not exist, waits for the
// banner to name its group version with the APIService's problem, deletes it, and waits
// for the banner to go. Each wait can take a discovery period (the test sets 2 s).
func discoveryBanner(t *testing.T, d uiDriver, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	const name, gv = "v1.broken.example.com", "broken.example.com/v1"
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": "broken.example.com", "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": "default", "name": "no-such-service", "port": int64(443)}},
	}}
	ctx := context.Background()
	if _, err := apiServices.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := false
	defer func() {
		if !deleted {
			apiServices.Delete(ctx, name, metav1.DeleteOptions{})
		}
	}()
	c, cancel := context.WithTimeout(d.ctx, 2*time.Minute)
	err = chromedp.Do(c, chromedp.Poll[chromedp.Void](`(() => { const b = document.querySelector("#discovery-banner");
		return !!b && !b.hidden && !!b.querySelector('li[data-gv="`+gv+`"]') && !!b.querySelector('.apiservice[data-name="`+name+`"] .problem'); })()`,
		chromedp.WithPollingTimeout(2*time.Minute)))
	cancel()
	if err != nil {
		browsertest.Screenshot(t, d.ctx, "ui-stuck-failed")
		t.Fatalf("the discovery banner: %v", err)
	}
	var banner string
	d.eval(t, `document.querySelector("#discovery-banner").textContent`, &banner)
	if !strings.Contains(banner, "since") || !strings.Contains(banner, "no-such-service") {
		t.Errorf("the banner does not say since when and why: %q", banner)
	}
	browsertest.Screenshot(t, d.ctx, "ui-stuck-discovery-banner")
	if err := apiServices.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	c, cancel = context.WithTimeout(d.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](`document.querySelector("#discovery-banner").hidden`, chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		browsertest.Screenshot(t, d.ctx, "ui-stuck-failed")
		t.Fatalf("the banner stays after discovery recovered: %v", err)
	}
}
