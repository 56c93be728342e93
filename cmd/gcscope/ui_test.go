package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUIEndToEnd drives the UI in headless Chromium against gcscope on its embedded
// default (control plane, engine, demo), as a user would: the page loads and draws what
// the API holds, the explain panel says what holds the stuck Pod, a foreground delete
// through the dialog removes a Deployment with its ReplicaSets and Pods, and dark mode
// renders. Screenshots of each step go to the test artifacts.
func TestUIEndToEnd(t *testing.T) {
	browsertest.Require(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	p := startProcess(t, dir, nil, binary, "--listen", addr, "--data-dir", filepath.Join(dir, "data"),
		"--write-kubeconfig", kubeconfig, "--demo", "--log-level", "warn",
		// Slow motion, as a user watching a cascade would set it: without it a state can
		// last less than a frame (or arrive in the same stream batch as the next one), and
		// the frame-by-frame check below could not see it.
		"--gc-action-delay", "150ms")
	p.waitReady(t, addr)
	defer p.stop(t, syscall.SIGTERM)
	base := "http://" + addr
	kube := clientFor(t, kubeconfig)

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	ctx := page.Ctx
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			browsertest.Screenshot(t, ctx, "ui-failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string, out any) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		raw, err := chromedp.Run(c, chromedp.Evaluate[[]byte](expr))
		if err == nil {
			err = json.Unmarshal(raw, out)
		}
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
	}
	ready := chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second))
	// drawnEqualsAPI polls until the uids the page draws are the API's for the same
	// filter (the page and the API may be a few events apart for a moment).
	drawnEqualsAPI := func(query string) int {
		t.Helper()
		var api, drawn []string
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			api = apiUIDs(t, base+"/api/v1/graph?limit=100000"+query)
			eval(`window.gcscope.drawnUIDs()`, &drawn)
			slices.Sort(drawn)
			return slices.Equal(api, drawn), nil
		})
		if err != nil {
			t.Fatalf("filter %q: the page draws %d objects, the API has %d; only drawn: %v; only in the API: %v",
				query, len(drawn), len(api), minus(drawn, api), minus(api, drawn))
		}
		return len(api)
	}

	// The page loads and draws exactly the API's graph, whole and filtered.
	run("load the page", chromedp.Navigate(base+"/"), ready, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	n := drawnEqualsAPI("")
	browsertest.Screenshot(t, ctx, "ui-loaded")
	run("filter demo-web", chromedp.Navigate(base+"/?ns=demo-web"), ready)
	m := drawnEqualsAPI("&namespace=demo-web")
	run("filter Deployments", chromedp.Navigate(base+"/?kind=Deployment"), ready)
	drawnEqualsAPI("&kind=Deployment")
	t.Logf("drawn = API: %d objects in all, %d in demo-web", n, m)

	// Why does the stuck Pod stay? Found by search, as a newcomer would.
	run("search the stuck pod", chromedp.Navigate(base+"/"), ready,
		chromedp.Click(chromedp.CSS("#search")), chromedp.SendKeys(chromedp.CSS("#search"), "stuck-"),
		chromedp.WaitVisible(chromedp.CSS(`#search-results li[data-uid]`)))
	var podUID string
	eval(`[...document.querySelectorAll("#search-results li[data-uid]")].map(li => li.dataset.uid)
		.find(u => window.gcscope.store.nodes.get(u).kind === "Pod")`, &podUID)
	run("open the stuck pod", chromedp.Click(chromedp.CSS(`#search-results li[data-uid="`+podUID+`"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#explain")?.textContent.includes("demo.gcscope.io/hold")`, chromedp.WithPollingTimeout(30*time.Second)))
	var explainText string
	eval(`document.querySelector("#explain").textContent`, &explainText)
	if !strings.Contains(explainText, "Held by finalizer") {
		t.Errorf("the explain panel does not say the Pod is held: %q", explainText)
	}
	browsertest.Screenshot(t, ctx, "ui-explain-stuck-pod")

	// Delete the demo Deployment api in the foreground through the dialog.
	dep, err := kube.AppsV1().Deployments("demo-web").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rsList, _ := kube.AppsV1().ReplicaSets("demo-web").List(context.Background(), metav1.ListOptions{})
	podList, _ := kube.CoreV1().Pods("demo-web").List(context.Background(), metav1.ListOptions{})
	gone := []string{string(dep.UID)}
	for _, rs := range rsList.Items {
		if metav1.IsControlledBy(&rs, dep) {
			gone = append(gone, string(rs.UID))
			for _, p := range podList.Items {
				if metav1.IsControlledBy(&p, &rs) {
					gone = append(gone, string(p.UID))
				}
			}
		}
	}
	if len(gone) < 3 {
		t.Fatalf("demo Deployment api has no ReplicaSet and Pods to cascade to: %v", gone)
	}
	run("open the delete dialog", chromedp.Navigate(base+"/?sel="+string(dep.UID)), ready,
		chromedp.Click(chromedp.CSS("#delete-button")), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		chromedp.Click(chromedp.CSS(`#delete-form input[value="Foreground"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#delete-summary")?.textContent.startsWith("Foreground")`, chromedp.WithPollingTimeout(30*time.Second)))
	var previewed []string
	eval(`[...window.gcscope.renderer.preview].filter(([u, k]) => k === "deleted" || k === "target").map(([u]) => u)`, &previewed)
	slices.Sort(previewed)
	if want := slices.Sorted(slices.Values(gone)); !slices.Equal(previewed, want) {
		t.Errorf("the graph's delete preview marks %v, want the Deployment, its ReplicaSets and Pods %v", previewed, want)
	}
	browsertest.Screenshot(t, ctx, "ui-delete-preview")
	// Record, frame by frame, what the canvas draws for each object of the cascade.
	var installed bool
	eval(`(() => { window.gcscope.recordDrawn(); const uids = `+jsArray(gone)+`; window.__drawnLog = []; const last = {};
		const rec = () => { for (const u of uids) { const d = window.gcscope.drawn(u);
			if (d && (!last[u] || last[u].state !== d.state || last[u].x !== d.x || last[u].y !== d.y)) {
				window.__drawnLog.push({ uid: u, state: d.state, x: d.x, y: d.y, t: performance.now() }); last[u] = d; } }
			requestAnimationFrame(rec); };
		requestAnimationFrame(rec); return true; })()`, &installed)
	run("confirm", chromedp.Click(chromedp.CSS("#delete-confirm")), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))

	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "api", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		pods, err := kube.CoreV1().Pods("demo-web").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if slices.Contains(gone, string(p.UID)) {
				return false, nil
			}
		}
		rss, err := kube.AppsV1().ReplicaSets("demo-web").List(ctx, metav1.ListOptions{})
		for _, rs := range rss.Items {
			if slices.Contains(gone, string(rs.UID)) {
				return false, nil
			}
		}
		return err == nil, nil
	})
	if err != nil {
		browsertest.Screenshot(t, ctx, "ui-cascade-stuck")
		t.Fatalf("the foreground cascade of demo-web/api did not finish in the apiserver")
	}
	run("the graph shows them gone", chromedp.Poll[chromedp.Void](`(() => { const d = new Set(window.gcscope.drawnUIDs());
		return `+jsArray(gone)+`.every(u => !d.has(u) && !window.gcscope.store.ghosts.has(u)); })()`, chromedp.WithPollingTimeout(30*time.Second)))
	browsertest.Screenshot(t, ctx, "ui-after-foreground-delete")
	assertCascadeDrawn(t, eval, string(dep.UID), gone)

	// Dark mode renders: the page's colours and the canvas itself are dark.
	run("dark mode", chromedp.Navigate(base+"/?theme=dark&ns=demo-crd"), ready)
	var lum float64
	eval(`(() => { const c = document.getElementById("graph"); const d = c.getContext("2d").getImageData(2, 2, 1, 1).data;
		return (0.2126 * d[0] + 0.7152 * d[1] + 0.0722 * d[2]) / 255; })()`, &lum)
	var theme string
	eval(`document.documentElement.dataset.theme`, &theme)
	if theme != "dark" || lum > 0.25 {
		t.Errorf("dark mode: data-theme %q, canvas background luminance %.2f (want dark)", theme, lum)
	}
	browsertest.Screenshot(t, ctx, "ui-dark")
	page.NoErrors(t)
	page.Close() // before gcscope stops, so the page does not see its stream drop
}

