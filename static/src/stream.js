// @ts-check
// The websocket to /api/v1/stream (docs/stream.md). It resumes with ?since= after a
// drop, so nothing is lost while the server still holds the events, and reconnects with
// a growing, jittered delay.

/**
 * @typedef {"connecting"|"live"|"reconnecting"|"offline"} ConnState
 * @typedef {{onFrame: (f: any) => void, onState: (s: ConnState, detail: string) => void, seq: () => number}} Handlers
 */

export class Stream {
  /** @param {Handlers} h */
  constructor(h) {
    this.h = h;
    /** @type {WebSocket|null} */ this.ws = null;
    this.attempt = 0;
    this.closed = false;
    this.hadSnapshot = false;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
  }

  open() {
    this.closed = false;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const since = this.hadSnapshot ? `?since=${this.h.seq()}` : "";
    const ws = new WebSocket(`${proto}//${location.host}/api/v1/stream${since}`);
    this.ws = ws;
    this.h.onState(this.attempt ? "reconnecting" : "connecting", "opening the stream…");
    ws.onopen = () => {
      this.attempt = 0;
      this.h.onState("live", "live");
    };
    ws.onmessage = (ev) => {
      const f = JSON.parse(ev.data);
      if (f.type === "snapshot") this.hadSnapshot = true;
      this.h.onFrame(f);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
      const delay = Math.min(15000, 500 * 2 ** this.attempt) * (0.75 + Math.random() / 2);
      this.attempt++;
      const why = ev.reason ? `: ${ev.reason}` : ev.code === 1006 ? ": connection lost" : ` (${ev.code})`;
      this.h.onState(this.attempt > 6 ? "offline" : "reconnecting", `disconnected${why}; retrying in ${Math.round(delay / 1000)} s`);
      this.timer = setTimeout(() => this.open(), delay);
    };
  }

  /** Reconnects now (the user asked). */
  retry() {
    clearTimeout(this.timer);
    if (!this.ws) this.open();
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.ws?.close(1000, "bye");
  }
}
