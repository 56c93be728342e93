// @ts-check
// The websocket to /api/v1/stream (docs/stream.md). It resumes with ?since= after a
// drop, so nothing is lost while the server still holds the events, and reconnects with
// a growing, jittered delay. While it is down for more than a moment, the graph on the
// page is stale: the body gets the class "offline" (the stylesheet dims the graph) and a
// note says since when, until the stream is live again.
//
// It asks for the stream's own deflate (?encoding=deflate) where the browser can inflate
// (DecompressionStream): a large frame then arrives as a binary message, deflated once on
// the server for every page that receives it, and is inflated here before the frames
// after it are handled, in order.

import { apiPath } from "./api.js";
import { refusalWhy } from "./clusters.js";
import { clock } from "./dom.js";

/** A drop shorter than this (a slow client handed a fresh snapshot) is not called offline. */
const OFFLINE_AFTER_MS = 1000;

/**
 * The first retry after the cluster refused the user's credential: the hub keeps a
 * remote's refusal of a user 10 s, and nothing changes faster for retrying sooner.
 */
const REFUSED_RETRY_MS = 15000;

/** The close codes the page acts on (docs/api.md). */
const SIGNED_OUT = 4401; // gcscope ended the sign-in
const REFUSED = 4403; // a hub's remote no longer accepts the user, still signed in to the hub
const TRY_AGAIN_LATER = 1013; // a hub's remote went away

