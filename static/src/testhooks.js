// @ts-check
// Hooks for tests and benchmarks, as window.gcscope: the page's state, what the canvas
// drew, and traces of objects' states (what the stream said, what the canvas drew, where
// the layout put them), all on performance.now()'s clock.

import { stateOf } from "./states.js";
import { cycleKey } from "./cycles.js";

/** @typedef {import("./page.js").Page} Page */
/** @typedef {{uids: string[], engineLog: any[], drawnLog: any[], placedLog: any[], frames: number[], engine: () => void}} Trace */

/**
 * A trace of some objects' states, for tests: what the stream said (each change, when its
 * frame arrived), what the canvas drew (each change, in the frame that drew it), and where
 * the layout put each object (each change, drawn on screen or not), and when each
 * animation frame ran, all on performance.now()'s clock, so a test can check that every
 * state was drawn in time (in milliseconds, and in frames of a browser that runs late)
 * and that nothing moved.
 * @param {Page} page @param {string[]} uids @param {() => Trace|null} current the trace running (a newer one stops this one)
 * @returns {Trace}
 */
function trace(page, uids, current) {
  const { renderer, layout } = page;
  renderer.recordDrawn();
  /** @type {Record<string, string>} */
  const lastEngine = {};
  /** @type {Record<string, number>} when each uid's state last changed in the log */
  const lastT = {};
  /** @type {Record<string, {state: string, x: number, y: number}>} */
  const lastDrawn = {};
  /** @type {Record<string, {x: number, y: number}>} */
  const lastPlaced = {};
  const t = {
    uids, engineLog: /** @type {any[]} */ ([]), drawnLog: /** @type {any[]} */ ([]), placedLog: /** @type {any[]} */ ([]),
    frames: /** @type {number[]} */ ([]),
    engine() {
      const now = performance.now();
      for (const u of uids) {
        const n = page.store.nodes.get(u);
        const st = n ? stateOf(page.store, n) : "removed";
        // Its deletion began in the frame it was removed in: the stream said both.
        const g = page.store.ghosts.get(u);
        if (!n && g?.deletingSince !== undefined && lastEngine[u] === "normal") {
          const was = stateOf(page.store, g.node);
          t.engineLog.push({ uid: u, state: was, t: g.deletingSince });
          lastEngine[u] = was;
        }
        // Removed in the frame it changed in (its last dependent went with it): the stream
        // said the state it is shown in (Store.shownDeleting) just before the removal.
        const shown = n ? undefined : page.store.shownDeleting.get(u)?.state;
        if (shown !== undefined && g && lastEngine[u] !== shown && lastEngine[u] !== "removed") {
          t.engineLog.push({ uid: u, state: shown, t: Math.max(g.at, lastT[u] ?? -Infinity) });
          lastEngine[u] = shown;
        }
        // A deletion begins when the store applied it (the renderer's clock for it), not later in the frame.
        const began = n ? page.store.deleting.get(u) : undefined;
        if (lastEngine[u] !== st) {
          t.engineLog.push({ uid: u, state: st, t: began !== undefined && began > (lastT[u] ?? -Infinity) ? began : now });
          lastT[u] = now;
        }
        lastEngine[u] = st;
      }
    },
  };
  const drawn = () => {
    if (current() !== t) return;
    t.frames.push(performance.now());
    for (const u of uids) {
      const d = renderer.drawnState?.get(u);
      const l = lastDrawn[u];
      if (d && (!l || l.state !== d.state || l.x !== d.x || l.y !== d.y)) {
        t.drawnLog.push({ uid: u, state: d.state, x: d.x, y: d.y, t: d.at });
        lastDrawn[u] = d;
      }
      const b = layout.box(u), p = lastPlaced[u];
      if (b && (!p || p.x !== b.x || p.y !== b.y)) {
        t.placedLog.push({ uid: u, state: "", x: b.x, y: b.y, t: performance.now() });
        lastPlaced[u] = b;
      }
    }
    requestAnimationFrame(drawn);
  };
  requestAnimationFrame(drawn);
  return t;
}

/**
 * Puts the hooks on window.gcscope and returns them (the frame loop and time travel feed
 * ready, playFrames and seeks), with engineChanged: the store shown changed (main.js calls
 * it on the stream's deltas and time travel's seeks), for the trace running.
 * @param {Page} page
 * @param {{stuckView: import("./stuck.js").StuckView, tabs: import("./tabs.js").Tabs, shortcuts: import("./shortcuts.js").Shortcuts,
 *   selection: import("./selection.js").Selection, select: (uid: string) => void, stream: import("./stream.js").Stream}} parts
 */
