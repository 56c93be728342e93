package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIXResume cuts the page's stream under it, as a failing network would, changes the
// cluster while the page is away, and lets the stream come back:
//   - while cut, the page dims the graph and says it is offline;
//   - it reconnects by itself with ?since= the last sequence number it had, is sent the
//     deltas it missed (no snapshot), and then holds and draws exactly the engine's graph:
//     what was created meanwhile, without what was deleted;
//   - when the server no longer holds the events after that number (more than its buffer
//     of 65,536 went by), it answers with a snapshot (reason stale) and the page, retried
//     from the dot at the top right, converges all the same.
func TestUIXResume(t *testing.T) {
	parallelUI(t)
	// The engine collects a flood of objects below: let it write fast.
	base, kubeconfig := startEmbedded(t, "--demo=false", "--kube-api-qps", "1000", "--kube-api-burst", "1000")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "resume"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := createConfigMap(t, kube, ns, "keep")
	keepA := createConfigMap(t, kube, ns, "keep-a", keep)
	keepB := createConfigMap(t, kube, ns, "keep-b", keep)
	createConfigMap(t, kube, ns, "doomed-1")
	createConfigMap(t, kube, ns, "doomed-2")
	parent := createConfigMap(t, kube, ns, "parent")
	child := createConfigMap(t, kube, ns, "child", parent)
	uidOf := func(name string) string {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(cm.UID)
	}
	doomed := []string{uidOf("doomed-1"), uidOf("doomed-2"), string(parent.UID), string(child.UID)}
	// inEngine reports whether the engine's graph has every one of uids and none of gone.
	inEngine := func(uids, gone []string) bool {
		got := apiUIDs(t, base+"/api/v1/graph?limit=100000&namespace="+ns)
		return !slices.ContainsFunc(uids, func(u string) bool { return !slices.Contains(got, u) }) &&
			!slices.ContainsFunc(gone, func(u string) bool { return slices.Contains(got, u) })
	}
	testkit.Eventually(t, "the engine to see resume's objects", func() bool {
		return inEngine(append([]string{string(keep.UID), string(keepA.UID), string(keepB.UID)}, doomed...), nil)
	})

	proxy := newCutProxy(t, strings.TrimPrefix(base, "http://"))
	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-resume-failed"}
	streams := watchStreams(t, page.Ctx)
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	}
	pageSeq := func() uint64 {
		t.Helper()
		var n uint64
		d.eval(t, `window.gcscope.store.seq`, &n)
		return n
	}
	has := func(uid string) bool {
		t.Helper()
		var ok bool
		d.eval(t, `window.gcscope.store.nodes.has(`+jsQuoted(uid)+`)`, &ok)
		return ok
	}
	offline := `document.body.classList.contains("offline") && !document.getElementById("offline-note")?.hidden &&
		parseFloat(getComputedStyle(document.getElementById("graph")).opacity) < 0.6`
	// converged waits until the page holds and draws exactly the engine's graph.
	converged := func() {
		t.Helper()
		var all, held []string
		if testkit.Poll(ctx, time.Minute, func() bool {
			all = apiUIDs(t, base+"/api/v1/graph?limit=100000")
			d.eval(t, `[...window.gcscope.store.nodes.keys()]`, &held)
			slices.Sort(held)
			return slices.Equal(held, all)
		}) != nil {
			browsertest.Screenshot(t, page.Ctx, "ui-resume-failed")
			t.Fatalf("the page holds %d objects, the engine %d: only in the page %v, only in the engine %v", len(held), len(all), minus(held, all), minus(all, held))
		}
		waitDrawnEquals(t, d, all)
	}

	d.run(t, "load the page", chromedp.Navigate(proxy.URL+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	converged()
	page.NoErrors(t) // before the stream drops, which the browser logs
	browsertest.Screenshot(t, page.Ctx, "ui-resume-live")

	// --- A cut of a few seconds: the page resumes where it stopped.
	asked, began := len(proxy.streams()), streams.count()
	proxy.cut()
	poll("the page says it is offline", offline, 15*time.Second)
	since := pageSeq()
	born1 := createConfigMap(t, kube, ns, "born-1", keep)
	born2 := createConfigMap(t, kube, ns, "born-2")
	for _, name := range []string{"doomed-1", "doomed-2"} {
		if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "parent", metav1.DeleteOptions{}); err != nil { // the engine deletes child
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine to see the changes", func() bool {
		return inEngine([]string{string(keep.UID), string(keepA.UID), string(keepB.UID), string(born1.UID), string(born2.UID)}, doomed)
	})
	if has(string(born1.UID)) || !has(doomed[0]) || pageSeq() != since {
		t.Fatal("the page followed the changes through the cut: the cut did not cut")
	}
	browsertest.Screenshot(t, page.Ctx, "ui-resume-offline")
	proxy.restore()
	// The page retries by itself, with a growing delay (a few seconds by now).
	d.run(t, "the page reconnects by itself", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	tried := proxy.streams()[asked:]
	if len(tried) < 2 {
		t.Errorf("after the cut the page asked for %v; want its tries while cut, then the one that resumed", tried)
	}
	for _, u := range tried {
		if u != "/api/v1/stream?since="+strconv.FormatUint(since, 10)+"&encoding=deflate" {
			t.Errorf("after the cut the page asked for %s; want since=%d, the last seq it had (all its tries: %v)", u, since, tried)
			break
		}
	}
	first := streams.after(t, began)
	if first.Type != "deltas" || first.From != since+1 {
		t.Errorf("the resumed stream began with %+v; want the deltas from %d, no snapshot", first, since+1)
	}
	converged()
	poll("no longer offline", `!document.body.classList.contains("offline") && document.getElementById("offline-note").hidden`, 5*time.Second)
	var owners []string
	d.eval(t, `(window.gcscope.store.nodes.get(`+jsQuoted(string(born1.UID))+`)?.owners || []).map((o) => o.uid)`, &owners)
	if !slices.Equal(owners, []string{string(keep.UID)}) {
		t.Errorf("born-1, created while the page was away, has owners %v in the page; want keep", owners)
	}
	for _, u := range doomed {
		if has(u) {
			t.Errorf("%s, deleted while the page was away, is still in the page", u)
		}
	}
	browsertest.Screenshot(t, page.Ctx, "ui-resume-resumed")

	// --- A cut long enough for the server's buffer to lose the events after since.
	asked, began = len(proxy.streams()), streams.count()
	proxy.cut()
	poll("the page says it is offline again", offline, 15*time.Second)
	since = pageSeq()
	late := createConfigMap(t, kube, ns, "late-1")
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "keep-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	flood(t, kube, base, since+70_000)
	testkit.Eventually(t, "the engine to collect the flood", func() bool { return dangling(t, base) == 0 })
	browsertest.Screenshot(t, page.Ctx, "ui-resume-offline-long")
	proxy.restore()
	d.run(t, "retry from the dot", click("#conn"), chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	tried = proxy.streams()[asked:]
	if len(tried) == 0 || slices.ContainsFunc(tried, func(u string) bool {
		return u != "/api/v1/stream?since="+strconv.FormatUint(since, 10)+"&encoding=deflate"
	}) {
		t.Errorf("after the second cut the page asked for %v; want since=%d each time", tried, since)
	}
	// The page asks for the stream's own deflate: a snapshot this large comes deflated.
	if first := streams.after(t, began); first.Type != "snapshot" || first.Reason != "stale" || !first.Deflated {
		t.Errorf("the stream resumed after the buffer moved on began with %+v; want a snapshot, reason stale, deflated", first)
	}
	converged()
	if !has(string(late.UID)) || has(string(keepA.UID)) {
		t.Error("after the stale snapshot the page misses late-1 or still has keep-a")
	}
	browsertest.Screenshot(t, page.Ctx, "ui-resume-stale")
	page.NoErrorsExcept(t, func(m string) bool {
		return strings.Contains(m, "WebSocket connection to") && strings.Contains(m, "/api/v1/stream")
	})
	page.Close()
}

// flood makes the engine publish events until its sequence number passes seq: it creates
// ConfigMaps in namespace flood, each naming an owner that does not exist, which the engine
// deletes (about 27 events each).
func flood(t *testing.T, kube kubernetes.Interface, base string, seq uint64) {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flood"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	start := time.Now()
	for batch := 0; ; batch++ {
		var g graphDoc
		mustGetJSON(t, base+"/api/v1/graph?limit=1", &g)
		if g.Seq > seq {
			t.Logf("flood: %d batches of 500 in %v", batch, time.Since(start).Round(time.Millisecond))
			return
		}
		if batch == 30 {
			t.Fatalf("after %d dangling objects the engine is at seq %d, not past %d", batch*500, g.Seq, seq)
		}
		var eg errgroup.Group
		eg.SetLimit(16)
		for i := range 500 {
			eg.Go(func() error {
				ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: types.UID(fmt.Sprintf("ghost-%d-%d", batch, i))}
				_, err := kube.CoreV1().ConfigMaps("flood").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("dangling-%d-%d", batch, i), OwnerReferences: []metav1.OwnerReference{ghost}}}, metav1.CreateOptions{})
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			t.Fatal(err)
		}
		// Let the engine catch up before the next batch, so the apiserver is not swamped.
		testkit.Eventually(t, "the engine to collect a batch", func() bool { return dangling(t, base) < 100 })
	}
}

// dangling is how many of flood's objects are in the engine's graph.
func dangling(t *testing.T, base string) int {
	n := 0
	for _, o := range graphOf(t, base+"/api/v1/graph?limit=100000&namespace=flood").Nodes {
		if strings.HasPrefix(o.Name, "dangling-") {
			n++
		}
	}
	return n
}

// createConfigMap creates ConfigMap ns/name, owned (blocking) by owners, and returns it.
func createConfigMap(t *testing.T, kube kubernetes.Interface, ns, name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	yes := true
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range owners {
		cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: &yes})
	}
	out, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
