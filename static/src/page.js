// @ts-check
// The page's shared state: data that the modules main.js wires together read and change
// (the stores, the layout, the renderer, the view the URL mirrors, the frame loop's flags).
// It holds no steps of the page: each module takes the functions it calls as arguments.

import { toast } from "./notices.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./cascades.js").Cascades} Cascades */

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
 * @property {import("./layout.js").Layout} layout
 * @property {HTMLCanvasElement} canvas
 * @property {import("./render.js").Renderer} renderer
 * @property {View} view
 * @property {string} atURL ?at=: the recorded moment the page was opened at
 * @property {Set<string>|null} focusSet the focus closure, when focused
 * @property {{snapshotMs: number|null, firstFrameMs: number|null, applied: number, drawn: number, layoutMs: number}} perf
 * @property {boolean} firstSnapshotPending the first snapshot is in, not yet drawn
 * @property {boolean} layoutDue
 * @property {string|null} centerDue an object selected to be centred before it was laid out: centred once it is
 * @property {import("./travelui.js").TravelUI|null} travelUI history and time travel, with --history (main.js makes it)
 * @property {import("./detail.js").Detail} detail summary first: what the page holds of a large cluster
 * @property {(text: string) => void} toast a short-lived note over the graph (notices.js)
 */

/** The view at load, before the URL is read. @returns {View} */
export function newView() {
  return { ns: [], kind: [], q: "", focus: null, sel: null };
}

/**
 * The page's state at load, over the stores and the drawing main.js made; the page's
 * server-side options are read from the body's data attributes.
 * @param {{live: Store, liveCascades: Cascades, layout: import("./layout.js").Layout, canvas: HTMLCanvasElement,
 *   renderer: import("./render.js").Renderer, view: View, detail: import("./detail.js").Detail}} parts
 * @returns {Page}
 */
export function newPage(parts) {
  const body = document.body;
  const replay = body.dataset.replay === "true";
  return {
    replay,
    readOnly: body.dataset.readOnly === "true" || replay,
    hasHistory: body.dataset.history === "true" || replay,
    ...parts,
    store: parts.live,
    cascades: parts.liveCascades,
    atURL: "",
    focusSet: null,
    perf: { snapshotMs: null, firstFrameMs: null, applied: 0, drawn: 0, layoutMs: 0 },
    firstSnapshotPending: false,
    layoutDue: false,
    centerDue: null,
    travelUI: null,
    toast,
  };
}

/** The first content (a snapshot, or summary first the counts) is in: timed, and drawn next. @param {Page} page */
export function firstContent(page) {
  if (page.perf.snapshotMs !== null) return;
  page.perf.snapshotMs = performance.now();
  page.firstSnapshotPending = true;
}
