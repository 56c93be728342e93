// @ts-check
// The recorded history (--history, docs/history.md): calls to /api/v1/history and its
// sub-resources, and the times they carry. Times on the wire are RFC 3339 with up to
// nanoseconds; the page keeps them as epoch milliseconds with a fraction, so that events
// within one millisecond keep their order and a moment asked for is the one shown.

import { get } from "./api.js";

/**
 * @typedef {{uid: string, kind: string, namespace?: string, name: string, apiVersion?: string}} Ref
 * @typedef {{id: string|number, session?: number, root: Ref, policy: string, start: number, end: number|null,
 *   objects?: number, deleted?: number, kept?: number, actions?: number, errors?: number, retries?: number}} RecordedCascade times in epoch ms;
 *   retries: conflicts (409) its workers retried, not errors; objects: its members (the root included), deleted: those
 *   gone, kept: those that stay (kept, or orphaned): counted by cascades.js's recordedTally
 * @typedef {{t: number, events: number, deletes: number, errors: number, retries?: number}} Bucket
 * @typedef {{start: number, end: number, reason?: string, session?: number}} Gap
 * @typedef {{from: number, to: number, bucket: number, buckets: Bucket[], cascades: RecordedCascade[], cascadesCapped: boolean,
 *   singleDeletions: number, gaps: Gap[], recording: any}} Timeline bucket in ms; cascadesCapped: more overlap it than it
 *   lists; singleDeletions: the deletions the collector had nothing to do in, not listed
 */

/**
 * Epoch milliseconds (with a fraction below the millisecond) of an RFC 3339 time.
 * @param {string|undefined|null} s
 */
export function parseTime(s) {
  if (!s) return NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) return Date.parse(s);
  const base = Date.parse(m[1] + m[3]);
  const frac = m[2] ? Number("0." + m[2]) * 1000 : 0;
  return base + frac;
}

/**
 * The RFC 3339 time (UTC, to the microsecond) of epoch milliseconds t.
 * @param {number} t
 */
export function isoTime(t) {
  const ms = Math.floor(t);
  const micro = Math.round((t - ms) * 1000);
  const s = new Date(ms).toISOString(); // ...ss.mmmZ
  return micro ? s.slice(0, -1) + String(Math.min(999, micro)).padStart(3, "0") + "Z" : s;
}

/** @param {Record<string, string|number|undefined|null|(string|number)[]>} params */
function query(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    for (const x of Array.isArray(v) ? v : [v]) p.append(k, String(x));
  }
  return p.toString();
}

/** One page of recorded events. @param {Record<string, any>} params */
export const historyPage = (params) => get(`/api/v1/history?${query(params)}`);

/** The state at moment t (epoch ms). @param {number} t */
export const stateAt = (t) => get(`/api/v1/history/state?${query({ at: isoTime(t) })}`);

/** The state just after event seq of session. @param {number} session @param {number} seq */
export const stateAtSeq = (session, seq) => get(`/api/v1/history/state?${query({ session, seq })}`);

/** A cascade of the server's timeline with its times in epoch ms. @param {any} c @returns {RecordedCascade} */
export function cascadeOf(c) {
  return { ...c, start: parseTime(c.start), end: c.end ? parseTime(c.end) : null };
}

/**
 * The timeline of [from, to) in n buckets (/api/v1/history/timeline), times in epoch ms.
 * @param {number} from @param {number} to @param {number} n
 * @returns {Promise<Timeline>}
 */
export async function timeline(from, to, n) {
  const t = await get(`/api/v1/history/timeline?${query({ from: isoTime(from), to: isoTime(to), buckets: n })}`);
  return {
    from: parseTime(t.from), to: parseTime(t.to), bucket: t.bucket / 1e6,
    buckets: (t.buckets || []).map((/** @type {any} */ b) => ({ ...b, t: parseTime(b.t) })),
    cascades: (t.cascades || []).map(cascadeOf),
    cascadesCapped: !!t.cascadesCapped,
    singleDeletions: t.singleDeletions || 0,
    gaps: (t.gaps || []).map((/** @type {any} */ g) => ({ ...g, start: parseTime(g.start), end: parseTime(g.end) })),
    recording: t.recording,
  };
}

/**
 * Reads the recorded events from a moment on, oldest first, a page at a time, ahead of
 * whoever consumes them (a player): `next()` gives the next event or null at the end.
 */
export class EventReader {
  /** @param {number} from epoch ms @param {number|null} to @param {number} [pageSize] */
  constructor(from, to, pageSize = 2000) {
    this.params = { from: isoTime(from), to: to === null ? undefined : isoTime(to), order: "oldest", limit: pageSize };
    /** @type {any[]} */ this.buf = [];
    this.i = 0;
    /** @type {string|undefined} */ this.cursor = undefined;
    this.done = false;
    /** @type {Promise<void>|null} */ this.loading = null;
    /** @type {any[]} */ this.gaps = [];
  }

  /** Fetches the next page unless one is on its way or the end was reached. */
  fill() {
    if (this.done || this.loading) return this.loading;
    this.loading = (async () => {
      const page = await historyPage({ ...this.params, cursor: this.cursor });
      this.buf = this.buf.slice(this.i).concat(page.events);
      this.i = 0;
      for (const g of page.gaps || []) this.gaps.push(g);
      this.cursor = page.nextCursor;
      if (!this.cursor) this.done = true;
    })().finally(() => (this.loading = null));
    return this.loading;
  }

  /** Events held and not yet taken. */
  get left() {
    return this.buf.length - this.i;
  }

  /** The next event without taking it, or null when none is held now. */
  peek() {
    return this.i < this.buf.length ? this.buf[this.i] : null;
  }

  take() {
    return this.i < this.buf.length ? this.buf[this.i++] : null;
  }
}
