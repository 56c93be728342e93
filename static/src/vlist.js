// @ts-check
// A virtualized list: fixed-height rows in a scrolling box, of which only those in view
// (and a few around them) are in the DOM, so a list of 2,000 costs what a list of 30
// does. It keeps its scroll position across the re-renders of the panel it sits in.

import { h } from "./dom.js";

/**
 * @template T
 */
export class VirtualList {
  /**
   * key, when given, names what a row shows: a row whose key is unchanged keeps its node
   * across set() (a list reloaded every few seconds does not swap the node under a click).
   * @param {{render: (item: T, index: number) => Node, key?: (item: T) => string, rowHeight?: number, maxRows?: number, id?: string, className?: string}} o
   */
  constructor(o) {
    this.render = o.render;
    this.key = o.key;
    /** the rows drawn, by key @type {Map<string, HTMLElement>} */ this.keyed = new Map();
    this.rowHeight = o.rowHeight || 22;
    this.maxRows = o.maxRows || 12;
    /** @type {T[]} */ this.items = [];
    this.top = 0;
    /** @type {[number, number]} */ this.drawn = [-1, -1];
    this.space = h("div.vlist-space");
    this.window = h("div.vlist-window");
    this.space.append(this.window);
    this.el = h(`div.vlist${o.className ? "." + o.className : ""}`, { id: o.id, role: "list" }, this.space);
    this.pending = false;
    this.el.addEventListener("scroll", () => {
      this.top = this.el.scrollTop;
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.draw();
      });
    }, { passive: true });
  }

  /** Replaces the items and redraws the rows in view. @param {T[]} items */
  set(items) {
    this.items = items;
    // Heights through the CSSOM: the page's Content-Security-Policy forbids style attributes.
    this.el.style.height = `${Math.min(items.length, this.maxRows) * this.rowHeight}px`;
    this.space.style.height = `${items.length * this.rowHeight}px`;
    this.drawn = [-1, -1];
    this.draw();
  }

  /** After the list was put (back) into the page: its scroll position, as the user left it. */
  restore() {
    if (this.top && this.el.scrollTop !== this.top) this.el.scrollTop = this.top;
    this.top = this.el.scrollTop;
    this.draw();
  }

  draw() {
    const n = this.items.length;
    const first = Math.max(0, Math.floor(this.top / this.rowHeight) - 4);
    const last = Math.min(n, first + this.maxRows + 8);
    if (this.drawn[0] === first && this.drawn[1] === last) return;
    this.drawn = [first, last];
    /** @type {HTMLElement[]} */
    const rows = [];
    const keyed = new Map();
    for (let i = first; i < last; i++) {
      const k = this.key?.(this.items[i]);
      let row = k === undefined ? undefined : this.keyed.get(k);
      if (!row) {
        row = h("div.vlist-row", { role: "listitem" }, this.render(this.items[i], i));
        row.style.height = row.style.lineHeight = `${this.rowHeight}px`;
      }
      if (k !== undefined) keyed.set(k, row);
      rows.push(row);
    }
    this.keyed = keyed;
    this.window.style.transform = `translateY(${first * this.rowHeight}px)`;
    const now = this.window.children;
    if (rows.length !== now.length || rows.some((r, i) => r !== now[i])) this.window.replaceChildren(...rows);
  }
}
