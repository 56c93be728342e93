// @ts-check
// The scenario player (docs/ui.md): a Play menu in the header, there only when the server
// plays scenarios (gcscope's own embedded cluster). A run creates a garbage-collection
// case in fresh namespaces and acts on it; this module starts runs (turning slow motion on
// first if asked), follows their steps in a card over the graph by polling the run,
// selects the scenario's main object once the graph has it, and offers to release a held
// finalizer and to clean up.

import { h, $ } from "./dom.js";
import { get, post } from "./api.js";

/** @typedef {{id: string, title: string, description: string, steps: string[]}} Scenario */
/** @typedef {{title: string, state: string, detail?: string}} Step */
/**
 * @typedef {{id: string, scenario: string, title: string, namespaces: string[], state: string,
 *   step: number, steps: Step[], focus?: string, hold?: boolean, error?: string}} Run
 */

const POLL_MS = 400;
/** How long after a run ends the card keeps trying to select its main object. */
const SELECT_GRACE_MS = 5000;
/** this.selected of a run followed without selecting, its main object not known yet. */
const SELECT_NONE = "\u0000none";

/** @param {Run} r */
const active = (r) => r.state === "running" || r.state === "waiting";

export class ScenarioPlayer {
  /**
   * @param {{select: (uid: string) => void, has: (uid: string) => boolean, toast: (text: string) => void}} hooks
   */
  constructor(hooks) {
    this.hooks = hooks;
    this.button = /** @type {HTMLButtonElement|null} */ (document.getElementById("play-button"));
    this.menu = /** @type {HTMLElement} */ (document.getElementById("play-menu"));
    /** @type {Scenario[]} */ this.scenarios = [];
    /** @type {Run[]} */ this.runs = [];
    /** @type {Run|null} the run the card follows */ this.run = null;
    this.shown = "";
    this.selected = "";
    this.endedAt = 0;
    this.stepsOpen = false;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
    this.card = h("div.scenario-card", { id: "scenario-card", role: "status", "aria-live": "polite", hidden: true });
    if (!this.button || !this.menu) return; // no player here: not gcscope's embedded cluster
    $("graph-pane").append(this.card);
    this.button.addEventListener("click", () => (this.menu.hidden ? this.open() : this.close()));
    document.addEventListener("click", (ev) => {
      if (!this.menu.hidden && !this.menu.parentElement?.contains(/** @type {Node} */ (ev.target))) this.close();
    });
    // Esc closes the menu, and only the menu (the page's own Esc would clear the selection).
    window.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && !this.menu.hidden) {
        ev.stopImmediatePropagation();
        this.close();
      }
    }, true);
    // The URL wins: a page opened on an object (?sel=) or a tab (?tab=stuck) shows that,
    // and a run it picks up does not select its own object instead (Show still does).
    const url = new URLSearchParams(location.search);
    const urlChose = url.has("sel") || url.has("tab");
    this.refresh().then(() => {
      const last = this.runs.filter(active).pop();
      if (last) this.follow(last, !urlChose);
    });
  }

  /** Reads the scenarios and the runs the server remembers, and rebuilds the menu. */
  async refresh() {
    try {
      const res = await get("/api/v1/scenarios");
      this.scenarios = res.scenarios || [];
      this.runs = res.runs || [];
    } catch (e) {
      this.scenarios = [];
      this.hooks.toast(`Scenarios: ${/** @type {any} */ (e).message || e}`);
    }
    this.buildMenu();
  }

  async open() {
    this.buildMenu(); // the slow-motion box as it is now, before the server answers
    this.menu.hidden = false;
    this.button?.setAttribute("aria-expanded", "true");
    await this.refresh();
  }

  close() {
    this.menu.hidden = true;
    this.button?.setAttribute("aria-expanded", "false");
  }

  buildMenu() {
    const delay = document.body.dataset.actionDelay || "";
    const header = /** @type {HTMLInputElement|null} */ (document.getElementById("slow-motion"));
    const on = header ? header.checked : document.body.dataset.slowMotion === "true";
    const slow = delay
      ? h("label.play-slow", { title: "The collector waits before each of its writes, so every state of the cascade can be seen" },
        h("input", { type: "checkbox", id: "play-slow", checked: on, onchange: (/** @type {Event} */ ev) => this.switchSlowMotion(/** @type {HTMLInputElement} */ (ev.target)) }), `Slow motion: the collector waits ${delay} before each write`)
      : h("label.play-slow.muted", { title: "Start gcscope with --gc-action-delay=2s to offer slow motion" },
        h("input", { type: "checkbox", id: "play-slow", disabled: true }), "Slow motion: start gcscope with --gc-action-delay=2s");
    const items = this.scenarios.map((s) => h("button.play-item", {
      type: "button", "data-scenario": s.id, title: s.steps.map((t, i) => `${i + 1}. ${t}`).join("\n"),
      onclick: () => this.play(s.id),
    }, h("b", null, "▶ " + s.title), h("span", null, s.description)));
    const runs = this.runs.filter(active).map((r) => h("button.play-run", {
      type: "button", "data-run": r.id, onclick: () => { this.close(); this.follow(r); },
    }, `Show ${r.id} (${r.state})`));
    this.menu.replaceChildren(slow, ...items,
      h("div.play-foot", null, ...runs,
        h("button", { type: "button", id: "play-cleanup", title: "Delete every play-* namespace (holds released first) and the CRDs the runs made", onclick: () => this.cleanupAll() },
          "Clean up played namespaces")));
  }

  /**
   * Turns slow motion to what the menu's box says, if it says otherwise; returns the server's answer.
   * @param {HTMLInputElement|null} [box] the box clicked (the menu may have been rebuilt since)
   */
  async syncSlowMotion(box = /** @type {HTMLInputElement|null} */ (this.menu.querySelector("#play-slow"))) {
    if (!box || box.disabled) return null;
    const header = /** @type {HTMLInputElement|null} */ (document.getElementById("slow-motion"));
    const now = header ? header.checked : document.body.dataset.slowMotion === "true";
    if (box.checked === now) return null;
    const res = await post("/api/v1/slow-motion", { enabled: box.checked });
    if (header) header.checked = res.enabled;
    const shown = /** @type {HTMLInputElement|null} */ (this.menu.querySelector("#play-slow"));
    box.checked = res.enabled;
    if (shown) shown.checked = res.enabled;
    document.body.dataset.slowMotion = String(res.enabled);
    return res;
  }

  /** The menu's box switches slow motion as soon as it is clicked, as the header's switch does. @param {HTMLInputElement} box */
  async switchSlowMotion(box) {
    try {
      const res = await this.syncSlowMotion(box);
      if (res) this.hooks.toast(res.enabled ? `Slow motion on: the engine waits ${res.actionDelay} before each write.` : "Slow motion off: the engine writes at full speed.");
    } catch (e) {
      box.checked = !box.checked;
      this.hooks.toast(`Slow motion: ${/** @type {any} */ (e).message || e}`);
    }
  }

  /** @param {string} id */
  async play(id) {
    try {
      await this.syncSlowMotion();
      this.close();
      const run = /** @type {Run} */ (await post(`/api/v1/scenarios/${encodeURIComponent(id)}/play`, {}));
      this.follow(run);
    } catch (e) {
      this.close();
      this.hooks.toast(`Play: ${/** @type {any} */ (e).message || e}`);
    }
  }

  /**
   * Shows run in the card and follows it until it ends; select: its main object is selected
   * as soon as the graph has it (a run picked up by a page whose URL names a view: not).
   * @param {Run} run @param {boolean} [select]
   */
  follow(run, select = true) {
    clearTimeout(this.timer);
    if (this.run?.id !== run.id) {
      // Not selecting: as if done already (this.selected names the object selected).
      this.selected = select ? "" : run.focus || SELECT_NONE;
      this.endedAt = 0;
    }
    this.run = run;
    this.render();
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    const r = this.run;
    if (!r) return;
    const pending = active(r) || (r.focus && this.selected !== r.focus && Date.now() - this.endedAt < SELECT_GRACE_MS);
    if (pending) this.timer = setTimeout(() => this.poll(), POLL_MS);
  }

  async poll() {
    const r = this.run;
    if (!r) return;
    try {
      const next = /** @type {Run} */ (await get(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}`));
      if (this.run?.id !== r.id) return;
      if (active(r) && !active(next)) this.endedAt = Date.now();
      this.run = next;
      this.render();
    } catch (e) {
      if (/** @type {any} */ (e).status === 404) {
        this.hide(); // cleaned up
        return;
      }
    }
    this.schedule();
  }

  hide() {
    clearTimeout(this.timer);
    this.run = null;
    this.shown = "";
    this.card.hidden = true;
  }

  /** Redraws the card when the run changed, and selects its main object once drawn. */
  render() {
    const r = this.run;
    if (!r) return;
    if (r.focus && this.selected === SELECT_NONE) this.selected = r.focus; // the URL's view stays
    if (r.focus && this.selected !== r.focus && this.hooks.has(r.focus)) {
      this.selected = r.focus;
      this.hooks.select(r.focus);
    }
    this.card.dataset.focus = r.focus && this.selected === r.focus ? (this.hooks.has(r.focus) ? "decided" : "pending") : "";
    const key = JSON.stringify(r);
    if (key === this.shown) return;
    this.shown = key;
    const n = r.steps.length;
    const cur = r.steps[r.step] || r.steps[0];
    let now;
    if (r.state === "done") now = `Done. ${r.steps[n - 1]?.detail || ""}`;
    else if (r.state === "failed") now = `Failed at step ${r.step + 1}/${n}: ${r.error || cur.detail || ""}`;
    else if (r.state === "stopped") now = `Stopped at step ${r.step + 1}/${n}: ${r.error || ""}`;
    else now = `step ${r.step + 1}/${n}: ${cur.state === "running" ? cur.title : cur.detail || cur.title}`;
    this.card.dataset.state = r.state;
    this.card.dataset.run = r.id;
    const done = r.steps.filter((s) => s.state === "done").length;
    // What just happened and what can be done first; every step, with its details, on demand.
    this.card.replaceChildren(
      h("div.sc-head", null, h("b", null, r.title),
        h("button.sc-close", { type: "button", title: "Close (the run goes on)", "aria-label": "Close", onclick: () => this.hide() }, "×")),
      h("p.sc-now", { id: "scenario-now" }, now),
      h("div.sc-actions", null,
        r.hold ? h("button.primary", { type: "button", id: "scenario-release", onclick: () => this.release() }, "Release the hold") : null,
        r.focus ? h("button", { type: "button", title: "Select the scenario's main object", onclick: () => this.show() }, "Show") : null,
        h("button", { type: "button", id: "scenario-cleanup", title: `Delete ${r.namespaces.join(" and ")}`, onclick: () => this.cleanup() }, "Clean up")),
      h("details.sc-steps", { open: this.stepsOpen, ontoggle: (/** @type {Event} */ ev) => (this.stepsOpen = /** @type {HTMLDetailsElement} */ (ev.target).open) },
        h("summary", null, `Steps: ${done} of ${n} done · ${r.namespaces.join(", ")}`),
        h("ol", null, ...r.steps.map((s) => h("li", { "data-state": s.state },
          h("span", null, s.title), s.detail && s.state !== "running" ? h("div.sc-detail", null, s.detail) : null)))),
    );
    this.card.hidden = false;
  }

  /** Selects the run's main object again, if the graph still has it. */
  show() {
    const f = this.run?.focus;
    if (f && this.hooks.has(f)) this.hooks.select(f);
    else this.hooks.toast("The scenario's main object is no longer in the graph: the collector has deleted it.");
  }

  async release() {
    const r = this.run;
    if (!r) return;
    try {
      const next = await post(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}/release`, {});
      this.hooks.toast(r.scenario?.startsWith("namespace-")
        ? "Released: the namespace controller finishes deleting the namespace (its next retry can take up to a minute)."
        : "Hold released: the collector finishes the cascade.");
      if (this.run?.id === r.id) this.follow(next);
    } catch (e) {
      this.hooks.toast(`Release: ${/** @type {any} */ (e).message || e}`);
    }
  }

  async cleanup() {
    const r = this.run;
    if (!r) return;
    try {
      const out = await post(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}/cleanup`, {});
      this.hide();
      this.hooks.toast(`Deleting ${(out.namespaces || []).join(", ") || "nothing"}.`);
    } catch (e) {
      this.hooks.toast(`Clean up: ${/** @type {any} */ (e).message || e}`);
    }
  }

  async cleanupAll() {
    this.close();
    try {
      const out = await post("/api/v1/scenarios/cleanup", {});
      this.hide();
      const ns = out.namespaces || [], crds = out.crds || [];
      this.hooks.toast(ns.length || crds.length
        ? `Deleting ${ns.length} played namespace${ns.length === 1 ? "" : "s"}${crds.length ? ` and ${crds.length} CRD${crds.length === 1 ? "" : "s"}` : ""}.`
        : "Nothing to clean up.");
    } catch (e) {
      this.hooks.toast(`Clean up: ${/** @type {any} */ (e).message || e}`);
    }
  }
}
