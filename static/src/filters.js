// @ts-check
// The namespace and kind filters in the header: their options are what the state shown
// holds (and what the view filters on); a choice lays out again and fits the view.

import { h, $ } from "./dom.js";

/** @typedef {import("./page.js").Page} Page */

/** Puts fillFilterOptions and refreshFilters into page; returns syncFilterControls. @param {Page} page */
export function wireFilters(page) {
  const { view, renderer, layout } = page;
  const nsSelect = /** @type {HTMLSelectElement} */ ($("filter-ns"));
  const kindSelect = /** @type {HTMLSelectElement} */ ($("filter-kind"));
  let filterKey = "";

  function syncFilterControls() {
    nsSelect.value = view.ns.length === 1 ? view.ns[0] : "*";
    kindSelect.value = view.kind.length === 1 ? view.kind[0] : "*";
  }

  page.fillFilterOptions = () => {
    const nss = new Set(view.ns), kinds = new Set(view.kind);
    for (const n of page.store.nodes.values()) {
      nss.add(n.namespace || "");
      kinds.add(n.kind);
    }
    // Summary first: the options are the cluster's, counted, not only what the page holds.
    if (page.store === page.live && page.detail.mode === "summary") {
      for (const ns of page.detail.counts.keys()) nss.add(ns);
      for (const k of page.detail.kinds) kinds.add(k);
    }
    const nsList = [...nss].sort(), kindList = [...kinds].sort();
    const key = nsList.join(",") + "|" + kindList.join(",");
    if (key === filterKey) return;
    filterKey = key;
    nsSelect.replaceChildren(h("option", { value: "*" }, "all"), ...nsList.map((ns) => h("option", { value: ns }, ns || "(cluster-scoped)")));
    kindSelect.replaceChildren(h("option", { value: "*" }, "all"), ...kindList.map((k) => h("option", { value: k }, k)));
    syncFilterControls();
  };
  page.refreshFilters = () => {
    filterKey = "";
    page.fillFilterOptions();
  };

  /** @param {HTMLSelectElement} select @param {"ns"|"kind"} which */
  const onChange = (select, which) => select.addEventListener("change", () => {
    view[which] = select.value === "*" ? [] : [select.value];
    page.viewChanged();
    page.relayout(performance.now());
    renderer.fit(layout.bounds);
  });
  onChange(nsSelect, "ns");
  onChange(kindSelect, "kind");
  return syncFilterControls;
}
