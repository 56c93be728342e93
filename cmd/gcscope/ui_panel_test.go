package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/cluster/demo"
	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// panelDependents is the size of the cascade the panel follows: enough for lists that
// must be virtualized and an explanation that must be summarized, and a cascade that
// lasts (about 20 s at the demo's pace) without holding the rest of the test behind it.
const panelDependents = 600

// TestUIPanelWordsAndOffline drives the object panel and the delete dialog in headless
// Chromium against gcscope on its embedded default:
//   - an owner of 600 blocking dependents, deleted in the foreground and opened by a
//     reload in the middle of its cascade, gets the engine's explanation (not "asking the
//     engine…" forever), told as a summary ("N blocking dependents…; first 10: …, and N
//     more") in virtualized lists, and its remaining count follows the engine's within
//     about a second;
//   - the demo's stuck Pod says which finalizer holds it, who removes it, and the exact
//     kubectl command that would release it (checked by applying that very patch);
//     foregroundDeletion is never shown as another controller's hold;
//   - the delete dialog of an object already being deleted says so, and what holds it;
//   - a read-only gcscope still previews a delete (the dry run) and offers no confirm;
//   - when gcscope stops, the page dims the graph and says it is offline.
func TestUIPanelWordsAndOffline(t *testing.T) {
	browsertest.Require(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	p := startProcess(t, dir, nil, binary, "--listen", addr, "--data-dir", filepath.Join(dir, "data"),
		"--write-kubeconfig", kubeconfig, "--demo", "--log-level", "warn")
	p.waitReady(t, addr)
	stopped := false
	defer func() {
		if !stopped {
			p.stop(t, syscall.SIGTERM)
		}
	}()
	base := "http://" + addr
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-panel-failed"}
	text := func(selector string) string {
		t.Helper()
		var s string
		d.eval(t, `document.querySelector(`+strconv.Quote(selector)+`)?.textContent ?? ""`, &s)
		return s
	}
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	}

	// --- An owner of 600 blocking dependents, in the middle of its foreground cascade.
	const ns = "panel-cascade"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The engine sees the owner first, so that its dependents arrive with a known owner.
	testkit.Eventually(t, "the engine to see the owner", func() bool { return objectDependents(base, owner.UID) >= 0 })
	yes := true
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "big", UID: owner.UID, Controller: &yes, BlockOwnerDeletion: &yes}
	var g errgroup.Group
	g.SetLimit(16)
	for i := range panelDependents {
		g.Go(func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("part-%04d", i), OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine to see all its dependents", func() bool { return objectDependents(base, owner.UID) == panelDependents })
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "big", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the cascade to start", func() bool {
		n := engineBlockers(base, owner.UID)
		return n > 0 && n < panelDependents
	})

	// A reload in the middle of the cascade, with the owner selected: the engine's
	// explanation arrives, summarized.
	ownerSel := base + "/?sel=" + string(owner.UID)
	d.run(t, "reload with the owner selected", chromedp.Navigate(ownerSel), uiReady)
	poll("the owner's explanation", `(document.querySelector("#blocker-summary")?.textContent || "").includes("blocking dependent")`, 10*time.Second)
	words := text("#explain p.word")
	summaryWords := regexp.MustCompile(`^waiting for [\d,]+ blocking dependents?(, [\d,]+ in flight)?; first 10: ((?i:configmap) part-\d{4} \([a-z ]+\), ){10}and [\d,]+ more$`)
	if !summaryWords.MatchString(words) {
		t.Errorf("the owner's words are not a summary with the first 10: %q", words)
	}
	var rows struct{ Blockers, Dependents int }
	d.eval(t, `({ blockers: document.querySelectorAll("#blockers-list .vlist-row").length, dependents: document.querySelectorAll("#dependents-list .vlist-row").length })`, &rows)
	if rows.Blockers == 0 || rows.Blockers > 40 || rows.Dependents == 0 || rows.Dependents > 40 {
		t.Errorf("%+v rows in the DOM for about 600 blockers and dependents: want a virtualized few", rows)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-panel-cascade")

	// The panel's remaining count follows the engine's: within about a second of the
	// engine counting N, the panel says N or fewer (the cascade only goes down).
	leadingCount := regexp.MustCompile(`^([\d,]+) blocking dependent`)
	panelCount := func() int {
		m := leadingCount.FindStringSubmatch(text("#blocker-summary"))
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		return n
	}
	first := panelCount()
	var last int
	for range 4 {
		engine := engineBlockers(base, owner.UID)
		at := time.Now()
		if engine <= 0 {
			break // over already
		}
		if err := testkit.Poll(ctx, 1500*time.Millisecond, func() bool { last = panelCount(); return last >= 0 && last <= engine }); err != nil {
			browsertest.Screenshot(t, page.Ctx, "ui-panel-stale")
			t.Fatalf("1.5 s after the engine counted %d blocking dependents, the panel still says %d", engine, last)
		}
		t.Logf("engine %d → panel %d after %v", engine, last, time.Since(at).Round(time.Millisecond))
		// The next sample once the cascade has moved on (or is over).
		testkit.Eventually(t, "the cascade to move on", func() bool { return engineBlockers(base, owner.UID) < engine })
	}
	if last >= first {
		t.Errorf("the panel's count stayed at %d (first %d) while the cascade went on", last, first)
	}

	// --- The demo's stuck Pod: held by a finalizer of another controller.
	pods, err := kube.CoreV1().Pods(demo.NamespaceStuck).List(ctx, metav1.ListOptions{LabelSelector: "app=stuck"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the demo's stuck Pod: %v, %d pods", err, len(pods.Items))
	}
	pod := pods.Items[0]
	idx := slices.Index(pod.Finalizers, demo.HoldFinalizer)
	if pod.DeletionTimestamp == nil || idx < 0 {
		t.Fatalf("the stuck Pod is not being deleted with %s: %v %v", demo.HoldFinalizer, pod.DeletionTimestamp, pod.Finalizers)
	}
	d.run(t, "select the stuck pod", chromedp.Navigate(base+"/?sel="+string(pod.UID)), uiReady)
	poll("the pod's release command", `!!document.querySelector("#explain .release-cmd")`, 20*time.Second)
	path := fmt.Sprintf("/metadata/finalizers/%d", idx)
	patch := fmt.Sprintf(`[{"op":"test","path":%q,"value":%q},{"op":"remove","path":%q}]`, path, demo.HoldFinalizer, path)
	wantCmd := fmt.Sprintf("kubectl patch pods %s -n %s --type=json -p '%s'", pod.Name, demo.NamespaceStuck, patch)
	if got := text("#explain .release-cmd"); got != wantCmd {
		t.Errorf("release command\n%s\nwant\n%s", got, wantCmd)
	}
	if held := text("#explain .hold"); !strings.Contains(held, "Held by finalizer "+demo.HoldFinalizer) ||
		!strings.Contains(held, "Who removes it:") || !strings.Contains(held, "demo.gcscope.io") || !strings.Contains(held, "never runs it") {
		t.Errorf("the hold does not say which finalizer, who removes it, and that gcscope never runs the command: %q", held)
	}
	d.eval(t, `document.querySelector("#explain .hold").scrollIntoView({block: "center"}), true`, new(bool))
	browsertest.Screenshot(t, page.Ctx, "ui-panel-finalizer-hold")

	// Its delete dialog says it is already being deleted, and what holds it.
	d.run(t, "the stuck pod's dialog", click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-state")))
	poll("the dialog names the hold", `(document.querySelector("#delete-state")?.textContent || "").includes("held by finalizer `+demo.HoldFinalizer+` (")`, 10*time.Second)
	if s := text("#delete-state"); !regexp.MustCompile(`Already being deleted \(since \d\d:\d\d:\d\d\)`).MatchString(s) {
		t.Errorf("the dialog of a Pod being deleted says %q", s)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-panel-dialog-being-deleted")
	d.run(t, "close the dialog", click("#delete-cancel"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))

	// The stuck Deployment, deleted in the foreground: foregroundDeletion is the
	// collector's own step, never a hold; its dialog says what it waits for.
	dep, err := kube.AppsV1().Deployments(demo.NamespaceStuck).Get(ctx, "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.run(t, "select the stuck deployment", chromedp.Navigate(base+"/?sel="+string(dep.UID)), uiReady)
	poll("its explanation", `(document.querySelector("#explain")?.textContent || "").includes("Next step")`, 20*time.Second)
	var holds []string
	d.eval(t, `[...document.querySelectorAll("#explain .hold, #explain code.hold")].map(e => e.textContent)`, &holds)
	if slices.ContainsFunc(holds, func(s string) bool { return strings.Contains(s, "foregroundDeletion") }) {
		t.Errorf("foregroundDeletion shown as a hold: %q", holds)
	}
	if s := text("#explain"); !strings.Contains(s, "foregroundDeletion is the garbage collector's own finalizer") || !strings.Contains(s, "1 blocking dependent") {
		t.Errorf("the stuck Deployment's explanation: %q", s)
	}
	d.run(t, "the stuck deployment's dialog", click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-state")))
	poll("the dialog says what it waits for", `(document.querySelector("#delete-state")?.textContent || "").includes("in the foreground, waiting for 1 blocking dependent")`, 10*time.Second)
	d.run(t, "close the dialog", click("#delete-cancel"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))

	// The command is exactly right: the same patch releases the Pod, and the cascade
	// ends. (The test applies it; gcscope only shows it.)
	if _, err := kube.CoreV1().Pods(demo.NamespaceStuck).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("applying the shown patch: %v", err)
	}
	err = testkit.Poll(ctx, time.Minute, func() bool {
		_, err := kube.AppsV1().Deployments(demo.NamespaceStuck).Get(ctx, "stuck", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err != nil {
		t.Errorf("after the shown patch, the stuck Deployment is still there: %v", err)
	}

	// --- Read-only: the dialog still previews a delete, and offers no confirm.
	roAddr := freeAddr(t)
	ro := startProcess(t, dir, nil, binary, "--listen", roAddr, "--kubeconfig", kubeconfig, "--read-only",
		"--gc-mode", "shadow", "--log-level", "warn")
	ro.waitReady(t, roAddr)
	web, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		ro.stop(t, syscall.SIGTERM)
		t.Fatal(err)
	}
	d.run(t, "read-only: the page", chromedp.Navigate("http://"+roAddr+"/?sel="+string(web.UID)), uiReady)
	start := time.Now()
	poll("read-only: the explanation", `(document.querySelector("#explain")?.textContent || "").includes("Next step")`, 30*time.Second)
	t.Logf("read-only: the explanation came in %v", time.Since(start).Round(time.Millisecond))
	d.run(t, "read-only: preview a delete", chromedp.WaitVisible(chromedp.CSS("#delete-button")), click("#delete-button"),
		chromedp.WaitVisible(chromedp.CSS("#delete-dialog")))
	poll("the read-only dry run", `(document.querySelector("#delete-summary")?.textContent || "").startsWith("Background: ")`, 30*time.Second)
	var roState struct {
		Confirm bool   `json:"confirm"`
		Note    string `json:"note"`
		Button  string `json:"button"`
		Preview int    `json:"preview"`
	}
	d.eval(t, `({ confirm: !!document.querySelector("#delete-confirm"), note: document.querySelector("#delete-read-only")?.textContent || "",
		button: document.querySelector("#delete-button").textContent, preview: window.gcscope.renderer.preview.size })`, &roState)
	if roState.Confirm || !strings.Contains(roState.Note, "read-only") || roState.Button != "Preview delete…" || roState.Preview < 2 {
		t.Errorf("read-only dialog: %+v; want no confirm, a read-only note, a preview button, and the preview drawn", roState)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-panel-read-only-preview")
	d.run(t, "close the dialog", click("#delete-cancel"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	ro.stop(t, syscall.SIGTERM)

	// --- Offline: gcscope stops under the page; the graph is dimmed and the page says so.
	d.run(t, "back to the first gcscope", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	// Before the stream drops, which the browser logs as errors.
	page.NoErrorsExcept(t, explainOvertaken)
	p.stop(t, syscall.SIGTERM)
	stopped = true
	poll("the page says it is offline", `document.body.classList.contains("offline") && !document.getElementById("offline-note")?.hidden &&
		parseFloat(getComputedStyle(document.getElementById("graph")).opacity) < 0.6`, 15*time.Second)
	if s := text("#offline-note"); !strings.Contains(s, "Offline") || !strings.Contains(s, "may be stale") {
		t.Errorf("offline note: %q", s)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-panel-offline")
	page.Close()
}

// objectDependents is how many dependents gcscope's engine knows uid to have, -1 if it
// does not know uid.
func objectDependents(base string, uid types.UID) int {
	var o struct {
		Dependents []json.RawMessage `json:"dependents"`
	}
	if getJSON(base+"/api/v1/objects/"+string(uid), &o) != nil {
		return -1
	}
	return len(o.Dependents)
}

// engineBlockers is how many blocking dependents the engine's explanation of uid counts,
// -1 if it cannot say.
func engineBlockers(base string, uid types.UID) int {
	var ex struct {
		Summary *struct {
			Total int `json:"total"`
		} `json:"blockerSummary"`
		Object struct {
			DeletingDependents bool `json:"deletingDependents"`
		} `json:"object"`
	}
	if getJSON(base+"/api/v1/objects/"+string(uid)+"/explain", &ex) != nil || !ex.Object.DeletingDependents {
		return -1
	}
	if ex.Summary == nil {
		return 0
	}
	return ex.Summary.Total
}

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
