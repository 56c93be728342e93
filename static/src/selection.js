// @ts-check
// Objects selected together, to be deleted with one confirmation (POST /api/v1/deletions):
// shift-, ctrl- or cmd-click adds an object to the selection or takes it out (pointer.js),
// "Select all N matching" takes every object drawn that the search and the filters keep;
// the bar over the graph says how many are selected, with "Delete selected…" and "Clear",
// and Esc clears it (shortcuts.js). The canvas draws them with a dashed ring and a tick
// (render.js: multi). A delete names at most MAX_SET objects: past it, the selection stops
// there and says so.

import { h, $ } from "./dom.js";
import { MAX_SET } from "./api.js";

/** @typedef {import("./page.js").Page} Page */

/** How often, at most, the bar counts what matches again (the frame loop calls tick). */
const TICK_MS = 250;

export class Selection {
  /**
   * @param {Page} page
   * @param {{openSet: (uids: string[]) => void}} hooks
   */
  constructor(page, hooks) {
    this.page = page;
    this.hooks = hooks;
    /** @type {Set<string>} in the order they were selected */ this.uids = new Set();
    page.renderer.multi = this.uids;
    /** what the bar last counted: the matching objects, and what they were counted from */
    this.counted = { key: "", matching: /** @type {string[]|null} */ (null) };
    this.lastTick = -Infinity;
    this.count = h("b", { id: "selection-count", "aria-live": "polite" });
    this.note = h("span.sel-note", { id: "selection-note" });
    this.matchButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", id: "select-matching", onclick: () => this.selectMatching() }, "Select all matching"));
    this.deleteButton = /** @type {HTMLButtonElement} */ (h("button.danger", { type: "button", id: "delete-selected", onclick: () => this.openDialog() },
      page.readOnly ? "Preview delete…" : "Delete selected…"));
    this.clearButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", id: "selection-clear", title: "Clear the selection (Esc)", onclick: () => this.clear() }, "Clear"));
    this.bar = h("div.selection-bar", { id: "selection-bar", role: "region", "aria-label": "Objects selected together", hidden: true },
      this.count, this.note, this.matchButton, this.deleteButton, this.clearButton);
    $("graph-pane").append(this.bar);
  }

  get size() {
    return this.uids.size;
  }

  /** @param {string} uid */
  has(uid) {
    return this.uids.has(uid);
  }

  /**
   * Shift-, ctrl- or cmd-click on an object: in or out of the selection. The first such
   * click takes the object selected by a plain click along (as file managers do).
   * @param {string} uid
   */
  toggle(uid) {
    const n = this.page.store.nodes.get(uid);
    if (this.uids.has(uid)) this.uids.delete(uid);
    else if (!n || n.virtual) {
      this.page.toast(n ? `${n.kind} ${n.name} is only named as an owner: there is nothing to delete.` : "That object is gone.");
      return;
    } else {
      const sel = this.page.view.sel;
      if (!this.uids.size && sel && sel !== uid && this.page.store.nodes.get(sel) && !this.page.store.nodes.get(sel)?.virtual) this.uids.add(sel);
      if (this.uids.size >= MAX_SET) {
        this.page.toast(`At most ${MAX_SET.toLocaleString("en-US")} objects can be deleted at once: the selection is full.`);
        return;
      }
      this.uids.add(uid);
    }
    this.changed();
  }

  /**
   * Adds the members of a set of siblings drawn as one count (shift-click on it), or takes
   * them all out when every one is in already. @param {string[]} uids
   */
  toggleAll(uids) {
    const live = uids.filter((u) => this.page.store.nodes.has(u) && !this.page.store.nodes.get(u)?.virtual);
    if (live.length && live.every((u) => this.uids.has(u))) for (const u of live) this.uids.delete(u);
    else this.add(live);
    this.changed();
  }

  /** Adds uids, up to MAX_SET in all; says so when some did not fit. @param {string[]} uids */
  add(uids) {
    let left = 0;
    for (const u of uids) {
      if (this.uids.has(u)) continue;
      if (this.uids.size >= MAX_SET) left++;
      else this.uids.add(u);
    }
    if (left) {
      this.page.toast(`Selected ${MAX_SET.toLocaleString("en-US")}, not all ${(MAX_SET + left).toLocaleString("en-US")}: one delete takes at most ${MAX_SET.toLocaleString("en-US")} objects. Delete these, then select the rest.`);
    }
  }

  clear() {
    if (!this.uids.size) return false;
    this.uids.clear();
    this.changed();
    return true;
  }

  /** Takes out objects that are gone (deleted, or never there). */
  prune() {
    let any = false;
    for (const u of this.uids) {
      if (!this.page.live.nodes.has(u)) {
        this.uids.delete(u);
        any = true;
      }
    }
    if (any) this.changed();
  }

