// @ts-check
// The side panel's tabs: the object panel, the stuck deletions, and (with --history) the
// history view. One panel shows at a time; each tab's button says whether it is the one
// (aria-selected), and views are told when they show, so that one may start its work then
// (the stuck view asks the server only while it is shown).

import { $ } from "./dom.js";

export class Tabs {
  constructor() {
    /** @type {Map<string, {button: HTMLElement, panel: HTMLElement}>} */
    this.tabs = new Map();
    /** @type {((name: string) => void)[]} */
    this.listeners = [];
    for (const b of document.querySelectorAll('.tabs [role="tab"]')) {
      const button = /** @type {HTMLElement} */ (b);
      const panel = $(button.getAttribute("aria-controls") || "");
      if (!panel) continue;
      const name = button.id.replace(/^tab-/, "");
      this.tabs.set(name, { button, panel });
      button.addEventListener("click", () => this.show(name));
    }
    this.current = [...this.tabs].find(([, t]) => t.button.getAttribute("aria-selected") === "true")?.[0] || "object";
  }

  /** The tab shown: "object", "stuck" or "history". */
  shown() {
    return this.current;
  }

  /** @param {string} name */
  has(name) {
    return this.tabs.has(name);
  }

  /** Shows the tab name (the others' panels hidden) and tells the listeners. @param {string} name */
  show(name) {
    if (!this.tabs.has(name)) return;
    this.current = name;
    for (const [n, t] of this.tabs) {
      t.panel.hidden = n !== name;
      t.button.setAttribute("aria-selected", String(n === name));
    }
    for (const f of this.listeners) f(name);
  }

  /** Shows the tab name, or the object panel when it is already shown (its key pressed again). @param {string} name */
  toggle(name) {
    this.show(this.current === name ? "object" : name);
  }

  /** @param {(name: string) => void} f called with the tab shown, each time one is */
  onShow(f) {
    this.listeners.push(f);
  }
}
