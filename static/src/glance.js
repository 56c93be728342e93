// @ts-check
// The first thing the side panel says while nothing is selected: what needs attention.
// Deletions under way (each one click from its owner), deletions stuck for longer than the
// Stuck tab's threshold (one click from that tab), and objects the collector retries; or
// that nothing does. The queues below say how the collector works; this says where to look.

import { h, describe, patchChildren } from "./dom.js";
import { countText, cascadeCaption } from "./cascades.js";
import { fmt } from "./panel.js";

/**
 * @typedef {{select: (uid: string) => void, showStuck: () => void, stuck: () => {count: number, threshold: string}}} GlanceHooks
 */

export class Glance {
  /**
   * @param {HTMLElement} el
   * @param {import("./cascades.js").Cascades} cascades the live state's
   * @param {import("./store.js").Store} store the live state
   * @param {GlanceHooks} hooks
   */
  constructor(el, cascades, store, hooks) {
    this.el = el;
    this.cascades = cascades;
    this.store = store;
    this.hooks = hooks;
    this.key = "";
  }

  /** Draws it again when what it says changed. */
  render() {
    const now = this.cascades.now();
    const running = [...this.cascades.active.values()].filter((c) => !c.nested).sort((a, b) => a.start - b.start);
    const stuck = this.hooks.stuck();
    /** @type {{uid: string, what: string}[]} */
    const retried = [];
    for (const it of this.store.queues.get("attemptToDelete")?.items.values() || []) {
      if (it.backoffUntil != null) retried.push({ uid: it.object.uid, what: describe(it.object) });
    }
    const key = JSON.stringify([running.map((c) => [c.owner, countText(c), c.waitingOn]), stuck, retried.map((r) => r.uid)]);
    if (key === this.key) return this.refreshTimes(running, now);
    this.key = key;

    /** @type {Node[]} */
    const parts = [h("h2", null, "What needs attention")];
    if (running.length) {
      parts.push(h("h3", null, `${running.length === 1 ? "A deletion" : `${fmt(running.length)} deletions`} under way`),
        h("ul.glance-list", { id: "glance-running" }, ...running.slice(0, 5).map((c) => h("li", null,
          h("button.link", { type: "button", "data-owner": c.owner, onclick: () => this.hooks.select(c.owner), title: "Select it in the graph" },
            h("span.tag", null, c.policy === "Namespace" ? "namespace" : c.policy), " ", h("b", null, `${c.ref.kind} ${c.ref.name}`)),
          h("div.muted", null, `${countText(c)} · `, h("span.glance-caption", { "data-owner": c.owner }, cascadeCaption(c, now)))))));
      if (running.length > 5) parts.push(h("p.muted", null, `and ${fmt(running.length - 5)} more, in the strip over the graph`));
    }
    if (stuck.count) {
      parts.push(h("p", null, h("button.link", { type: "button", id: "glance-stuck", onclick: () => this.hooks.showStuck() },
        `${fmt(stuck.count)} ${stuck.count === 1 ? "object" : "objects"} deleted more than ${stuck.threshold} ago and still there →`)));
    }
    if (retried.length) {
      parts.push(h("p.muted", { id: "glance-retried" }, `The collector retries ${retried.length === 1 ? "" : `${fmt(retried.length)} objects, `}`,
        h("button.link", { type: "button", onclick: () => this.hooks.select(retried[0].uid) }, retried[0].what),
        retried.length > 1 ? " and others" : "", " (see the queues below)."));
    }
    if (!running.length && !stuck.count && !retried.length) parts.push(h("p.muted", { id: "glance-calm" }, "Nothing: no deletion is under way or stuck, and the collector retries nothing."));
    patchChildren(this.el, parts);
  }

  /** The captions' times move on without redrawing the rest. @param {import("./cascades.js").Cascade[]} running @param {number} now */
  refreshTimes(running, now) {
    for (const c of running) {
      const el = this.el.querySelector(`.glance-caption[data-owner="${c.owner}"]`);
      const text = cascadeCaption(c, now);
      if (el && el.textContent !== text) el.textContent = text;
    }
  }
}
