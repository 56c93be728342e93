// @ts-check
// The stuck view, the side panel's Stuck tab (`s`): every object whose deletion started
// longer ago than a threshold (0s, 1m, 5m or 1h), grouped by why it is still there
// (GET /api/v1/stuck?olderThan=): another controller's finalizer (with who added it and
// whether that controller looks alive), a foreground deletion's blockers, orphaning, a
// namespace's content, failing discovery, a Pod's termination. A click on an object selects
// it. The server is asked only while the view shows, at most every POLL_MS; the tab's badge
// counts from the page's own store (objects being deleted for longer than the threshold),
// which costs nothing.

import { h, describe, patchChildren } from "./dom.js";
import { get } from "./api.js";
import { originView, failureList, age, since } from "./deletion.js";
import { fmt } from "./panel.js";

/** The thresholds offered: [Go duration, ms]. */
const THRESHOLDS = /** @type {const} */ ([["0s", 0], ["1m", 60_000], ["5m", 300_000], ["1h", 3_600_000]]);
/** The server's default threshold. */
const DEFAULT_THRESHOLD = "5m";
/** While the view shows, it asks again this often. */
const POLL_MS = 3000;

/** What each cause is called in a group's tag. */
const CAUSES = /** @type {Record<string, string>} */ ({
  finalizer: "finalizer", foreground: "foreground", orphan: "orphaning", namespace: "namespace",
  discovery: "discovery", termination: "termination", unknown: "unknown",
});

export class StuckView {
  /**
   * @param {HTMLElement} el the view's panel
   * @param {HTMLElement|null} badge the tab's count
   * @param {{select: (uid: string) => void, known: (uid: string) => boolean}} hooks
   */
  constructor(el, badge, hooks) {
    this.el = el;
    this.badge = badge;
    this.hooks = hooks;
    this.threshold = DEFAULT_THRESHOLD;
    /** the badge's count: objects of the store being deleted for longer than the threshold */
    this.counted = 0;
    this.shown = false;
    /** @type {any} */ this.report = null;
    this.error = "";
    this.seq = 0;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
    this.buttons = THRESHOLDS.map(([d]) => h("button", { type: "button", "data-threshold": d, "aria-pressed": String(d === this.threshold),
      onclick: () => this.setThreshold(d) }, d));
    this.summary = h("p.muted", { id: "stuck-summary" }, "");
    this.body = h("div", { id: "stuck-groups" });
    el.replaceChildren(h("h2", null, "Stuck deletions"),
      h("div.stuck-bar", null, h("span.muted", null, "deleted more than"), h("span.stuck-thresholds", { role: "group", "aria-label": "Threshold" }, ...this.buttons), h("span.muted", null, "ago")),
      this.summary, this.body);
  }

  /** The threshold in ms. */
  get thresholdMs() {
    return /** @type {number} */ (THRESHOLDS.find(([d]) => d === this.threshold)?.[1] ?? 300_000);
  }

  /** @param {string} d one of THRESHOLDS */
  setThreshold(d) {
    this.threshold = d;
    for (const b of this.buttons) b.setAttribute("aria-pressed", String(b.dataset.threshold === d));
    this.report = null;
    this.render();
    if (this.shown) this.load();
  }

  /** The tab shows or hides: it asks at once and then every POLL_MS while shown. @param {boolean} on */
  setShown(on) {
    if (on === this.shown) return;
    this.shown = on;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (on) this.load();
  }

  async load() {
    clearTimeout(this.timer);
    const seq = ++this.seq, threshold = this.threshold;
    try {
      const r = await get(`/api/v1/stuck?olderThan=${encodeURIComponent(threshold)}`);
      if (seq !== this.seq) return;
      this.report = r;
      this.error = "";
    } catch (e) {
      if (seq !== this.seq) return;
      this.error = /** @type {any} */ (e).message || String(e);
    }
    this.render();
    if (this.shown) this.timer = setTimeout(() => this.load(), POLL_MS);
  }

