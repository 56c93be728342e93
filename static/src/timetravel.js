// @ts-check
// Time travel's wiring (with --history; see travelui.js and docs/ui.md): the page shows
// another store and its cascades (a recorded moment's, or the live one again), and lays
// itself out again around them, the view staying put.

import { TravelUI } from "./travelui.js";

/** @typedef {import("./page.js").Page} Page */
/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./cascades.js").Cascades} Cascades */

/**
 * The views that show the store shown.
 * @typedef {object} StoreViews
 * @property {import("./panel.js").ObjectPanel} objectPanel
 * @property {import("./queues.js").QueuesPanel} queuesPanel
 * @property {import("./cascades.js").CascadeStrip} cascadeStrip
 * @property {import("./tabs.js").Tabs} tabs
 * @property {() => void} showConn
 * @property {(ms: number) => void} seeked a seek took ms (tests keep them)
 */

/**
 * Makes the page's TravelUI, into page.travelUI.
 * @param {Page} page @param {StoreViews} v
 */
export function wireTimeTravel(page, v) {
  /** The panels, strip, filters and search after the store shown was replaced. */
  function refreshViews() {
    v.queuesPanel.lastActionsKey = "";
    v.queuesPanel.render(true);
    page.cascades.changed = true;
    v.cascadeStrip.render();
    v.objectPanel.show(page.view.sel);
    page.refreshFilters();
    if (page.view.q) page.runSearch();
    page.updateEmpty();
  }

  /**
   * Shows store s and its cascades: the live state, or time travel's. The layout is done
   * again at once, anchored on what is in the middle of the screen, so the view stays put.
   * @param {Store} s @param {Cascades} c
   */
  function showStore(s, c) {
    page.store = s;
    page.cascades = c;
    page.renderer.store = s;
    page.renderer.cascades = c;
    v.objectPanel.store = s;
    v.queuesPanel.store = s;
    v.cascadeStrip.cascades = c;
    s.touched.clear();
    s.dirtyNamespaces.add("*");
    page.relayout(performance.now());
    refreshViews();
  }

  page.travelUI = new TravelUI({
    replay: page.replay,
    live: page.live,
    liveCascades: page.liveCascades,
    showStore,
    seeked(ms) {
      v.seeked(ms);
      if (page.perf.snapshotMs === null) {
        page.perf.snapshotMs = performance.now();
        page.firstSnapshotPending = true;
      }
      page.relayout(performance.now());
      refreshViews();
      page.tracer?.engine();
    },
    applied() {
      page.tracer?.engine();
    },
    showConn: v.showConn,
    select: (uid, center, keepTab) => page.select(uid, center, keepTab),
    writeURL: () => page.writeURL(),
    toast: (text) => page.toast(text),
    tabs: v.tabs,
  });
}
