// @ts-check
// The frame loop: each animation frame takes what the stream changed, follows the
// cascades, lays out again what may move (never a namespace in the middle of a cascade),
// refreshes the panels at their own pace, and draws.

import { GHOST_MS } from "./store.js";
import { namespaceStatus } from "./cascades.js";
import { keep, revealAndCenter } from "./view.js";

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
 * @property {(now: number) => void} drew a frame was drawn (tests count them while playing)
 * @property {() => void} firstDrawn the first snapshot is drawn
 */

/**
 * Puts relayout into page and starts the frame loop.
 * @param {Page} page @param {FramePanels} p
 */
export function startFrames(page, p) {
  const { live, liveCascades, layout, renderer, view, perf } = page;
  let lastLiveCascades = 0;
  let lastLayout = 0, layoutCost = 0, lastQueues = -Infinity, lastFilters = 0, lastCascades = 0, lastStrip = 0, lastStuckCount = -Infinity, lastGlance = -Infinity;
  let fittedOnce = false;

  /** Lays out again the dirty namespaces given (all of them by default: the user acted). */
  page.relayout = (now, dirty = page.store.dirtyNamespaces) => {
    const store = page.store;
    const anchorUID = renderer.centerItem();
    const before = anchorUID ? layout.box(anchorUID) : null;
    if (view.focus) {
      const focusSet = store.closure([view.focus]);
      for (const [u, g] of store.ghosts) if (g.node.owners?.some((o) => focusSet.has(o.uid)) || focusSet.has(u)) focusSet.add(u);
      page.focusSet = focusSet;
      dirty = store.dirtyNamespaces;
      dirty.add("*");
    } else page.focusSet = null;
    const t0 = performance.now();
    layout.update(store, (n) => keep(page, n), dirty, renderer.expanded, (ns) => {
      // A namespace being deleted: its box is wide enough for its progress too.
      const c = page.cascades.ofNamespace(ns);
      return c ? namespaceStatus(c, true) : "";
    });
    layoutCost = performance.now() - t0;
    perf.layoutMs = layoutCost;
    if (dirty === store.dirtyNamespaces) dirty.clear();
    else for (const ns of dirty) store.dirtyNamespaces.delete(ns);
    lastLayout = now;
    page.layoutDue = store.dirtyNamespaces.size > 0;
    if (!fittedOnce && layout.items.size) {
      fittedOnce = true;
      if (!(view.sel && revealAndCenter(page, view.sel, 1))) renderer.open(layout.workloadBounds());
    } else if (page.centerDue && layout.items.has(page.centerDue)) {
      revealAndCenter(page, page.centerDue);
      page.centerDue = null;
    } else renderer.anchor(anchorUID, before);
    renderer.dirty = true;
    page.updateEmpty();
  };

  /**
   * The dirty namespaces whose layout may change now: not one in the middle of a cascade (a
   * removal still fading, or a cascade's counts moving, in the last GHOST_MS), so that nothing
   * moves while the user watches; it is laid out once it has settled.
   * @param {number} now
   */
  function settledDirty(now) {
    const dirty = page.store.dirtyNamespaces;
    if (dirty.has("*")) return dirty;
    /** @type {Set<string>} */
    const out = new Set();
    for (const ns of dirty) {
      if (now - (page.store.removedAt.get(ns) ?? -Infinity) > GHOST_MS && !page.cascades.progressing(ns, now, GHOST_MS)) out.add(ns);
    }
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
      if (ready.size) page.relayout(now, ready);
    }
    if ((cascades.changed || cascades.active.size) && now - lastStrip > 250) {
      cascades.changed = false;
      lastStrip = now;
      p.cascadeStrip.render();
      // The selected owner's progress line follows its cascade (the owner itself may not change).
      if (view.sel && cascades.of(view.sel)) p.objectPanel.renderSoon();
    }
    if (store.touched.size) {
      renderer.dirty = true;
      for (const uid of store.touched) renderer.invalidate(uid);
      if (view.sel && store.touched.has(view.sel)) p.objectPanel.changed();
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
    if (store.queuesChanged && now - lastQueues > 250) {
      store.queuesChanged = false;
      lastQueues = now;
      p.queuesPanel.render();
    }
    if (now - lastFilters > 2000) {
      lastFilters = now;
      page.fillFilterOptions();
    }
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
  requestAnimationFrame(tick);
}
