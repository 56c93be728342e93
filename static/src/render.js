// @ts-check
// The graph on a canvas. Drawing is level-of-detail: far out, objects are coloured
// cells and large sets of leaf siblings are one count node; closer in, boxes with kind,
// name, state and markers; edges when they can be told apart. Only what is on screen is
// drawn, so a frame costs about what the user can see, not the size of the cluster.

import { NODE_W, NODE_H, LONER_CAPTION, CYCLE_BULGE, GROUP_PAD, GROUP_TITLE } from "./layout.js";
import { cycleKey } from "./cycles.js";
import { GHOST_MS, BORN_MS } from "./store.js";
import { stateOf, hasInvalidOwner, kindHue, STATES, PREVIEW, isOrphaned } from "./states.js";
import { progress, cascadeCaption, countText } from "./cascades.js";
import { drawTitles, drawCounts, namespaceDeletion } from "./titles.js";
import { clamp, truncate, truncateMiddle } from "./textfit.js";

/** @typedef {import("./layout.js").Item} Item */
/** @typedef {import("./layout.js").Block} Block */
/** @typedef {import("./layout.js").Group} Group */
/** @typedef {"deleted"|"orphaned"|"kept"|"waiting"|"target"} PreviewKind */

/** Below this on-screen cell width a leaf set is drawn as its count. */
const COLLAPSE_PX = 70;
/** Below this on-screen width a box is a plain cell. */
const CELL_PX = 14;
const MIN_K = 0.005, MAX_K = 3;
/** Far out, redrawing stale namespace bitmaps stops after this long in a frame... */
const BITMAP_BUDGET_MS = 6;
/** ...but none stays stale longer than this. */
const STALE_MS = 100;
/** The largest side of a namespace's bitmap, in pixels. */
const BITMAP_MAX = 4096;
/** The width the zoom buttons take at the right of the graph (app.css .zoom: 32 px wide, 12 px in, and a gap). */
const ZOOM_COLUMN = 60;
/** The lowest zoom at which a box's labels are drawn (NODE_H * k >= 22) with a margin. */
const READABLE_K = 0.6;

export class Renderer {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {import("./store.js").Store} store
   * @param {import("./layout.js").Layout} layout
   */
  constructor(canvas, store, layout) {
    this.canvas = canvas;
    this.ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d", { alpha: false }));
    this.store = store;
    this.layout = layout;
    this.cam = { x: 0, y: 0, k: 1 }; // screen = world * k + (x, y)
    this.w = 0;
    this.h = 0;
    this.dpr = 1;
    /** @type {string|null} */ this.selected = null;
    /** @type {string|null} */ this.hover = null;
    /** @type {Set<string>} */ this.matches = new Set();
    /** The objects selected together (shift- or ctrl-click), for a set delete. @type {Set<string>} */ this.multi = new Set();
    /** @type {Map<string, PreviewKind>} */ this.preview = new Map();
    /**
     * What was last drawn for each object: its state and where, and when; kept only once a
     * test asks (recordDrawn), so the frame loop pays nothing for it otherwise. Tests read
     * it (window.gcscope.drawn) to check what the user saw, not what the store holds.
     * label: the two lines of its box, as drawn (when it was drawn near enough to have them).
     * orphaned: drawn with the orphan mark.
     * @type {Map<string, {state: string, x: number, y: number, at: number, multi?: boolean, orphaned?: boolean, label?: string[]}>|null}
     */
    this.drawnState = null;
    /**
     * Each owner reference last drawn, by cycleKey: whether it lies on a cycle, whether it
     * was drawn running back up around the side, and the middle of its curve (world units);
     * kept as drawnState is.
     * @type {Map<string, {cycle: boolean, back: boolean, x: number, y: number}>|null}
     */
    this.drawnEdges = null;
    /** The caption last drawn under each cascade's owner ("waiting on … · 2.5 s so far"), kept as drawnState is. @type {Map<string, string>|null} */
    this.drawnCaptions = null;
    /**
     * Each namespace box's title and caption as last drawn, kept as drawnState is, and every
     * change of them (a box no longer drawn: text "", with whether the layout still has it).
     * x, right: where its text begins and ends on screen (CSS px); boxRight: where its box does.
     * @type {Map<string, {text: string, caption: string, at: number, x: number, right: number, boxRight: number}>|null}
     */
    this.drawnTitles = null;
    /** The count lines of the last frame, by namespace and line, with where each was drawn (CSS px), while recording.
     * @type {Map<string, {ns: string, text: string, left: number, right: number, y: number}>|null} */
    this.drawnCounts = null;
    /** Summary first: what a counted box says under its counts ("loading…"). @type {(ns: string) => string} */
    this.countsNote = () => "";
    /** @type {{ns: string, text: string, caption: string, inLayout: boolean, t: number}[]} */
    this.titleLog = [];
    this.previewVersion = 0; // bumped with each new preview: cached drawings depend on it
    /** parents whose leaf sets are always drawn open. @type {Set<string>} */ this.expanded = new Set();
    /** @type {Record<string, string>} */ this.colors = {};
    /** owners whose cascade shows on their box. @type {import("./cascades.js").Cascades|null} */ this.cascades = null;
    this.dirty = true;
    /** Every namespace's box, far out (boxesBitmap). @type {{canvas: OffscreenCanvas, key: string, pad: number, scale: number}|null} */
    this.boxes = null;
    /** @type {{from: {x:number,y:number,k:number}, to: {x:number,y:number,k:number}, t0: number, ms: number}|null} */
    this.anim = null;
    this.drawn = 0; // items drawn in the last frame
    this.drawClock = 0; // performance.now() at the start of the last draw: the frame's one clock
    this.contextLosses = 0; // times the browser took the canvas's memory back (contextlost)
    // A canvas whose context the browser lost (GPU reset, memory pressure) comes back
    // blank: everything is drawn again, cached bitmaps included (theirs may be lost too).
    canvas.addEventListener("contextlost", () => this.contextLosses++);
    canvas.addEventListener("contextrestored", () => this.redrawAll());
    this.readColors();
    this.resize();
  }

