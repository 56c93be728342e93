// @ts-check
// Collapsed sets on the canvas: a set of leaf siblings too small to read, or a kind's
// loners, drawn as one box with a bar of its members' states and a count of them.

import { PREVIEW, stateOf } from "./states.js";
import { STATE_COLOR } from "./nodes.js";
import { clamp, truncate } from "./textfit.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Block} Block */
/** @typedef {import("./render.js").PreviewKind} PreviewKind */

/** @param {Renderer} r @param {Block} b @param {number} px @param {CanvasRenderingContext2D} [ctx] where to draw (a namespace's bitmap) */
export function drawBlock(r, b, px, ctx = r.ctx) {
  const C = r.colors;
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
    counts = blockCounts(r, b);
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
 * the accent colour when it holds objects selected together). @param {Renderer} r @param {Block} b @param {number} px
 */
export function drawBlockRing(r, b, px) {
  const { ctx, colors: C } = r;
  const multi = r.multi.size > 0 && b.uids.some((u) => r.multi.has(u)) && !(r.selected && b.uids.includes(r.selected));
  ctx.strokeStyle = multi ? C["--accent"] : C["--match"];
  ctx.lineWidth = 3 * px;
  if (multi) ctx.setLineDash([7 * px, 4 * px]);
  ctx.strokeRect(b.group.x + b.x - 6 * px, b.group.y + b.y - 6 * px, b.w + 12 * px, b.h + 12 * px);
  ctx.setLineDash([]);
}

/** How many members of b are in each state colour. @param {Renderer} r @param {Block} b */
export function blockCounts(r, b) {
  const { store, colors: C } = r;
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const u of b.uids) {
    const n = store.nodes.get(u);
    const col = !n ? C["--st-removed"] : r.preview.has(u) ? C[PREVIEW[/** @type {PreviewKind} */ (r.preview.get(u))].color]
      : C[STATE_COLOR[stateOf(store, n)]];
    counts.set(col, (counts.get(col) || 0) + 1);
  }
  return counts;
}

/** @param {Renderer} r @param {Block} b */
export function drawBlockLabel(r, b) {
  const { ctx, cam, colors: C } = r;
  const sx = (b.group.x + b.x) * cam.k + cam.x, sy = (b.group.y + b.y) * cam.k + cam.y;
  const sw = b.w * cam.k, sh = b.h * cam.k;
  if (sw < 40 || sh < 16) return;
  /** @type {Map<string, number>} */
  const kinds = new Map();
  for (const u of b.uids) {
    const k = r.store.nodes.get(u)?.kind || r.store.ghosts.get(u)?.node.kind || "?";
    kinds.set(k, (kinds.get(k) || 0) + 1);
  }
  const text = [...kinds].map(([k, c]) => `${c} ${k}${c === 1 ? "" : "s"}`).join(", ");
  ctx.font = `600 ${clamp(sh * 0.18, 11, 16)}px system-ui, sans-serif`;
  ctx.fillStyle = C["--fg"];
  ctx.textAlign = "center";
  ctx.fillText(truncate(ctx, text, sw - 10), sx + sw / 2, sy + Math.min(sh * 0.35, 24));
  ctx.textAlign = "start";
}
