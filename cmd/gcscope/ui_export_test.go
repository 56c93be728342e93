package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIXExport exports the view from every item of the Export menu, clicked as a user
// would, lets the browser save each file, and reads the files back: the SVG is XML with
// an <svg> root naming exactly the objects the canvas drew on screen, the PNG decodes to
// an image of the canvas's size with something drawn on it, the whole graph's PNG to one
// of all of demo-web at full scale, the DOT is a digraph whose
// vertices are the objects in view and whose edges are their ownerReferences (as the API
// has them), and the JSON lists the same objects.
func TestUIXExport(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo")
	kube := clientFor(t, kubeconfig)
	api, err := kube.AppsV1().Deployments("demo-web").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	ctx := page.Ctx
	d := uiDriver{ctx: ctx, failShot: "ui-export-failed"}
	saved := watchDownloads(t, ctx)

	// demo-web, centred on its Deployment api: part of the namespace is on screen.
	d.run(t, "load demo-web", chromedp.Navigate(base+"/?ns=demo-web&sel="+string(api.UID)), uiReady,
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	want := graphOf(t, base+"/api/v1/graph?limit=100000&namespace=demo-web")
	waitDrawnEquals(t, d, want.uids())
	browsertest.Screenshot(t, ctx, "ui-export-view")

	// What the canvas drew on screen in its last frame, as "Kind namespace/name (state)".
	var onScreen []string
	d.eval(t, `window.gcscope.renderer.recordDrawn(), true`, new(bool))
	d.run(t, "a full frame", browsertest.Frames(3))
	d.eval(t, `(() => { const r = window.gcscope.renderer, s = window.gcscope.store;
		return [...r.drawnState].filter(([, v]) => v.at === r.drawClock).map(([u, v]) => {
			const n = s.nodes.get(u); return n.kind + " " + n.namespace + "/" + n.name + " (" + v.state + ")"; }); })()`, &onScreen)
	slices.Sort(onScreen)
	if len(onScreen) < 3 || len(onScreen) >= len(want.Nodes) {
		t.Fatalf("the canvas drew %d of demo-web's %d objects on screen; want a part of them: %v", len(onScreen), len(want.Nodes), onScreen)
	}
	t.Logf("on screen: %d of demo-web's %d objects", len(onScreen), len(want.Nodes))

	var items []string
	d.eval(t, `[...document.querySelectorAll("#export-menu [data-export]")].map((b) => b.dataset.export)`, &items)
	if !slices.Equal(items, []string{"svg", "png", "whole-png", "dot", "json", "history"}) {
		t.Errorf("the Export menu offers %v; the test reads svg, png, whole-png, dot, json and history (recorded by default)", items)
	}
	for _, item := range items {
		d.run(t, "export "+item, click("#export-button"),
			chromedp.WaitVisible(chromedp.CSS(`#export-menu [data-export="`+item+`"]`)),
			click(`#export-menu [data-export="`+item+`"]`))
		name, data := saved.next(t, 30*time.Second)
		if item == "history" {
			if !strings.HasPrefix(name, "gcscope-history-") || !strings.HasSuffix(name, ".jsonl.gz") {
				t.Errorf("history: the file is named %q; want gcscope-history-<from>-<to>.jsonl.gz", name)
			}
		} else if item == "whole-png" {
			if !strings.HasPrefix(name, "gcscope-") || !strings.HasSuffix(name, "-whole.png") {
				t.Errorf("whole-png: the file is named %q; want gcscope-<time>-whole.png", name)
			}
		} else if !strings.HasPrefix(name, "gcscope-") || !strings.HasSuffix(name, "."+item) {
			t.Errorf("%s: the file is named %q; want gcscope-<time>.%s", item, name, item)
		}
		t.Logf("%s: %s, %d bytes", item, name, len(data))
		switch item {
		case "svg":
			checkSVG(t, data, onScreen)
		case "png":
			var size struct{ W, H int }
			d.eval(t, `(() => { const c = document.getElementById("graph"); return { w: c.width, h: c.height }; })()`, &size)
			checkPNG(t, data, size.W, size.H)
		case "whole-png":
			// All of demo-web (only part of it is on screen), at full scale: a box 180 px wide.
			var whole struct{ W, H int }
			d.eval(t, `(() => { const b = window.gcscope.renderer.layout.bounds; return { w: Math.ceil(b.w + 48), h: Math.ceil(b.h + 48) }; })()`, &whole)
			checkPNG(t, data, whole.W, whole.H)
			if dir, err := browsertest.ArtifactsDir(); err == nil { // to look at, beside the screenshots
				os.WriteFile(filepath.Join(dir, "ui-export-whole.png"), data, 0o644)
			}
		case "dot":
			checkDOT(t, data, want)
		case "history":
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Errorf("history: %v", err)
				break
			}
			first, err := bufio.NewReader(zr).ReadString('\n')
			if err != nil || !strings.Contains(first, `"schema":"gcscope-history/1"`) {
				t.Errorf("history: the first line %q (%v), want the export's header", first, err)
			}
		case "json":
			var doc struct {
				Seq   uint64         `json:"seq"`
				Nodes []graphNode    `json:"nodes"`
				Filt  map[string]any `json:"filter"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Errorf("json: %v", err)
				break
			}
			got := uidsOf(doc.Nodes)
			if !slices.Equal(got, want.uids()) || doc.Seq == 0 {
				t.Errorf("json: seq %d, %d objects; want the %d of demo-web: only exported %v, missing %v",
					doc.Seq, len(got), len(want.Nodes), minus(got, want.uids()), minus(want.uids(), got))
			}
		}
		if t.Failed() {
			os.WriteFile(filepath.Join(t.TempDir(), name), data, 0o644)
		}
	}
	browsertest.Screenshot(t, ctx, "ui-export-done")
	page.NoErrors(t)
	page.Close()
}

// graphNode is an object as /api/v1/graph and the JSON export give it.
type graphNode struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Owners     []struct {
		UID string `json:"uid"`
	} `json:"owners"`
}

type graphDoc struct {
	Seq   uint64      `json:"seq"`
	Nodes []graphNode `json:"nodes"`
}

func (g graphDoc) uids() []string { return uidsOf(g.Nodes) }

func uidsOf(nodes []graphNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.UID)
	}
	slices.Sort(out)
	return out
}

// graphOf is GET url (/api/v1/graph, one page).
func graphOf(t *testing.T, url string) graphDoc {
	t.Helper()
	var g graphDoc
	mustGetJSON(t, url, &g)
	return g
}

// waitDrawnEquals polls until the page draws exactly uids (sorted).
func waitDrawnEquals(t *testing.T, d uiDriver, uids []string) {
	t.Helper()
	var drawn []string
	if testkit.Poll(context.Background(), 30*time.Second, func() bool {
		d.eval(t, `window.gcscope.drawnUIDs()`, &drawn)
		slices.Sort(drawn)
		return slices.Equal(drawn, uids)
	}) != nil {
		browsertest.Screenshot(t, d.ctx, d.failShot)
		t.Fatalf("the page draws %d objects, want %d: only drawn %v, not drawn %v", len(drawn), len(uids), minus(drawn, uids), minus(uids, drawn))
	}
}

// downloads are the files the browser saved, in the order they completed.
type downloads struct {
	dir   string
	mu    sync.Mutex
	names map[string]string // guid → the name the page gave the file
	done  []string          // guids, completed
	taken int
}

// watchDownloads makes the browser save downloads into a temporary directory, and follows
// them.
func watchDownloads(t *testing.T, ctx context.Context) *downloads {
	t.Helper()
	dl := &downloads{dir: t.TempDir(), names: map[string]string{}}
	yes := true
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dl.dir, EventsEnabled: &yes}); err != nil {
		t.Fatalf("browser downloads: %v", err)
	}
	begun := chromedp.BrowserEvents(ctx, browser.DownloadWillBegin)
	progress := chromedp.BrowserEvents(ctx, browser.DownloadProgress)
	go func() {
		for ev, err := range begun {
			if err != nil {
				return
			}
			dl.mu.Lock()
			dl.names[ev.GUID] = ev.SuggestedFilename
			dl.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range progress {
			if err != nil {
				return
			}
			if ev.State == browser.DownloadProgressStateCompleted {
				dl.mu.Lock()
				dl.done = append(dl.done, ev.GUID)
				dl.mu.Unlock()
			}
		}
	}()
	return dl
}

// next waits for the next completed download and returns its name and content.
func (dl *downloads) next(t *testing.T, timeout time.Duration) (string, []byte) {
	t.Helper()
	var guid, name string
	if err := testkit.Poll(context.Background(), timeout, func() bool {
		dl.mu.Lock()
		defer dl.mu.Unlock()
		if dl.taken == len(dl.done) {
			return false
		}
		guid = dl.done[dl.taken]
		dl.taken++
		name = dl.names[guid]
		return true
	}); err != nil {
		t.Fatalf("no download completed within %v", timeout)
	}
	data, err := os.ReadFile(filepath.Join(dl.dir, guid))
	if err != nil {
		t.Fatalf("download %s: %v", name, err)
	}
	return name, data
}

// checkSVG: well-formed XML with an <svg> root in the SVG namespace, whose objects (their
// <title>s) are exactly those the canvas drew on screen.
func checkSVG(t *testing.T, data []byte, onScreen []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root xml.Name
	var titles []string
	var path []string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("svg: not well-formed XML: %v", err)
			return
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root.Local == "" {
				root = tok.Name
			}
			path = append(path, tok.Name.Local)
			text.Reset()
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			if tok.Name.Local == "title" {
				titles = append(titles, text.String())
			}
			path = path[:len(path)-1]
		}
	}
	if root != (xml.Name{Space: "http://www.w3.org/2000/svg", Local: "svg"}) || len(path) != 0 {
		t.Errorf("svg: root element %v (unclosed %v); want svg in the SVG namespace", root, path)
	}
	slices.Sort(titles)
	if !slices.Equal(titles, onScreen) {
		t.Errorf("svg: %d objects, the canvas drew %d: only in the SVG %v, only on the canvas %v", len(titles), len(onScreen), minus(titles, onScreen), minus(onScreen, titles))
	}
}

// checkPNG: a PNG of the canvas's size, with something drawn (many colours, no colour
// covering nearly everything).
func checkPNG(t *testing.T, data []byte, w, h int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Errorf("png: %v", err)
		return
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		t.Errorf("png: %dx%d; the canvas is %dx%d", b.Dx(), b.Dy(), w, h)
	}
	counts := map[[4]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}]++
		}
	}
	most, total := 0, 0
	for _, n := range counts {
		most = max(most, n)
		total += n
	}
	if len(counts) < 16 || float64(most) > 0.97*float64(total) {
		t.Errorf("png: %d colours, the commonest covers %.1f%%: nothing drawn?", len(counts), 100*float64(most)/float64(total))
	}
}