  /** A bitmap to cache a drawing in, drawn again should the browser take its memory back. @param {number} w @param {number} h */
  bitmap(w, h) {
    const c = new OffscreenCanvas(w, h);
    c.addEventListener("contextlost", () => this.contextLosses++);
    c.addEventListener("contextrestored", () => this.redrawAll());
    return c;
  }

  /** Drops every cached drawing and draws the next frame from scratch. */
  redrawAll() {
    for (const g of this.layout.groups.values()) /** @type {any} */ (g).cache = null;
    this.boxes = null;
    this.dirty = true;
  }

  readColors() {
    const cs = getComputedStyle(document.documentElement);
    const names = ["--bg", "--fg", "--muted", "--node-bg", "--node-border", "--group-bg", "--group-border", "--edge",
      "--edge-block", "--edge-cycle", "--accent", "--match", ...STATES.map((s) => s.color), "--st-invalid", "--st-queued", "--st-backoff", "--st-orphaned", "--st-removed-fill",
      ...Object.values(PREVIEW).map((p) => p.color)];
    for (const n of names) this.colors[n] = cs.getPropertyValue(n).trim() || "#888";
    this.dirty = true;
  }

  resize() {
    const r = this.canvas.getBoundingClientRect();
    this.dpr = window.devicePixelRatio || 1;
    this.w = Math.max(1, r.width);
    this.h = Math.max(1, r.height);
    this.canvas.width = Math.round(this.w * this.dpr);
    this.canvas.height = Math.round(this.h * this.dpr);
    this.dirty = true;
  }

  // --- camera ---

  /** @param {number} sx @param {number} sy */
  toWorld(sx, sy) {
    return { x: (sx - this.cam.x) / this.cam.k, y: (sy - this.cam.y) / this.cam.k };
  }

  /**
   * Fits r into the view, clear of the zoom buttons' column at the right (ZOOM_COLUMN), so
   * that no box of a graph fitted whole is drawn under them.
   * @param {{x:number,y:number,w:number,h:number}} r @param {boolean} [animate] @param {number} [maxK]
   */
  fit(r, animate = true, maxK = 1.2) {
    const pad = 40, right = Math.max(pad, ZOOM_COLUMN);
    const k = clamp(Math.min((this.w - pad - right) / Math.max(r.w, 1), (this.h - 2 * pad) / Math.max(r.h, 1)), MIN_K, maxK);
    this.moveTo({ k, x: (this.w - right + pad) / 2 - (r.x + r.w / 2) * k, y: this.h / 2 - (r.y + r.h / 2) * k }, animate);
  }

  /**
   * The first view: r fitted when it can be at a zoom where labels read (READABLE_K);
   * otherwise its top-left corner at that zoom, so the user starts on readable workloads
   * rather than on a map of cells.
   * @param {{x:number,y:number,w:number,h:number}} r
   */
  open(r) {
    const pad = 40;
    const fitK = Math.min((this.w - pad - Math.max(pad, ZOOM_COLUMN)) / Math.max(r.w, 1), (this.h - 2 * pad) / Math.max(r.h, 1));
    if (fitK >= READABLE_K) return this.fit(r, false, 1);
    this.moveTo({ k: READABLE_K, x: pad - r.x * READABLE_K, y: pad - r.y * READABLE_K }, false);
  }

  /** @param {string} uid @param {number} [k] */
  centerOn(uid, k) {
    const b = this.layout.box(uid);
    if (!b) return false;
    const kk = k ?? Math.max(this.cam.k, 0.9);
    this.moveTo({ k: kk, x: this.w / 2 - (b.x + b.w / 2) * kk, y: this.h / 2 - (b.y + b.h / 2) * kk }, true);
    return true;
  }

  /** @param {{x:number,y:number,k:number}} to @param {boolean} animate */
  moveTo(to, animate) {
    if (!animate) {
      this.cam = to;
      this.anim = null;
    } else this.anim = { from: { ...this.cam }, to, t0: performance.now(), ms: 350 };
    this.dirty = true;
  }

  /** @param {number} sx @param {number} sy @param {number} factor */
  zoomAt(sx, sy, factor) {
    const k = clamp(this.cam.k * factor, MIN_K, MAX_K);
    const f = k / this.cam.k;
    this.cam = { k, x: sx - (sx - this.cam.x) * f, y: sy - (sy - this.cam.y) * f };
    this.anim = null;
    this.dirty = true;
  }

  /** @param {number} dx @param {number} dy */
  pan(dx, dy) {
    this.cam = { ...this.cam, x: this.cam.x + dx, y: this.cam.y + dy };
    this.anim = null;
    this.dirty = true;
  }

  /**
   * Keeps the object at the same place on screen across a new layout, so live updates
   * never move what the user is looking at.
   * @param {string|null} uid @param {{x:number,y:number}|null} before its world position before
   */
  anchor(uid, before) {
    if (!uid || !before) return;
    const b = this.layout.box(uid);
    if (!b) return;
    const wx = b.x - before.x, wy = b.y - before.y;
    if (!wx && !wy) return;
    if (this.anim) {
      // Mid-flight: shift the whole flight rather than stop it.
      const { from, to } = this.anim;
      from.x -= wx * from.k;
      from.y -= wy * from.k;
      to.x -= wx * to.k;
      to.y -= wy * to.k;
    } else this.pan(-wx * this.cam.k, -wy * this.cam.k);
  }

  /** The object nearest the middle of the screen, to anchor on. */
  centerItem() {
    if (this.selected && this.layout.items.has(this.selected)) return this.selected;
    const c = this.toWorld(this.w / 2, this.h / 2);
    let best = null, bestD = Infinity;
    for (const g of this.layout.groups.values()) {
      if (c.x < g.x || c.y < g.y || c.x > g.x + g.w || c.y > g.y + g.h) continue;
      for (const it of g.items) {
        const d = Math.abs(g.x + it.x + NODE_W / 2 - c.x) + Math.abs(g.y + it.y + NODE_H / 2 - c.y);
        if (d < bestD) {
          bestD = d;
          best = it.uid;
        }
      }
    }
    return best;
  }

