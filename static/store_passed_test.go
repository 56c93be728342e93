package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// passedProbe: two stores with an item waiting in graphChanges apply the same moment of the
// queue, one as its transitions, the other as the server folds them (an item that came and
// went within the frame sent as {"op": "passed"}, docs/stream.md): what each then holds of
// the queues.
const passedProbe = `(async () => {
  const { Store } = await import("/store.js");
  const obj = (n) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: n, uid: "uid-" + n });
  const q = (seq, op, n, depth, inFlight) => ({ seq, type: "queue", time: "2026-11-26T12:00:00Z",
    queue: { queue: "graphChanges", op, object: obj(n), counts: { depth, inFlight } } });
  const fresh = () => {
    const s = new Store();
    s.applySnapshot({ seq: 10, nodes: [], queues: [{ name: "graphChanges", depth: 1, inFlight: 0, adds: 5,
      items: [{ object: obj("waiting"), queued: true, queuedItems: 1, since: "2026-11-26T11:59:00Z" }] }] });
    return s;
  };
  const state = (s) => { const g = s.queues.get("graphChanges");
    return { depth: g.depth, inFlight: g.inFlight, adds: g.adds, items: [...g.items.keys()].sort() }; };
  const one = fresh(), folded = fresh();
  one.applyEvents([q(11, "added", "a", 2, 0), q(12, "taken", "a", 1, 1), q(13, "added", "b", 2, 1), q(14, "done", "a", 2, 0),
    q(15, "taken", "b", 1, 1), q(16, "done", "b", 1, 0)]);
  folded.applyEvents([{ seq: 16, type: "queue", time: "2026-11-26T12:00:00Z", queue: { queue: "graphChanges", op: "passed", passed: 2, counts: { depth: 1, inFlight: 0 } } }]);
  return { one: state(one), folded: state(folded), unknown: [...folded.unknownTypes] };
})()`

func TestAPassedEventLeavesTheQueuesAsItsTransitionsWould(t *testing.T) {
	page, ctx := modulePage(t)
	type queue struct {
		Depth, InFlight, Adds int
		Items                 []string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		One, Folded queue
		Unknown     []string
	}](passedProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.One.Adds != 7 || got.One.Depth != 1 || len(got.One.Items) != 1 {
		t.Fatalf("applied one by one, graphChanges holds %+v; want 7 adds, the waiting item alone", got.One)
	}
	if got.Folded.Depth != got.One.Depth || got.Folded.InFlight != got.One.InFlight || got.Folded.Adds != got.One.Adds ||
		len(got.Folded.Items) != 1 || got.Folded.Items[0] != got.One.Items[0] || len(got.Unknown) > 0 {
		t.Errorf("applied folded, graphChanges holds %+v (unknown types %v); one by one, %+v", got.Folded, got.Unknown, got.One)
	}
	page.NoErrors(t)
}
