// @ts-check
// The queues panel: graphChanges, attemptToDelete and attemptToOrphan as they work —
// depth now and over the last minutes, what is in flight and in backoff, and the latest
// worker actions with their results. A click on an item finds its object in the graph.
// While an object is selected the panel folds to one line (the queues' counts) and the
// object's panel gets the room; a click on that line opens it again.

import { actionResult, errorText, RETRIED_WHY } from "./actionresult.js";
import { h, describe, duration, clock, patchChildren } from "./dom.js";

/** @typedef {import("./store.js").Store} Store */

const VERB_WORDS = /** @type {Record<string, string>} */ ({
  delete: "delete", patchRemoveRefs: "patch away references", patchUnblock: "unblock references",
  removeFinalizer: "remove finalizer", orphan: "orphan", keep: "keep", get: "look up",
});

export class QueuesPanel {
  /**
   * @param {HTMLElement} queuesEl @param {HTMLElement} actionsEl @param {HTMLElement} syncEl
   * @param {Store} store @param {(uid: string) => void} select
   */
  constructor(queuesEl, actionsEl, syncEl, store, select) {
    this.queuesEl = queuesEl;
    this.actionsEl = actionsEl;
    this.syncEl = syncEl;
    this.store = store;
    this.select = select;
    /** @type {Map<string, {depth: HTMLElement, flight: HTMLElement, backoff: HTMLElement, adds: HTMLElement, spark: HTMLCanvasElement, items: HTMLElement}>} */
    this.rows = new Map();
    for (const q of store.queues.keys()) {
      const r = {
        depth: h("b"), flight: h("b"), backoff: h("b"), adds: h("span.muted"),
        spark: /** @type {HTMLCanvasElement} */ (h("canvas.spark", { width: 300, height: 36, "aria-label": `${q} depth over the last 5 minutes` })),
        items: h("ul.items"),
      };
      this.rows.set(q, r);
      queuesEl.append(h("div.queue", { "data-queue": q },
        h("div.qhead", null, h("span.qname", null, q), h("span", null, "queued ", r.depth), h("span", null, "in flight ", r.flight),
          h("span", null, "backoff ", r.backoff), r.adds),
        r.spark, r.items));
    }
    /** @type {string} */ this.lastActionsKey = "";
    /** the panel, folded to its heading while an object is selected */
    this.panel = /** @type {HTMLElement|null} */ (queuesEl.closest(".panel"));
    this.summary = h("span.queues-summary", { id: "queues-summary" });
    this.toggle = h("button.queues-toggle", { type: "button", id: "queues-toggle", "aria-expanded": "true", "aria-controls": queuesEl.id,
      title: "Show or fold the work queues", onclick: () => this.userToggle() }, "▾");
    const head = this.panel?.querySelector("h2");
    if (head) {
      head.prepend(this.toggle);
      head.append(this.summary);
    }
    /** an object is selected */ this.selected = false;
    /** the user opened the queues while an object is selected */ this.opened = false;
    /** the user folded them while nothing is selected */ this.closed = false;
    setInterval(() => {
      store.sampleQueues();
      this.render(true);
    }, 1000);
  }

  /** Whether an object is selected: the panel folds, unless the user opened it. @param {boolean} on */
  setSelected(on) {
    if (on === this.selected) return;
    this.selected = on;
    if (!on) this.opened = false;
    this.fold();
  }

  userToggle() {
    if (this.selected) this.opened = !this.opened;
    else this.closed = !this.closed;
    this.fold();
  }

  /** Folds or opens the panel as the selection and the user say. */
  fold() {
    const folded = this.selected ? !this.opened : this.closed;
    this.panel?.classList.toggle("folded", folded);
    this.toggle.textContent = folded ? "▸" : "▾";
    this.toggle.setAttribute("aria-expanded", String(!folded));
    this.renderSummary();
  }

  /** The folded panel's one line: what the queues hold now. */
  renderSummary() {
    let queued = 0, flight = 0, backoff = 0;
    for (const q of this.store.queues.values()) {
      queued += q.depth;
      flight += q.inFlight;
      for (const it of q.items.values()) if (it.backoffUntil != null) backoff++;
    }
    const text = ` · ${queued} queued · ${flight} in flight · ${backoff} in backoff`;
    if (this.summary.textContent !== text) this.summary.textContent = text;
  }

