// @ts-check
// The collector-health strip of shadow mode: how the cluster's own collector follows the
// decisions gcscope's engine makes without acting (GET /api/v1/shadow, docs/api.md).
// Confirmed: the cluster did the same; pending: not yet; overdue: pending past the
// threshold (the cluster's collector is behind or stuck); diverged: it did otherwise.

import { h, describe, duration, patchChildren } from "./dom.js";
import { get } from "./api.js";

/** How often the strip asks, at most and at least (ms). */
const MIN_EVERY_MS = 500;
const MAX_EVERY_MS = 3000;

export class CollectorHealth {
  /** @param {HTMLElement} el @param {(uid: string) => void} select */
  constructor(el, select) {
    this.el = el;
    this.select = select;
    this.asked = 0;
    this.busy = false;
    this.poked = true;
    this.open = false;
    /** @type {any} */
    this.report = null;
    this.error = "";
  }

  /** A shadow decision changed on the stream: ask again soon. */
  poke() {
    this.poked = true;
  }

  /** Called every frame: asks when poked (at most every MIN_EVERY_MS) or every MAX_EVERY_MS. @param {number} now */
  tick(now) {
    if (this.busy || now - this.asked < (this.poked ? MIN_EVERY_MS : MAX_EVERY_MS)) return;
    this.busy = true;
    this.poked = false;
    this.asked = now;
    get("/api/v1/shadow").then((r) => {
      this.report = r;
      this.error = "";
    }, (e) => {
      this.error = e.message;
    }).finally(() => {
      this.busy = false;
      this.render();
    });
  }

  render() {
    const r = this.report;
    if (!r || !r.enabled) {
      this.el.hidden = !this.error;
      this.el.replaceChildren(this.error ? h("span.muted", null, `Collector check unavailable: ${this.error}`) : "");
      return;
    }
    const c = r.counts;
    const state = c.diverged ? "diverged" : c.overdue ? "overdue" : "ok";
    this.el.hidden = false;
    this.el.dataset.state = state;
    const count = (/** @type {string} */ key, /** @type {number} */ n, /** @type {string} */ title) =>
      h(`span.count.${key}`, { title, "data-count": key }, h("b", null, n.toLocaleString()), ` ${key}`);
    const lag = r.lag.count ? ` · lag p50 ${duration(r.lag.p50)} · p90 ${duration(r.lag.p90)} · max ${duration(r.lag.max)}` : "";
    const problems = [...(r.diverged || []), ...(r.open || []).filter((/** @type {any} */ d) => d.outcome === "overdue")];
    const toggle = problems.length
      ? h("button.compact", { type: "button", "aria-expanded": String(this.open), onclick: () => { this.open = !this.open; this.render(); } },
        this.open ? "hide" : `show ${problems.length}`)
      : null;
    const children = [
      h("span.title", { title: "In shadow mode gcscope's engine decides without acting; the cluster's own collector acts. Each decision is compared with what the cluster then does to the object." }, "Cluster's collector vs gcscope:"),
      count("confirmed", c.confirmed, "The cluster's collector did what gcscope decided"),
      count("pending", c.pending, "Decided by gcscope; the cluster's collector has not acted yet"),
      count("overdue", c.overdue, `Pending for more than ${duration(r.overdueAfter)}: the cluster's collector is behind or stuck`),
      count("diverged", c.diverged, "The cluster's collector did something else"),
      h("span.muted", null, lag),
      toggle,
    ];
    if (this.open && problems.length) {
      children.push(h("ol.health-list", null, ...problems.slice(0, 50).map((/** @type {any} */ d) => {
        const a = d.action;
        const what = a.verb === "delete" ? `delete (${a.policy})` : a.finalizer ? `${a.verb} ${a.finalizer}` : a.verb;
        return h("li", { "data-outcome": d.outcome },
          h("button.link", { type: "button", title: a.reason || "", onclick: () => this.select(a.object.uid) }, describe(a.object)),
          ` ${d.outcome}: gcscope would ${what}`,
          d.outcome === "diverged" ? ` — the cluster ${d.observed}` : ` — waiting ${duration(d.lag)}`);
      })));
    }
    patchChildren(this.el, /** @type {Node[]} */ (children.filter(Boolean)));
  }
}
