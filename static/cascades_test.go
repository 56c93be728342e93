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

// countsProbe: a ReplicaSet deleted in the foreground with its 3 Pods, and a ClusterRole
// that names it through an invalid reference (a cluster-scoped object cannot have a
// namespaced owner: the collector keeps it); what the strip and the owner's box say once one
// Pod went, and once all went and the ReplicaSet too. Then an Orphan delete of a Deployment
// whose ReplicaSet is orphaned.
const countsProbe = `(async () => {
  const { Store, DELETION_SEEN_MS } = await import("/store.js");
  const { Cascades, CascadeStrip, countText } = await import("/cascades.js");
  const rs = { apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "web", name: "web-7d9", uid: "rs" };
  const rsRef = { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7d9", uid: "rs", controller: true, blockOwnerDeletion: true };
  const pod = (name) => ({ apiVersion: "v1", kind: "Pod", namespace: "web", name, uid: name, owners: [rsRef] });
  const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "invalid-owner", uid: "role", owners: [rsRef] };
  const dep = { apiVersion: "apps/v1", kind: "Deployment", namespace: "web", name: "api", uid: "dep" };
  const rs2 = { apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "web", name: "api-5c4", uid: "rs2",
    owners: [{ apiVersion: "apps/v1", kind: "Deployment", name: "api", uid: "dep", controller: true, blockOwnerDeletion: true }] };
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [rs, pod("p1"), pod("p2"), pod("p3"), role, dep, rs2] });
  const c = new Cascades(s);
  c.observe([...s.nodes.keys()], performance.now());
  const strip = new CascadeStrip(document.createElement("div"), c, () => {});
  // shown: once what was removed as its deletion began has been shown being deleted.
  const said = (uid, shown = true) => {
    if (shown) s.expire(performance.now() + DELETION_SEEN_MS);
    c.observe(s.touched, performance.now());
    s.touched.clear();
    strip.render();
    const got = c.of(uid);
    return { box: got ? countText(got) : "", strip: strip.el.querySelector("[data-owner='" + uid + "'] .muted")?.textContent || "" };
  };
  const now = new Date().toISOString();
  s.applyEvents([
    { seq: 2, type: "nodeUpdated", node: { ...rs, deletionTimestamp: now, finalizers: ["foregroundDeletion"], beingDeleted: true } },
  ]);
  const begun = said("rs");
  s.applyEvents([{ seq: 3, type: "nodeRemoved", node: pod("p1") }]);
  const onePodGone = said("rs");
  s.applyEvents([{ seq: 4, type: "nodeRemoved", node: pod("p2") }, { seq: 5, type: "nodeRemoved", node: pod("p3") }, { seq: 6, type: "nodeRemoved", node: rs }]);
  const ownerHeld = said("rs", false);
  const allGone = said("rs");
  s.applyEvents([{ seq: 7, type: "nodeUpdated", node: { ...dep, deletionTimestamp: now, finalizers: ["orphan"], beingDeleted: true } }]);
  const orphanBegun = said("dep");
  s.applyEvents([{ seq: 8, type: "nodeUpdated", node: { ...rs2, owners: [] } }]);
  const orphaned = said("dep");
  s.applyEvents([{ seq: 9, type: "nodeRemoved", node: dep }]);
  return { begun, onePodGone, ownerHeld, allGone, orphanBegun, orphaned, orphanDone: said("dep") };
})()`

// TestCascadeCountsAreOneDefinition: the strip and the owner's box count a cascade alike,
// by the one definition (cascades.js): its members, the owner included; of those that do
// not stay, how many are gone; what stays (kept through an invalid reference, orphaned)
// apart. An owner removed as its deletion began is counted gone once the page has shown it
// being deleted (DELETION_SEEN_MS), as the canvas draws it. Before, they counted the dependents only and left the kept ClusterRole out, where
// the history counted it among 7 objects and the dialog predicted 6 deleted.
func TestCascadeCountsAreOneDefinition(t *testing.T) {
	page, ctx := modulePage(t)
	type said struct{ Box, Strip string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Begun, OnePodGone, OwnerHeld, AllGone, OrphanBegun, Orphaned, OrphanDone said }](countsProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		when string
		got  said
		box  string
	}{
		{"begun", got.Begun, "0 of 4 gone · 1 kept"},
		{"one Pod gone", got.OnePodGone, "1 of 4 gone · 1 kept"},
		{"all gone, the ReplicaSet just as its deletion began", got.OwnerHeld, "3 of 4 gone · 1 kept"},
		{"all gone, the ReplicaSet too", got.AllGone, "4 of 4 gone · 1 kept"},
		{"an Orphan delete begun", got.OrphanBegun, "0 of 2 gone"},
		{"its ReplicaSet orphaned", got.Orphaned, "0 of 1 gone · 1 orphaned"},
		{"the Deployment gone", got.OrphanDone, "1 of 1 gone · 1 orphaned"},
	} {
		if c.got.Box != c.box || !strings.HasPrefix(c.got.Strip, c.box+" · ") {
			t.Errorf("%s: the box says %q and the strip %q; want %q and %q…", c.when, c.got.Box, c.got.Strip, c.box, c.box+" · ")
		}
	}
	page.NoErrors(t)
}
