// @ts-check
// Time travel's wiring (with --history; see travelui.js and docs/ui.md): the page shows
// another store and its cascades (a recorded moment's, or the live one again), and lays
// itself out again around them, the view staying put.

import { TravelUI } from "./travelui.js";
import { firstContent } from "./page.js";
import { updateEmpty } from "./notices.js";

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
 * @property {import("./filters.js").Filters} filters
 * @property {import("./search.js").Search} search
 * @property {import("./view.js").PageView} view select and the URL
 * @property {(now: number) => void} relayout
 * @property {() => void} showConn
 * @property {(ms: number) => void} seeked a seek took ms (tests keep them)
 * @property {() => void} applied the store shown changed (a seek, or playing): a test's trace follows it
 */

/**
 * Makes the page's TravelUI (main.js puts it in page.travelUI).
 * @param {Page} page @param {StoreViews} v
 */
export function newTimeTravel(page, v) {
  /** The panels, strip, filters and search after the store shown was replaced. */
  function refreshViews() {
    v.queuesPanel.lastActionsKey = "";
    v.queuesPanel.render(true);
    page.cascades.changed = true;
    v.cascadeStrip.render();
    v.objectPanel.show(page.view.sel);
    v.filters.refresh();
    if (page.view.q) v.search.run();
    updateEmpty(page);
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
    v.relayout(performance.now());
    refreshViews();
  }

  return new TravelUI({
    replay: page.replay,
    live: page.live,
    liveCascades: page.liveCascades,
    showStore,
    seeked(ms) {
      v.seeked(ms);
      firstContent(page);
      v.relayout(performance.now());
      refreshViews();
      v.applied();
    },
    applied: v.applied,
    showConn: v.showConn,
    select: (uid, center, keepTab) => v.view.select(uid, center, keepTab),
    writeURL: () => v.view.writeURL(),
    toast: page.toast,
    tabs: v.tabs,
  });
}
