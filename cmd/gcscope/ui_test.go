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

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIEndToEnd drives the UI in headless Chromium against gcscope on its embedded
// default (control plane, engine, demo), as a user would: the page loads and draws what
// the API holds, the explain panel says what holds the stuck Pod, and dark mode renders
// (cascades, frame by frame: ui_cascade_test.go). Screenshots of each step go to the test
// artifacts.
func TestUIEndToEnd(t *testing.T) {
	parallelUI(t)
	base, _ := startEmbedded(t, "--demo")

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	ctx := page.Ctx
	d := uiDriver{ctx: page.Ctx, failShot: "ui-failed"}
	// drawnEqualsAPI polls until the uids the page draws are the API's for the same
	// filter (the page and the API may be a few events apart for a moment).
	drawnEqualsAPI := func(query string) int {
		t.Helper()
		var api, drawn []string
		if testkit.Poll(context.Background(), 30*time.Second, func() bool {
			api = apiUIDs(t, base+"/api/v1/graph?limit=100000"+query)
			d.eval(t, `window.gcscope.drawnUIDs()`, &drawn)
			slices.Sort(drawn)
			return slices.Equal(api, drawn)
		}) != nil {
			t.Fatalf("filter %q: the page draws %d objects, the API has %d; only drawn: %v; only in the API: %v",
				query, len(drawn), len(api), minus(drawn, api), minus(api, drawn))
		}
		return len(api)
	}

	// The page loads and draws exactly the API's graph, whole and filtered.
	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	n := drawnEqualsAPI("")
	browsertest.Screenshot(t, ctx, "ui-loaded")
	d.run(t, "filter demo-web", chromedp.Navigate(base+"/?ns=demo-web"), uiReady)
	m := drawnEqualsAPI("&namespace=demo-web")
	d.run(t, "filter Deployments", chromedp.Navigate(base+"/?kind=Deployment"), uiReady)
	drawnEqualsAPI("&kind=Deployment")
	t.Logf("drawn = API: %d objects in all, %d in demo-web", n, m)

	// Why does the stuck Pod stay? Found by search, as a newcomer would.
	d.run(t, "search the stuck pod", chromedp.Navigate(base+"/"), uiReady,
		click("#search"), chromedp.SendKeys(chromedp.CSS("#search"), "stuck-"),
		chromedp.WaitVisible(chromedp.CSS(`#search-results li[data-uid]`)))
	var podUID string
	d.eval(t, `[...document.querySelectorAll("#search-results li[data-uid]")].map(li => li.dataset.uid)
		.find(u => window.gcscope.store.nodes.get(u).kind === "Pod")`, &podUID)
	d.run(t, "open the stuck pod", click(`#search-results li[data-uid="`+podUID+`"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector("#explain")?.textContent.includes("demo.gcscope.io/hold")`, chromedp.WithPollingTimeout(30*time.Second)))
	var explainText string
	d.eval(t, `document.querySelector("#explain").textContent`, &explainText)
	if !strings.Contains(explainText, "Held by finalizer") {
		t.Errorf("the explain panel does not say the Pod is held: %q", explainText)
	}
	browsertest.Screenshot(t, ctx, "ui-explain-stuck-pod")

	// Dark mode renders: the page's colours and the canvas itself are dark.
	d.run(t, "dark mode", chromedp.Navigate(base+"/?theme=dark&ns=demo-crd"), uiReady)
	var lum float64
	d.eval(t, `(() => { const c = document.getElementById("graph"); const d = c.getContext("2d").getImageData(2, 2, 1, 1).data;
		return (0.2126 * d[0] + 0.7152 * d[1] + 0.0722 * d[2]) / 255; })()`, &lum)
	var theme string
	d.eval(t, `document.documentElement.dataset.theme`, &theme)
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

// startEmbedded starts gcscope on its embedded control plane with args, waits until it
// serves, and stops it when the test ends (after the browser, started later, is closed).
// It returns gcscope's base URL and the kubeconfig of its cluster.
func startEmbedded(t *testing.T, args ...string) (base, kubeconfig string) {
	t.Helper()
	return startEmbeddedAt(t, freeAddr(t), args...)
}

// startEmbeddedAt is startEmbedded listening on addr (a test that must name gcscope's URL
// before it starts: a redirect URI at an identity provider).
func startEmbeddedAt(t *testing.T, addr string, args ...string) (base, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	p := startProcess(t, dir, nil, binary, append([]string{"--listen", addr, "--data-dir", filepath.Join(dir, "data"),
		"--write-kubeconfig", kubeconfig, "--log-level", "warn"}, args...)...)
	p.waitReady(t, addr)
	t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
	return "http://" + addr, kubeconfig
}

// uiDriver runs actions and evaluates expressions in a UI test's tab, failing the test
// (after a screenshot named failShot) when one fails.
type uiDriver struct {
	ctx      context.Context
	failShot string
}

func (d uiDriver) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(d.ctx, 90*time.Second)
	defer cancel()
	for i, a := range actions {
		if err := chromedp.Do(c, a); err != nil {
			browsertest.Screenshot(t, d.ctx, d.failShot)
			// Which step: a wait that never ends says only "context deadline exceeded".
			t.Fatalf("%s: step %d of %d: %v", what, i+1, len(actions), err)
		}
	}
}

// eval evaluates expr in the page and decodes its JSON value into out.
func (d uiDriver) eval(t *testing.T, expr string, out any) {
	t.Helper()
	c, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(c, chromedp.Evaluate[[]byte](expr))
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// uiReady waits until the page has drawn its first snapshot.
var uiReady = chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second))

// explainOvertaken accepts the one console error a page that follows a deletion cannot
// avoid: the panel asks for the explanation only of objects the graph still has, but the
// deletion can overtake the request, which is then answered 404, and the browser logs
// every failed request.
func explainOvertaken(message string) bool {
	return strings.Contains(message, "status of 404") && strings.Contains(message, "/explain")
}

// parallelUI starts a browser test beside the others: these wait on their cluster far
// more than they compute, and what they time of the page is measured in its frames too
// (a loaded machine runs them late). The tests whose point is a pace (the cascades drawn
// frame by frame, history played at 4×, the panel following the engine, slow motion's
// steps) stay serial, so that they run first, alone in this package.
func parallelUI(t *testing.T) {
	t.Helper()
	browsertest.Require(t)
	t.Parallel()
}

// click clicks the element sel names with the mouse, as a user would. The page redraws
// its panel and dialog as the stream goes on, and a redraw between chromedp finding the
// node and clicking it fails with "Could not find node with given id" (seen in the delete
// button of a panel whose object was changing): the element is then found again.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for {
			_, err := chromedp.Click(chromedp.CSS(sel))(ctx, tg)
			if err == nil || !staleNode(err) || ctx.Err() != nil {
				return chromedp.Void{}, err
			}
		}
	}
}

// staleNode reports whether err is the browser's answer about a node the page has
// since replaced.
func staleNode(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") || strings.Contains(s, "No node with given id found") ||
		strings.Contains(s, "Node is detached from document")
}
