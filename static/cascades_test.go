package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// cascadeProbe: an owner with two dependents; one frame's events hold the owner's
// foreground deletion and the first dependent's removal (a busy page draws many events in
// one frame); the cascade the page then sees counts that dependent as gone in it.
const cascadeProbe = `(async () => {
  const { Store } = await import("/store.js");
  const { Cascades } = await import("/cascades.js");
  const cm = (name, owners = []) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "team", name, uid: "uid-" + name, owners });
  const owned = [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "uid-owner", blockOwnerDeletion: true }];
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [cm("owner"), cm("free", owned), { ...cm("held", owned), finalizers: ["test/hold"] }] });
  const c = new Cascades(s);
  c.observe([...s.nodes.keys()], performance.now());
  s.touched.clear();
  const deleting = { ...cm("owner"), deletionTimestamp: new Date().toISOString(), finalizers: ["foregroundDeletion"], beingDeleted: true };
  s.applyEvents([
    { seq: 2, type: "nodeUpdated", node: deleting },
    { seq: 3, type: "nodeRemoved", node: cm("free", owned) },
  ]);
  c.observe(s.touched, performance.now());
  const got = c.active.get("uid-owner");
  return got ? { total: got.total, gone: got.gone } : null;
})()`

func TestACascadeSeenAfterItsFirstRemovalCountsIt(t *testing.T) {
	page, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[*struct{ Total, Gone int }](cascadeProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Total != 3 || got.Gone != 1 {
		t.Errorf("the cascade of owner: %+v, want 3 objects, 1 gone (free went in the frame the deletion was seen)", got)
	}
	page.NoErrors(t)
}
