// @ts-check
// The page's stream (stream.js) and the connection's dot in the header. The stream always
// feeds the live store, whatever the page shows: time travel shows another one and loses
// nothing of the live state meanwhile.

import { Stream } from "./stream.js";
import { $ } from "./dom.js";

/** @typedef {import("./page.js").Page} Page */
/** @typedef {import("./frames.gen.js").FrameType} FrameType */
/** @typedef {import("./frames.gen.js").Frame} Frame */

/**
 * Makes the stream (not yet open) and the dot that says its state.
 * @param {Page} page @param {{objectPanel: import("./panel.js").ObjectPanel}} parts
 */
export function wireStream(page, parts) {
  const { live } = page;
  const body = document.body;
  const conn = $("conn");
  /** The stream's state and what it said of it. */
  let connState = "connecting", connDetail = "";
  /** Time travel over a live stream: what is drawn is past, the live state goes on underneath. */
  const livePast = () => body.classList.contains("travel") && connState === "live";
  /** The connection's dot: the stream's state, and in time travel that what is drawn is past. */
  function showConn() {
    if (page.replay) return; // TravelUI.startReplay owns it
    const past = livePast();
    conn.dataset.state = connState;
    conn.textContent = past ? "○ live underneath" : connState === "live" ? "● live" : connState === "connecting" ? "connecting…" : connState === "offline" ? "offline — click to retry" : "reconnecting…";
    conn.title = past ? "Time travel: the page shows a recorded moment while the live stream goes on underneath. Click (or Esc) to go back to live." : connDetail;
  }
  const { detail } = page;
  const handlers = frameHandlers(page, parts);
  const stream = new Stream({
    // It resumes from the live seq, whatever the page shows.
    seq: () => live.seq,
    query: () => detail.query(),
    onState(state, words) {
      connState = state;
      connDetail = words;
      showConn();
    },
    onFrame(f) {
      // Each handler takes its own type's frame (the table's type says so); a type this
      // page does not know (a newer server's) has none.
      const handle = /** @type {((f: Frame) => void)|undefined} */ (handlers[f.type]);
      if (handle) handle(f);
    },
  });
  detail.send = (frame) => stream.send(frame);
  conn.addEventListener("click", () => (livePast() ? page.travelUI?.backToLive() : stream.retry()));
  return { stream, showConn };
}

/**
 * What the page does with each type of frame the server sends: one handler for every type
 * of the stream's vocabulary (frames.gen.js; a test walks FRAME_TYPES against these).
 * @param {Page} page @param {{objectPanel: import("./panel.js").ObjectPanel}} parts
 * @returns {{[T in FrameType]: (f: Extract<Frame, {type: T}>) => void}}
 */
export function frameHandlers(page, parts) {
  const { live, liveCascades, perf, view, detail } = page;
  return {
    summary(f) {
      for (const ns of detail.onSummary(f)) live.markNamespace(ns);
      if (detail.mode === "summary" && perf.snapshotMs === null) {
        // Summary first: the counts are the first frame's content.
        perf.snapshotMs = performance.now();
        page.firstSnapshotPending = true;
      }
      if (page.store === live) page.fillFilterOptions();
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
      // A summary-first stream's first snapshot holds nothing: on a small cluster the
      // first frame is the snapshot of everything the page then asks for.
      if (perf.snapshotMs === null && detail.mode === "full" && f.reason === "subscribe") {
        perf.snapshotMs = performance.now();
        page.firstSnapshotPending = true;
      }
      if (page.store !== live) return;
      page.layoutDue = true;
      page.fillFilterOptions();
      if (view.sel) parts.objectPanel.show(view.sel);
      // ?q= highlights its matches once there is something to match.
      if (view.q) page.runSearch();
    },
    deltas(f) {
      live.applyEvents(f.events);
      if (page.tracer && page.store === live) page.tracer.engine();
    },
    // The answer to the stream's ping: that the connection is alive is all it says.
    pong() {},
  };
}
