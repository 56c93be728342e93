// @ts-check
// An object on the canvas: the state drawn (the store's now, a deletion the store holds for
// DELETION_SEEN_MS), its box with kind stripe, state border, markers, the cascade it runs
// and its labels; the rings of the selection, search matches and the delete preview; and,
// once a test asks, a record of what was drawn.

import { NODE_W, NODE_H } from "./layout.js";
import { GHOST_MS, BORN_MS } from "./store.js";
import { stateOf, hasInvalidOwner, kindHue, STATES, PREVIEW, isOrphaned } from "./states.js";
import { progress, cascadeCaption, countText } from "./cascades.js";
import { truncate, truncateMiddle } from "./textfit.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./layout.js").Item} Item */

/**
 * The state to draw: the store's now (an item's copy is as old as its layout), or, for an
 * object removed just after its deletion began, being deleted while the store holds it
 * (DELETION_SEEN_MS).
 * @param {Renderer} r @param {Item} it
 */
export function itemState(r, it) {
  const cur = r.store.current(it.uid);
  if (!cur) return "removed";
  if (!cur.ghost) return stateOf(r.store, cur.node);
  return r.store.shownDeleting.get(it.uid)?.state ?? "removed"; // as it was when removed, until the hold ends
}

/** @param {Renderer} r @param {Item} it @param {string} state @param {number} now */
export function record(r, it, state, now) {
  // at: when the frame was drawn, on the clock the stream's arrivals are timed with (a
  // frame's own timestamp is its start, which can precede a message handled in it).
  // multi: drawn as one of the objects selected together.
  // orphaned: drawn with the orphan mark (drawItem; a far-out cell has no marks).
  r.drawnState?.set(it.uid, { state, x: it.group.x + it.x, y: it.group.y + it.y, at: r.drawClock, multi: r.multi.has(it.uid), orphaned: false });
}

/** The fill of a far-out cell: its state, or its kind's colour when normal. @param {Renderer} r @param {Item} it @param {number} now */
export function itemColor(r, it, now) {
  const C = r.colors;
  const st = itemState(r, it);
  if (st === "removed") return C["--st-removed"];
  const pv = r.preview.get(it.uid);
  if (pv) return C[PREVIEW[pv].color];
  if (st === "normal") return kindColor(it.node.kind, 45, 55);
  return C[STATE_COLOR[st]];
}

/** Objects drawn with a ring: the selection, the objects selected together, search matches, the delete preview. @param {Renderer} r */
export function ringed(r) {
  const out = [...r.matches, ...r.multi, ...r.preview.keys()];
  if (r.selected) out.push(r.selected);
  return out;
}

/**
 * The selection's ring hugs the box; a search match's or preview's is thinner and
 * farther out, so that the box's own border (its state) always shows between them. An
 * object selected together with others (for a set delete) has a dashed ring in the
 * accent colour and a tick at its top left corner.
 * @param {Renderer} r @param {Item} it @param {number} px
 */
export function drawRing(r, it, px) {
  const { ctx, colors: C } = r;
  const sel = it.uid === r.selected;
  const pv = r.preview.get(it.uid);
  const multi = r.multi.has(it.uid);
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

/** @param {Renderer} r @param {Item} it @param {number} now @param {number} px @param {boolean} labels */
export function drawItem(r, it, now, px, labels) {
  const { ctx, store, colors: C } = r;
  // The state drawn is the store's, now: the item only holds the position (and the copy
  // of the object) of the last layout, which a cascade does not redo.
  const cur = store.current(it.uid);
  const ghost = !cur || (cur.ghost && !store.shownDeleting.has(it.uid)); // shown being deleted: drawn as it was, until the hold ends
  const n = cur ? cur.node : it.node, x = it.group.x + it.x, y = it.group.y + it.y;
  const st = itemState(r, it);
  record(r, it, st, now);
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
  const pv = r.preview.get(it.uid);
  if (pv) {
    ctx.globalAlpha = 0.28;
    ctx.fillStyle = C[PREVIEW[pv].color];
    ctx.fillRect(x, y, NODE_W, NODE_H);
    ctx.globalAlpha = alpha;
  }
  if (it.uid === r.selected || r.matches.has(it.uid) || pv || r.multi.has(it.uid)) drawRing(r, it, px);
  else if (it.uid === r.hover) {
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
    const d = r.drawnState?.get(it.uid);
    if (d) d.orphaned = true;
  }

  // A cascade in progress: a bar along the bottom, and its count in the label.
  const cascade = r.cascades?.active.get(it.uid);
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
    const drawn = r.drawnState?.get(it.uid);
    if (drawn) drawn.label = [kindShown, nameShown];
    if (cascade && cascade.end === null) {
      // Under the box, in the gap above its dependents: what it waits on, and how long.
      ctx.font = "10px system-ui, sans-serif";
      // Elapsed on the clock of the moment shown: frozen while time travel is paused. Too
      // long, what it waits on is cut short, not how long.
      const full = cascadeCaption(cascade, r.cascades?.now() ?? Date.now()), cut = full.lastIndexOf(" · ");
      const caption = cut > 0 && ctx.measureText(full).width > NODE_W + 40
        ? truncate(ctx, full.slice(0, cut), NODE_W + 40 - ctx.measureText(full.slice(cut)).width) + full.slice(cut)
        : truncate(ctx, full, NODE_W + 40);
      r.drawnCaptions?.set(it.uid, caption);
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

/** Each state's colour property. */
export const STATE_COLOR = Object.fromEntries(STATES.map((s) => [s.id, s.color]));

/** @type {Map<string, string>} */
const kindColors = new Map();

/** A kind's colour, made once (frames draw tens of thousands of cells). @param {string} kind @param {number} s @param {number} l */
export function kindColor(kind, s, l) {
  const key = `${kind}/${s}/${l}`;
  let c = kindColors.get(key);
  if (!c) kindColors.set(key, (c = `hsl(${kindHue(kind)} ${s}% ${l}%)`));
  return c;
}
