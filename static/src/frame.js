// @ts-check
// The frame loop: each animation frame takes what the stream changed, follows the
// cascades, lays out again what may move (never a namespace in the middle of a cascade),
// refreshes the panels at their own pace, and draws.

import { GHOST_MS } from "./store.js";
import { namespaceStatus } from "./cascades.js";
import { keep, revealAndCenter } from "./view.js";
import { updateEmpty } from "./notices.js";

/** @typedef {import("./page.js").Page} Page */

/**
 * What the frame loop refreshes besides the canvas.
 * @typedef {object} FramePanels
 * @property {import("./cascades.js").CascadeStrip} cascadeStrip
 * @property {import("./panel.js").ObjectPanel} objectPanel
 * @property {import("./health.js").CollectorHealth|null} health
 * @property {import("./banner.js").DiscoveryBanner} discoveryBanner
 * @property {import("./stuck.js").StuckView} stuckView
 * @property {import("./queues.js").QueuesPanel} queuesPanel
 * @property {import("./glance.js").Glance} glance what needs attention, while nothing is selected
 * @property {import("./selection.js").Selection} [selection] the objects selected together: its bar counts what matches
 * @property {import("./filters.js").Filters} filters their options follow what the state shown holds
 * @property {(now: number) => void} drew a frame was drawn (tests count them while playing)
 * @property {() => void} firstDrawn the first snapshot is drawn
 */

/**
 * The frame loop (start) and the layout it keeps (relayout); the panels given are refreshed
 * from what the stores say changed.
 * @param {Page} page @param {FramePanels} p
 */
