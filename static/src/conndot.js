// @ts-check
// The connection's dot in the header: the stream's state (live, connecting, reconnecting,
// offline) and, in time travel over a live stream, that what is drawn is past. A click
// retries, or goes back to live.

import { $ } from "./dom.js";

export class ConnDot {
  /**
   * @param {{replay: boolean, backToLive: () => void, retry: () => void}} parts
   *   replay: a recording, whose TravelUI owns the dot; backToLive: leave time travel; retry: open the stream now
   */
  constructor(parts) {
    this.parts = parts;
    this.el = $("conn");
    /** The stream's state and what it said of it. */
    this.state = "connecting";
    this.detail = "";
    this.el.addEventListener("click", () => (this.livePast() ? parts.backToLive() : parts.retry()));
  }

  /** Time travel over a live stream: what is drawn is past, the live state goes on underneath. */
  livePast() {
    return document.body.classList.contains("travel") && this.state === "live";
  }

  /** The stream's state changed. @param {string} state @param {string} words */
  set(state, words) {
    this.state = state;
    this.detail = words;
    this.show();
  }

  /** Says the stream's state, and in time travel that what is drawn is past. */
  show() {
    if (this.parts.replay) return; // TravelUI.startReplay owns it
    const { el, state } = this;
    const past = this.livePast();
    el.dataset.state = state;
    el.textContent = past ? "○ live underneath" : state === "live" ? "● live" : state === "connecting" ? "connecting…" : state === "offline" ? "offline — click to retry" : "reconnecting…";
    el.title = past ? "Time travel: the page shows a recorded moment while the live stream goes on underneath. Click (or Esc) to go back to live." : this.detail;
  }
}
