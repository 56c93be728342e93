// @ts-check
// The page's stream (stream.js) turned into store updates: each frame is applied to the
// live store, its cascades and what summary first holds (detail.js), and then said to
// main.js, which refreshes what shows them. The stream always feeds the live store,
// whatever the page shows: time travel shows another one and loses nothing of the live
// state meanwhile.

import { Stream } from "./stream.js";

/** @typedef {import("./frames.gen.js").FrameType} FrameType */
/** @typedef {import("./frames.gen.js").Frame} Frame */

/**
 * What the stream writes.
 * @typedef {object} LiveStores
 * @property {import("./store.js").Store} live
 * @property {import("./cascades.js").Cascades} liveCascades
 * @property {import("./detail.js").Detail} detail
 */

/**
 * The stream (not yet open), its frames applied to the stores.
 * @param {LiveStores} s
 * @param {{applied: (f: Frame) => void, onState: (state: import("./stream.js").ConnState, words: string) => void}} on
 *   applied: a frame was applied to the stores; onState: the stream's state changed
 */
export function connect(s, on) {
  const handlers = frameHandlers(s, on.applied);
  return new Stream({
    // It resumes from the live seq, whatever the page shows.
    seq: () => s.live.seq,
    query: () => s.detail.query(),
    onState: on.onState,
    onFrame(f) {
      // Each handler takes its own type's frame (the table's type says so); a type this
      // page does not know (a newer server's) has none.
      const handle = /** @type {((f: Frame) => void)|undefined} */ (handlers[f.type]);
      if (handle) handle(f);
    },
  });
}

/**
 * What the page does with each type of frame the server sends: one handler for every type
 * of the stream's vocabulary (frames.gen.js; a test walks FRAME_TYPES against these). Each
 * changes the stores only, then says so (applied).
 * @param {LiveStores} s @param {(f: Frame) => void} applied
 * @returns {{[T in FrameType]: (f: Extract<Frame, {type: T}>) => void}}
 */
export function frameHandlers(s, applied) {
  const { live, liveCascades, detail } = s;
  return {
    summary(f) {
      for (const ns of detail.onSummary(f)) live.markNamespace(ns);
      applied(f);
    },
    snapshot(f) {
      // Summary first: a snapshot of what the page asked for replaces what it held.
      const asked = detail.mode === "summary" && f.reason === "subscribe";
      live.applySnapshot(f, !asked);
      for (const ns of detail.onSnapshot()) live.markNamespace(ns);
      // What the user may see changed: objects gone from view are not deleted.
      if (f.reason === "permissions") liveCascades.reset();
      if (asked) liveCascades.forgetUnheld();
      // A reload mid-cascade: pick up the cascades under way.
      liveCascades.observe([...live.nodes.keys()], performance.now());
      applied(f);
    },
    deltas(f) {
      live.applyEvents(f.events);
      applied(f);
    },
    // The answer to the stream's ping: that the connection is alive is all it says.
    pong() {},
  };
}