  /** @param {boolean} [sparks] */
  render(sparks = false) {
    this.renderSummary();
    const { store } = this;
    const now = store.clock ?? Date.now(); // a recorded moment in time travel
    for (const [name, q] of store.queues) {
      const r = /** @type {any} */ (this.rows.get(name));
      let backoff = 0;
      for (const it of q.items.values()) if (it.backoffUntil != null) backoff++;
      // Items, not objects: graphChanges can hold several changes of one object.
      r.depth.textContent = String(q.depth);
      r.flight.textContent = String(q.inFlight);
      r.backoff.textContent = String(backoff);
      r.adds.textContent = `${q.adds} adds · ${q.retries} retries`;
      const items = [...q.items.values()].sort((a, b) => Number(b.inFlight) - Number(a.inFlight) || a.since - b.since).slice(0, 8);
      patchChildren(r.items, [...items.map((it) => {
        const times = (/** @type {number} */ n) => (n > 1 ? ` ×${n}` : "");
        const st = it.inFlight ? `in flight${times(it.inFlightItems)}${it.queued ? `, ${it.queuedItems} queued` : ""}`
          : it.queued ? `queued${times(it.queuedItems)}`
          : it.backoffUntil != null ? (it.backoffUntil > now ? `retry in ${((it.backoffUntil - now) / 1000).toFixed(1)} s` : "retry due") : "";
        return h("li", { "data-uid": it.object.uid, class: it.inFlight ? "flight" : it.backoffUntil != null ? "backoff" : "" },
          h("a", { href: `?sel=${encodeURIComponent(it.object.uid)}`, onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.select(it.object.uid); } },
            describe(it.object)), h("span.muted", null, ` ${st}${it.change ? " · " + it.change : ""}${it.retries ? ` · ${it.retries} retries` : ""}`));
      }), q.items.size > 8 ? h("li.muted", null, `and ${q.items.size - 8} more`) : ""]);
      if (sparks) drawSpark(r.spark, q.history, q.maxHistory);
    }
    const sync = store.sync;
    const unsynced = sync.unsynced?.length || 0, failing = Object.keys(sync.failing || {}).length;
    this.syncEl.textContent = sync.discovery ? `no resources monitored: ${sync.discovery}`
      : `${sync.resources?.length || 0} resources` + (unsynced ? ` · ${unsynced} syncing` : "") + (failing ? ` · ${failing} failing` : "");
    this.syncEl.classList.toggle("warn", !!sync.discovery);
    this.syncEl.title = failing ? Object.entries(sync.failing || {}).map(([r, e]) => `${r}: ${e}`).join("\n") : "";
    this.renderActions();
  }

  renderActions() {
    const acts = this.store.actions.filter((a) => a.verb !== "get").slice(0, 40);
    const key = acts.length ? `${acts.length}:${acts[0].time}:${acts[0].object.uid}:${acts[0].verb}` : "";
    if (key === this.lastActionsKey) return;
    this.lastActionsKey = key;
    patchChildren(this.actionsEl, acts.map((a) => {
      const result = actionResult(a);
      return h("li", { class: result, "data-uid": a.object.uid },
        h("span.time", null, a.time ? clock(a.time) : "earlier"),
        h("span.verb", null, VERB_WORDS[a.verb] || a.verb, a.policy ? ` (${a.policy})` : "", a.finalizer ? ` ${a.finalizer}` : ""),
        h("a", { href: `?sel=${encodeURIComponent(a.object.uid)}`, onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.select(a.object.uid); } }, describe(a.object)),
        h("span.result", { title: result === "retried" ? RETRIED_WHY : undefined }, errorText(a) || (a.shadow ? "shadow: not written" : a.duration ? duration(a.duration) : "")),
        a.reason ? h("div.reason", null, a.reason) : null);
    }));
  }
}

/** @param {HTMLCanvasElement} c @param {number[]} hist @param {number} max */
function drawSpark(c, hist, max) {
  const ctx = /** @type {CanvasRenderingContext2D} */ (c.getContext("2d"));
  const w = c.width, hgt = c.height;
  ctx.clearRect(0, 0, w, hgt);
  const top = Math.max(1, ...hist);
  const cs = getComputedStyle(c);
  ctx.fillStyle = cs.getPropertyValue("--accent").trim() || "#36c";
  ctx.globalAlpha = 0.5;
  const bw = w / max;
  hist.forEach((v, i) => {
    const bh = (v / top) * (hgt - 12);
    ctx.fillRect(w - (hist.length - i) * bw, hgt - bh, Math.max(bw, 1), bh);
  });
  ctx.globalAlpha = 1;
  ctx.fillStyle = cs.getPropertyValue("--muted").trim() || "#888";
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillText(`max ${top} · 5 min`, 2, 10);
}
