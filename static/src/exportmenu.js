// @ts-check
// The Export menu: the view as SVG or PNG, the whole graph as PNG, the graph in view as DOT or JSON, and (with a
// recording) the history of the timeline's window.

import { $ } from "./dom.js";
import { viewSVG, viewPNG, wholePNG, graphDOT, download } from "./export.js";

/** @param {import("./page.js").Page} page @returns {HTMLElement} the menu */
export function wireExportMenu(page) {
  const menu = $("export-menu");
  $("export-button").addEventListener("click", () => (menu.hidden = !menu.hidden));
  menu.addEventListener("click", async (ev) => {
    const what = /** @type {HTMLElement} */ (ev.target).dataset.export;
    menu.hidden = true;
    const { store, view, renderer, layout } = page;
    const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
    const nodes = [...layout.items.values()].flatMap((it) => store.nodes.get(it.uid) || []);
    if (what === "svg") download(new Blob([viewSVG(renderer)], { type: "image/svg+xml" }), `gcscope-${stamp}.svg`);
    else if (what === "png") download(await viewPNG(page.canvas), `gcscope-${stamp}.png`);
    else if (what === "whole-png") {
      try {
        const png = await wholePNG(renderer);
        download(png.blob, `gcscope-${stamp}-whole.png`);
        if (!png.legible) {
          page.toast(`The whole graph is too large for a legible PNG: saved at ${Math.round(png.k * 100)}% (${png.width} × ${png.height} px), ` +
            "where boxes have no labels. Narrow it with the namespace and kind filters, or export it as SVG.");
        }
      } catch (e) {
        page.toast(`Whole graph as PNG: ${/** @type {any} */ (e).message || e}`);
      }
    }
    else if (what === "dot") download(new Blob([graphDOT(nodes)], { type: "text/vnd.graphviz" }), `gcscope-${stamp}.dot`);
    else if (what === "history") page.travelUI?.exportHistory();
    else if (what === "json") download(new Blob([JSON.stringify({ seq: store.seq, filter: { namespace: view.ns, kind: view.kind, focus: view.focus }, nodes }, null, 1)], { type: "application/json" }), `gcscope-${stamp}.json`);
  });
  return menu;
}
