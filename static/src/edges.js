// @ts-check
// The owner references on the canvas: a curve from each object on screen to each of its
// owners (solid for the controller, dashed otherwise, heavier when blocking), an ownership
// cycle in a colour of its own with its edge back up around the outside, and a collapsed
// set hanging from its parent by one edge.

import { NODE_W, NODE_H, CYCLE_BULGE } from "./layout.js";
import { cycleKey } from "./cycles.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Item} Item */
/** @typedef {import("./layout.js").Block} Block */

/** @param {Renderer} r @param {Item[]} items @param {Block[]} blocks @param {number} px */
export function drawEdges(r, items, blocks, px) {
  const { ctx, layout, colors: C } = r;
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
    const n = r.store.current(it.uid)?.node || it.node;
    const x1 = it.group.x + it.x, y1 = it.group.y + it.y;
    for (const o of n.owners || []) {
      const ob = layout.box(o.uid);
      if (!ob) continue;
      const hi = r.selected === it.uid || r.selected === o.uid;
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
        r.drawnEdges?.set(key, { cycle, back: true, x: (b[0] + 3 * b[2] + 3 * b[4] + b[6]) / 8, y: (b[1] + 3 * b[3] + 3 * b[5] + b[7]) / 8 });
        continue;
      }
      const stroke = cycle ? "cycle" : (o.controller ? "ctl" : "plain") + (o.blockOwnerDeletion ? "Block" : "");
      const xs = ob.x + NODE_W / 2, ys = ob.y + NODE_H, xe = x1 + NODE_W / 2;
      curve(hi ? paths.hi : /** @type {any} */ (paths)[stroke], xs, ys, xe, y1);
      r.drawnEdges?.set(key, { cycle, back: false, x: (xs + xe) / 2, y: (ys + y1) / 2 });
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
