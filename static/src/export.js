// @ts-check
// Exports: the current view as SVG or PNG, and the graph in view (after filters and
// focus) as DOT, in upstream's debug-graph shape, or as JSON.

import { NODE_W, NODE_H } from "./layout.js";
import { stateOf, STATES } from "./states.js";

/** @typedef {import("./render.js").Renderer} Renderer */
/** @typedef {import("./store.js").NodeState} NodeState */

/** @param {Blob} blob @param {string} name */
export function download(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

/** @param {string} s */
const esc = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The visible part of the graph as SVG, in the page's colours. @param {Renderer} r */
export function viewSVG(r) {
  const { cam, layout, store, colors: C } = r;
  const vx0 = -cam.x / cam.k, vy0 = -cam.y / cam.k, vw = r.w / cam.k, vh = r.h / cam.k;
  const inView = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ w, /** @type {number} */ h) =>
    !(x > vx0 + vw || y > vy0 + vh || x + w < vx0 || y + h < vy0);
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="${vx0} ${vy0} ${vw} ${vh}" width="${r.w}" height="${r.h}" font-family="system-ui, sans-serif">`,
    `<rect x="${vx0}" y="${vy0}" width="${vw}" height="${vh}" fill="${C["--bg"]}"/>`];
  const edges = [], nodes = [];
  for (const g of layout.groups.values()) {
    if (!inView(g.x, g.y, g.w, g.h)) continue;
    out.push(`<g><rect x="${g.x}" y="${g.y}" width="${g.w}" height="${g.h}" fill="${C["--group-bg"]}" stroke="${C["--group-border"]}"/>`,
      `<text x="${g.x + 12}" y="${g.y + 26}" font-size="18" font-weight="600" fill="${C["--fg"]}">${esc(g.title)}</text></g>`);
    for (const b of g.blocks) {
      if (!r.collapsed(b) || !inView(g.x + b.x, g.y + b.y, b.w, b.h)) continue;
      nodes.push(`<g><rect x="${g.x + b.x}" y="${g.y + b.y}" width="${b.w}" height="${b.h}" rx="10" fill="${C["--node-bg"]}" stroke="${C["--node-border"]}"/>` +
        `<text x="${g.x + b.x + b.w / 2}" y="${g.y + b.y + 30}" text-anchor="middle" font-size="20" fill="${C["--fg"]}">${b.uids.length} objects</text></g>`);
      const ob = layout.box(b.parent);
      if (ob) edges.push(path(ob.x + NODE_W / 2, ob.y + NODE_H, g.x + b.x + b.w / 2, g.y + b.y, C["--edge-block"], 1.8, false));
    }
    for (const it of g.items) {
      if (it.block && r.collapsed(it.block)) continue;
      const x = g.x + it.x, y = g.y + it.y;
      if (!inView(x, y, NODE_W, NODE_H)) continue;
      const cur = store.current(it.uid), ghost = !cur || cur.ghost;
      const n = cur ? cur.node : it.node, st = ghost ? "removed" : stateOf(store, n);
      const stroke = C[STATES.find((s) => s.id === st)?.color || "--node-border"];
      nodes.push(`<g><title>${esc(`${n.kind} ${n.namespace ? n.namespace + "/" : ""}${n.name} (${st})`)}</title>` +
        `<rect x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="6" fill="${ghost ? C["--st-removed-fill"] : C["--node-bg"]}" stroke="${stroke}" stroke-width="${st === "normal" ? 1 : 2.5}"${st === "virtual" ? ' stroke-dasharray="5 3"' : ""}/>` +
        `<text x="${x + 11}" y="${y + 15}" font-size="11" fill="${C["--muted"]}">${esc(n.kind + (st === "normal" ? "" : " · " + st))}</text>` +
        `<text x="${x + 11}" y="${y + 32}" font-size="13" font-weight="600" fill="${C["--fg"]}">${esc(n.name.length > 24 ? n.name.slice(0, 23) + "…" : n.name)}</text></g>`);
      for (const o of n.owners || []) {
        const ob = layout.box(o.uid);
        if (ob) edges.push(path(ob.x + NODE_W / 2, ob.y + NODE_H, x + NODE_W / 2, y, o.blockOwnerDeletion ? C["--edge-block"] : C["--edge"], o.blockOwnerDeletion ? 1.8 : 1, !o.controller));
      }
    }
  }
  out.push(...edges, ...nodes, "</svg>");
  return out.join("\n");
}

/** @param {number} x0 @param {number} y0 @param {number} x1 @param {number} y1 @param {string} color @param {number} w @param {boolean} dash */
function path(x0, y0, x1, y1, color, w, dash) {
  const my = (y0 + y1) / 2;
  return `<path d="M${x0} ${y0}C${x0} ${my} ${x1} ${my} ${x1} ${y1}" fill="none" stroke="${color}" stroke-width="${w}"${dash ? ' stroke-dasharray="6 4"' : ""}/>`;
}

/** The canvas as it is now. @param {HTMLCanvasElement} canvas @returns {Promise<Blob>} */
export function viewPNG(canvas) {
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("the canvas could not be encoded"))), "image/png"));
}

/** The largest whole-graph PNG, in pixels (about 160 MB while it is drawn). */
const WHOLE_MAX_PIXELS = 40e6;
/** Below this scale the boxes' labels are not drawn (render.js draws them from 22 px high). */
const LEGIBLE_K = 0.55;

/**
 * The whole graph in view (after filters and focus) as a PNG, at full scale (a box 180 px
 * wide) when it fits in WHOLE_MAX_PIXELS, else as large as it does; legible: false when that
 * is too small for the boxes' labels.
 * @param {Renderer} r @returns {Promise<{blob: Blob, k: number, legible: boolean, width: number, height: number}>}
 */
export async function wholePNG(r) {
  const b = r.layout.bounds;
  const k = Math.min(1, Math.sqrt(WHOLE_MAX_PIXELS / Math.max(1, (b.w + 48) * (b.h + 48))));
  const canvas = r.drawWhole(k);
  return { blob: await viewPNG(canvas), k, legible: k >= LEGIBLE_K, width: canvas.width, height: canvas.height };
}

/**
 * The nodes in view in upstream's DOT layout (vertices with their attributes, edges
 * dependent -> owner), like /debug/controllers/garbagecollector/graph.
 * @param {NodeState[]} nodes
 */
export function graphDOT(nodes) {
  const q = (/** @type {string} */ s) => JSON.stringify(s);
  const lines = ["strict digraph full {"];
  const sorted = [...nodes].sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  const known = new Set(sorted.map((n) => n.uid));
  for (const n of sorted) {
    const [group, version] = n.apiVersion.includes("/") ? n.apiVersion.split("/") : ["", n.apiVersion];
    const label = `uid=${n.uid}\nnamespace=${n.namespace || ""}\n${n.kind}.${version}/${n.name}`;
    lines.push(`  ${q(n.uid)} [label=${q(label)} group=${q(group)} version=${q(version)} kind=${q(n.kind)} namespace=${q(n.namespace || "")} name=${q(n.name)} uid=${q(n.uid)} missing="false" beingDeleted=${q(String(!!n.beingDeleted))} deletingDependents=${q(String(!!n.deletingDependents))} virtual=${q(String(!!n.virtual))}];`);
  }
  for (const n of sorted) for (const o of n.owners || []) if (known.has(o.uid)) lines.push(`  ${q(n.uid)} -> ${q(o.uid)};`);
  lines.push("}");
  return lines.join("\n") + "\n";
}