export function testHooks(page, parts) {
  const { renderer, layout, live, view, perf } = page;
  const { stuckView, tabs } = parts;
  /** @type {Trace|null} */
  let tracer = null;
  const current = () => tracer;
  const api = {
    ready: false,
    perf,
    /** The uids drawn now (after filters and focus; removed ones fading out excluded). */
    drawnUIDs: () => [...layout.items.values()].filter((it) => page.store.nodes.has(it.uid)).map((it) => it.uid),
    /** Starts recording what the canvas draws (see Renderer.drawnState). */
    recordDrawn: () => renderer.recordDrawn(),
    /** What the canvas last drew for uid since recordDrawn: {state, x, y, at}. @param {string} uid */
    drawn: (uid) => renderer.drawnState?.get(uid) || null,
    /** How the canvas last drew dependent's reference to owner since recordDrawn: {cycle, back, x, y} (x, y: the middle of its curve, in world units). @param {string} dependent @param {string} owner */
    edge: (dependent, owner) => renderer.drawnEdges?.get(cycleKey(dependent, owner)) ?? null,
    /** The caption the canvas last drew under uid's box since recordDrawn (a running cascade's "waiting on … · 2.5 s so far"). @param {string} uid */
    caption: (uid) => renderer.drawnCaptions?.get(uid) ?? null,
    /** What the canvas last drew as namespace ns's box title, and under it, since recordDrawn: {text, caption, at}. @param {string} ns */
    nsDrawn: (ns) => renderer.drawnTitles?.get(ns) ?? null,
    /** Every change of a namespace box's title as drawn since recordDrawn, frame by frame: [{ns, text, caption, inLayout, t}] (text "": no longer drawn). @param {string} ns */
    titleLog: (ns) => renderer.titleLog.filter((e) => e.ns === ns),
    /** The deletion of namespace ns the page follows: {gone, total, baseline, end, waitingOn}, or null. @param {string} ns */
    nsDeletion: (ns) => {
      const c = page.cascades.ofNamespace(ns);
      return c ? { gone: c.gone, total: c.total, baseline: c.baseline, end: c.end, waitingOn: c.waitingOn } : null;
    },
    /** Summary first (detail.js): {mode, asked, answered, detailMs, objects, settled}. */
    detail: () => {
      const d = page.detail;
      return { mode: d.mode, asked: d.asked, answered: d.answered, detailMs: d.detailMs, objects: d.objects, settled: d.settled() };
    },
    /** The namespace boxes laid out now: {ns: {summary: objects counted or null, items, x, y, w, h}}. */
    groups: () => Object.fromEntries([...layout.groups.values()].map((g) => [g.ns, { summary: g.summary ? g.summary.objects : null, items: g.items.length, x: g.x, y: g.y, w: g.w, h: g.h }])),
    stuckView,
    tabs,
    cascades: page.liveCascades,
    /** Starts tracing uids' states: the stream's and the canvas's (see trace). @param {string[]} uids */
    trace: (uids) => {
      tracer = trace(page, uids, current);
      tracer.engine();
    },
    /** The trace so far: {engine: [{uid, state, t}], drawn: [{uid, state, x, y, t}], placed: [{uid, x, y, t}], frames: [t]}. */
    traceLog: () => {
      const t = tracer;
      return { engine: t?.engineLog || [], drawn: t?.drawnLog || [], placed: t?.placedLog || [], frames: t?.frames || [] };
    },
    /** @param {string} uid */
    select: (uid) => parts.select(uid),
    /** Opens the stream again from a fresh snapshot, as when the server no longer holds the
     * events the page missed; resolves once the snapshot is applied. */
    resnapshot: () => {
      const before = live.snapshots;
      parts.stream.hadSnapshot = false;
      parts.stream.ws?.close(4000, "a fresh snapshot, asked by a test");
      return new Promise((done) => {
        const wait = () => (live.snapshots > before ? done(true) : setTimeout(wait, 10));
        wait();
      });
    },
    /** The objects selected together (shift-click), in the order they were. */
    selected: () => [...parts.selection.uids],
    /**
     * Where uid's box is on the page (CSS px, the middle of the box), for a test to click it
     * as a user would; null when it is not laid out or not wholly on the canvas.
     * @param {string} uid
     */
    screenOf: (uid) => {
      const it = layout.items.get(uid);
      if (!it || (it.block && renderer.collapsed(it.block))) return null;
      const r = page.canvas.getBoundingClientRect(), { cam } = renderer, b = layout.box(uid);
      if (!b) return null;
      const x0 = r.left + b.x * cam.k + cam.x, y0 = r.top + b.y * cam.k + cam.y;
      const x1 = r.left + (b.x + b.w) * cam.k + cam.x, y1 = r.top + (b.y + b.h) * cam.k + cam.y;
      if (x0 < r.left || y0 < r.top || x1 > r.right || y1 > r.bottom) return null;
      return { x: (x0 + x1) / 2, y: (y0 + y1) / 2 };
    },
    view,
    /**
     * The state of each object of namespace ns in the store shown (or, which = "live", the
     * live one), as the canvas would draw it: {uid: state}.
     * @param {string} ns @param {string} [which]
     */
    nsStates: (ns, which) => {
      const s = which === "live" ? live : page.store;
      /** @type {Record<string, string>} */
      const out = {};
      for (const u of s.byNamespace.get(ns) || []) out[u] = stateOf(s, /** @type {any} */ (s.nodes.get(u)));
      return out;
    },
    /** The store shown: the live one, or time travel's. */
    get store() { return page.store; },
    live,
    renderer,
    /** The keyboard shortcuts the page binds, as the help lists them: [[label, help]]. */
    shortcuts: () => parts.shortcuts.listed(),
    /** Time travel (with --history): {active, at, playing, speed, lastSeekMs, store}. */
    travel: () => page.travelUI?.travel ?? null,
    timeline: () => page.travelUI?.timeline ?? null,
    /** Seeks, the time each took from the ask to the state applied (ms). */
    seeks: /** @type {number[]} */ ([]),
    /** Frames drawn while playing: [performance.now()], for fps. */
    playFrames: /** @type {number[]} */ ([]),
  };
  /** @type {any} */ (window).gcscope = api;
  return { api, engineChanged: () => tracer?.engine() };
}
