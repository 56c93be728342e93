// @ts-check
// Time travel: the engine's state at a recorded moment, in a store of its own, so that the
// live stream goes on filling the live store underneath and nothing of it is lost. A seek
// asks the server for the state at a moment (/api/v1/history/state: the checkpoint before
// it and the events up to it); playing then applies the recorded events after it with the
// same store code the live stream uses (Store.applyEvents), paced by their recorded times
// times the speed. The page shows whichever store is current (timetravel.js swaps them).

import { Store } from "./store.js";
import { Cascades } from "./cascades.js";
import { stateAt, stateAtSeq, historyPage, parseTime, isoTime, EventReader } from "./history.js";
import { EVENT_TYPES, PAYLOAD_OF } from "./events.gen.js";

/** A drag asks for the state at most this often (the last moment asked always wins). */
export const SEEK_DEBOUNCE_MS = 120;
/** Speeds offered for playing. */
export const SPEEDS = [0.25, 0.5, 1, 2, 4, 8];
/** Recorded idle stretches longer than this (in wall time at the speed played) are skipped. */
const IDLE_SKIP_MS = 2500;
/** Node events (those about the graph: a node's or an edge's): what a step waits for. */
const NODE_EVENTS = EVENT_TYPES.filter((t) => PAYLOAD_OF[t] === "node" || PAYLOAD_OF[t] === "edge");

/**
 * @typedef {{enter: () => void, leave: () => void, moment: (t: number) => void, seeked: (state: any, ms: number) => void,
 *   applied: (n: number) => void, playing: (on: boolean) => void, error: (message: string) => void, stepped?: () => void}} Hooks
 *   stepped: a step forward or back is done (the moment shown moved without a seek)
 */