export function newFrames(page, p) {
  const { live, liveCascades, layout, renderer, view, perf } = page;
  let lastLiveCascades = 0;
  let lastLayout = 0, layoutCost = 0, lastQueues = -Infinity, lastFilters = 0, lastCascades = 0, lastStrip = 0, lastStuckCount = -Infinity, lastGlance = -Infinity;
  let fittedOnce = false;
  let lastShown = "";

  /**
   * Lays out again the dirty namespaces given (all of them by default: the user acted).
   * @param {number} now @param {Set<string>} [dirty]
   */
  function relayout(now, dirty = page.store.dirtyNamespaces) {
    const store = page.store;
    const anchorUID = renderer.centerItem();
    const before = anchorUID ? layout.box(anchorUID) : null;
    // Nothing to anchor on but boxes (summary first): the box in the middle stays put.
    const anchorNS = anchorUID ? null : renderer.centerGroup();
    const nsBefore = anchorNS !== null ? layout.groups.get(anchorNS) : null;
    const nsAt = nsBefore ? { x: nsBefore.x, y: nsBefore.y } : null;
    if (view.focus) {
      const focusSet = store.closure([view.focus]);
      for (const [u, g] of store.ghosts) if (g.node.owners?.some((o) => focusSet.has(o.uid)) || focusSet.has(u)) focusSet.add(u);
      page.focusSet = focusSet;
      dirty = store.dirtyNamespaces;
      dirty.add("*");
    } else page.focusSet = null;
    const t0 = performance.now();
    const counted = store === live && page.detail.mode === "summary" ? page.detail : null;
    layout.update(store, (n) => keep(page, n), dirty, renderer.expanded, (ns) => {
      // A namespace being deleted: its box is wide enough for its progress too.
      const c = page.cascades.ofNamespace(ns);
      return c ? namespaceStatus(c, true) : "";
    }, counted, (ns) => !view.ns.length || view.ns.includes(ns));
    layoutCost = performance.now() - t0;
    perf.layoutMs = layoutCost;
    if (dirty === store.dirtyNamespaces) dirty.clear();
    else for (const ns of dirty) store.dirtyNamespaces.delete(ns);
    lastLayout = now;
    page.layoutDue = store.dirtyNamespaces.size > 0;
    if (!fittedOnce && (layout.items.size || (counted && layout.groups.size))) {
      fittedOnce = true;
      if (!(view.sel && revealAndCenter(page, relayout, view.sel, 1))) {
        renderer.open(layout.workloadBounds());
        if (view.sel && counted) page.centerDue = view.sel; // summary first: once its component is here
      }
    } else if (page.centerDue && layout.items.has(page.centerDue)) {
      revealAndCenter(page, relayout, page.centerDue);
      page.centerDue = null;
    } else if (anchorUID) renderer.anchor(anchorUID, before);
    else if (anchorNS !== null && nsAt) {
      const g = layout.groups.get(anchorNS);
      if (g && (g.x !== nsAt.x || g.y !== nsAt.y)) renderer.pan((nsAt.x - g.x) * renderer.cam.k, (nsAt.y - g.y) * renderer.cam.k);
    }
    renderer.dirty = true;
    updateEmpty(page);
  }

  /**
   * The dirty namespaces whose layout may change now: not one in the middle of a cascade (a
   * removal still fading, or a cascade's counts moving, in the last GHOST_MS), so that nothing
   * moves while the user watches; it is laid out once it has settled. Nor one whose box
   * comes before such a namespace's on the shelves: a new size of it would push that box
   * aside.
   * @param {number} now
   */
  function settledDirty(now) {
    const store = page.store;
    const dirty = store.dirtyNamespaces;
    const settled = (/** @type {string} */ ns) => now - (store.removedAt.get(ns) ?? -Infinity) > GHOST_MS && !page.cascades.progressing(ns, now, GHOST_MS);
    const watched = [...layout.groups.keys()].filter((ns) => !settled(ns));
    if (dirty.has("*")) {
      if (!watched.length) return dirty;
      // All of them (a snapshot after the stream missed events), named one by one.
      dirty.delete("*");
      for (const ns of layout.groups.keys()) dirty.add(ns);
      for (const ns of store.byNamespace.keys()) dirty.add(ns);
      for (const g of store.ghosts.values()) dirty.add(g.node.namespace || "");
      if (store === live && page.detail.mode === "summary") for (const ns of page.detail.counts.keys()) dirty.add(ns);
    }
    /** @type {Set<string>} */
    const out = new Set();
    for (const ns of dirty) if (settled(ns) && !watched.some((w) => layout.compare(ns, w) < 0)) out.add(ns);
    return out;
  }

  /** @param {number} now */
  function tick(now) {
    const { store, cascades } = page;
    if (store !== live) {
      // Time travel: the live state goes on underneath, its cascades followed, unseen.
      live.expire(now);
      if (live.touched.size || (liveCascades.active.size && now - lastLiveCascades > 100)) {
        lastLiveCascades = now;
        liveCascades.observe(live.touched, now);
        live.touched.clear();
      }
      live.dirtyNamespaces.clear();
    }
    if (store.expire(now)) page.layoutDue = true;
    if (store.dirtyNamespaces.size) page.layoutDue = true;
    // Cascades start from what changed; their counts are refreshed a few times a second,
    // before the layout, which holds still while one progresses.
    if (store.touched.size || (cascades.active.size && now - lastCascades > 100)) {
      lastCascades = now;
      cascades.observe(store.touched, now);
      if (cascades.active.size) renderer.dirty = true;
    }
    // Under heavy churn the layout runs at most every few frames, never more than a
    // quarter of the time.
    if (page.layoutDue && now - lastLayout >= Math.max(60, 4 * layoutCost)) {
      const ready = settledDirty(now);
      if (ready.size) relayout(now, ready);
    }
    // A cascade's step is said within a tenth of a second of the canvas drawing it (its
    // owner's box counts it at once); its clock ticks four times a second.
    if ((cascades.changed || cascades.active.size) && now - lastStrip > (cascades.changed ? 100 : 250)) {
      cascades.changed = false;
      lastStrip = now;
      p.cascadeStrip.render();
      // The selected owner's progress line follows its cascade (the owner itself may not
      // change), in the same frame as the strip: both say the same count.
      if (view.sel && cascades.of(view.sel)) p.objectPanel.render();
    }
    if (store.touched.size) {
      renderer.dirty = true;
      for (const uid of store.touched) renderer.invalidate(uid);
      if (view.sel && p.objectPanel.concerns(store.touched)) p.objectPanel.changed();
      store.touched.clear();
    }
    if (p.health) {
      if (live.shadowChanged) p.health.poke();
      live.shadowChanged = false;
      p.health.tick(now);
    }
    // Discovery is the live cluster's, whatever moment the page shows.
    if (live.syncChanged) {
      live.syncChanged = false;
      p.discoveryBanner.update(live.sync.discoveryFailures);
    }
    p.discoveryBanner.tick(now);
    if (now - lastStuckCount > 1000) {
      lastStuckCount = now;
      p.stuckView.count(live, Date.now());
    }
    if (!view.sel && now - lastGlance > 500) {
      lastGlance = now;
      p.glance.render();
    }
    // The selected object's panel gets the room: the queues fold to one line.
    p.queuesPanel.setSelected(!!view.sel);
    if (store.queuesChanged && now - lastQueues > 250) {
      store.queuesChanged = false;
      lastQueues = now;
      p.queuesPanel.render();
    }
    if (now - lastFilters > 2000) {
      lastFilters = now;
      p.filters.fill();
    }
    // Summary first: what the page holds follows what it shows (detail.js).
    const shown = `${renderer.cam.x}/${renderer.cam.y}/${renderer.cam.k}/${view.sel}/${view.focus}/${view.ns}/${view.kind}/${layout.bounds.w}/${layout.bounds.h}`;
    if (shown !== lastShown) {
      lastShown = shown;
      page.detail.viewMoved();
    }
    p.selection?.tick(now);
    const drew = renderer.frame(now);
    if (drew) p.drew(now);
    perf.drawn = layout.items.size;
    perf.applied = store.applied;
    if (drew && page.firstSnapshotPending && !page.layoutDue) {
      page.firstSnapshotPending = false;
      perf.firstFrameMs = performance.now();
      p.firstDrawn();
    }
    requestAnimationFrame(tick);
  }
  return { relayout, start: () => requestAnimationFrame(tick) };
}
