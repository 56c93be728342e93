// @ts-check
// The graph on a canvas. Drawing is level-of-detail: far out, objects are coloured
// cells and large sets of leaf siblings are one count node; closer in, boxes with kind,
// name, state and markers; edges when they can be told apart. Only what is on screen is
// drawn, so a frame costs about what the user can see, not the size of the cluster.

// The renderer holds the camera, what is drawn highlighted and hit testing, and draws a
// frame from the modules that each draw one thing: boxes.js (namespaces' boxes), cells.js
// (far out, namespaces as bitmaps of cells), edges.js (owner references), blocks.js
// (collapsed sets), nodes.js (objects) and titles.js (namespaces' titles and counts).

import { NODE_W, NODE_H, LONER_CAPTION } from "./layout.js";
import { STATES, PREVIEW } from "./states.js";
import { drawTitles, drawCounts, namespaceDeletion } from "./titles.js";
import { clamp } from "./textfit.js";
import { addBox, drawBoxes, boxesBitmap } from "./boxes.js";
import { drawCells, markStale } from "./cells.js";
import { drawEdges } from "./edges.js";
import { drawBlock, drawBlockRing, drawBlockLabel } from "./blocks.js";
import { drawItem } from "./nodes.js";

/** @typedef {import("./layout.js").Item} Item */
/** @typedef {import("./layout.js").Block} Block */
/** @typedef {import("./layout.js").Group} Group */
/** @typedef {"deleted"|"orphaned"|"kept"|"waiting"|"target"} PreviewKind */

/** Below this on-screen cell width a leaf set is drawn as its count. */
const COLLAPSE_PX = 70;
/** Below this on-screen width a box is a plain cell. */
const CELL_PX = 14;
const MIN_K = 0.005, MAX_K = 3;
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
    return !this.expanded.has(b.parent) && this.leafSetsCollapse();
  }

  /** Whether sets of leaf siblings are too small to read at this zoom (drawn as their count). */
  leafSetsCollapse() {
    return NODE_W * this.cam.k < COLLAPSE_PX;
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
    const bm = cellMode ? boxesBitmap(this) : null;
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
    if (cellMode) drawCells(this, visible, now, px);
    else {
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
      drawEdges(this, items, blocks, px);
      for (const b of blocks) {
        drawBlock(this, b, px);
        if ((this.selected && b.uids.includes(this.selected)) || (this.matches.size && b.uids.some((u) => this.matches.has(u))) ||
          (this.multi.size && b.uids.some((u) => this.multi.has(u)))) drawBlockRing(this, b, px);
      }
      for (const it of items) drawItem(this, it, now, px, labels);
    }
    function inView(/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ w, /** @type {number} */ h) {
      return !(x > vx1 || y > vy1 || x + w < vx0 || y + h < vy0);
    }

    drawTitles(this, visible);
    drawCounts(this, visible);
    for (const g of visible) for (const b of g.blocks) if (this.collapsed(b)) drawBlockLabel(this, b);
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

  /** Marks the cached drawing of the namespace holding uid stale. @param {string} uid */
  invalidate(uid) {
    markStale(this, uid);
  }
}
