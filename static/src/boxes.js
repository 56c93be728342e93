// @ts-check
// The namespaces' boxes on the canvas: one path of them all (and, summary first, the shading
// of those the page holds no object of); far out, where thousands are on screen, one bitmap
// of them all, redrawn only when a box moves or the zoom leaves its range.

import { GROUP_PAD, GROUP_TITLE } from "./layout.js";
import { BITMAP_MAX } from "./cells.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Group} Group */

/**
 * Every namespace's box drawn once into a bitmap of the whole layout, a little sharper
 * than the current zoom, redrawn when a box moves or the zoom leaves its range; null
 * when such a bitmap would be too large (nearer, few boxes are on screen).
 * @param {Renderer} r
 * @returns {{canvas: OffscreenCanvas, pad: number, scale: number}|null}
 */
export function boxesBitmap(r) {
  const b = r.layout.bounds, need = r.cam.k * r.dpr;
  const key = `${r.layout.version}/${r.dpr}/${r.colors["--bg"]}`;
  // Kept while it is sharp enough and not much sharper than the screen (zooming redraws it every second step of √2).
  const had = r.boxes;
  if (had?.key === key && had.scale >= need && had.scale <= 2.9 * need) return had;
  const kb = 2 ** (Math.ceil(Math.log2(r.cam.k) * 2) / 2 + 0.5);
  const pad = 4 / kb; // room for the borders
  const scale = kb * r.dpr;
  const w = Math.ceil((b.w + 2 * pad) * scale), h = Math.ceil((b.h + 2 * pad) * scale);
  if (w > BITMAP_MAX || h > BITMAP_MAX || r.layout.groups.size < 2) return null;
  const canvas = r.boxes?.canvas.width === w && r.boxes.canvas.height === h ? r.boxes.canvas : r.bitmap(w, h);
  const bctx = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
  bctx.setTransform(1, 0, 0, 1, 0, 0);
  bctx.clearRect(0, 0, w, h);
  bctx.setTransform(scale, 0, 0, scale, (pad - b.x) * scale, (pad - b.y) * scale);
  const boxes = new Path2D(), shaded = new Path2D();
  for (const g of r.layout.groups.values()) addBox(boxes, shaded, g);
  drawBoxes(bctx, r.colors, boxes, shaded, 1 / kb);
  r.boxes = { canvas, key, pad, scale };
  return r.boxes;
}

/**
 * Adds a namespace's box to the boxes' path, and, summary first, its shading to the
 * shaded path (a namespace the page holds no object of).
 * @param {Path2D} boxes @param {Path2D} shaded @param {Group} g
 */
export function addBox(boxes, shaded, g) {
  boxes.rect(g.x, g.y, g.w, g.h);
  if (g.summary) shaded.rect(g.x + GROUP_PAD / 2, g.y + GROUP_TITLE, g.w - GROUP_PAD, g.h - GROUP_TITLE - GROUP_PAD / 2);
}

/**
 * @param {CanvasRenderingContext2D|OffscreenCanvasRenderingContext2D} ctx @param {Record<string, string>} C
 * @param {Path2D} boxes @param {Path2D} shaded @param {number} px one screen pixel in world units
 */
export function drawBoxes(ctx, C, boxes, shaded, px) {
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
