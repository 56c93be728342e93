// @ts-check
// Summary first (docs/stream.md): on a large cluster the page holds the objects of what is
// on screen, not the cluster's. The stream opens with summary=true and first sends the
// graph counted. On a cluster of fullLimit objects or fewer the page then asks for every
// object and works as it always did. On a larger one each namespace it holds no object of
// is drawn as a box with its counts (layout.js), and the page asks (a subscribe frame) for
// the objects of the namespaces in view at a zoom where boxes read, the components of the
// selected and focused objects, and the namespaces the filter names: at most DETAIL_BUDGET
// objects by the counts, the namespaces nearest the middle of the screen first.

/**
 * A namespace counted (GET /api/v1/summary's namespaces).
 * @typedef {import("./frames.gen.js").NamespaceCount} NamespaceCount
 * @typedef {{namespaces: string[], uids: string[], kinds: string[]}} Wanted
 */

/** Clusters of this many objects or fewer are held whole (body data-full-limit overrides it). */
export const FULL_LIMIT = 20_000;
/** The most objects (by the counts) the page asks for by namespace. */
export const DETAIL_BUDGET = 20_000;
/** Boxes read from this zoom on (a node 27 px wide): nearer, the page asks for what is in view. */
export const DETAIL_K = 0.15;
/** How long the view rests before the page asks for what it shows. */
const SETTLE_MS = 150;

export class Detail {
  /**
   * @param {{view: import("./page.js").View, renderer: import("./render.js").Renderer, layout: import("./layout.js").Layout}} page what the page shows
   * @param {(frame: object) => void} send a frame to the stream (a subscribe)
   * @param {() => number} [fullLimit]
   */
  constructor(page, send, fullLimit = () => Number(document.body.dataset.fullLimit) || FULL_LIMIT) {
    this.page = page;
    this.send = send;
    this.fullLimit = fullLimit;
    /** "" until the first summary; then "full" (every object held) or "summary". @type {""|"full"|"summary"} */
    this.mode = "";
    /** The graph counted, per namespace, as the last summary said. @type {Map<string, NamespaceCount>} */
    this.counts = new Map();
    this.objects = 0;
    /** The cluster's kinds (the kind filter's options). @type {string[]} */
    this.kinds = [];
    /** What the stream was last asked for, and what its last snapshot answered. @type {Wanted} */
    this.asked = { namespaces: [], uids: [], kinds: [] };
    /** @type {Wanted|null} */ this.answered = null;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
    /** performance.now() of the first snapshot of some detail (a subscribe's), for the benchmarks. @type {number|null} */
    this.detailMs = null;
  }

  /** The stream's query (a reconnection asks again for what it held). */
  query() {
    const q = new URLSearchParams();
    if (this.mode === "full") return q;
    q.set("summary", "true");
    for (const ns of this.asked.namespaces) q.append("namespace", ns);
    for (const u of this.asked.uids) q.append("uid", u);
    for (const k of this.asked.kinds) q.append("kind", k);
    return q;
  }

  /**
   * A summary frame: the counts; the first one decides the mode. Returns the namespaces
   * whose counts changed (their boxes are laid out again).
   * @param {import("./frames.gen.js").Summary} f
   */
  onSummary(f) {
    /** @type {Set<string>} */
    const changed = new Set();
    const next = new Map(f.namespaces.map((n) => [n.name, n]));
    for (const [ns, c] of next) {
      const o = this.counts.get(ns);
      if (!o || o.objects !== c.objects || o.beingDeleted !== c.beingDeleted) changed.add(ns);
    }
    for (const ns of this.counts.keys()) if (!next.has(ns)) changed.add(ns);
    this.counts = next;
    this.objects = f.objects;
    this.kinds = [...new Set(f.kinds.map((k) => k.kind))].sort();
    if (!this.mode) {
      this.mode = f.objects <= this.fullLimit() ? "full" : "summary";
      if (this.mode === "full") this.send({ type: "subscribe", queues: true });
      else this.want();
    }
    return changed;
  }

