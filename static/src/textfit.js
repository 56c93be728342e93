// @ts-check
// Fitting numbers and text into the room there is on the canvas.

/** @param {number} v @param {number} lo @param {number} hi */
export function clamp(v, lo, hi) {
  return Math.max(lo, Math.min(hi, v));
}

/** @type {Map<string, string>} */
const truncCache = new Map();

/** Shortens text to fit width, with an ellipsis at its end. @param {CanvasRenderingContext2D} ctx @param {string} s @param {number} width */
export function truncate(ctx, s, width) {
  return fit(ctx, s, width, false);
}

/**
 * Shortens a name to fit width with an ellipsis in its middle: names made by controllers
 * differ at their end ("payments-reconcil…c5-x2k4p", "payments-reconcil…c5-9fj2q").
 * @param {CanvasRenderingContext2D} ctx @param {string} s @param {number} width
 */
export function truncateMiddle(ctx, s, width) {
  return fit(ctx, s, width, true);
}

/** @param {CanvasRenderingContext2D} ctx @param {string} s @param {number} width @param {boolean} middle */
function fit(ctx, s, width, middle) {
  const key = ctx.font + "\u0000" + width + "\u0000" + (middle ? "m" : "") + "\u0000" + s;
  const hit = truncCache.get(key);
  if (hit !== undefined) return hit;
  // n characters of s kept: the first n, or the first half and the last half of them.
  const cut = (/** @type {number} */ n) => (middle ? s.slice(0, Math.ceil(n / 2)) + "…" + s.slice(s.length - Math.floor(n / 2)) : s.slice(0, n) + "…");
  let out = s;
  if (ctx.measureText(s).width > width) {
    let lo = 0, hi = s.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(cut(mid)).width <= width) lo = mid;
      else hi = mid - 1;
    }
    out = cut(lo);
  }
  if (truncCache.size > 20000) truncCache.clear();
  truncCache.set(key, out);
  return out;
}