  /**
   * The tab's badge: the objects of the store being deleted for longer than the threshold.
   * @param {import("./store.js").Store} store @param {number} now epoch ms
   */
  count(store, now) {
    if (!this.badge) return;
    const ms = this.thresholdMs;
    let n = 0;
    for (const uid of store.deleting.keys()) {
      const t = Date.parse(store.nodes.get(uid)?.deletionTimestamp || "");
      if (Number.isFinite(t) && now - t >= ms) n++;
    }
    this.counted = n;
    const text = n ? fmt(n) : "";
    if (this.badge.textContent !== text) this.badge.textContent = text;
    this.badge.hidden = !n;
    this.badge.title = `${counted(n)} being deleted for more than ${this.threshold}`;
  }

  render() {
    const r = this.report;
    if (this.error) {
      this.summary.textContent = `The stuck list could not be read: ${this.error}`;
      if (!r) this.body.replaceChildren();
      return;
    }
    if (!r) {
      this.summary.textContent = this.shown ? "asking the engine…" : "";
      this.body.replaceChildren();
      return;
    }
    const groups = /** @type {any[]} */ (r.groups || []);
    this.summary.textContent = r.total
      ? `${counted(r.total)} deleted more than ${r.olderThan} ago and still there, in ${groups.length === 1 ? "1 group" : `${groups.length} groups`}` +
        `${r.hidden ? ` (and ${fmt(r.hidden)} you may not see)` : ""}. As of ${since(r.at)}.`
      : `Nothing deleted more than ${r.olderThan} ago is still there${r.hidden ? ` that you may see (${fmt(r.hidden)} you may not)` : ""}. As of ${since(r.at)}.`;
    const failures = r.discoveryFailures && Object.keys(r.discoveryFailures).length
      ? h("div.stuck-discovery", null, h("b", null, "API discovery fails: "), "no namespace can finish deleting while it does.", failureList(r.discoveryFailures)) : null;
    patchChildren(this.body, [...(failures ? [failures] : []), ...groups.map((g) => this.group(g))]);
  }

  /** @param {any} g a group of the report */
  group(g) {
    const link = (/** @type {any} */ o) => this.link(o);
    return h("section.stuck-group", { "data-cause": g.cause, "data-finalizer": g.finalizer || "" },
      h("div.sg-head", null, h(`span.cause.${g.cause}`, null, CAUSES[g.cause] || g.cause), h("b.sg-count", null, fmt(g.count)),
        h("span.sg-says", null, headWords(g))),
      g.origin ? originView(g.origin, link) : null,
      h("ul.stuck-objects", null, ...(g.objects || []).map((/** @type {any} */ o) => h("li", { "data-uid": o.object.uid },
        link(o.object), h("span.for", { title: `deleted at ${o.since}` }, ` for ${age(o.forSeconds)}`),
        o.detail ? h("span.muted", null, ` · ${o.detail}`) : null,
        o.finalizers?.length ? h("span", null, " ", ...o.finalizers.map((/** @type {string} */ f) => h("code.hold", null, f))) : null))),
      g.more ? h("p.muted", null, `and ${fmt(g.more)} more`) : null);
  }

  /** A link that selects the object. @param {any} o an ObjectRef */
  link(o) {
    return h("a", { href: `?sel=${encodeURIComponent(o.uid)}`, class: this.hooks.known(o.uid) ? "obj" : "obj missing", "data-uid": o.uid,
      onclick: (/** @type {Event} */ ev) => {
        ev.preventDefault();
        this.hooks.select(o.uid);
      } }, describe(o));
  }
}

/**
 * The group's cause in words, less what its origin says below it (who added the finalizer,
 * whether its controller looks alive): said once, not twice.
 * @param {any} g
 */
export function headWords(g) {
  let says = String(g.says || "");
  const o = g.origin;
  if (!o) return says;
  const alive = o.controller?.says || "";
  if (alive && says.endsWith(`: ${alive}`)) says = says.slice(0, -alive.length - 2);
  if (o.manager) says = says.replace(` (added by ${o.manager})`, "");
  return says;
}

/** "1 object", "3 objects". @param {number} n */
function counted(n) {
  return `${fmt(n)} object${n === 1 ? "" : "s"}`;
}