  /** The namespace box in the middle of the screen, if any. @returns {string|null} */
  centerGroup() {
    const c = this.toWorld(this.w / 2, this.h / 2);
    for (const g of this.layout.groups.values()) if (c.x >= g.x && c.y >= g.y && c.x <= g.x + g.w && c.y <= g.y + g.h) return g.ns;
    return null;
  }

  // --- hit testing ---

  /** A set of loners is one count box until expanded; a set of leaf siblings while too small to read. @param {Block} b */
  collapsed(b) {
    if (b.loner) return !this.expanded.has(b.parent);
    return !this.expanded.has(b.parent) && NODE_W * this.cam.k < COLLAPSE_PX;
  }

  /**
   * @param {number} sx @param {number} sy
   * @returns {{item?: Item, block?: Block, group?: Group, caption?: boolean}|null}
   */
  hit(sx, sy) {
    const p = this.toWorld(sx, sy);
    for (const g of this.layout.groups.values()) {
      if (p.x < g.x || p.y < g.y || p.x > g.x + g.w || p.y > g.y + g.h) continue;
      const lx = p.x - g.x, ly = p.y - g.y;
      for (const b of g.blocks) {
        if (lx < b.x || ly < b.y || lx > b.x + b.w || ly > b.y + b.h) continue;
        if (this.collapsed(b)) return { block: b, group: g };
        if (b.loner && ly <= b.y + LONER_CAPTION) return { block: b, group: g, caption: true };
      }
      for (const it of g.items) {
        if (lx >= it.x && ly >= it.y && lx <= it.x + NODE_W && ly <= it.y + NODE_H) {
          if (it.block && this.collapsed(it.block)) continue;
          return { item: it, group: g };
        }
      }
      return { group: g };
    }
    return null;
  }

  // --- drawing ---

  /** @param {number} now */
  frame(now) {
    if (this.anim) {
      const t = Math.min(1, (now - this.anim.t0) / this.anim.ms);
      const e = t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
      const { from, to } = this.anim;
      // Zoom in log space so the motion feels even.
      const k = Math.exp(Math.log(from.k) + (Math.log(to.k) - Math.log(from.k)) * e);
      this.cam = { k, x: from.x + (to.x - from.x) * e, y: from.y + (to.y - from.y) * e };
      if (t >= 1) {
        this.cam = to;
        this.anim = null;
      }
      this.dirty = true;
    }
    const animating = this.store.ghosts.size > 0 || this.store.born.size > 0;
    if (!this.dirty && !animating) return false;
    this.draw(now);
    this.dirty = false;
    return true;
  }

  /**
   * The whole layout (the graph after filters and focus) drawn as the page draws it, at
   * scale k (1: a box 180 px wide, its name in 13 px type), on a canvas of its own.
   * @param {number} k
   */
  drawWhole(k) {
    const b = this.layout.bounds, pad = 24;
    const canvas = document.createElement("canvas");
    canvas.width = Math.ceil((b.w + 2 * pad) * k);
    canvas.height = Math.ceil((b.h + 2 * pad) * k);
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error(`no canvas of ${canvas.width} × ${canvas.height} px`);
    const { cam, w, h, dpr, drawn, drawnState, drawnEdges, drawnCaptions, drawnTitles, drawnCounts } = this;
    const screen = this.ctx;
    try {
      Object.assign(this, { ctx, cam: { k, x: (pad - b.x) * k, y: (pad - b.y) * k }, w: canvas.width, h: canvas.height, dpr: 1,
        drawnState: null, drawnEdges: null, drawnCaptions: null, drawnTitles: null, drawnCounts: null });
      this.draw(performance.now());
    } finally {
      Object.assign(this, { ctx: screen, cam, w, h, dpr, drawn, drawnState, drawnEdges, drawnCaptions, drawnTitles, drawnCounts, dirty: true });
    }
    return canvas;
  }

