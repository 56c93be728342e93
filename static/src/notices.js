// @ts-check
// What the page says over the graph: why it is empty (no snapshot yet, the focused object
// deleted, nothing matching the filters), and short-lived toasts.

import { $, describe } from "./dom.js";

/** Why the graph is empty, when it is (hidden otherwise). @param {import("./page.js").Page} page */
export function updateEmpty(page) {
  const el = $("empty");
  if (page.layout.items.size || page.layout.groups.size) { // summary first: boxes with counts
    el.hidden = true;
    return;
  }
  el.hidden = false;
  const { view, store } = page;
  const focused = view.focus ? store.current(view.focus) : null;
  const waiting = document.body.classList.contains("cluster-waiting"); // clusters.js
  el.textContent = waiting ? `The engine of ${document.body.dataset.cluster} is not running yet: the banner above says why.`
    : page.perf.snapshotMs === null ? "Waiting for the engine's first snapshot…"
    : view.focus && (!focused || focused.ghost) ? `${focused ? describe(focused.node) : "The object you focused on"} was deleted, and with it what it owned. Esc shows everything.`
    : store.nodes.size ? "No object matches the filters. Clear them (Esc) to see everything." : "The graph is empty.";
}

/** @type {ReturnType<typeof setTimeout>|undefined} */
let toastTimer;

/** Says text over the graph for 6 s. @param {string} text */
export function toast(text) {
  const el = $("toast");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}