export class TimeTravel {
  /** @param {Hooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.store = new Store();
    // Elapsed times in recorded time: the moment shown (frozen while paused).
    this.cascades = new Cascades(this.store, () => this.at);
    /** showing a recorded moment (not the live state) */ this.active = false;
    /** the moment shown, epoch ms */ this.at = NaN;
    /** the moment of the state loaded (at, but for a seek under way) */ this.loadedAt = NaN;
    /** the session and seq of the last event in the state shown */ this.session = 0;
    this.seq = 0;
    /** what the server said about the moment (a gap, after a stop) */ this.note = "";
    this.playing = false;
    this.speed = 1;
    /** where playing stops (epoch ms), or null: at the end of the recording */
    /** @type {number|null} */ this.until = null;
    /** @type {EventReader|null} */ this.reader = null;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.seekTimer = undefined;
    this.seekId = 0;
    this.seeking = false;
    /** the last seek, until it is done @type {Promise<any>|null} */ this.pending = null;
    this.clock = { rec: 0, wall: 0 };
    this.lastSeekMs = 0;
    /** the events applied since the last seek, for step back: [session, seq, type] */
    /** @type {{session: number, seq: number, time: number, type: import("./events.gen.js").EventType}[]} */ this.appliedLog = [];
  }

  /**
   * Shows moment t: at once, or (a drag) after SEEK_DEBOUNCE_MS without another.
   * @param {number} t epoch ms @param {{debounce?: boolean}} [o]
   * @returns {Promise<void>}
   */
  seek(t, o = {}) {
    this.pause();
    // No seek under way: the moment shown is the state's, to go back to if this one is refused.
    if (!this.seeking && this.seekTimer === undefined) this.loadedAt = this.at;
    this.at = t;
    this.hooks.moment(t);
    clearTimeout(this.seekTimer);
    this.seekTimer = undefined;
    const id = ++this.seekId;
    const done = o.debounce
      ? new Promise((resolve) => {
        this.seekTimer = setTimeout(() => {
          this.seekTimer = undefined;
          this.load(id, () => stateAt(t), t, true).then(resolve, resolve);
        }, SEEK_DEBOUNCE_MS);
      })
      : this.load(id, () => stateAt(t), t, true);
    /** @type {Promise<any>} */ (this.pending) = done;
    return /** @type {Promise<void>} */ (done);
  }

  /**
   * Loads a state into the travel store, unless another seek overtook it.
   * @param {number} id @param {() => Promise<any>} fetch @param {number|null} t the moment shown, null: the state's
   * @param {boolean} [sought] a seek's: refused, the moment shown goes back to the state's
   */
  async load(id, fetch, t, sought = false) {
    const t0 = performance.now();
    this.seeking = true;
    let state;
    try {
      state = await fetch();
    } catch (e) {
      if (id === this.seekId) {
        this.seeking = false;
        // Refused (a moment before the recording): the moment shown is the one loaded before, if any.
        if (sought) {
          this.at = this.loadedAt;
          if (this.active) this.hooks.moment(this.at);
        }
        this.hooks.error(/** @type {any} */ (e).message || String(e));
      }
      return;
    }
    if (id !== this.seekId) return;
    this.seeking = false;
    this.pending = null;
    // The moment first: the cascades found in the state are measured to it.
    this.at = this.loadedAt = t !== null ? t : parseTime(state.time);
    this.apply(state);
    this.enter();
    this.lastSeekMs = performance.now() - t0;
    this.hooks.seeked(state, this.lastSeekMs);
    this.hooks.moment(this.at);
  }

  /** Replaces the travel store's contents with a recorded state. @param {any} state */
  apply(state) {
    const s = this.store;
    s.applySnapshot({ ...state, type: "snapshot" });
    // A jump is not a removal: nothing fades, nothing flashes as new.
    s.ghosts.clear();
    s.born.clear();
    s.removedAt.clear();
    s.seq = state.seq;
    s.clock = parseTime(state.time);
    this.session = state.session;
    this.seq = state.seq;
    this.note = state.note || "";
    this.reader = null;
    this.appliedLog = [];
    this.cascades.active.clear();
    this.cascades.finished = [];
    this.cascades.observe([...s.nodes.keys()], performance.now());
    this.cascades.changed = true;
  }

  enter() {
    if (this.active) return;
    this.active = true;
    this.hooks.enter();
  }

  /** Back to the live state. */
  leave() {
    this.pause();
    clearTimeout(this.seekTimer);
    this.seekTimer = undefined;
    this.seekId++;
    if (!this.active) return;
    this.active = false;
    this.hooks.leave();
  }

  /** The reader of the events after the state shown (made on first use). */
  events() {
    if (!this.reader) this.reader = new EventReader(this.store.clock || this.at, null);
    return this.reader;
  }

  /**
   * The next event after the state shown, fetched if need be; null at the end of the
   * recording. Events the state already holds (same session, seq not above) are passed.
   */
  async nextEvent() {
    const r = this.events();
    for (;;) {
      let e = r.peek();
      if (!e) {
        if (r.done) return null;
        await r.fill();
        continue;
      }
      if (e.session === this.session && e.seq <= this.seq) {
        r.take();
        continue;
      }
      return e;
    }
  }

  /**
   * Applies one recorded event. A new session (gcscope restarted) or a gap the recording
   * marks starts again from the state just after the event, rebuilt by the server.
   * @param {any} e @returns {Promise<boolean>} whether it started again from a rebuilt state
   */
  async applyEvent(e) {
    if (e.session !== this.session || this.gapBefore(e)) {
      const id = ++this.seekId;
      const reader = this.reader;
      await this.load(id, () => stateAtSeq(e.session, e.seq), parseTime(e.time));
      this.reader = reader; // the same events go on after it
      return true;
    }
    this.store.applyEvents([e]);
    this.seq = e.seq;
    this.store.clock = parseTime(e.time);
    this.appliedLog.push({ session: e.session, seq: e.seq, time: parseTime(e.time), type: e.type });
    if (this.appliedLog.length > 10000) this.appliedLog.splice(0, 5000);
    return false;
  }

  /** Whether the recording misses events between the state shown and e. @param {any} e */
  gapBefore(e) {
    if (e.seq === this.seq + 1) return false;
    return (this.reader?.gaps || []).some((g) => g.session === e.session && g.afterSeq >= this.seq && g.resumeSeq <= e.seq);
  }

  /**
   * Plays from the moment shown (or from `from`, sought first) until `until` (or the end of
   * the recording), at this.speed.
   * @param {{from?: number, until?: number|null}} [o]
   */
  async play(o = {}) {
    if (o.from !== undefined) await this.seek(o.from);
    else if (this.pending) await this.pending; // a drag's last moment first
    if (!this.active) return;
    this.until = o.until ?? null;
    this.playing = true;
    this.clock = { rec: this.at, wall: performance.now() };
    this.hooks.playing(true);
    const id = this.seekId;
    this.events().fill();
    /** @type {FrameRequestCallback} */
    const frame = async () => {
      if (!this.playing || id !== this.seekId) return;
      const now = performance.now();
      let rec = this.clock.rec + (now - this.clock.wall) * this.speed;
      let n = 0;
      for (;;) {
        const r = /** @type {EventReader} */ (this.reader);
        if (r.left < 500 && !r.done) r.fill();
        const e = r.peek();
        if (!e) {
          if (r.done) break;
          await r.fill();
          if (!this.playing || id !== this.seekId) return;
          continue;
        }
        if (e.session === this.session && e.seq <= this.seq) {
          r.take();
          continue;
        }
        const t = parseTime(e.time);
        if (this.until !== null && t > this.until) break;
        if (t > rec) {
          // A long idle stretch of the recording is skipped, not waited through.
          if ((t - rec) / this.speed > IDLE_SKIP_MS) {
            this.clock = { rec: t - 300 * this.speed, wall: now };
            rec = this.clock.rec;
          }
          break;
        }
        r.take();
        if (await this.applyEvent(e)) {
          // Started again from a rebuilt state (a new session or a gap): go on from there.
          if (n) this.hooks.applied(n);
          return this.resume(rec);
        }
        if (!this.playing) return;
        n++;
      }
      if (n) this.hooks.applied(n);
      const r = /** @type {EventReader} */ (this.reader);
      const end = this.until !== null ? this.until : r.done && !r.left ? this.at : Infinity;
      this.at = Math.min(rec, end);
      this.store.clock = this.at;
      this.hooks.moment(this.at);
      if (rec >= end) {
        this.pause();
        return;
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  /** Goes on playing after a rebuilt state, from recorded moment rec. @param {number} rec */
  resume(rec) {
    this.at = rec;
    this.playing = false;
    return this.play({ until: this.until });
  }

  pause() {
    if (!this.playing) return;
    this.playing = false;
    this.hooks.playing(false);
  }

  /** @param {number} s */
  setSpeed(s) {
    if (this.playing) this.clock = { rec: this.at, wall: performance.now() };
    this.speed = s;
  }

  /** Applies the recorded events up to and including the next change of the graph. */
  async step() {
    this.pause();
    let n = 0;
    for (;;) {
      const e = await this.nextEvent();
      if (!e) break;
      /** @type {EventReader} */ (this.reader).take();
      await this.applyEvent(e);
      n++;
      this.at = parseTime(e.time);
      if (NODE_EVENTS.includes(e.type)) break;
    }
    if (n) this.hooks.applied(n);
    this.hooks.moment(this.at);
    this.hooks.stepped?.();
  }

  /** Goes back to just before the last change of the graph in the state shown. */
  async stepBack() {
    this.pause();
    let last = [...this.appliedLog].reverse().find((x) => NODE_EVENTS.includes(x.type));
    if (!last) {
      const page = await historyPage({ to: isoTime(this.store.clock || this.at), session: this.session || undefined, order: "newest", limit: 50,
        type: NODE_EVENTS });
      const e = page.events.find((/** @type {any} */ x) => x.session === this.session && x.seq <= this.seq);
      if (!e) return;
      last = { session: e.session, seq: e.seq, time: parseTime(e.time), type: e.type };
    }
    const id = ++this.seekId;
    const prev = last;
    await this.load(id, () => stateAtSeq(prev.session, prev.seq - 1), null);
    // The moment shown: just before the change undone.
    this.at = Math.min(this.at, prev.time - 0.001);
    this.hooks.moment(this.at);
    this.hooks.stepped?.();
  }
}
