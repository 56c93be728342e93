// @ts-check
// The page's shared state: what the modules main.js wires together read and change (the
// stores, the layout, the renderer, the view the URL mirrors), and the page's own steps,
// which the module that owns each one puts here (view.js: select; frame.js: relayout; …).

import { Store } from "./store.js";
import { Cascades } from "./cascades.js";
import { Layout } from "./layout.js";
import { Renderer } from "./render.js";
import { $ } from "./dom.js";
import { Detail, DETAIL_K } from "./detail.js";

/**
 * What the user looks at; mirrored in the URL.
 * @typedef {{ns: string[], kind: string[], q: string, focus: string|null, sel: string|null}} View
 */

/**
 * @typedef {object} Page
 * @property {boolean} replay a recording served with no cluster (`gcscope replay FILE`): no live stream, no writes
 * @property {boolean} readOnly
 * @property {boolean} hasHistory the server records the engine's feed (--history): history view, timeline, time travel
 * @property {Store} live the live state, kept by the stream whatever the page shows
 * @property {Cascades} liveCascades
 * @property {Store} store the state the page shows: the live one, or a recorded moment's (time travel)
 * @property {Cascades} cascades the shown store's cascades
 * @property {Layout} layout
 * @property {HTMLCanvasElement} canvas
 * @property {Renderer} renderer
 * @property {View} view
 * @property {string} atURL ?at=: the recorded moment the page was opened at
 * @property {Set<string>|null} focusSet the focus closure, when focused
 * @property {{snapshotMs: number|null, firstFrameMs: number|null, applied: number, drawn: number, layoutMs: number}} perf
 * @property {boolean} firstSnapshotPending the first snapshot is in, not yet drawn
 * @property {boolean} layoutDue
 * @property {string|null} centerDue an object selected to be centred before it was laid out: centred once it is
 * @property {import("./travelui.js").TravelUI|null} travelUI history and time travel, with --history
 * @property {import("./detail.js").Detail} detail summary first: what the page holds of a large cluster
 * @property {{engine: () => void}|null} tracer a test's trace of objects' states (testhooks.js)
 * @property {(uid: string|null, center?: boolean, keepTab?: boolean) => void} select
 * @property {(uid: string|null) => void} setFocus
 * @property {() => void} viewChanged the user changed the view: lay out again, write the URL
 * @property {() => void} writeURL
 * @property {(now: number, dirty?: Set<string>) => void} relayout
 * @property {() => void} updateEmpty
 * @property {() => void} runSearch
 * @property {() => void} fillFilterOptions
 * @property {() => void} refreshFilters the filter options, rebuilt whatever they were
 * @property {() => void} legend
 * @property {(text: string) => void} toast
 */

/** The page's state at load, its steps still to be put in by their modules. @returns {Page} */
export function newPage() {
  const body = document.body;
  const replay = body.dataset.replay === "true";
  const live = new Store();
  const liveCascades = new Cascades(live);
  const layout = new Layout();
  const canvas = /** @type {HTMLCanvasElement} */ ($("graph"));
  const renderer = new Renderer(canvas, live, layout);
  renderer.cascades = liveCascades;
  const unset = () => { throw new Error("page step not wired"); };
  /** @type {Page} */
  const page = {
    replay,
    readOnly: body.dataset.readOnly === "true" || replay,
    hasHistory: body.dataset.history === "true" || replay,
    live, liveCascades, store: live, cascades: liveCascades, layout, canvas, renderer,
    view: { ns: [], kind: [], q: "", focus: null, sel: null },
    atURL: "",
    focusSet: null,
    perf: { snapshotMs: null, firstFrameMs: null, applied: 0, drawn: 0, layoutMs: 0 },
    firstSnapshotPending: false,
    layoutDue: false,
    centerDue: null,
    travelUI: null,
    tracer: null,
    select: unset, setFocus: unset, viewChanged: unset, writeURL: unset, relayout: unset, updateEmpty: unset,
    runSearch: unset, fillFilterOptions: unset, refreshFilters: unset, legend: unset, toast: unset,
    detail: /** @type {any} */ (null),
  };
  const detail = (page.detail = new Detail(page));
  renderer.countsNote = (ns) => detail.loading(ns) ? "loading its objects…" : renderer.cam.k < DETAIL_K ? "zoom in to load its objects" : "";
  return page;
}
