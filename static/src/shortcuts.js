// @ts-check
// The page's keyboard shortcuts, as one table: the key handlers and the help dialog (?)
// are both built from it, so the help lists exactly the keys the page binds.

import { h } from "./dom.js";

/**
 * One shortcut: a row of the help, and what its keys do.
 * @typedef {object} Shortcut
 * @property {string} label the keys as the help writes them ("Delete, d")
 * @property {string[]} keys the KeyboardEvent.key values it takes
 * @property {string} help what it does, in the help's words
 * @property {(ev: KeyboardEvent) => boolean|void} run does it; false: the key was not taken
 *   here (the next row with the key, or the browser, gets it)
 * @property {"page"|"search"} [where] where it works: on the page (the default; not while
 *   typing in a field or in a dialog), or in the search box
 * @property {boolean} [history] only with a recording (--history, or a replay)
 * @property {boolean} [clusters] only where gcscope serves several clusters (the picker)
 */

/**
 * What the shortcuts act on: the page's own steps, handed over by main.js.
 * @typedef {object} ShortcutPage
 * @property {boolean} replay a recording with no live state: no deletes, no "back to live"
 * @property {() => string|null} selected the selected object
 * @property {(uid: string|null) => void} focus
 * @property {(uid: string) => void} del opens the delete dialog
 * @property {() => boolean} delSelected opens the delete dialog for the objects selected
 *   together; false when there are none
 * @property {() => boolean} escape closes what is open, or clears the objects selected
 *   together, the focus, the filters, then the selection, one a press; false when there is
 *   nothing but time travel to leave
 * @property {{focus: () => void, chooseFirst: () => boolean, clear: () => void}} search
 * @property {() => void} fit
 * @property {(k: number) => void} zoom
 * @property {(uid: string) => void} toggleExpanded
 * @property {() => void} toggleTheme
 * @property {() => void} toggleStuck
 * @property {() => void} help opens this help
 * @property {() => void} pickCluster opens the cluster picker
 * @property {() => import("./travelui.js").TravelUI|null} travelUI
 */

/** @param {ShortcutPage} p @returns {Shortcut[]} the rows in the help's order */
export function shortcutTable(p) {
  const travel = () => p.travelUI()?.travel;
  return [
    { label: "/", keys: ["/"], help: "search", run(ev) { ev.preventDefault(); p.search.focus(); } },
    { label: "Enter", keys: ["Enter"], where: "search", help: "go to the first result", run: () => p.search.chooseFirst() },
    { label: "Esc", keys: ["Escape"], where: "search", help: "in the search box: empty it and leave", run: () => p.search.clear() },
    { label: "f", keys: ["f"], help: "focus on the selected object's owners and dependents", run() { const s = p.selected(); if (s) p.focus(s); } },
    { label: "Delete, d", keys: ["Delete", "d"], help: "delete the selected object (or the objects selected together)…",
      // In time travel or a replay (read-only): a preview at most, and not from a key.
      run() {
        if (travel()?.active || p.replay || p.delSelected()) return;
        const s = p.selected();
        if (s) p.del(s);
      } },
    { label: "Esc", keys: ["Escape"], help: "close, clear the objects selected together, clear focus, clear filters, clear selection", run: () => p.escape() },
    { label: "0", keys: ["0"], help: "fit the view", run: () => p.fit() },
    { label: "+ / −", keys: ["+", "=", "-"], help: "zoom", run: (ev) => p.zoom(ev.key === "-" ? 1 / 1.4 : 1.4) },
    { label: "e", keys: ["e"], help: "expand or collapse the selected object's dependents", run() { const s = p.selected(); if (s) p.toggleExpanded(s); } },
    { label: "t", keys: ["t"], help: "light or dark", run: () => p.toggleTheme() },
    { label: "c", keys: ["c"], clusters: true, help: "switch cluster", run: () => p.pickCluster() },
    { label: "s", keys: ["s"], help: "the stuck view: deletions that take too long, and why", run: () => p.toggleStuck() },
    { label: "h", keys: ["h"], history: true, help: "the history view: what the collector did", run: () => p.travelUI()?.toggleHistoryTab() },
    { label: "Space", keys: [" "], history: true, help: "time travel: play or pause",
      run(ev) {
        // A focused button takes its own Space (a click): not twice.
        if (/** @type {HTMLElement} */ (ev.target).matches("button, a")) return false;
        ev.preventDefault();
        p.travelUI()?.togglePlay();
      } },
    { label: "← / →", keys: ["ArrowLeft", "ArrowRight"], history: true, help: "time travel: step back or forward one change",
      run(ev) {
        const tr = travel();
        if (!tr?.active) return false;
        ev.preventDefault();
        if (ev.key === "ArrowRight") tr.step();
        else tr.stepBack();
      } },
    { label: "[ / ]", keys: ["[", "]"], history: true, help: "time travel: slower or faster", run: (ev) => p.travelUI()?.speedStep(ev.key === "]" ? 1 : -1) },
    { label: "Esc", keys: ["Escape"], history: true, help: "time travel: back to live",
      run() {
        if (!travel()?.active || p.replay) return false;
        p.travelUI()?.backToLive();
      } },
    { label: "?", keys: ["?"], help: "this help", run: () => p.help() },
  ];
}

/** The shortcuts the page binds: the table's rows that apply to it. */
export class Shortcuts {
  /** @param {Shortcut[]} table @param {boolean} hasHistory @param {boolean} [hasClusters] */
  constructor(table, hasHistory, hasClusters = false) {
    /** @type {Shortcut[]} */ this.rows = table.filter((s) => (hasHistory || !s.history) && (hasClusters || !s.clusters));
  }

  /**
   * Runs the first row that takes ev's key where it was pressed; whether one did.
   * @param {KeyboardEvent} ev @param {"page"|"search"} where
   */
  handle(ev, where) {
    for (const s of this.rows) {
      if ((s.where || "page") === where && s.keys.includes(ev.key) && s.run(ev) !== false) return true;
    }
    return false;
  }

  /** The page's key handler: shortcuts work unless the user types in a field, is in a dialog, or holds a modifier. */
  listen() {
    document.addEventListener("keydown", (ev) => {
      const t = /** @type {HTMLElement} */ (ev.target);
      if (t.matches("input, select, textarea") || document.querySelector("dialog[open]") || ev.metaKey || ev.ctrlKey || ev.altKey) return;
      this.handle(ev, "page");
    });
  }

  /** Fills the help's list of keys. @param {HTMLElement} dl */
  renderHelp(dl) {
    dl.replaceChildren(...this.rows.flatMap((s) => [h("dt", null, s.label), h("dd", null, s.help)]));
  }

  /** The rows as the help lists them, for tests: [[label, help]]. */
  listed() {
    return this.rows.map((s) => [s.label, s.help]);
  }
}
