// @ts-check
// The history view: the collector's decisions in the window the timeline shows ("deleted
// by the collector in the last hour"), newest first, each with its reason, policy,
// duration and result, and the owner whose deletion started its cascade, linked to that
// cascade. Filters by verb, result and namespace; thousands of rows in a virtualized list.

import { h, describe, duration, clock } from "./dom.js";
import { historyPage, isoTime, parseTime } from "./history.js";
import { VirtualList } from "./vlist.js";
import { fmt } from "./panel.js";
import { actionResult, errorText, RETRIED_WHY } from "./actionresult.js";

/** @typedef {import("./history.js").RecordedCascade} RecordedCascade */

/** The most rows the view reads for one window. */
const MAX_ROWS = 10_000;

const VERBS = /** @type {const} */ ([
  ["delete", "deletes"], ["removeFinalizer", "finalizers removed"], ["orphan", "orphanings"],
  ["patchRemoveRefs", "references patched away"], ["patchUnblock", "references unblocked"], ["*", "all decisions"],
]);

/**
 * @typedef {{cascade: (id: string) => RecordedCascade|null, play: (c: RecordedCascade) => void, selectCascade: (c: RecordedCascade) => void,
 *   object: (ref: any, t: number) => void, cascadeOf: (id: string) => Promise<RecordedCascade|null>,
 *   count?: (c: RecordedCascade) => string}} HistoryHooks count: a cascade's count in words, as every place says it (cascades.js)
 */

export class HistoryView {
  /** @param {HTMLElement} el @param {HistoryHooks} hooks */
  constructor(el, hooks) {
    this.el = el;
    this.hooks = hooks;
    this.from = 0;
    this.to = 0;
    this.title = "in the last hour";
    /** @type {any[]} */ this.rows = [];
    this.truncated = false;
    this.loading = 0;
    /** the window changed while the view was hidden */ this.stale = true;
    this.error = "";
    this.verb = /** @type {string} */ ("delete");
    this.result = "*";
    this.ns = "*";
    /** @type {VirtualList<any>} */
    this.list = new VirtualList({ id: "history-list", className: "history-rows", rowHeight: 74, maxRows: 9, render: (e) => this.row(e),
      // A recorded decision does not change; what its row shows of its cascade may.
      key: (e) => `${e.pos} ${this.cascadeKey(e)}` });
    this.verbSel = /** @type {HTMLSelectElement} */ (h("select", { id: "history-verb", "aria-label": "Decision", onchange: () => {
      this.verb = this.verbSel.value;
      this.load();
    } }, ...VERBS.map(([v, label]) => h("option", { value: v }, label))));
    this.resultSel = /** @type {HTMLSelectElement} */ (h("select", { id: "history-result", "aria-label": "Result", onchange: () => {
      this.result = this.resultSel.value;
      this.load();
    } }, h("option", { value: "*" }, "any result"), h("option", { value: "ok" }, "ok"), h("option", { value: "error" }, "errors")));
    this.nsSel = /** @type {HTMLSelectElement} */ (h("select", { id: "history-ns", "aria-label": "Namespace", onchange: () => {
      this.ns = this.nsSel.value;
      this.render();
    } }, h("option", { value: "*" }, "all namespaces")));
    this.head = h("h2", { id: "history-title" });
    this.summary = h("p.muted", { id: "history-summary" });
    el.replaceChildren(this.head, h("div.history-filters", null, this.verbSel, this.resultSel, this.nsSel), this.summary, this.list.el);
  }

  /**
   * Lists the window [from, to), titled "in the last hour" or the like; read now if the
   * view is shown, else when it is next shown.
   * @param {number} from @param {number} to @param {string} title @param {boolean} shown
   */
  setWindow(from, to, title, shown) {
    const same = from === this.from && to === this.to && title === this.title;
    this.from = from;
    this.to = to;
    this.title = title;
    if (!shown) {
      this.stale ||= !same;
      return;
    }
    if (same && !this.stale && this.loading) return;
    this.stale = false;
    this.load();
  }

  async load() {
    const id = ++this.loading;
    this.error = "";
    this.renderHead();
    /** @type {any[]} */
    const rows = [];
    /** @type {string|undefined} */
    let cursor;
    try {
      do {
        const page = await historyPage({ from: isoTime(this.from), to: isoTime(this.to), type: "action",
          verb: this.verb === "*" ? ["delete", "removeFinalizer", "orphan", "patchRemoveRefs", "patchUnblock"] : this.verb,
          result: this.result === "*" ? undefined : this.result, order: "newest", limit: 2000, cursor });
        if (id !== this.loading) return;
        rows.push(...page.events);
        cursor = page.nextCursor;
      } while (cursor && rows.length < MAX_ROWS);
    } catch (e) {
      if (id !== this.loading) return;
      this.error = /** @type {any} */ (e).message || String(e);
    }
    this.rows = rows;
    this.truncated = !!cursor;
    this.fillNamespaces();
    this.render();
  }