  changed() {
    this.page.renderer.dirty = true;
    this.counted.key = ""; // the bar says it again
    this.render();
  }

  /**
   * The objects drawn that the search and the filters keep, in the layout's order (null
   * when neither the search nor a filter nor the focus narrows the graph): only objects
   * the graph holds, not those only named as owners.
   * @returns {string[]|null}
   */
  matching() {
    const { view, layout, renderer, store } = this.page;
    const q = view.q.trim();
    if (!q && !view.ns.length && !view.kind.length && !view.focus) return null;
    /** @type {string[]} */
    const out = [];
    for (const it of layout.items.values()) {
      const n = store.nodes.get(it.uid);
      if (!n || n.virtual) continue;
      if (q && !renderer.matches.has(it.uid)) continue;
      out.push(it.uid);
    }
    return out;
  }

  /** What narrows the graph, in words ("search “api” · namespace demo-web"). */
  narrowedBy() {
    const { view } = this.page;
    const parts = [];
    if (view.q.trim()) parts.push(`search “${view.q.trim()}”`);
    if (view.ns.length) parts.push(`namespace ${view.ns.map((n) => n || "(cluster-scoped)").join(", ")}`);
    if (view.kind.length) parts.push(`kind ${view.kind.join(", ")}`);
    if (view.focus) parts.push("the focus");
    return parts.join(" · ");
  }

  /** The bar's button and the search list's last row: every object matching, up to MAX_SET. */
  selectMatching() {
    const m = this.matching();
    if (!m?.length) return;
    const before = this.uids.size;
    this.add(m);
    this.changed();
    const added = this.uids.size - before;
    if (added && this.uids.size < MAX_SET) this.page.toast(`Selected ${added.toLocaleString("en-US")} object${added === 1 ? "" : "s"} drawn that match (${this.narrowedBy()}).`);
  }

  /** The number of objects "Select all matching" would take now (0: nothing to match). */
  matchCount() {
    this.refreshCount();
    return this.counted.matching?.length || 0;
  }

  openDialog() {
    if (!this.uids.size || this.deleteButton.disabled) return;
    this.hooks.openSet([...this.uids]);
  }

  /** Counts again what matches, when what it depends on changed. */
  refreshCount() {
    const { view, layout, renderer, store } = this.page;
    // Time travel shows another store, and turns Delete off: said at once.
    const travel = this.page.travelUI?.travel.active ? "travel" : "live";
    const key = `${travel}/${store.applied}/${layout.items.size}/${layout.version}/${renderer.matches.size}/${view.q}/${view.ns}/${view.kind}/${view.focus}/${this.uids.size}`;
    if (key === this.counted.key) return false;
    this.counted.key = key;
    this.counted.matching = this.matching();
    return true;
  }

  /** From the frame loop: prunes what is gone and counts again, a few times a second. @param {number} now */
  tick(now) {
    if (now - this.lastTick < TICK_MS) return;
    this.lastTick = now;
    if (this.page.store === this.page.live && this.uids.size) this.prune();
    if (this.refreshCount()) this.render();
  }

  render() {
    const { page } = this;
    this.refreshCount();
    const m = this.counted.matching;
    const unselected = m ? m.filter((u) => !this.uids.has(u)).length : 0;
    const n = this.uids.size;
    this.bar.hidden = !n && !unselected;
    document.getElementById("graph-pane")?.classList.toggle("has-selection", !this.bar.hidden);
    this.count.hidden = !n;
    this.count.textContent = `${n.toLocaleString("en-US")} selected`;
    this.note.hidden = n > 0 || !m;
    this.note.textContent = m ? `${this.narrowedBy()}:` : "";
    this.matchButton.hidden = !unselected;
    const total = m?.length || 0;
    this.matchButton.textContent = total > MAX_SET && !n ? `Select the first ${MAX_SET.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} matching`
      : `Select all ${total.toLocaleString("en-US")} matching`;
    this.matchButton.title = `Every object drawn that the ${this.narrowedBy()} keeps${total > MAX_SET ? ` (a delete takes at most ${MAX_SET.toLocaleString("en-US")})` : ""}`;
    this.deleteButton.hidden = !n;
    this.clearButton.hidden = !n;
    const travelling = !!page.travelUI?.travel.active;
    this.deleteButton.disabled = travelling || page.replay;
    this.deleteButton.title = page.replay ? "A recording: nothing to delete" : travelling ? "Time travel: go back to live to delete"
      : page.readOnly ? "What deleting them all would do (gcscope runs read-only)" : "Delete them all with one confirmation (Delete, d)";
  }
}
