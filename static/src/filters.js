// @ts-check
// The namespace and kind filters in the header: their options are what the state shown
// holds (and what the view filters on); a choice changes the view (main.js lays it out
// again and fits it).

import { h, $ } from "./dom.js";

/** @typedef {import("./page.js").Page} Page */

export class Filters {
  /**
   * @param {Page} page
   * @param {(which: "ns"|"kind") => void} chose the user chose an option: view.ns or view.kind changed
   */
  constructor(page, chose) {
    this.page = page;
    this.nsSelect = /** @type {HTMLSelectElement} */ ($("filter-ns"));
    this.kindSelect = /** @type {HTMLSelectElement} */ ($("filter-kind"));
    /** the options last filled in, to fill them again only when they change */ this.key = "";
    const { view } = page;
    /** @param {HTMLSelectElement} select @param {"ns"|"kind"} which */
    const onChange = (select, which) => select.addEventListener("change", () => {
      view[which] = select.value === "*" ? [] : [select.value];
      chose(which);
    });
    onChange(this.nsSelect, "ns");
    onChange(this.kindSelect, "kind");
  }

  /** The controls say the view's filters. */
  sync() {
    const { view } = this.page;
    this.nsSelect.value = view.ns.length === 1 ? view.ns[0] : "*";
    this.kindSelect.value = view.kind.length === 1 ? view.kind[0] : "*";
  }

  /** The options: the namespaces and kinds of the state shown, and those the view filters on. */
  fill() {
    const { page } = this;
    const { view } = page;
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
    if (key === this.key) return;
    this.key = key;
    this.nsSelect.replaceChildren(h("option", { value: "*" }, "all"), ...nsList.map((ns) => h("option", { value: ns }, ns || "(cluster-scoped)")));
    this.kindSelect.replaceChildren(h("option", { value: "*" }, "all"), ...kindList.map((k) => h("option", { value: k }, k)));
    this.sync();
  }

  /** The options rebuilt, whatever they were (another store is shown). */
  refresh() {
    this.key = "";
    this.fill();
  }
}
