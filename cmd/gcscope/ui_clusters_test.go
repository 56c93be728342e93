package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUISeveralClusters serves three kubeconfig contexts from one gcscope: two embedded
// control planes (east and west, each started by a gcscope of its own) and one whose
// apiserver does not answer (gone). Through the API: each cluster's engine starts when
// first opened, each route is scoped to its cluster (a ConfigMap made in west is in
// west's graph only, a delete on west's route deletes in west), gone fails with its
// reason and holds neither other. In Chromium: the page lands on the default cluster
// with its name in the URL, the picker (and its key, c) goes to west, which the server
// then remembers, west's delete dialog deletes in west, and gone's page says why it
// has no engine.
func TestUISeveralClusters(t *testing.T) {
	parallelUI(t)
	_, eastConfig := startEmbeddedAt(t, freeAddr(t), "--demo=false", "--history=false")
	_, westConfig := startEmbeddedAt(t, freeAddr(t), "--demo=false", "--history=false")
	east, west := clientFor(t, eastConfig), clientFor(t, westConfig)
	onlyEast := createConfigMap(t, east, "default", "only-in-east")
	onlyWest := createConfigMap(t, west, "default", "only-in-west")
	westDoomed := createConfigMap(t, west, "default", "deleted-from-the-page")

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	mergeKubeconfigs(t, kubeconfig, map[string]string{"east": eastConfig, "west": westConfig}, "gone", "https://"+freeAddr(t))
	addr := freeAddr(t)
	p := startProcess(t, dir, nil, binary, "--listen", addr, "--kubeconfig", kubeconfig,
		"--context", "east", "--context", "west", "--context", "gone", "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn")
	p.waitReady(t, addr) // the default cluster's engine has synced
	t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
	base := "http://" + addr
	if out := p.stdout(); !strings.Contains(out, "serving 3 contexts of "+kubeconfig+": east (the default), west, gone") {
		t.Errorf("gcscope does not say which contexts it serves:\n%s", out)
	}

	states := func() map[string]clusterStatus {
		var list struct{ Clusters []clusterStatus }
		if err := getJSON(base+"/api/v1/clusters", &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]clusterStatus{}
		for _, c := range list.Clusters {
			out[c.Name] = c
		}
		return out
	}
	if st := states(); st["east"].State != "ready" || !st["east"].Default || st["west"].State != "idle" || st["gone"].State != "idle" || len(st) != 3 {
		t.Fatalf("clusters at start: %+v; want east ready and the default, west and gone idle (not opened yet)", st)
	}

	// West's engine starts when a route of west is first asked for.
	status, body := request(t, base+"/api/v1/clusters/west/graph")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"cluster_not_ready"`) || !strings.Contains(body, "connecting") {
		t.Errorf("west's graph before its engine: %d %s; want 503 cluster_not_ready, connecting", status, body)
	}
	testkit.EventuallyWithin(t, 60*time.Second, "west's engine ready", func() bool { return states()["west"].State == "ready" })
	graphHas := func(path string, uid string) bool {
		_, body := request(t, base+path+"?limit=100000")
		return strings.Contains(body, uid)
	}
	// Said on gcscope's stdout, which the test reads through a pipe: in a moment.
	want := "recording the history of context west's engine in " + filepath.Join(dir, "data", "history", "west")
	testkit.EventuallyWithin(t, 10*time.Second, "gcscope says where west's history is recorded", func() bool { return strings.Contains(p.stdout(), want) })
	testkit.EventuallyWithin(t, 30*time.Second, "west's graph has its ConfigMap", func() bool { return graphHas("/api/v1/clusters/west/graph", string(onlyWest.UID)) })
	if graphHas("/api/v1/clusters/west/graph", string(onlyEast.UID)) {
		t.Error("west's graph has east's ConfigMap")
	}
	if !graphHas("/api/v1/graph", string(onlyEast.UID)) || graphHas("/api/v1/graph", string(onlyWest.UID)) {
		t.Error("/api/v1/graph is not the default cluster's (east's) alone")
	}
	if !graphHas("/api/v1/clusters/east/graph", string(onlyEast.UID)) {
		t.Error("east's scoped graph lacks its ConfigMap")
	}
	if status, _ := request(t, base+"/api/v1/clusters/nowhere/graph"); status != http.StatusNotFound {
		t.Errorf("a cluster gcscope does not serve: %d, want 404", status)
	}
	// An object of west is not east's to delete.
	if status, _ := request(t, base+"/api/v1/clusters/east/objects/"+string(onlyWest.UID)); status != http.StatusNotFound {
		t.Errorf("west's object through east's route: %d, want 404", status)
	}

	// Gone cannot be reached: it fails with why, and holds neither other.
	request(t, base+"/api/v1/clusters/gone/queues")
	testkit.EventuallyWithin(t, 30*time.Second, "gone failed", func() bool { return states()["gone"].State == "failed" })
	if st := states()["gone"]; !strings.Contains(st.Reason, "cannot reach https://") {
		t.Errorf("gone failed for %q; want it to say it cannot reach its apiserver", st.Reason)
	}
	for _, path := range []string{"/api/v1/clusters/east/queues", "/api/v1/clusters/west/queues"} {
		if status, body := request(t, base+path); status != http.StatusOK {
			t.Errorf("%s while gone fails: %d %s", path, status, body)
		}
	}
	if status, body := request(t, base+"/api/v1/clusters/gone/queues"); status != http.StatusServiceUnavailable || !strings.Contains(body, "cannot reach") {
		t.Errorf("gone's queues: %d %s; want 503 saying why", status, body)
	}
	// Each engine's metrics, told apart by a cluster label.
	_, metrics := request(t, base+"/metrics")
	for _, want := range []string{`cluster="east"`, `cluster="west"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no series with %s", want)
		}
	}

	// The page.
	page := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 800})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-clusters-failed-test"}
	has := func(uid string) string { return `window.gcscope.store.nodes.has(` + jsQuoted(uid) + `)` }
	d.run(t, "the default cluster's page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](has(string(onlyEast.UID)), chromedp.WithPollingTimeout(30*time.Second)))
	var at struct {
		Search, Picked, Title string
		West                  bool
	}
	look := func() {
		t.Helper()
		d.eval(t, `({ search: location.search, picked: document.querySelector("#cluster-picker").value, title: document.title, west: `+has(string(onlyWest.UID))+` })`, &at)
	}
	look()
	if at.Search != "?cluster=east" || at.Picked != "east" || at.West || !strings.HasPrefix(at.Title, "east ·") {
		t.Errorf("the first page: %+v; want east's, named in the URL, the picker and the title, without west's objects", at)
	}
	var focused string
	d.run(t, "c opens the picker", chromedp.KeyEvent("c"))
	d.eval(t, `document.activeElement?.id || ""`, &focused)
	if focused != "cluster-picker" {
		t.Errorf("after c the focus is on %q, want the cluster picker", focused)
	}
	// As a user picks: the change goes to west's page (after this evaluation returns).
	d.run(t, "pick west", chromedp.Evaluate[chromedp.Void](`setTimeout(() => { const s = document.querySelector("#cluster-picker"); s.value = "west"; s.dispatchEvent(new Event("change")); })`))
	waitLocation(t, page.Ctx, base+"/?cluster=west")
	d.run(t, "west's page", uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](has(string(onlyWest.UID)), chromedp.WithPollingTimeout(30*time.Second)))
	var eastThere bool
	d.eval(t, has(string(onlyEast.UID)), &eastThere)
	if eastThere {
		t.Error("west's page has east's ConfigMap")
	}
	browsertest.Screenshot(t, page.Ctx, "ui-clusters-west")

	// The server remembers the last cluster this browser looked at.
	d.run(t, "back to /", chromedp.Navigate(base+"/"))
	waitLocation(t, page.Ctx, base+"/?cluster=west")

	// West's delete dialog deletes in west.
	d.run(t, "select west's object", chromedp.Navigate(base+"/?cluster=west&sel="+string(westDoomed.UID)), uiReady,
		chromedp.Poll[chromedp.Void](has(string(westDoomed.UID)), chromedp.WithPollingTimeout(30*time.Second)))
	d.run(t, "delete from the dialog", click("#delete-button"),
		chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		click(`#delete-form input[value="Background"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector("#delete-summary")?.textContent.startsWith("Background")`, chromedp.WithPollingTimeout(30*time.Second)),
		click("#delete-confirm"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	if testkit.Poll(context.Background(), 30*time.Second, func() bool {
		_, err := west.CoreV1().ConfigMaps("default").Get(context.Background(), westDoomed.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) != nil {
		t.Error("the delete from west's page did not happen in west")
	}
	d.run(t, "the page sees it go", chromedp.Poll[chromedp.Void](`!`+has(string(westDoomed.UID)), chromedp.WithPollingTimeout(30*time.Second)))

	// Gone's page says why it has no engine, and offers to try again.
	d.run(t, "gone's page", chromedp.Navigate(base+"/?cluster=gone"), chromedp.WaitVisible(chromedp.CSS(`#cluster-banner[data-state="failed"]`)))
	var banner string
	d.eval(t, `document.querySelector("#cluster-banner").textContent`, &banner)
	if !strings.Contains(banner, "gone") || !strings.Contains(banner, "cannot reach") || !strings.Contains(banner, "Try again") {
		t.Errorf("gone's banner: %q; want its name, why it failed, and Try again", banner)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-clusters-failed")
	// 503: gone's; the panel asked about west's object as its delete removed it.
	page.NoErrorsExcept(t, func(m string) bool { return strings.Contains(m, "503") || explainOvertaken(m) })
	page.Close()
}

// waitLocation waits for the tab to be at want, through the navigation that takes it
// there (while it commits, the browser answers that the page is not attached).
func waitLocation(t *testing.T, tab context.Context, want string) {
	t.Helper()
	var at string
	if testkit.Poll(context.Background(), 30*time.Second, func() bool {
		c, cancel := context.WithTimeout(tab, 5*time.Second)
		defer cancel()
		href, err := chromedp.Run(c, chromedp.Evaluate[string](`document.readyState === "complete" ? location.href : ""`))
		at = fmt.Sprint(href, err)
		return err == nil && href == want
	}) != nil {
		t.Fatalf("the tab is not at %s: last at %s", want, at)
	}
}

// clusterStatus is one entry of GET /api/v1/clusters.
type clusterStatus struct {
	Name, Server, State, Reason string
	Default                     bool
}

// mergeKubeconfigs writes a kubeconfig with one context per named kubeconfig (its current
// context's cluster and user, renamed), and a context broken whose apiserver is at server.
func mergeKubeconfigs(t *testing.T, path string, from map[string]string, broken, server string) {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, file := range from {
		c, err := clientcmd.LoadFromFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ctx := c.Contexts[c.CurrentContext]
		out.Clusters[name] = c.Clusters[ctx.Cluster]
		out.AuthInfos[name] = c.AuthInfos[ctx.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	out.Clusters[broken] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	out.AuthInfos[broken] = &clientcmdapi.AuthInfo{Token: "none"}
	out.Contexts[broken] = &clientcmdapi.Context{Cluster: broken, AuthInfo: broken}
	out.CurrentContext = broken
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
}

// request GETs url as a browser on this machine would, and returns the status and body.
func request(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