  /** @param {number} now */
  draw(now) {
    this.drawClock = performance.now();
    const { ctx, cam, colors: C } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = C["--bg"];
    ctx.fillRect(0, 0, this.w, this.h);
    const vx0 = -cam.x / cam.k, vy0 = -cam.y / cam.k, vx1 = (this.w - cam.x) / cam.k, vy1 = (this.h - cam.y) / cam.k;
    const px = 1 / cam.k; // one screen pixel in world units
    const cellMode = NODE_W * cam.k < CELL_PX;
    const labels = NODE_H * cam.k >= 22;
    ctx.setTransform(this.dpr * cam.k, 0, 0, this.dpr * cam.k, this.dpr * cam.x, this.dpr * cam.y);

    // The namespaces' boxes: far out, thousands of them are on screen, drawn from one
    // bitmap of them all while it is sharp enough (boxesBitmap), else as three paths.
    /** @type {Group[]} */
    const visible = [];
    /** @type {Group[]} */
    const terminating = [];
    const bm = cellMode ? this.boxesBitmap() : null;
    const boxes = new Path2D(), shaded = new Path2D();
    for (const g of this.layout.groups.values()) {
      if (g.x > vx1 || g.y > vy1 || g.x + g.w < vx0 || g.y + g.h < vy0) continue;
      visible.push(g);
      if (!bm) addBox(boxes, shaded, g);
      // A namespace being deleted (Terminating): its box is drawn as a deleted object's is.
      const del = namespaceDeletion(this, g);
      if (del && del.end === null) terminating.push(g);
    }
    if (bm) {
      const b = this.layout.bounds;
      ctx.drawImage(bm.canvas, b.x - bm.pad, b.y - bm.pad, b.w + 2 * bm.pad, b.h + 2 * bm.pad);
    } else drawBoxes(ctx, C, boxes, shaded, px);
    ctx.strokeStyle = C["--st-deleting"];
    ctx.lineWidth = 2.5 * px;
    for (const g of terminating) ctx.strokeRect(g.x, g.y, g.w, g.h);

    // Items on screen, by drawing class.
    if (cellMode) {
      // Far out: each namespace is a bitmap of its cells and collapsed sets, drawn at about
      // the current zoom and redrawn only when something in it changed (within a budget per
      // frame; see groupBitmap), so a frame under heavy churn is mostly copies.
      let drawn = 0;
      const budgetEnd = performance.now() + BITMAP_BUDGET_MS;
      for (const g of visible) {
        if (g.summary) continue;
        const bm = this.groupBitmap(g, now, budgetEnd);
        ctx.drawImage(bm.canvas, g.x, g.y, g.w, g.h);
        drawn += bm.count;
      }
      const ringed = this.ringed();
      if (ringed.length) {
        const shown = new Set(visible);
        for (const u of ringed) {
          const it = this.layout.items.get(u);
          if (!it || !shown.has(it.group)) continue;
          if (it.block && this.collapsed(it.block)) this.drawBlockRing(it.block, px);
          else this.drawRing(it, px);
        }
      }
      this.drawn = drawn;
    } else {
      /** @type {Item[]} */
      const items = [];
      /** @type {Block[]} */
      const blocks = [];
      for (const g of visible) {
        for (const b of g.blocks) if (this.collapsed(b) && inView(g.x + b.x, g.y + b.y, b.w, b.h)) blocks.push(b);
        for (const it of g.items) {
          if (it.block && this.collapsed(it.block)) continue;
          if (inView(g.x + it.x, g.y + it.y, NODE_W, NODE_H)) items.push(it);
        }
      }
      this.drawn = items.length;
      this.drawEdges(items, blocks, px);
      for (const b of blocks) {
        this.drawBlock(b, px);
        if ((this.selected && b.uids.includes(this.selected)) || (this.matches.size && b.uids.some((u) => this.matches.has(u))) ||
          (this.multi.size && b.uids.some((u) => this.multi.has(u)))) this.drawBlockRing(b, px);
      }
      for (const it of items) this.drawItem(it, now, px, labels);
    }
    function inView(/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ w, /** @type {number} */ h) {
      return !(x > vx1 || y > vy1 || x + w < vx0 || y + h < vy0);
    }

    drawTitles(this, visible);
    drawCounts(this, visible);
    for (const g of visible) for (const b of g.blocks) if (this.collapsed(b)) this.drawBlockLabel(b);
  }

  /** Objects drawn with a ring: the selection, the objects selected together, search matches, the delete preview. */
  ringed() {
    const out = [...this.matches, ...this.multi, ...this.preview.keys()];
    if (this.selected) out.push(this.selected);
    return out;
  }

  /**
   * The far-out drawing of a namespace: a bitmap of its cells (by state colour, or kind
   * when normal) and its collapsed sets, at the current zoom rounded up to a step of √2
   * (never blurrier than the screen). After invalidate it is stale: redrawn in this frame
   * while the frame's budget lasts, else drawn as it was, for at most STALE_MS.
   * @param {Group} g @param {number} now @param {number} budgetEnd performance.now() deadline
   * @returns {{canvas: OffscreenCanvas, key: string, count: number, stale: number, blockCounts: Map<Block, Map<string, number>>}}
   */
  groupBitmap(g, now, budgetEnd) {
    const kb = 2 ** (Math.ceil(Math.log2(this.cam.k) * 2) / 2);
    const key = `${this.cacheKey()}/${kb}/${this.dpr}`;
    let c = /** @type {any} */ (g).cache;
    if (c && c.key === key && !c.stale) return c;
    if (c && c.canvas && performance.now() > budgetEnd && (!c.stale || now - c.stale < STALE_MS)) return c;
    // Large namespaces are drawn a little coarser rather than into huge bitmaps.
    const scale = Math.min(kb * this.dpr, BITMAP_MAX / g.w, BITMAP_MAX / g.h);
    const w = Math.max(1, Math.ceil(g.w * scale)), h = Math.max(1, Math.ceil(g.h * scale));
    const canvas = c?.canvas && c.canvas.width === w && c.canvas.height === h ? c.canvas : this.bitmap(w, h);
    const bctx = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
    bctx.setTransform(1, 0, 0, 1, 0, 0);
    bctx.clearRect(0, 0, w, h);
    bctx.setTransform(scale, 0, 0, scale, -g.x * scale, -g.y * scale);
    c = { canvas, key, count: 0, stale: 0, blockCounts: new Map() };
    /** @type {any} */ (g).cache = c;
    /** @type {Map<string, Path2D>} */
    const cells = new Map();
    for (const it of g.items) {
      if (it.block && this.collapsed(it.block)) continue;
      const col = this.itemColor(it, now);
      this.record(it, this.itemState(it), now);
      let p = cells.get(col);
      if (!p) cells.set(col, (p = new Path2D()));
      p.rect(g.x + it.x, g.y + it.y, NODE_W, NODE_H);
      c.count++;
    }
    for (const [col, p] of cells) {
      bctx.fillStyle = col;
      bctx.fill(p);
    }
    for (const b of g.blocks) if (this.collapsed(b)) this.drawBlock(b, 1 / kb, /** @type {any} */ (bctx));
    return c;
  }

