// @ts-check
// The search box: objects of the state shown whose name, kind, namespace or uid match,
// highlighted in the graph and listed best first; with a recording, a search of the
// removals it holds too, to travel to an object that is gone.

import { h, $, clock } from "./dom.js";
import { sortKey } from "./layout.js";
import { historyPage, parseTime } from "./history.js";
import { get } from "./api.js";

/** Summary first: the most results the server's search returns. */
const SERVER_RESULTS = 200;

/** @typedef {import("./page.js").Page} Page */

/**
 * How well n matches q (lower is better, -1: not at all): the name exactly, then a name
 * that starts with it, then one that contains it, then the kind, namespace or uid.
 * @param {import("./store.js").NodeState} n @param {string} q lower case
 */
function searchScore(n, q) {
  const name = n.name.toLowerCase();
  if (name === q || n.uid === q) return 0;
  if (name.startsWith(q)) return 1;
  if (name.includes(q)) return 2;
  if (n.kind.toLowerCase() === q) return 3;
  return (n.kind + "\u0000" + (n.namespace || "") + "\u0000" + n.uid).toLowerCase().includes(q) ? 4 : -1;
}

/**
 * What the search needs of the rest of the page.
 * @typedef {object} SearchParts
 * @property {(uid: string, center: boolean) => void} select
 * @property {() => void} writeURL the query is part of the view
 * @property {{count: () => number, run: () => void}} [selectAll] "Select all N matching" (selection.js), the list's
 *   last row when the search matches objects drawn: how many it would take, and taking them
 */

export class Search {
  /** @param {Page} page @param {SearchParts} parts */
  constructor(page, parts) {
    this.page = page;
    this.parts = parts;
    this.input = /** @type {HTMLInputElement} */ ($("search"));
    this.results = $("search-results");
    /** @type {string[]} */ this.resultUIDs = [];
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
    /** the server search last asked for (summary first) */ this.asked = "";
    const input = this.input;
    input.addEventListener("input", () => this.run());
    input.addEventListener("focus", () => { if (input.value) this.run(); });
    input.addEventListener("blur", () => setTimeout(() => (this.results.hidden = true), 100));
  }

  run() {
    const { page, input, results } = this;
    const { renderer, store, view } = page;
    const q = input.value.trim().toLowerCase();
    view.q = input.value.trim();
    renderer.matches = new Set();
    this.resultUIDs = [];
    clearTimeout(this.timer);
    if (q && store === page.live && page.detail.mode === "summary") {
      // Summary first: the page holds part of the graph; the server searches all of it.
      results.replaceChildren(h("li.muted", null, "searching the cluster…"));
      results.hidden = document.activeElement !== input;
      this.timer = setTimeout(() => this.runOnServer(q), 200);
      this.parts.writeURL();
      return;
    }
    if (q) {
      /** @type {{uid: string, score: number, key: string}[]} */
      const found = [];
      for (const n of store.nodes.values()) {
        const score = searchScore(n, q);
        if (score < 0) continue;
        renderer.matches.add(n.uid);
        found.push({ uid: n.uid, score, key: sortKey(n) });
      }
      found.sort((a, b) => a.score - b.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      this.resultUIDs = found.slice(0, 50).map((f) => f.uid);
    }
    renderer.dirty = true;
    results.replaceChildren(...this.resultUIDs.map((u, i) => {
      const n = /** @type {any} */ (store.nodes.get(u));
      return h("li", { role: "option", "data-uid": u, class: i === 0 ? "active" : "", onmousedown: (/** @type {Event} */ ev) => { ev.preventDefault(); this.choose(u); } },
        h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""}`));
    }), renderer.matches.size > 50 ? h("li.muted", null, `${renderer.matches.size - 50} more highlighted in the graph`) : "");
    if (q && !this.resultUIDs.length) results.replaceChildren(h("li.muted", null, "no object matches"));
    if (q) this.appendSelectAll();
    // With a recording: objects that are gone too.
    if (q && page.hasHistory) results.append(h("li.recorded", { role: "option", id: "search-recording",
      onmousedown: (/** @type {Event} */ ev) => { ev.preventDefault(); this.searchRecording(input.value.trim()); } },
    h("b", null, "Search the recording"), h("span.muted", null, ` for “${input.value.trim()}”: deleted objects too`)));
    results.hidden = !q || document.activeElement !== input;
    this.parts.writeURL();
  }

  /**
   * Summary first: the server's search of the whole graph (GET /api/v1/graph?q=, what the
   * user may see), its results listed and, where the page holds them, highlighted.
   * @param {string} q lower case
   */
  async runOnServer(q) {
    const { page, input, results } = this;
    const asked = (this.asked = q);
    let found;
    try {
      found = await get(`/api/v1/graph?q=${encodeURIComponent(q)}&limit=${SERVER_RESULTS}`);
    } catch (e) {
      if (this.asked === asked) results.replaceChildren(h("li.muted", null, `the search failed: ${/** @type {any} */ (e).message || e}`));
      return;
    }
    if (this.asked !== asked || input.value.trim().toLowerCase() !== q) return; // a newer search runs
    /** @type {any[]} */
    const nodes = found.nodes || [];
    nodes.sort((a, b) => searchScore(a, q) - searchScore(b, q) || (sortKey(a) < sortKey(b) ? -1 : 1));
    this.resultUIDs = nodes.slice(0, 50).map((n) => n.uid);
    page.renderer.matches = new Set(nodes.map((n) => n.uid));
    page.renderer.dirty = true;
    results.replaceChildren(...nodes.slice(0, 50).map((n, i) => h("li", { role: "option", "data-uid": n.uid, class: i === 0 ? "active" : "",
      onmousedown: (/** @type {Event} */ ev) => { ev.preventDefault(); this.choose(n.uid); } },
    h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""}`))),
    found.nextCursor ? h("li.muted", null, `more than ${SERVER_RESULTS}: type more of the name`) : "");
    if (!nodes.length) results.replaceChildren(h("li.muted", null, "no object in the cluster matches"));
    this.appendSelectAll();
    results.hidden = document.activeElement !== input;
  }