// apiUIDs returns the sorted uids of GET url (/api/v1/graph).
func apiUIDs(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var g struct {
		Nodes []struct {
			UID string `json:"uid"`
		} `json:"nodes"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || g.NextCursor != "" {
		t.Fatalf("GET %s: %v (next cursor %q)", url, err, g.NextCursor)
	}
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.UID)
	}
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func jsArray(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// drawnChange is one change of what the canvas drew for an object.
type drawnChange struct {
	UID   string  `json:"uid"`
	State string  `json:"state"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	T     float64 `json:"t"`
}

// assertCascadeDrawn checks the way there of a Foreground cascade from owner, as the
// canvas drew it (window.__drawnLog): the owner drawn waiting on its dependents before it
// was drawn removed, every dependent drawn removed before the owner was, and no object
// moving while it was drawn (the cascade does not redo the layout).
func assertCascadeDrawn(t *testing.T, eval func(string, any), owner string, uids []string) {
	t.Helper()
	var log []drawnChange
	eval(`window.__drawnLog`, &log)
	byUID := map[string][]drawnChange{}
	for _, c := range log {
		byUID[c.UID] = append(byUID[c.UID], c)
	}
	removedAt := func(uid string) (float64, bool) {
		for _, c := range byUID[uid] {
			if c.State == "removed" {
				return c.T, true
			}
		}
		return 0, false
	}
	ownerGone, ok := removedAt(owner)
	if !ok {
		t.Fatalf("the owner was never drawn removed: %+v", byUID[owner])
	}
	waited := false
	for _, c := range byUID[owner] {
		if (c.State == "waiting" || c.State == "foreground") && c.T < ownerGone {
			waited = true
		}
	}
	if !waited {
		t.Errorf("the owner was never drawn deleting its dependents before its removal: %+v", byUID[owner])
	}
	for _, uid := range uids {
		changes := byUID[uid]
		if len(changes) == 0 {
			t.Errorf("%s: never drawn", uid)
			continue
		}
		for _, c := range changes[1:] {
			if c.X != changes[0].X || c.Y != changes[0].Y {
				t.Errorf("%s moved during the cascade: %+v", uid, changes)
				break
			}
		}
		if uid == owner {
			continue
		}
		if at, ok := removedAt(uid); !ok || at > ownerGone {
			t.Errorf("dependent %s not drawn removed before its owner (owner removed at %.0f ms): %+v", uid, ownerGone, changes)
		}
	}
	t.Logf("drawn during the cascade: %d state changes over %d objects", len(log), len(byUID))
}
