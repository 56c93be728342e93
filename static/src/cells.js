// @ts-check
// Far out, each namespace is a bitmap of its objects as coloured cells and its collapsed
// sets, drawn at about the current zoom and redrawn only when something in it changed
// (within a budget per frame), so that a frame under heavy churn is mostly copies.

import { NODE_W, NODE_H } from "./layout.js";
import { itemColor, itemState, record, ringed, drawRing } from "./nodes.js";
import { drawBlock, drawBlockRing } from "./blocks.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Block} Block */
/** @typedef {import("./layout.js").Group} Group */

/** Redrawing stale namespace bitmaps stops after this long in a frame... */
const BITMAP_BUDGET_MS = 6;
/** ...but none stays stale longer than this. */
const STALE_MS = 100;
/** The largest side of a namespace's bitmap, in pixels. */
export const BITMAP_MAX = 4096;

/**
 * Far out: each namespace on screen drawn from its bitmap (see groupBitmap), and the rings of
 * what is highlighted over the cells.
 * @param {Renderer} r @param {Group[]} visible the namespaces on screen @param {number} now @param {number} px one screen pixel in world units
 */
export function drawCells(r, visible, now, px) {
  const ctx = r.ctx;
  let drawn = 0;
  const budgetEnd = performance.now() + BITMAP_BUDGET_MS;
  for (const g of visible) {
    if (g.summary) continue;
    const bm = groupBitmap(r, g, now, budgetEnd);
    ctx.drawImage(bm.canvas, g.x, g.y, g.w, g.h);
    drawn += bm.count;
  }
  const rings = ringed(r);
  if (rings.length) {
    const shown = new Set(visible);
    for (const u of rings) {
      const it = r.layout.items.get(u);
      if (!it || !shown.has(it.group)) continue;
      if (it.block && r.collapsed(it.block)) drawBlockRing(r, it.block, px);
      else drawRing(r, it, px);
    }
  }
  r.drawn = drawn;
}

/**
 * The far-out drawing of a namespace: a bitmap of its cells (by state colour, or kind
 * when normal) and its collapsed sets, at the current zoom rounded up to a step of √2
 * (never blurrier than the screen). After invalidate it is stale: redrawn in this frame
 * while the frame's budget lasts, else drawn as it was, for at most STALE_MS.
 * @param {Renderer} r @param {Group} g @param {number} now @param {number} budgetEnd performance.now() deadline
 * @returns {{canvas: OffscreenCanvas, key: string, count: number, stale: number, blockCounts: Map<Block, Map<string, number>>}}
 */
export function groupBitmap(r, g, now, budgetEnd) {
  const kb = 2 ** (Math.ceil(Math.log2(r.cam.k) * 2) / 2);
  const key = `${cacheKey(r)}/${kb}/${r.dpr}`;
  let c = /** @type {any} */ (g).cache;
  if (c && c.key === key && !c.stale) return c;
  if (c && c.canvas && performance.now() > budgetEnd && (!c.stale || now - c.stale < STALE_MS)) return c;
  // Large namespaces are drawn a little coarser rather than into huge bitmaps.
  const scale = Math.min(kb * r.dpr, BITMAP_MAX / g.w, BITMAP_MAX / g.h);
  const w = Math.max(1, Math.ceil(g.w * scale)), h = Math.max(1, Math.ceil(g.h * scale));
  const canvas = c?.canvas && c.canvas.width === w && c.canvas.height === h ? c.canvas : r.bitmap(w, h);
  const bctx = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
  bctx.setTransform(1, 0, 0, 1, 0, 0);
  bctx.clearRect(0, 0, w, h);
  bctx.setTransform(scale, 0, 0, scale, -g.x * scale, -g.y * scale);
  c = { canvas, key, count: 0, stale: 0, blockCounts: new Map() };
  /** @type {any} */ (g).cache = c;
  /** @type {Map<string, Path2D>} */
  const cells = new Map();
  for (const it of g.items) {
    if (it.block && r.collapsed(it.block)) continue;
    const col = itemColor(r, it, now);
    record(r, it, itemState(r, it), now);
    let p = cells.get(col);
    if (!p) cells.set(col, (p = new Path2D()));
    p.rect(g.x + it.x, g.y + it.y, NODE_W, NODE_H);
    c.count++;
  }
  for (const [col, p] of cells) {
    bctx.fillStyle = col;
    bctx.fill(p);
  }
  for (const b of g.blocks) if (r.collapsed(b)) drawBlock(r, b, 1 / kb, /** @type {any} */ (bctx));
  return c;
}

/** What every namespace cache depends on besides its own members. @param {Renderer} r */
export function cacheKey(r) {
  return `${r.expanded.size}/${r.previewVersion}/${r.colors["--bg"]}/${r.leafSetsCollapse()}`;
}

/** Marks the cached drawing of the namespace holding uid stale. @param {Renderer} r @param {string} uid */
export function markStale(r, uid) {
  const it = r.layout.items.get(uid);
  const c = it && /** @type {any} */ (it.group).cache;
  if (!c) return;
  if (!c.stale) c.stale = performance.now();
  c.blockCounts = new Map();
}