  /**
   * Every namespace's box drawn once into a bitmap of the whole layout, a little sharper
   * than the current zoom, redrawn when a box moves or the zoom leaves its range; null
   * when such a bitmap would be too large (nearer, few boxes are on screen).
   * @returns {{canvas: OffscreenCanvas, pad: number, scale: number}|null}
   */
  boxesBitmap() {
    const b = this.layout.bounds, need = this.cam.k * this.dpr;
    const key = `${this.layout.version}/${this.dpr}/${this.colors["--bg"]}`;
    // Kept while it is sharp enough and not much sharper than the screen (zooming redraws it every second step of √2).
    const had = this.boxes;
    if (had?.key === key && had.scale >= need && had.scale <= 2.9 * need) return had;
    const kb = 2 ** (Math.ceil(Math.log2(this.cam.k) * 2) / 2 + 0.5);
    const pad = 4 / kb; // room for the borders
    const scale = kb * this.dpr;
    const w = Math.ceil((b.w + 2 * pad) * scale), h = Math.ceil((b.h + 2 * pad) * scale);
    if (w > BITMAP_MAX || h > BITMAP_MAX || this.layout.groups.size < 2) return null;
    const canvas = this.boxes?.canvas.width === w && this.boxes.canvas.height === h ? this.boxes.canvas : this.bitmap(w, h);
    const bctx = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
    bctx.setTransform(1, 0, 0, 1, 0, 0);
    bctx.clearRect(0, 0, w, h);
    bctx.setTransform(scale, 0, 0, scale, (pad - b.x) * scale, (pad - b.y) * scale);
    const boxes = new Path2D(), shaded = new Path2D();
    for (const g of this.layout.groups.values()) addBox(boxes, shaded, g);
    drawBoxes(bctx, this.colors, boxes, shaded, 1 / kb);
    this.boxes = { canvas, key, pad, scale };
    return this.boxes;
  }

  /** What every namespace cache depends on besides its own members. */
  cacheKey() {
    return `${this.expanded.size}/${this.previewVersion}/${this.colors["--bg"]}/${NODE_W * this.cam.k < COLLAPSE_PX}`;
  }

  /** Marks the cached drawing of the namespace holding uid stale. @param {string} uid */
  invalidate(uid) {
    const it = this.layout.items.get(uid);
    const c = it && /** @type {any} */ (it.group).cache;
    if (!c) return;
    if (!c.stale) c.stale = performance.now();
    c.blockCounts = new Map();
  }

  /**
   * The state to draw: the store's now (an item's copy is as old as its layout), or, for an
   * object removed just after its deletion began, being deleted while the store holds it
   * (DELETION_SEEN_MS).
   * @param {Item} it
   */
  itemState(it) {
    const cur = this.store.current(it.uid);
    return cur && (!cur.ghost || this.store.held.has(it.uid)) ? stateOf(this.store, cur.node) : "removed";
  }

  /** @param {Item} it @param {string} state @param {number} now */
  record(it, state, now) {
    // at: when the frame was drawn, on the clock the stream's arrivals are timed with (a
    // frame's own timestamp is its start, which can precede a message handled in it).
    // multi: drawn as one of the objects selected together.
    // orphaned: drawn with the orphan mark (drawItem; a far-out cell has no marks).
    this.drawnState?.set(it.uid, { state, x: it.group.x + it.x, y: it.group.y + it.y, at: this.drawClock, multi: this.multi.has(it.uid), orphaned: false });
  }

  /** Starts keeping drawnState, and redraws everything so that it starts complete. */
  recordDrawn() {
    this.drawnState ??= new Map();
    this.drawnEdges ??= new Map();
    this.drawnCaptions ??= new Map();
    this.drawnTitles ??= new Map();
    this.drawnCounts ??= new Map();
    this.redrawAll();
  }

  /** The fill of a far-out cell: its state, or its kind's colour when normal. @param {Item} it @param {number} now */
  itemColor(it, now) {
    const C = this.colors;
    const st = this.itemState(it);
    if (st === "removed") return C["--st-removed"];
    const pv = this.preview.get(it.uid);
    if (pv) return C[PREVIEW[pv].color];
    if (st === "normal") return kindColor(it.node.kind, 45, 55);
    return C[STATE_COLOR[st]];
  }

  /** @param {Item[]} items @param {Block[]} blocks @param {number} px */
  drawEdges(items, blocks, px) {
    const { ctx, layout, colors: C } = this;
    const paths = { ctl: new Path2D(), plain: new Path2D(), ctlBlock: new Path2D(), plainBlock: new Path2D(), hi: new Path2D(),
      cycle: new Path2D(), cycleHead: new Path2D(), hiHead: new Path2D() };
    const seenBlocks = new Set();
    const curve = (/** @type {Path2D} */ p, /** @type {number} */ x0, /** @type {number} */ y0, /** @type {number} */ x1, /** @type {number} */ y1) => {
      const my = (y0 + y1) / 2;
      p.moveTo(x0, y0);
      p.bezierCurveTo(x0, my, x1, my, x1, y1);
    };
    // Edges of the objects on screen, to their owners (which may be off screen). One on an
    // ownership cycle has a colour of its own; the one of a cycle that runs back up (its
    // owner is not above it) goes around the outside of the subtree it closes (on the side
    // its owner leans to), to an arrowhead at its dependent.
    for (const it of items) {
      const n = this.store.current(it.uid)?.node || it.node;
      const x1 = it.group.x + it.x, y1 = it.group.y + it.y;
      for (const o of n.owners || []) {
        const ob = layout.box(o.uid);
        if (!ob) continue;
        const hi = this.selected === it.uid || this.selected === o.uid;
        const key = cycleKey(it.uid, o.uid);
        const cycle = it.group.cycles.has(key);
        if (cycle && ob.y + NODE_H > y1) {
          // A self-reference loops over its box's top; the edge back up to an ancestor goes
          // around the outside of its subtree (the layout leaves room, CYCLE_ROOM).
          /** @type {number[]} the curve: from, two controls, to */
          let b;
          if (o.uid === it.uid) {
            const xs = x1 + NODE_W - 56, xe = x1 + NODE_W - 16;
            b = [xs, y1, xs - 8, y1 - 34, xe + 8, y1 - 34, xe, y1];
          } else {
            const left = ob.x <= x1;
            const xs = left ? ob.x : ob.x + NODE_W, ys = ob.y + NODE_H * 0.65;
            const xe = left ? x1 : x1 + NODE_W, ye = y1 + NODE_H * 0.35;
            const out = left ? Math.min(xs, xe) - CYCLE_BULGE : Math.max(xs, xe) + CYCLE_BULGE;
            b = [xs, ys, out, ys, out, ye, xe, ye];
          }
          const p = hi ? paths.hi : paths.cycle;
          p.moveTo(b[0], b[1]);
          p.bezierCurveTo(b[2], b[3], b[4], b[5], b[6], b[7]);
          arrowhead(hi ? paths.hiHead : paths.cycleHead, b[6], b[7], b[4], b[5], 8 * px);
          // The curve's middle (t = 1/2).
          this.drawnEdges?.set(key, { cycle, back: true, x: (b[0] + 3 * b[2] + 3 * b[4] + b[6]) / 8, y: (b[1] + 3 * b[3] + 3 * b[5] + b[7]) / 8 });
          continue;
        }
        const stroke = cycle ? "cycle" : (o.controller ? "ctl" : "plain") + (o.blockOwnerDeletion ? "Block" : "");
        const xs = ob.x + NODE_W / 2, ys = ob.y + NODE_H, xe = x1 + NODE_W / 2;
        curve(hi ? paths.hi : /** @type {any} */ (paths)[stroke], xs, ys, xe, y1);
        this.drawnEdges?.set(key, { cycle, back: false, x: (xs + xe) / 2, y: (ys + y1) / 2 });
      }
    }
    // A collapsed set hangs from its parent by one edge.
    for (const b of blocks) {
      if (seenBlocks.has(b)) continue;
      seenBlocks.add(b);
      const ob = layout.box(b.parent);
      if (ob) curve(paths.ctlBlock, ob.x + NODE_W / 2, ob.y + NODE_H, b.group.x + b.x + b.w / 2, b.group.y + b.y);
    }
    const strokes = /** @type {const} */ ([["ctl", false, false], ["plain", true, false], ["ctlBlock", false, true], ["plainBlock", true, true]]);
    for (const [key, dash, strong] of strokes) {
      ctx.strokeStyle = strong ? C["--edge-block"] : C["--edge"];
      ctx.lineWidth = (strong ? 1.8 : 1) * px;
      ctx.setLineDash(dash ? [6 * px, 4 * px] : []);
      ctx.stroke(paths[key]);
    }
    ctx.setLineDash([]);
    ctx.strokeStyle = ctx.fillStyle = C["--edge-cycle"];
    ctx.lineWidth = 2 * px;
    ctx.stroke(paths.cycle);
    ctx.fill(paths.cycleHead);
    ctx.strokeStyle = ctx.fillStyle = C["--accent"];
    ctx.lineWidth = 2.5 * px;
    ctx.stroke(paths.hi);
    ctx.fill(paths.hiHead);
  }

