// @ts-check
// The recorded history (--history, docs/history.md): calls to /api/v1/history and its
// sub-resources, and the times they carry. Times on the wire are RFC 3339 with up to
// nanoseconds; the page keeps them as epoch milliseconds with a fraction, so that events
// within one millisecond keep their order and a moment asked for is the one shown.

import { get } from "./api.js";

/**
 * @typedef {{uid: string, kind: string, namespace?: string, name: string, apiVersion?: string}} Ref
 * @typedef {{id: string|number, session?: number, root: Ref, policy: string, start: number, end: number|null,
 *   objects?: number, deleted?: number, actions?: number, errors?: number}} RecordedCascade times in epoch ms
 * @typedef {{t: number, events: number, deletes: number, errors: number}} Bucket
 * @typedef {{start: number, end: number, reason?: string, session?: number}} Gap
 * @typedef {{from: number, to: number, bucket: number, buckets: Bucket[], cascades: RecordedCascade[], gaps: Gap[],
 *   recording: any, approximate?: string}} Timeline bucket in ms; approximate: why the figures are partial
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
 * The timeline of [from, to) in n buckets: /api/v1/history/timeline when the server has it;
 * else built here from the recorded events (bounded: at most MAX_FALLBACK_EVENTS, after
 * which the figures are marked approximate), with the cascades the collector's deletes name.
 * @param {number} from @param {number} to @param {number} n
 * @returns {Promise<Timeline>}
 */
export async function timeline(from, to, n) {
  if (noTimeline) return timelineFromEvents(from, to, n);
  try {
    const t = await get(`/api/v1/history/timeline?${query({ from: isoTime(from), to: isoTime(to), buckets: n })}`);
    return {
      from: parseTime(t.from), to: parseTime(t.to), bucket: t.bucket / 1e6,
      buckets: (t.buckets || []).map((/** @type {any} */ b) => ({ ...b, t: parseTime(b.t) })),
      cascades: (t.cascades || []).map(cascadeOf),
      gaps: (t.gaps || []).map((/** @type {any} */ g) => ({ ...g, start: parseTime(g.start), end: parseTime(g.end) })),
      recording: t.recording,
    };
  } catch (e) {
    if (/** @type {any} */ (e).status !== 404) throw e;
    noTimeline = true; // asked once: an older server
  }
  return timelineFromEvents(from, to, n);
}

/** The server has no /api/v1/history/timeline (it answered 404). */
let noTimeline = false;

/** The most events the page reads to draw a timeline itself (when the server has no /timeline). */
const MAX_FALLBACK_EVENTS = 30_000;

/**
 * The timeline built from the events themselves (a server without /timeline): the
 * collector's actions counted per bucket, and a cascade per owner that a delete's reason
 * names as gone or deleting.
 * @param {number} from @param {number} to @param {number} n @returns {Promise<Timeline>}
 */
async function timelineFromEvents(from, to, n) {
  const bucket = Math.max(1, (to - from) / n);
  /** @type {Bucket[]} */
  const buckets = Array.from({ length: n }, (_, i) => ({ t: from + i * bucket, events: 0, deletes: 0, errors: 0 }));
  /** @type {any} */
  let page = null;
  let read = 0;
  /** @type {string|undefined} */
  let cursor;
  /** @type {Map<string, RecordedCascade>} */
  const cascades = new Map();
  do {
    page = await historyPage({ from: isoTime(from), to: isoTime(to), type: ["action", "nodeUpdated", "nodeRemoved"], order: "oldest", limit: 5000, cursor });
    for (const e of page.events) {
      const t = parseTime(e.time);
      const a = e.action;
      if (a) {
        const b = buckets[Math.min(n - 1, Math.max(0, Math.floor((t - from) / bucket)))];
        b.events++;
        if (a.verb === "delete") b.deletes++;
        if (a.error) b.errors++;
      }
      const id = e.cascade ?? null;
      if (id === null || id === undefined) continue;
      let c = cascades.get(String(id));
      if (!c) {
        // A cascade's first event is its root seen deleting.
        const root = e.node || e.object || a?.object;
        const fin = e.node?.finalizers || [];
        const policy = fin.includes("foregroundDeletion") ? "Foreground" : fin.includes("orphan") ? "Orphan" : "Background";
        cascades.set(String(id), (c = { id, root, policy, start: t, end: t, objects: 0, deleted: 0, actions: 0, errors: 0 }));
      }
      c.end = t;
      if (e.type === "nodeRemoved") c.objects = (c.objects || 0) + 1;
      if (!a) continue;
      c.actions = (c.actions || 0) + 1;
      if (a.verb === "delete" && !a.error) c.deleted = (c.deleted || 0) + 1;
      if (a.error) c.errors = (c.errors || 0) + 1;
    }
    read += page.events.length;
    cursor = page.nextCursor;
  } while (cursor && read < MAX_FALLBACK_EVENTS);
  return {
    from, to, bucket, buckets, cascades: [...cascades.values()],
    gaps: (page?.gaps || []).map((/** @type {any} */ g) => ({ ...g, start: parseTime(g.start), end: parseTime(g.end) })),
    recording: page?.recording, approximate: cursor ? `the first ${read.toLocaleString("en-US")} events` : "",
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
