package static

import (
	"strings"
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

// countsProbe: a ReplicaSet deleted in the foreground with its 3 Pods; what the strip and
// the owner's box say once one Pod went, and once all went and the ReplicaSet too.
const countsProbe = `(async () => {
  const { Store } = await import("/store.js");
  const { Cascades, CascadeStrip, countText } = await import("/cascades.js");
  const rs = { apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "web", name: "web-7d9", uid: "rs" };
  const pod = (name) => ({ apiVersion: "v1", kind: "Pod", namespace: "web", name, uid: name,
    owners: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7d9", uid: "rs", controller: true, blockOwnerDeletion: true }] });
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [rs, pod("p1"), pod("p2"), pod("p3")] });
  const c = new Cascades(s);
  c.observe([...s.nodes.keys()], performance.now());
  const strip = new CascadeStrip(document.createElement("div"), c, () => {});
  const said = () => {
    c.observe(s.touched, performance.now());
    s.touched.clear();
    strip.render();
    const got = c.of("rs");
    return { box: got ? countText(got) : "", strip: strip.el.querySelector(".muted")?.textContent || "" };
  };
  s.applyEvents([
    { seq: 2, type: "nodeUpdated", node: { ...rs, deletionTimestamp: new Date().toISOString(), finalizers: ["foregroundDeletion"], beingDeleted: true } },
  ]);
  const begun = said();
  s.applyEvents([{ seq: 3, type: "nodeRemoved", node: pod("p1") }]);
  const onePodGone = said();
  s.applyEvents([{ seq: 4, type: "nodeRemoved", node: pod("p2") }, { seq: 5, type: "nodeRemoved", node: pod("p3") }, { seq: 6, type: "nodeRemoved", node: rs }]);
  return { begun, onePodGone, allGone: said() };
})()`

// TestCascadeCountsAreOfTheDependents: the strip and the owner's box count a cascade's
// dependents, alike, not its owner ("0 of 4 gone" was said of 3 Pods, and the strip,
// the box and the panel each said another number).
func TestCascadeCountsAreOfTheDependents(t *testing.T) {
	page, ctx := modulePage(t)
	type said struct{ Box, Strip string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Begun, OnePodGone, AllGone said }](countsProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		when        string
		got         said
		box, prefix string
	}{
		{"begun", got.Begun, "0 of 3 gone", "0/3 · "},
		{"one Pod gone", got.OnePodGone, "1 of 3 gone", "1/3 · "},
		{"all gone, the ReplicaSet too", got.AllGone, "3 of 3 gone", "3 of 3 gone · "},
	} {
		if c.got.Box != c.box || !strings.HasPrefix(c.got.Strip, c.prefix) {
			t.Errorf("%s: the box says %q and the strip %q; want %q and %q…", c.when, c.got.Box, c.got.Strip, c.box, c.prefix)
		}
	}
	page.NoErrors(t)
}