  /** @param {Block} b @param {number} px @param {CanvasRenderingContext2D} [ctx] where to draw (a namespace's bitmap) */
  drawBlock(b, px, ctx = this.ctx) {
    const C = this.colors;
    const x = b.group.x + b.x, y = b.group.y + b.y;
    ctx.fillStyle = C["--node-bg"];
    ctx.strokeStyle = C["--node-border"];
    ctx.lineWidth = 1.5 * px;
    ctx.beginPath();
    ctx.roundRect(x, y, b.w, b.h, 10);
    ctx.fill();
    ctx.stroke();
    // A bar of its members' states, so a cascade shows even from far out.
    const cache = /** @type {any} */ (b.group).cache;
    /** @type {Map<string, number>|undefined} */
    let counts = cache?.blockCounts.get(b);
    if (!counts) {
      counts = this.blockCounts(b);
      cache?.blockCounts.set(b, counts);
    }
    let bx = x + 8;
    const bw = b.w - 16, bh = Math.min(14, b.h / 4);
    for (const [col, c] of counts) {
      ctx.fillStyle = col;
      const w = (bw * c) / b.uids.length;
      ctx.fillRect(bx, y + b.h - bh - 8, w, bh);
      bx += w;
    }
  }

  /**
   * The ring around a collapsed set that holds the selection or a search match (dashed in
   * the accent colour when it holds objects selected together). @param {Block} b @param {number} px
   */
  drawBlockRing(b, px) {
    const { ctx, colors: C } = this;
    const multi = this.multi.size > 0 && b.uids.some((u) => this.multi.has(u)) && !(this.selected && b.uids.includes(this.selected));
    ctx.strokeStyle = multi ? C["--accent"] : C["--match"];
    ctx.lineWidth = 3 * px;
    if (multi) ctx.setLineDash([7 * px, 4 * px]);
    ctx.strokeRect(b.group.x + b.x - 6 * px, b.group.y + b.y - 6 * px, b.w + 12 * px, b.h + 12 * px);
    ctx.setLineDash([]);
  }

  /** How many members of b are in each state colour. @param {Block} b */
  blockCounts(b) {
    const { store, colors: C } = this;
    /** @type {Map<string, number>} */
    const counts = new Map();
    for (const u of b.uids) {
      const n = store.nodes.get(u);
      const col = !n ? C["--st-removed"] : this.preview.has(u) ? C[PREVIEW[/** @type {PreviewKind} */ (this.preview.get(u))].color]
        : C[STATE_COLOR[stateOf(store, n)]];
      counts.set(col, (counts.get(col) || 0) + 1);
    }
    return counts;
  }

  /** @param {Block} b */
  drawBlockLabel(b) {
    const { ctx, cam, colors: C } = this;
    const sx = (b.group.x + b.x) * cam.k + cam.x, sy = (b.group.y + b.y) * cam.k + cam.y;
    const sw = b.w * cam.k, sh = b.h * cam.k;
    if (sw < 40 || sh < 16) return;
    /** @type {Map<string, number>} */
    const kinds = new Map();
    for (const u of b.uids) {
      const k = this.store.nodes.get(u)?.kind || this.store.ghosts.get(u)?.node.kind || "?";
      kinds.set(k, (kinds.get(k) || 0) + 1);
    }
    const text = [...kinds].map(([k, c]) => `${c} ${k}${c === 1 ? "" : "s"}`).join(", ");
    ctx.font = `600 ${clamp(sh * 0.18, 11, 16)}px system-ui, sans-serif`;
    ctx.fillStyle = C["--fg"];
    ctx.textAlign = "center";
    ctx.fillText(truncate(ctx, text, sw - 10), sx + sw / 2, sy + Math.min(sh * 0.35, 24));
    ctx.textAlign = "start";
  }

