// @ts-check
// The legend under the graph: what each colour, marker and edge means, and while the
// delete dialog previews a deletion, what the preview's colours mean.

import { h, $ } from "./dom.js";
import { STATES, MARKERS, EDGES, PREVIEW } from "./states.js";

/** Draws the legend again (the preview's part while renderer has one). @param {import("./render.js").Renderer} renderer */
export function renderLegend(renderer) {
  const sw = (/** @type {string} */ color, /** @type {string} */ cls = "swatch") => h(`span.${cls}`, { style: `--c: var(${color})` });
  const rows = [
    h("div.lh", null, "Objects"),
    ...STATES.map((s) => h("div.li", { title: s.help }, sw(s.color, s.id === "virtual" ? "swatch.dashed" : "swatch"), s.label)),
    ...MARKERS.map((m) => h("div.li", { title: m.help }, sw(m.color, m.id === "invalid" ? "marker.tri" : m.id === "orphaned" ? "marker.orph" : "marker"), m.label)),
    h("div.li", { title: "a collapsed set of siblings: zoom in or click it" }, h("span.swatch.block"), "N siblings (zoom in or click)"),
    h("div.lh", null, "Owner references"),
    ...EDGES.map((e) => h("div.li", { title: "help" in e ? e.help : undefined }, h(`span.edge${e.dash ? ".dash" : ""}${e.strong ? ".strong" : ""}${e.id === "cycle" ? ".cycle" : ""}`), e.label)),
  ];
  if (renderer.preview.size) {
    rows.push(h("div.lh", null, "Delete preview"),
      ...Object.entries(PREVIEW).filter(([k]) => k !== "target").map(([, p]) => h("div.li", null, sw(p.color), p.label)));
  }
  $("legend-body").replaceChildren(...rows);
}
