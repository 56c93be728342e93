// @ts-check
// Fitting numbers and text into the room there is on the canvas.

/** @param {number} v @param {number} lo @param {number} hi */
export function clamp(v, lo, hi) {
  return Math.max(lo, Math.min(hi, v));
}

/** @type {Map<string, string>} */
const truncCache = new Map();

/** Shortens text to fit width, with an ellipsis. @param {CanvasRenderingContext2D} ctx @param {string} s @param {number} width */
export function truncate(ctx, s, width) {
  const key = ctx.font + "\u0000" + width + "\u0000" + s;
  const hit = truncCache.get(key);
  if (hit !== undefined) return hit;
  let out = s;
  if (ctx.measureText(s).width > width) {
    let lo = 0, hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(s.slice(0, mid) + "…").width <= width) lo = mid;
      else hi = mid - 1;
    }
    out = s.slice(0, lo) + "…";
  }
  if (truncCache.size > 20000) truncCache.clear();
  truncCache.set(key, out);
  return out;
}