  /**
   * The selection's ring hugs the box; a search match's or preview's is thinner and
   * farther out, so that the box's own border (its state) always shows between them. An
   * object selected together with others (for a set delete) has a dashed ring in the
   * accent colour and a tick at its top left corner.
   * @param {Item} it @param {number} px
   */
  drawRing(it, px) {
    const { ctx, colors: C } = this;
    const sel = it.uid === this.selected;
    const pv = this.preview.get(it.uid);
    const multi = this.multi.has(it.uid);
    const x = it.group.x + it.x, y = it.group.y + it.y;
    ctx.strokeStyle = sel || (multi && !pv) ? C["--accent"] : pv ? C[PREVIEW[pv].color] : C["--match"];
    const off = (sel ? 3 : multi && !pv ? 4 : 6) * px;
    ctx.lineWidth = (sel || multi ? 3 : 2) * px;
    if (multi && !sel && !pv) ctx.setLineDash([7 * px, 4 * px]);
    ctx.strokeRect(x - off, y - off, NODE_W + 2 * off, NODE_H + 2 * off);
    ctx.setLineDash([]);
    if (multi) {
      // The tick: a disc in the accent colour, its mark in the node's background.
      const r = Math.max(7, 7 * px), cx = x - off, cy = y - off;
      ctx.fillStyle = C["--accent"];
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, 2 * Math.PI);
      ctx.fill();
      ctx.strokeStyle = C["--node-bg"];
      ctx.lineWidth = r * 0.3;
      ctx.beginPath();
      ctx.moveTo(cx - r * 0.45, cy);
      ctx.lineTo(cx - r * 0.1, cy + r * 0.38);
      ctx.lineTo(cx + r * 0.5, cy - r * 0.35);
      ctx.stroke();
    }
  }

  /** @param {Item} it @param {number} now @param {number} px @param {boolean} labels */
  drawItem(it, now, px, labels) {
    const { ctx, store, colors: C } = this;
    // The state drawn is the store's, now: the item only holds the position (and the copy
    // of the object) of the last layout, which a cascade does not redo.
    const cur = store.current(it.uid);
    const ghost = !cur || (cur.ghost && !store.held.has(it.uid)); // held: drawn as it was, until the hold ends
    const n = cur ? cur.node : it.node, x = it.group.x + it.x, y = it.group.y + it.y;
    const st = this.itemState(it);
    this.record(it, st, now);
    const stColor = C[STATE_COLOR[st]];
    let alpha = 1;
    if (ghost) {
      const g = store.ghosts.get(it.uid);
      alpha = g ? Math.max(0.05, 1 - (now - g.at) / GHOST_MS) : 0.05;
    }
    ctx.globalAlpha = alpha;
    ctx.fillStyle = ghost ? C["--st-removed-fill"] : C["--node-bg"];
    ctx.beginPath();
    ctx.roundRect(x, y, NODE_W, NODE_H, 6);
    ctx.fill();
    // Kind stripe.
    ctx.fillStyle = kindColor(n.kind, 55, 50);
    ctx.fillRect(x, y + 3, 5, NODE_H - 6);
    ctx.strokeStyle = stColor;
    ctx.lineWidth = (st === "normal" ? 1 : 2.5) * px;
    if (st === "virtual") ctx.setLineDash([5 * px, 3 * px]);
    ctx.stroke();
    ctx.setLineDash([]);

    const born = store.born.get(it.uid);
    if (born !== undefined) {
      ctx.globalAlpha = Math.max(0, 1 - (now - born) / BORN_MS);
      ctx.strokeStyle = C["--accent"];
      ctx.lineWidth = 4 * px;
      ctx.strokeRect(x - 4 * px, y - 4 * px, NODE_W + 8 * px, NODE_H + 8 * px);
      ctx.globalAlpha = alpha;
    }
    const pv = this.preview.get(it.uid);
    if (pv) {
      ctx.globalAlpha = 0.28;
      ctx.fillStyle = C[PREVIEW[pv].color];
      ctx.fillRect(x, y, NODE_W, NODE_H);
      ctx.globalAlpha = alpha;
    }
    if (it.uid === this.selected || this.matches.has(it.uid) || pv || this.multi.has(it.uid)) this.drawRing(it, px);
    else if (it.uid === this.hover) {
      ctx.strokeStyle = C["--accent"];
      ctx.lineWidth = 1.5 * px;
      ctx.strokeRect(x - 2 * px, y - 2 * px, NODE_W + 4 * px, NODE_H + 4 * px);
    }

    // Markers, top right: invalid reference, queue state.
    let mx = x + NODE_W - 9;
    if (!ghost && hasInvalidOwner(store, n)) {
      ctx.fillStyle = C["--st-invalid"];
      ctx.beginPath();
      ctx.moveTo(mx, y + 3);
      ctx.lineTo(mx + 6, y + 14);
      ctx.lineTo(mx - 6, y + 14);
      ctx.closePath();
      ctx.fill();
      mx -= 15;
    }
    const qs = store.queueStatus(it.uid);
    if (qs.length) {
      const backoff = qs.some((q) => q.item.backoffUntil != null && !q.item.inFlight && !q.item.queued);
      ctx.fillStyle = backoff ? C["--st-backoff"] : C["--st-queued"];
      ctx.beginPath();
      ctx.arc(mx, y + 9, 5, 0, 2 * Math.PI);
      ctx.fill();
      mx -= 15;
    }
    // Orphaned (the collector removed its reference to an owner): its top edge, where the
    // owner's reference came in, dashed in the mark's colour (a cut reference), a diamond
    // among the markers, and its kind line says so (below).
    const orphaned = !ghost && isOrphaned(n);
    if (orphaned) {
      ctx.strokeStyle = C["--st-orphaned"];
      ctx.lineWidth = 3;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(x + 8, y + 1.5);
      ctx.lineTo(x + NODE_W - 8, y + 1.5);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = C["--st-orphaned"];
      ctx.beginPath();
      ctx.moveTo(mx, y + 3);
      ctx.lineTo(mx + 6, y + 9);
      ctx.lineTo(mx, y + 15);
      ctx.lineTo(mx - 6, y + 9);
      ctx.closePath();
      ctx.fill();
      const d = this.drawnState?.get(it.uid);
      if (d) d.orphaned = true;
    }

    // A cascade in progress: a bar along the bottom, and its count in the label.
    const cascade = this.cascades?.active.get(it.uid);
    if (cascade) {
      ctx.fillStyle = C["--muted"];
      ctx.globalAlpha = alpha * 0.35;
      ctx.fillRect(x + 6, y + NODE_H - 5, NODE_W - 12, 3);
      ctx.globalAlpha = alpha;
      ctx.fillStyle = stColor;
      ctx.fillRect(x + 6, y + NODE_H - 5, (NODE_W - 12) * progress(cascade), 3);
    }

    if (labels) {
      ctx.textBaseline = "alphabetic";
      ctx.fillStyle = C["--muted"];
      ctx.font = "11px system-ui, sans-serif";
      let kindLabel = n.kind + (st === "normal" ? (orphaned ? " · orphaned" : "") : " · " + (STATES.find((s) => s.id === st)?.label || st));
      if (cascade) {
        // Its count whole, before its kind: "Deployment · 5 of 6 gone · 1 kept", else "5 of 6 gone · 1 kept".
        kindLabel = `${n.kind} · ${countText(cascade)}`;
        if (ctx.measureText(kindLabel).width > NODE_W - 30) kindLabel = countText(cascade);
      }
      if (pv) kindLabel = `${PREVIEW[pv].label} · ${n.kind}`;
      const kindShown = truncate(ctx, kindLabel, NODE_W - 30);
      ctx.fillText(kindShown, x + 11, y + 15);
      ctx.fillStyle = C["--fg"];
      ctx.font = (n.virtual ? "italic " : "") + "600 13px system-ui, sans-serif";
      const nameShown = truncateMiddle(ctx, n.name || "(unnamed)", NODE_W - 16);
      ctx.fillText(nameShown, x + 11, y + 32);
      const drawn = this.drawnState?.get(it.uid);
      if (drawn) drawn.label = [kindShown, nameShown];
      if (cascade && cascade.end === null) {
        // Under the box, in the gap above its dependents: what it waits on, and how long.
        ctx.font = "10px system-ui, sans-serif";
        // Elapsed on the clock of the moment shown: frozen while time travel is paused. Too
        // long, what it waits on is cut short, not how long.
        const full = cascadeCaption(cascade, this.cascades?.now() ?? Date.now()), cut = full.lastIndexOf(" · ");
        const caption = cut > 0 && ctx.measureText(full).width > NODE_W + 40
          ? truncate(ctx, full.slice(0, cut), NODE_W + 40 - ctx.measureText(full.slice(cut)).width) + full.slice(cut)
          : truncate(ctx, full, NODE_W + 40);
        this.drawnCaptions?.set(it.uid, caption);
        const w = ctx.measureText(caption).width + 10;
        ctx.fillStyle = C["--group-bg"];
        ctx.globalAlpha = alpha * 0.9;
        ctx.fillRect(x + NODE_W / 2 - w / 2, y + NODE_H + 3, w, 14);
        ctx.globalAlpha = alpha;
        ctx.fillStyle = stColor;
        ctx.textAlign = "center";
        ctx.fillText(caption, x + NODE_W / 2, y + NODE_H + 14);
        ctx.textAlign = "start";
      }
    }
    ctx.globalAlpha = 1;
  }
}

