package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// boxCountsProbe lays out, summary first, one namespace counted at 10,000 objects (no object
// held) and draws it at a zoom where its box is several times wider and taller than the
// view, its top-left corner on screen: what the box's count lines were drawn as.
const boxCountsProbe = `(async () => {
  const { Store } = await import("/store.js");
  const { Layout } = await import("/layout.js");
  const { Renderer } = await import("/render.js");
  const canvas = document.createElement("canvas");
  canvas.style.cssText = "width: 600px; height: 400px; display: block";
  document.body.append(canvas);
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [] });
  const layout = new Layout();
  const counts = new Map([["big", { name: "big", objects: 10000, beingDeleted: 3, kinds: {} }]]);
  layout.update(s, () => true, new Set(["*"]), new Set(), () => "", { counts, holds: () => false });
  const r = new Renderer(canvas, s, layout);
  r.countsNote = () => "loading its objects…";
  const g = layout.groups.get("big");
  const k = 0.5;
  r.cam = { k, x: 40 - g.x * k, y: 40 - g.y * k };
  r.recordDrawn();
  r.frame(performance.now());
  return { view: { w: r.w, h: r.h }, box: { left: 40, top: 40, right: 40 + g.w * k, bottom: 40 + g.h * k }, lines: [...(r.drawnCounts?.values() || [])] };
})()`

func TestACountedBoxWiderThanTheViewSaysItsCountsInView(t *testing.T) {
	page, ctx := modulePage(t)
	type line struct {
		Text           string
		Left, Right, Y float64
	}
	type rect struct{ Left, Top, Right, Bottom, W, H float64 }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		View  rect
		Box   rect
		Lines []line
	}](boxCountsProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Box.Right < 2*got.View.W || got.Box.Bottom < 2*got.View.H {
		t.Fatalf("the box spans %+v of a view %+v: the probe wants it well beyond the view", got.Box, got.View)
	}
	if len(got.Lines) != 3 {
		t.Fatalf("drew %d count lines %+v; want the objects, those being deleted and the note", len(got.Lines), got.Lines)
	}
	for _, l := range got.Lines {
		if l.Left < got.Box.Left || l.Right > got.View.W || l.Y < got.Box.Top || l.Y > got.View.H {
			t.Errorf("%q drawn from x %.0f to %.0f at y %.0f: want it in the part of the box on screen (x %.0f–%.0f, y %.0f–%.0f)",
				l.Text, l.Left, l.Right, l.Y, got.Box.Left, got.View.W, got.Box.Top, got.View.H)
		}
	}
	page.NoErrors(t)
}
