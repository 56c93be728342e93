package static

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// cyclesProbe asks cycleEdges about small owner graphs, and about a chain and a ring of
// 100,000 (deep enough to overflow a recursive walk).
const cyclesProbe = `(async () => {
  const { cycleEdges } = await import("/cycles.js");
  const edges = (g) => [...cycleEdges(new Map(Object.entries(g)))].sort();
  const n = 100000, chain = new Map(), ring = new Map();
  for (let i = 0; i < n; i++) {
    chain.set("o" + i, i ? ["o" + (i - 1)] : []);
    ring.set("o" + i, ["o" + ((i + n - 1) % n)]);
  }
  return {
    triangle: edges({ a: ["c"], b: ["a"], c: ["b"] }),
    self: edges({ s: ["s"], t: ["s"] }),
    diamond: edges({ top: [], l: ["top"], r: ["top"], bottom: ["l", "r"] }),
    tail: edges({ a: ["b"], b: ["a"], tail: ["a"], head: [], a2: ["head"] }),
    acrossRoots: edges({ r1: [], r2: [], x: ["r1", "y"], y: ["r2", "x"] }),
    ownerNotThere: edges({ a: ["gone"], b: ["a"] }),
    chain: cycleEdges(chain).size,
    ring: cycleEdges(ring).size,
  };
})()`

// TestCycleEdges: the references on an ownership cycle are exactly those whose owner and
// dependent reach each other (a self-reference included), however long the cycle.
func TestCycleEdges(t *testing.T) {
	page, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Triangle, Self, Diamond, Tail, AcrossRoots, OwnerNotThere []string
		Chain, Ring                                               int
	}](cyclesProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"a → b → c → a", got.Triangle, []string{"a c", "b a", "c b"}},
		{"a self-reference (and its dependent)", got.Self, []string{"s s"}},
		{"a diamond", got.Diamond, nil},
		{"a two-cycle with a dependent hanging off it", got.Tail, []string{"a b", "b a"}},
		{"a two-cycle between two roots' dependents", got.AcrossRoots, []string{"x y", "y x"}},
		{"an owner not among the objects", got.OwnerNotThere, nil},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: cycle edges %q, want %q", c.name, c.got, c.want)
		}
	}
	if got.Chain != 0 || got.Ring != 100000 {
		t.Errorf("a chain of 100,000: %d cycle edges, want 0; a ring of 100,000: %d, want all", got.Chain, got.Ring)
	}
	page.NoErrors(t)
}