/** Each state's colour property. */
const STATE_COLOR = Object.fromEntries(STATES.map((s) => [s.id, s.color]));

/** @type {Map<string, string>} */
const kindColors = new Map();

/** A kind's colour, made once (frames draw tens of thousands of cells). @param {string} kind @param {number} s @param {number} l */
function kindColor(kind, s, l) {
  const key = `${kind}/${s}/${l}`;
  let c = kindColors.get(key);
  if (!c) kindColors.set(key, (c = `hsl(${kindHue(kind)} ${s}% ${l}%)`));
  return c;
}

/**
 * A filled arrowhead of size s at (x, y), pointing away from (fx, fy).
 * @param {Path2D} p @param {number} x @param {number} y @param {number} fx @param {number} fy @param {number} s
 */
function arrowhead(p, x, y, fx, fy, s) {
  const d = Math.hypot(x - fx, y - fy) || 1, ux = (x - fx) / d, uy = (y - fy) / d;
  p.moveTo(x, y);
  p.lineTo(x - ux * s - uy * s * 0.55, y - uy * s + ux * s * 0.55);
  p.lineTo(x - ux * s + uy * s * 0.55, y - uy * s - ux * s * 0.55);
  p.closePath();
}

/**
 * Adds a namespace's box to the boxes' path, and, summary first, its shading to the
 * shaded path (a namespace the page holds no object of).
 * @param {Path2D} boxes @param {Path2D} shaded @param {Group} g
 */
function addBox(boxes, shaded, g) {
  boxes.rect(g.x, g.y, g.w, g.h);
  if (g.summary) shaded.rect(g.x + GROUP_PAD / 2, g.y + GROUP_TITLE, g.w - GROUP_PAD, g.h - GROUP_TITLE - GROUP_PAD / 2);
}

/**
 * @param {CanvasRenderingContext2D|OffscreenCanvasRenderingContext2D} ctx @param {Record<string, string>} C
 * @param {Path2D} boxes @param {Path2D} shaded @param {number} px one screen pixel in world units
 */
function drawBoxes(ctx, C, boxes, shaded, px) {
  ctx.fillStyle = C["--group-bg"];
  ctx.fill(boxes);
  ctx.strokeStyle = C["--group-border"];
  ctx.lineWidth = px;
  ctx.stroke(boxes);
  ctx.fillStyle = C["--node-bg"];
  ctx.globalAlpha = 0.45;
  ctx.fill(shaded);
  ctx.globalAlpha = 1;
}