  /** Whether the page holds a namespace's objects (asked for and answered), so its box is laid out from them. @param {string} ns */
  holds(ns) {
    return this.mode !== "summary" || !!this.answered?.namespaces.includes(ns);
  }

  /** Whether a namespace's objects are asked for and not yet here. @param {string} ns */
  loading(ns) {
    return this.mode === "summary" && this.asked.namespaces.includes(ns) && !this.holds(ns);
  }

  /**
   * A snapshot under the subscription last asked for arrived. Returns the namespaces the
   * page now holds or no longer holds (their boxes are laid out again).
   * @returns {string[]}
   */
  onSnapshot() {
    if (this.mode !== "summary") return [];
    const before = new Set(this.answered?.namespaces || []), after = new Set(this.asked.namespaces);
    this.answered = { ...this.asked };
    if (this.detailMs === null && (this.asked.namespaces.length || this.asked.uids.length)) this.detailMs = performance.now();
    return [...before, ...after].filter((ns) => before.has(ns) !== after.has(ns));
  }

  /** The page holds what it shows: what it would ask for now is what it asked for, and answered. */
  settled() {
    return this.mode !== "summary" || (this.timer === undefined && same(this.wanted(), this.asked) && !!this.answered && same(this.answered, this.asked));
  }

  /** The view moved or the selection changed: ask again once it rests. */
  viewMoved() {
    if (this.mode !== "summary") return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.want(), SETTLE_MS);
  }

  /** What the page should hold now. @returns {Wanted} */
  wanted() {
    const { view, renderer, layout } = this.page;
    const uids = [...new Set([view.sel, view.focus].filter((u) => !!u))].map(String);
    const kinds = [...view.kind];
    /** @type {{ns: string, d: number}[]} */
    const near = [];
    const filtered = view.ns.length ? new Set(view.ns) : null;
    if (renderer.cam.k >= DETAIL_K || filtered) {
      const c = renderer.toWorld(renderer.w / 2, renderer.h / 2);
      const v0 = renderer.toWorld(0, 0), v1 = renderer.toWorld(renderer.w, renderer.h);
      for (const g of layout.groups.values()) {
        if (filtered && !filtered.has(g.ns)) continue;
        const inView = !(g.x > v1.x || g.y > v1.y || g.x + g.w < v0.x || g.y + g.h < v0.y);
        if (!inView && !filtered) continue;
        const dx = Math.max(g.x - c.x, 0, c.x - g.x - g.w), dy = Math.max(g.y - c.y, 0, c.y - g.y - g.h);
        near.push({ ns: g.ns, d: dx + dy });
      }
    }
    near.sort((a, b) => a.d - b.d || (a.ns < b.ns ? -1 : 1));
    const namespaces = [];
    let budget = DETAIL_BUDGET;
    for (const { ns } of near) {
      const n = this.counts.get(ns)?.objects ?? 0;
      if (n > budget && namespaces.length) break;
      namespaces.push(ns);
      budget -= n;
    }
    return { namespaces: namespaces.sort(), uids: uids.sort(), kinds };
  }

  /** Asks the stream for what the page should hold, when that changed. */
  want() {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.mode !== "summary") return;
    const w = this.wanted();
    if (same(w, this.asked)) return;
    this.asked = w;
    this.page.renderer.dirty = true; // the boxes asked for say "loading"
    this.send({ type: "subscribe", summary: true, queues: true, namespaces: w.namespaces, uids: w.uids, kinds: w.kinds });
  }
}

/** @param {Wanted} a @param {Wanted} b */
function same(a, b) {
  return a.namespaces.join("\n") === b.namespaces.join("\n") && a.uids.join("\n") === b.uids.join("\n") && a.kinds.join("\n") === b.kinds.join("\n");
}