/**
 * @typedef {"connecting"|"live"|"reconnecting"|"offline"} ConnState
 * @typedef {import("./frames.gen.js").Frame} Frame
 * @typedef {{onFrame: (f: Frame) => void, onState: (s: ConnState, detail: string) => void, seq: () => number,
 *   query?: () => URLSearchParams}} Handlers  query: the subscription to open (and resume) with
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
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.offlineTimer = undefined;
    /** when the stream was last live (epoch ms), 0 before */ this.liveAt = 0;
    this.lostAt = 0;
    this.retryText = "";
    /**
     * Why the stream is down, for the note: the connection to gcscope, the cluster behind a
     * hub gone away (1013), or the cluster refusing the user (4403); why is the server's.
     * @type {{kind: "lost"|"away"|"refused", why: string}}
     */
    this.down = { kind: "lost", why: "" };
    /** closes since the last open with the cluster refusing the user, for their backoff */ this.refusals = 0;
    /** the frames handled in order: resolved once the last one received is @type {Promise<void>} */
    this.handled = Promise.resolve();
    /** binary frames received and not yet handled */ this.inflating = 0;
  }

  open() {
    this.closed = false;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const q = this.h.query?.() || new URLSearchParams();
    if (this.hadSnapshot) q.set("since", String(this.h.seq()));
    if (typeof DecompressionStream === "function") q.set("encoding", "deflate");
    const qs = q.toString();
    const ws = new WebSocket(`${proto}//${location.host}${apiPath("/api/v1/stream")}${qs ? "?" + qs : ""}`);
    ws.binaryType = "arraybuffer";
    let broken = false; // a frame of this connection could not be inflated: the ones after it are not handled
    this.ws = ws;
    this.h.onState(this.attempt ? "reconnecting" : "connecting", "opening the stream…");
    // Live at the first frame, not at the open: a hub accepts the socket before its
    // remote answers, and closes it at once (1013) while that remote is away. Counted as
    // failed attempts, those back off, and the page says it is offline.
    let opened = false;
    ws.onmessage = (ev) => {
      if (!opened) {
        opened = true;
        this.attempt = 0;
        this.down = { kind: "lost", why: "" };
        this.refusals = 0;
        this.online();
        this.h.onState("live", "live");
      }
      this.liveAt = Date.now();
      const data = ev.data;
      // A text frame with none waiting before it is handled at once.
      if (typeof data === "string" && !this.inflating) return this.frame(data);
      this.inflating++;
      this.handled = this.handled.then(async () => {
        if (broken) return;
        let text;
        try {
          text = typeof data === "string" ? data : await inflate(data);
        } catch (err) {
          // Never seen: a broken frame. The stream is opened again from what was handled.
          console.error("gcscope: a stream frame could not be inflated:", err);
          broken = true;
          if (this.ws === ws) ws.close(4000, "a frame could not be inflated");
          return;
        }
        this.frame(text);
      }).catch(reportError).finally(() => this.inflating--); // an error handling it is reported as the page's own
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
      // The server ended the sign-in (4401), or a stream that keeps failing may have
      // been refused for it (a browser cannot read the upgrade's 401): ask. Through a
      // hub, the session of a remote that refuses the user answers 403 (not 401): the
      // user stays signed in to the hub, and the page says the cluster refuses them.
      if (ev.code === SIGNED_OUT) return this.signedOut(ev.reason);
      if (this.attempt >= 1 && (document.getElementById("sign-out") || document.body.dataset.cluster)) {
        fetch(apiPath("/api/v1/session"), { credentials: "same-origin" }).then(async (r) => {
          if (this.closed) return;
          if (r.status === 401 && document.getElementById("sign-out")) this.signedOut("");
          else if (r.status === 403) {
            const body = await r.json().catch(() => null);
            if (body?.error !== "forbidden" || this.ws) return;
            this.down = { kind: "refused", why: refusalWhy(body.message) };
            this.offline();
          }
        }, () => {});
      }
      // A refused handshake (403) reads as 1006 here: the refusal holds until a stream opens.
      if (ev.code === REFUSED) this.down = { kind: "refused", why: refusalWhy(ev.reason) };
      else if (ev.code === TRY_AGAIN_LATER && ev.reason) this.down = { kind: "away", why: ev.reason };
      else if (!(ev.code === 1006 && this.down.kind === "refused")) this.down = { kind: "lost", why: "" };
      const refused = this.down.kind === "refused";
      // Refused: retried slowly, in 15, 30, then 60 s (a new credential or a changed RBAC is not a blip).
      const base = refused ? REFUSED_RETRY_MS * 2 ** Math.min(this.refusals++, 2) : Math.min(15000, 500 * 2 ** this.attempt);
      const delay = base * (0.75 + Math.random() / 2);
      this.attempt++;
      const why = ev.reason ? `: ${ev.reason}` : ev.code === 1006 ? ": connection lost" : ` (${ev.code})`;
      if (refused) this.h.onState("offline", `cluster ${this.clusterName()} refuses your credential: ${this.down.why}; retrying in ${Math.round(delay / 1000)} s`);
      else this.h.onState(this.attempt > 6 ? "offline" : "reconnecting", `disconnected${why}; retrying in ${Math.round(delay / 1000)} s`);
      this.retryText = `retrying at ${clock(Date.now() + delay).slice(0, 8)}`;
      this.offline();
      // Opened again from the last frame handled, once those still inflating are.
      this.timer = setTimeout(() => this.handled.then(() => {
        if (!this.closed && !this.ws) this.open();
      }), delay);
    };
  }

  /** Handles one frame's text. @param {string} text */
  frame(text) {
    /** @type {Frame} the server sends only its declared frames (frames.gen.js) */
    const f = JSON.parse(text);
    if (f.type === "snapshot") this.hadSnapshot = true;
    this.h.onFrame(f);
  }

  /** The name of the page's cluster, for the note. */
  clusterName() {
    return document.body.dataset.cluster || "of this page";
  }

  /**
   * The stream is down: after OFFLINE_AFTER_MS, the page says the graph is stale; at once
   * when the cluster refuses the user (no blip).
   */
  offline() {
    if (!this.lostAt) this.lostAt = Date.now();
    if (this.down.kind === "refused") {
      clearTimeout(this.offlineTimer);
      this.offlineTimer = undefined;
      document.body.classList.add("offline");
    }
    if (document.body.classList.contains("offline")) return this.note();
    if (this.offlineTimer !== undefined) return;
    this.offlineTimer = setTimeout(() => {
      this.offlineTimer = undefined;
      document.body.classList.add("offline");
      this.note();
    }, OFFLINE_AFTER_MS);
  }

  online() {
    clearTimeout(this.offlineTimer);
    this.offlineTimer = undefined;
    this.lostAt = 0;
    document.body.classList.remove("offline");
    const el = document.getElementById("offline-note");
    if (el) el.hidden = true;
  }

  /** The offline note, over the graph (made on first use). */
  note() {
    let el = document.getElementById("offline-note");
    if (!el) {
      el = document.createElement("div");
      el.id = "offline-note";
      el.className = "offline-note";
      el.setAttribute("role", "alert");
      (document.getElementById("graph-pane") || document.body).append(el);
    }
    const as = this.liveAt ? ` as of ${clock(this.liveAt).slice(0, 8)}` : "";
    const at = clock(this.lostAt).slice(0, 8);
    const { kind, why } = this.down;
    if (kind === "refused") {
      // Not a sign-out: the user is still signed in to gcscope (the hub), only this cluster refuses them.
      el.textContent = `The cluster ${this.clusterName()} refuses your credential now: ${why}. You are still signed in to gcscope. ` +
        `The graph is dimmed: it shows the cluster${as} and no longer follows it. Trying again (${this.retryText}; click the dot at the top right to retry now)…`;
    } else {
      const lost = kind === "away" ? `Offline at ${at}: ${why}.` : `Offline: the connection to gcscope was lost at ${at}.`;
      el.textContent = `${lost} The graph is dimmed: it shows the engine's state${as} and may be stale. Reconnecting (${this.retryText}; click the dot at the top right to retry now)…`;
    }
    el.hidden = false;
  }

  /**
   * The sign-in has ended: no more retries; the note says so and links to the form.
   * @param {string} why the server's reason, if it gave one
   */
  signedOut(why) {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.offlineTimer);
    this.offlineTimer = undefined;
    this.ws?.close(1000, "signed out");
    this.h.onState("offline", "signed out");
    document.body.classList.add("offline");
    this.note();
    const el = /** @type {HTMLElement} */ (document.getElementById("offline-note"));
    const link = document.createElement("a");
    link.href = "/login";
    link.textContent = "Sign in again";
    el.replaceChildren(`Signed out: ${why || "your sign-in is no longer accepted (signed out, gcscope restarted, or the token was revoked or expired)"}. ` +
      "The graph is dimmed and no longer follows the cluster. ", link);
  }

  /** Sends a frame (a subscribe) if the stream is open; a reconnection opens with query() instead. @param {object} frame */
  send(frame) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  /** Reconnects now (the user asked). */
  retry() {
    clearTimeout(this.timer);
    if (!this.ws) this.open();
  }

  close() {
    this.closed = true;
    this.online();
    clearTimeout(this.timer);
    this.ws?.close(1000, "bye");
  }
}

/** A binary frame's text: one raw deflate stream (docs/stream.md). @param {ArrayBuffer} buf */
async function inflate(buf) {
  return new Response(new Blob([buf]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).text();
}