  /**
   * The recorded removals of objects whose name contains name, in any case, as the live
   * search matches (the newest first): a click travels to just before the removal, the
   * object selected, to see it or replay its last cascade.
   * @param {string} name
   */
  async searchRecording(name) {
    const { page, results, input } = this;
    results.replaceChildren(h("li.muted", null, "searching the recording…"));
    try {
      const found = await historyPage({ nameContains: name, type: "nodeRemoved", order: "newest", limit: 20 });
      const seen = new Set();
      const events = found.events.filter((/** @type {any} */ e) => !seen.has(e.node?.uid) && seen.add(e.node?.uid));
      results.replaceChildren(...events.map((/** @type {any} */ e) => {
        const n = e.node, t = parseTime(e.time);
        return h("li", { role: "option", "data-uid": n.uid, "data-removed": e.time, onmousedown: (/** @type {Event} */ ev) => {
          ev.preventDefault();
          results.hidden = true;
          input.blur();
          page.travelUI?.travel.seek(t - 0.001).then(() => this.parts.select(n.uid, true));
        } }, h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""} · removed ${clock(t)}`));
      }));
      if (!events.length) results.replaceChildren(h("li.muted", null, `the recording holds no removal of an object whose name contains “${name}”`));
    } catch (e) {
      results.replaceChildren(h("li.muted", null, `the recording could not be searched: ${/** @type {any} */ (e).message || e}`));
    }
    results.hidden = false;
  }

  /** The row that selects every match drawn, for a set delete (the bar over the graph has the same button). */
  appendSelectAll() {
    const n = this.parts.selectAll?.count() || 0;
    if (!n) return;
    this.results.append(h("li.select-all", { role: "option", id: "search-select-all", onmousedown: (/** @type {Event} */ ev) => {
      ev.preventDefault();
      this.results.hidden = true;
      this.input.blur();
      this.parts.selectAll?.run();
    } }, h("b", null, `Select all ${n.toLocaleString("en-US")} matching`), h("span.muted", null, " drawn, to delete them together")));
  }

  /** @param {string} uid */
  choose(uid) {
    this.results.hidden = true;
    this.input.blur();
    this.parts.select(uid, true);
  }

  /** The / key: to the search box. */
  focus() {
    this.input.focus();
    this.input.select();
  }

  /** Enter: the first result, if there is one. */
  chooseFirst() {
    if (!this.resultUIDs.length) return false;
    this.choose(this.resultUIDs[0]);
    return true;
  }

  /** Esc in the search box: empty it and leave. */
  clear() {
    this.input.value = "";
    this.run();
    this.input.blur();
  }
}
