// @ts-check
// The namespaces' titles on the canvas: each in its own box, pinned while the box is on
// screen; a namespace being deleted with its progress and what holds it; and, once a test
// asks (Renderer.recordDrawn), a log of what each title said, frame by frame.

import { GROUP_GAP, GROUP_TITLE, LONER_CAPTION, TITLE_FONT, groupCount } from "./layout.js";
import { progress, cascadeCaption, namespaceStatus } from "./cascades.js";
import { clamp, truncate } from "./textfit.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Group} Group */

/**
 * Each namespace's title, in its own box so that titles never overlap: in the title band
 * (which the layout made wide enough) when that is readable; farther out, on a plate
 * inside the box when the box is large enough on screen; otherwise not at all.
 * @param {Renderer} r @param {Group[]} visible
 */
export function drawTitles(r, visible) {
  const { ctx, cam, colors: C } = r;
  ctx.setTransform(r.dpr, 0, 0, r.dpr, 0, 0);
  ctx.textBaseline = "middle";
  /** @type {Set<string>} */
  const titled = new Set();
  for (const g of visible) {
    const sx = g.x * cam.k + cam.x, sy = g.y * cam.k + cam.y, sw = g.w * cam.k, sh = g.h * cam.k;
    const text = `${g.title}  ·  ${groupCount(g)}`;
    const del = namespaceDeletion(r, g);
    // A namespace being deleted says so after its title: "Terminating · 3 of 5 gone".
    const status = del ? namespaceStatus(del) : "";
    const band = GROUP_TITLE * cam.k;
    let size = Math.min(18, TITLE_FONT * cam.k);
    if (size >= 10) {
      ctx.font = `600 ${size}px system-ui, sans-serif`;
      ctx.fillStyle = C["--fg"];
      // Pinned to the top and left of the screen while the box is, never out of the part of
      // the box on screen (a long title ran into the next box's).
      const top = clamp(0, sy, sy + sh - band);
      const y = top + band / 2, x = Math.max(sx, 0) + 8 * cam.k, room = sx + sw - 8 * cam.k - x;
      // Short of room, a namespace being deleted gives up its count before its progress.
      const base = del && ctx.measureText(text + status).width > room ? g.title : text;
      const shown = truncate(ctx, base, room);
      ctx.fillText(shown, x, y);
      let drawnText = shown, caption = "";
      if (del) {
        const used = ctx.measureText(shown).width;
        const st = shown === base && room - used > 20 ? truncate(ctx, status, room - used) : "";
        ctx.fillStyle = C["--st-deleting"];
        ctx.fillText(st, x + used, y);
        drawnText += st;
        caption = drawNamespaceProgress(r, del, sx, top, sw, sy + sh, band);
      }
      recordTitle(r, g.ns, drawnText, caption, titled, x, x + ctx.measureText(drawnText).width, sx + sw);
      continue;
    }
    // Far out, on a plate as high as the box allows (16 px; a box of one row of objects is
    // lower: its title goes over it, in the gap the layout leaves between rows of boxes,
    // or, farther out, on a tighter plate reaching into the gap below; never in type under
    // 8 px), what fits of the box on screen: all of it, the title and its count (a namespace
    // being deleted keeps at least "Terminating"), else the title cut short; not at all
    // below "ab…".
    let py = Math.max(sy, 0) + 1, plateH = Math.min(16, sy + sh - py - 1);
    const gap = Math.min(14, GROUP_GAP * cam.k - 1), over = plateH < 13 && gap >= 10 && sy >= 0;
    // Too narrow a gap to go over, a low box (a namespace of a few objects, or none held)
    // lends its plate the gap below it, where nothing is drawn: it went untitled.
    if (!over && plateH < 13) plateH = Math.min(13, plateH + Math.max(0, gap - 1));
    if (over) {
      plateH = gap;
      py = sy - plateH - 1;
      size = plateH - 2;
    } else if (plateH >= 13) size = plateH - 5;
    else if (plateH >= 11) size = plateH - 3;
    else continue;
    ctx.font = `600 ${size}px system-ui, sans-serif`;
    const full = del ? text + status : text;
    const short = del ? `${g.title}  ·  ${del.end === null ? "Terminating" : "deleted"}` : text;
    const px = Math.max(sx, 0) + 3, room = sx + sw - px - 9;
    const plate = [full, short].find((t) => ctx.measureText(t).width <= room) ?? truncate(ctx, g.title, room);
    if (plate.length < 3) continue;
    const tw = ctx.measureText(plate).width;
    if (!over) {
      ctx.fillStyle = C["--group-bg"];
      ctx.globalAlpha = 0.9;
      ctx.fillRect(px, py, tw + 6, plateH);
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = del ? C["--st-deleting"] : C["--fg"];
    ctx.fillText(plate, px + 3, py + plateH / 2);
    recordTitle(r, g.ns, plate, "", titled, px + 3, px + 3 + tw, sx + sw);
  }
  if (r.drawnTitles) {
    for (const ns of r.drawnTitles.keys()) {
      if (titled.has(ns)) continue;
      r.drawnTitles.delete(ns);
      r.titleLog.push({ ns, text: "", caption: "", inLayout: r.layout.groups.has(ns), t: r.drawClock });
    }
  }
  // The caption of each open set of loners: what it is, and that a click folds it.
  const size = 13 * cam.k;
  if (size < 8) return;
  ctx.font = `${Math.min(size, 15)}px system-ui, sans-serif`;
  ctx.fillStyle = C["--muted"];
  for (const g of visible) {
    for (const b of g.blocks) {
      if (!b.loner || r.collapsed(b)) continue;
      const n = b.uids.length;
      const text = `${n} ${b.loner}${n === 1 ? "" : "s"} with no owner and no dependent  ·  click here to fold`;
      ctx.fillText(truncate(ctx, text, b.w * cam.k), (g.x + b.x) * cam.k + cam.x, (g.y + b.y + LONER_CAPTION / 2 - 2) * cam.k + cam.y);
    }
  }
}

/** The deletion of the namespace g is the box of, if the page follows one. @param {Renderer} r @param {Group} g */
export function namespaceDeletion(r, g) {
  return g.ns && r.cascades ? r.cascades.ofNamespace(g.ns) : null;
}

/**
 * A namespace being deleted: a bar of how far it is along the bottom of its title band
 * (none while the page has no baseline), and what holds it under its box, in the gap
 * before the next box, as a cascade's owner has it. Returns the caption drawn.
 * @param {Renderer} r @param {import("./cascades.js").Cascade} del @param {number} sx @param {number} top @param {number} sw
 * @param {number} bottom the box's bottom on screen @param {number} band the title band's height on screen
 */
function drawNamespaceProgress(r, del, sx, top, sw, bottom, band) {
  const { ctx, cam, colors: C } = r;
  const bx = sx + 8 * cam.k, bw = sw - 16 * cam.k, by = top + band - 6;
  ctx.fillStyle = C["--muted"];
  ctx.globalAlpha = 0.3;
  ctx.fillRect(bx, by, bw, 3);
  ctx.globalAlpha = 1;
  ctx.fillStyle = C["--st-deleting"];
  ctx.fillRect(bx, by, bw * progress(del), 3);
  if (del.end !== null || 80 * cam.k < 18) return "";
  ctx.font = "11px system-ui, sans-serif";
  const caption = truncate(ctx, cascadeCaption(del, r.cascades?.now() ?? Date.now()), sw);
  const w = ctx.measureText(caption).width + 10;
  ctx.fillStyle = C["--bg"];
  ctx.globalAlpha = 0.9;
  ctx.fillRect(sx, bottom + 3, w, 16);
  ctx.globalAlpha = 1;
  ctx.fillStyle = C["--st-deleting"];
  ctx.fillText(caption, sx + 5, bottom + 11);
  return caption;
}

/**
 * Keeps what a namespace box's title said (once a test asks: recordDrawn), and logs each change.
 * @param {Renderer} r @param {string} ns @param {string} text @param {string} caption @param {Set<string>} titled
 * @param {number} x @param {number} right @param {number} boxRight where the title's text begins and ends on screen, and its box
 */
function recordTitle(r, ns, text, caption, titled, x, right, boxRight) {
  if (!r.drawnTitles) return;
  titled.add(ns);
  const last = r.drawnTitles.get(ns);
  if (!last || last.text !== text || last.caption !== caption) {
    r.titleLog.push({ ns, text, caption, inLayout: true, t: r.drawClock });
    if (r.titleLog.length > 100_000) r.titleLog.splice(0, 50_000);
  }
  r.drawnTitles.set(ns, { text, caption, at: r.drawClock, x, right, boxRight });
}

/**
 * Summary first: what each counted box on screen says inside, in screen type, when the box
 * is large enough for it: its objects, those being deleted, and the renderer's note
 * ("loading…", "zoom in…").
 * @param {Renderer} r @param {Group[]} visible
 */
export function drawCounts(r, visible) {
  const { ctx, cam, colors: C } = r;
  ctx.setTransform(r.dpr, 0, 0, r.dpr, 0, 0);
  ctx.textBaseline = "middle";
  ctx.textAlign = "center";
  r.drawnCounts?.clear();
  for (const g of visible) {
    if (!g.summary) continue;
    // The part of the box on screen: a box wider than the view says its counts where they
    // are seen, not at its centre off screen.
    const x0 = g.x * cam.k + cam.x, y0 = (g.y + GROUP_TITLE) * cam.k + cam.y;
    const sx = Math.max(0, x0), sw = Math.min(r.w, x0 + g.w * cam.k) - sx;
    const top = Math.max(0, y0), sh = Math.min(r.h, (g.y + g.h) * cam.k + cam.y) - top;
    if (sw < 120 || sh < 60) continue; // else its title takes the box (drawTitles)
    const size = Math.min(16, Math.max(11, sh / 8));
    const cx = sx + sw / 2, room = sw - 16;
    const c = g.summary;
    /** @type {[string, string][]} */
    const lines = [[`${c.objects.toLocaleString("en-US")} object${c.objects === 1 ? "" : "s"}`, C["--fg"]]];
    if (c.beingDeleted) lines.push([`${c.beingDeleted.toLocaleString("en-US")} being deleted`, C["--st-deleting"]]);
    const note = r.countsNote(g.ns);
    if (note) lines.push([note, C["--muted"]]);
    const shown = lines.slice(0, Math.max(1, Math.floor(sh / (size * 1.6))));
    let y = top + sh / 2 - ((shown.length - 1) * size * 1.5) / 2;
    for (const [text, color] of shown) {
      ctx.font = `${color === C["--fg"] ? "600 " : ""}${size}px system-ui, sans-serif`;
      ctx.fillStyle = color;
      const t = truncate(ctx, text, room);
      ctx.fillText(t, cx, y);
      if (r.drawnCounts) {
        const half = ctx.measureText(t).width / 2;
        r.drawnCounts.set(`${g.ns}\n${text}`, { ns: g.ns, text: t, left: cx - half, right: cx + half, y });
      }
      y += size * 1.5;
    }
  }
  ctx.textAlign = "start";
}
