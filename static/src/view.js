// @ts-check
// The view: what the user looks at (filters, focus, selection, the recorded moment), kept
// in the URL so that every view can be shared; selecting an object, focusing on one, and
// opening the sets of loners objects are folded into.

import { $, describe } from "./dom.js";
import { isoTime } from "./history.js";

/** @typedef {import("./page.js").Page} Page */

/**
 * What the view needs of the rest of the page.
 * @typedef {object} ViewParts
 * @property {import("./tabs.js").Tabs} tabs
 * @property {import("./panel.js").ObjectPanel} objectPanel
 * @property {(t: "light"|"dark", remember: boolean) => void} setTheme
 * @property {() => void} syncFilters the filter controls say the view's filters
 * @property {(now: number) => void} relayout lays everything out again (frame.js)
 */

/** The view's steps: select, focus, the view changed, the URL written and read. */
export class PageView {
  /** @param {Page} page @param {ViewParts} parts */
  constructor(page, parts) {
    this.page = page;
    this.parts = parts;
    $("focus-clear").addEventListener("click", () => this.setFocus(null));
  }

  writeURL() {
    const { page } = this;
    const { view } = page;
    const p = new URLSearchParams();
    // With several clusters the URL names the one the page shows.
    if (document.body.dataset.cluster) p.set("cluster", document.body.dataset.cluster);
    for (const n of view.ns) p.append("ns", n);
    for (const k of view.kind) p.append("kind", k);
    if (view.q) p.set("q", view.q);
    if (view.focus) p.set("focus", view.focus);
    if (view.sel) p.set("sel", view.sel);
    // Time travel, paused at a moment: that moment is part of the view.
    const travel = page.travelUI?.travel;
    if (travel?.active && !travel.playing && Number.isFinite(travel.at)) p.set("at", isoTime(travel.at));
    const t = document.documentElement.dataset.theme;
    if (t && new URLSearchParams(location.search).get("theme")) p.set("theme", t);
    const url = location.pathname + (p.size ? "?" + p : "");
    if (url !== location.pathname + location.search) history.replaceState(null, "", url);
  }

  /** The user changed the view: lay out again, write the URL. */
  changed() {
    this.page.store.dirtyNamespaces.add("*");
    this.page.layoutDue = true;
    this.writeURL();
    this.parts.syncFilters();
    this.updateFocusChip();
  }

  /**
   * Selects an object (null: none), centring on it when asked. The object panel comes to the
   * front, unless the history view asked (keepTab: the user goes on down its list).
   * @param {string|null} uid @param {boolean} [center] @param {boolean} [keepTab]
   */
  select(uid, center = false, keepTab = false) {
    const { page, parts } = this;
    const { view, renderer } = page;
    page.centerDue = null;
    if (uid && !keepTab && parts.tabs.shown() !== "object") parts.tabs.show("object");
    view.sel = uid;
    renderer.selected = uid;
    renderer.dirty = true;
    parts.objectPanel.show(uid);
    if (uid && center && !revealAndCenter(page, parts.relayout, uid)) {
      const n = page.store.nodes.get(uid);
      if (n && keep(page, n)) {
        // Not laid out yet (a scenario's object, selected as soon as the page has it, in a
        // namespace whose layout waits for a cascade to settle): centred once it is.
        page.centerDue = uid;
      } else if (n) {
        // Not drawn under the current filters: widen the view to show it.
        view.ns = [];
        view.kind = [];
        if (view.focus && page.focusSet && !page.focusSet.has(uid)) view.focus = null;
        this.changed();
        parts.relayout(performance.now());
        renderer.centerOn(uid);
      } else if (page.detail.mode === "summary") {
        // Summary first: the page asks for its component (detail.js), centred once here.
        page.centerDue = uid;
      }
    }
    this.writeURL();
  }

  /** @param {string|null} uid */
  setFocus(uid) {
    const { page } = this;
    page.view.focus = uid;
    if (uid && !page.view.sel) this.select(uid);
    this.changed();
    this.parts.relayout(performance.now());
    page.renderer.fit(page.layout.bounds);
  }

  updateFocusChip() {
    const { view } = this.page;
    const chip = $("focus-chip");
    chip.hidden = !view.focus;
    if (view.focus) {
      const n = this.page.store.nodes.get(view.focus);
      $("focus-name").textContent = n ? describe(n) : view.focus;
    }
  }

  /** Reads the view from the URL. */
  readURL() {
    const { page, parts } = this;
    const { view } = page;
    const p = new URLSearchParams(location.search);
    view.ns = p.getAll("ns");
    view.kind = p.getAll("kind");
    view.q = p.get("q") || "";
    view.focus = p.get("focus");
    view.sel = p.get("sel");
    /** a recorded moment to travel to (with --history), RFC 3339 */
    page.atURL = p.get("at") || "";
    const theme = p.get("theme");
    if (theme === "dark" || theme === "light") parts.setTheme(theme, false);
    // ?tab= opens the page on a tab of the side panel (an alert's runbook links
    // ?tab=stuck); read once, not written back as tabs change.
    const tab = p.get("tab");
    if (tab && parts.tabs.has(tab)) parts.tabs.show(tab);
  }
}

/** The filter the layout applies: the API's namespace and kind filters, and the focus. @param {Page} page @param {import("./store.js").NodeState} n */
export function keep(page, n) {
  const { view, focusSet } = page;
  if (view.ns.length && !view.ns.includes(n.namespace || "")) return false;
  if (view.kind.length && !view.kind.some((k) => k.toLowerCase() === n.kind.toLowerCase())) return false;
  if (focusSet && !focusSet.has(n.uid)) return false;
  return true;
}

/**
 * Centres on uid, first opening the set of loners it is folded into.
 * @param {Page} page @param {(now: number) => void} relayout @param {string} uid @param {number} [k]
 */
export function revealAndCenter(page, relayout, uid, k) {
  const { layout, renderer } = page;
  const b = layout.items.get(uid)?.block;
  if (b?.loner && renderer.collapsed(b)) {
    renderer.expanded.add(b.parent);
    page.store.dirtyNamespaces.add(b.group.ns);
    relayout(performance.now());
  }
  return renderer.centerOn(uid, k);
}

/**
 * Opens or folds a set of loners (objects of one kind with no owner and no dependent).
 * Only its namespace is laid out again; the view stays on the set.
 * @param {Page} page @param {(now: number) => void} relayout @param {import("./layout.js").Block} b
 */
export function toggleLoners(page, relayout, b) {
  const { layout, renderer } = page;
  const open = !renderer.expanded.has(b.parent);
  if (open) renderer.expanded.add(b.parent);
  else renderer.expanded.delete(b.parent);
  page.store.dirtyNamespaces.add(b.group.ns);
  const at = { x: b.group.x + b.x, y: b.group.y + b.y };
  relayout(performance.now());
  const nb = layout.groups.get(b.group.ns)?.blocks.find((x) => x.parent === b.parent);
  if (!nb) return;
  if (open) renderer.fit({ x: nb.group.x + nb.x, y: nb.group.y + nb.y, w: nb.w, h: nb.h }, true, 1);
  else renderer.pan((at.x - nb.group.x - nb.x) * renderer.cam.k, (at.y - nb.group.y - nb.y) * renderer.cam.k);
}