  fillNamespaces() {
    const nss = [...new Set(this.rows.map((e) => e.action?.object?.namespace || ""))].sort();
    if (this.ns !== "*" && !nss.includes(this.ns)) nss.push(this.ns);
    this.nsSel.replaceChildren(h("option", { value: "*" }, "all namespaces"), ...nss.map((n) => h("option", { value: n }, n || "(cluster-scoped)")));
    this.nsSel.value = this.ns;
  }

  renderHead() {
    const verb = VERBS.find(([v]) => v === this.verb)?.[1] || this.verb;
    this.head.textContent = this.verb === "delete" ? `Deleted by the collector ${this.title}`
      : this.verb === "*" ? `All the collector's decisions ${this.title}` : `The collector's ${verb} ${this.title}`;
  }

  render() {
    this.renderHead();
    const shown = this.ns === "*" ? this.rows : this.rows.filter((e) => (e.action?.object?.namespace || "") === this.ns);
    const errors = shown.filter((e) => e.action && actionResult(e.action) === "error").length;
    const retried = shown.filter((e) => e.action && actionResult(e.action) === "retried").length;
    this.summary.textContent = this.error ? `The history could not be read: ${this.error}`
      : `${fmt(shown.length)} ${shown.length === 1 ? "decision" : "decisions"}${errors ? ` · ${fmt(errors)} failed` : ""}` +
        `${retried ? ` · ${fmt(retried)} ${retried === 1 ? "conflict" : "conflicts"} retried` : ""}` +
        `${this.truncated ? ` (the newest ${fmt(this.rows.length)})` : ""}${shown.length ? " · newest first" : ""}`;
    this.list.set(shown);
    this.list.el.hidden = !shown.length;
  }

  /**
   * What a row shows of its cascade, for its key: whether the timeline knows it, and its
   * count (a running one's changes). @param {any} e
   */
  cascadeKey(e) {
    if (e.cascade === undefined || e.cascade === null) return "";
    const c = this.hooks.cascade(String(e.cascade));
    return c ? `c ${this.hooks.count?.(c) || ""}` : "";
  }

  /** One decision, on two lines. @param {any} e */
  row(e) {
    const a = e.action || {};
    const t = parseTime(e.time);
    const result = actionResult(a) === "kept" ? "ok" : actionResult(a);
    const c = e.cascade !== undefined && e.cascade !== null ? this.hooks.cascade(String(e.cascade)) : null;
    const obj = h("a.obj", { href: `?sel=${encodeURIComponent(a.object?.uid || "")}`, title: "Show it at that moment",
      onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.hooks.object(a.object, t); } }, describe(a.object || { kind: "?", name: "?" }));
    /** @type {(Node|string|null)[]} */
    const second = [];
    if (c) {
      second.push("cascade of ", h("a.cascade-link", { href: "#", "data-cascade": String(c.id), title: `Select this ${c.policy} cascade on the timeline and go to its start`,
        onclick: (/** @type {Event} */ ev) => {
          ev.preventDefault();
          this.hooks.selectCascade(this.hooks.cascade(String(c.id)) || c); // as it is now: it may have ended since the row was drawn
        } }, `${c.root.kind} ${c.root.name}`),
      h("span.tag", null, c.policy), " ",
      this.hooks.count?.(c) ? h("span.hcount", { "data-cascade-count": String(c.id) }, this.hooks.count(c)) : null, " ",
      h("button.link.replay", { type: "button", title: "Replay this cascade", onclick: () => this.hooks.play(c) }, "▶"));
    } else if (e.cascade !== undefined && e.cascade !== null) {
      second.push(h("a.cascade-link", { href: "#", "data-cascade": String(e.cascade), onclick: async (/** @type {Event} */ ev) => {
        ev.preventDefault();
        const found = await this.hooks.cascadeOf(String(e.cascade));
        if (found) this.hooks.selectCascade(found);
      } }, `cascade ${e.cascade}`));
    }
    const why = errorText(a) || a.reason || "";
    return h("div.hrow", { "data-result": result, "data-uid": a.object?.uid || "", title: [a.reason, errorText(a), result === "retried" ? RETRIED_WHY : ""].filter(Boolean).join("\n") },
      h("div.hline", null,
        h("span.time", null, clock(t)),
        h("b.verb", null, a.verb, a.policy ? h("span.policy", null, ` ${a.policy}`) : null),
        h("span.dur", null, a.duration ? duration(a.duration) : ""),
        h(`span.result.${result}`, null, result)),
      h("div.hobj", null, obj),
      h("div.hwhy", { class: result === "error" ? "hwhy error" : "hwhy muted" }, why || "—"),
      second.length ? h("div.hcascade.muted", null, ...second) : null);
  }
}
