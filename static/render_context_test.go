package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// contextProbe draws a namespace of 40 ConfigMaps far out (each namespace a cached
// bitmap), blanks the canvas and the cached bitmaps as a lost context leaves them, and
// reports what the frame after a contextrestored event draws: a browser that takes a
// canvas's memory back (GPU reset, memory pressure) restores it blank, and the page must
// not stay black until something in the graph changes.
const contextProbe = `(async () => {
  const { Store } = await import("/store.js");
  const { Layout } = await import("/layout.js");
  const { Renderer } = await import("/render.js");
  const canvas = document.createElement("canvas");
  canvas.style.cssText = "width: 400px; height: 300px; display: block";
  document.body.append(canvas);
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: Array.from({ length: 40 }, (_, i) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "team", name: "cm-" + i, uid: "uid-" + i })) });
  const layout = new Layout();
  layout.update(s, () => true, new Set(["*"]));
  const r = new Renderer(canvas, s, layout);
  r.cam = { k: 0.05, x: 20, y: 20 }; // far out: cells, from the namespace's bitmap
  const painted = () => {
    const d = r.ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    const bg = [d[0], d[1], d[2]];
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] !== bg[0] || d[i + 1] !== bg[1] || d[i + 2] !== bg[2]) n++;
    return n;
  };
  const step = () => { r.dirty = true; return r.frame(performance.now()); };
  step();
  const before = painted();
  const cached = [...layout.groups.values()].filter((g) => g.cache).length;
  // What a lost context leaves: a black canvas, and cached bitmaps blank.
  for (const g of layout.groups.values()) g.cache?.canvas.getContext("2d").clearRect(0, 0, g.cache.canvas.width, g.cache.canvas.height);
  r.ctx.setTransform(1, 0, 0, 1, 0, 0);
  r.ctx.fillStyle = "#000";
  r.ctx.fillRect(0, 0, canvas.width, canvas.height);
  const dirtyBefore = r.dirty;
  canvas.dispatchEvent(new Event("contextrestored"));
  const redrawn = r.frame(performance.now());
  return { before, cached, dirtyBefore, redrawn, after: painted(), corner: [...r.ctx.getImageData(0, 0, 1, 1).data].slice(0, 3) };
})()`

func TestARestoredCanvasIsDrawnAgain(t *testing.T) {
	page, ctx := modulePage(t)
	type result struct {
		Before, Cached, After int
		DirtyBefore, Redrawn  bool
		Corner                []int
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[result](contextProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Cached == 0 || got.Before == 0 {
		t.Fatalf("the first frame drew %d pixels from %d cached namespace bitmaps; want the namespace drawn far out, from its bitmap", got.Before, got.Cached)
	}
	if got.DirtyBefore {
		t.Fatal("the renderer had a frame due before the context came back: the probe does not test the restore")
	}
	if !got.Redrawn || got.After != got.Before || got.Corner[0]+got.Corner[1]+got.Corner[2] == 0 {
		t.Errorf("after contextrestored the next frame drew=%v, %d pixels off the background (want %d, as before), corner %v (black: not redrawn)",
			got.Redrawn, got.After, got.Before, got.Corner)
	}
	page.NoErrors(t)
}
