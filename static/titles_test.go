package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// lowBoxProbe draws the titles of two boxes in a row far out (zoom 0.11: the gap between
// rows of boxes, 80 world units, is 8.8 px on screen, too narrow to hold a title over a
// box): a tall one, and a low one of 11 px on screen (a namespace none of whose objects
// the page holds). It returns what each box's title said.
const lowBoxProbe = `(async () => {
  const { drawTitles } = await import("/titles.js");
  const canvas = document.createElement("canvas");
  canvas.width = 800; canvas.height = 400;
  document.body.replaceChildren(canvas);
  const group = (ns, x, h) => ({ ns, title: ns, x, y: 0, w: 450, h, items: [], blocks: [], owned: 0, cycles: new Set() });
  const tall = group("demo-batch", 0, 220), low = group("demo-cycles", 530, 100);
  const r = { ctx: canvas.getContext("2d"), dpr: 1, cam: { k: 0.11, x: 20, y: 100 }, w: 800, h: 400,
    colors: { "--fg": "#000", "--group-bg": "#eee", "--st-deleting": "#c00", "--muted": "#666" },
    drawnTitles: new Map(), titleLog: [], drawClock: 0, cascades: null,
    layout: { groups: new Map([[tall.ns, tall], [low.ns, low]]) }, collapsed: () => false };
  drawTitles(r, [tall, low]);
  return Object.fromEntries([...r.drawnTitles].map(([ns, t]) => [ns, t.text]));
})()`

// TestALowBoxIsTitledFarOut: far out, a box lower than a title's plate (11 px on screen)
// in a gap too narrow to take the title over it was drawn untitled, beside boxes of the
// same width titled "de…" (the summary-first page zoomed out, TestUISummaryFirst's
// screenshot): its plate now reaches into the gap below it.
func TestALowBoxIsTitledFarOut(t *testing.T) {
	page, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](lowBoxProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"demo-batch", "demo-cycles"} {
		if len(got[ns]) < 3 || got[ns][:2] != ns[:2] {
			t.Errorf("the box of %s is titled %q; want its name, whole or cut short (all titles: %q)", ns, got[ns], got)
		}
	}
	page.NoErrors(t)
}
