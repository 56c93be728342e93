// @ts-check
// The timeline under the graph: the recording's activity over a window of time as a small
// histogram (the collector's actions per bucket, deletes marked, errors as a red dot and
// conflicts the workers retried, which are not failures, as a dot of their own), the cascades
// as spans coloured by policy, the recording's gaps hatched, and a cursor to drag to any
// moment (time travel). The wheel zooms the window around the pointer; a click on a cascade
// selects it (the window closes in on it and time travel goes to its start).

import { timeline as fetchTimeline } from "./history.js";
import { clock } from "./dom.js";
import { countWords, recordedTally } from "./cascades.js";

/** @typedef {import("./history.js").Timeline} TimelineData */
/** @typedef {import("./history.js").RecordedCascade} RecordedCascade */

/** The ranges offered, in ms ("all": the whole recording). */
export const RANGES = /** @type {const} */ ([["15m", 15 * 60e3], ["1h", 3600e3], ["24h", 24 * 3600e3], ["all", 0]]);

/** Colour (a CSS custom property) of a cascade's span by its policy. */
export const POLICY_COLOR = /** @type {Record<string, string>} */ ({ Foreground: "--st-foreground", Background: "--st-deleting", Orphan: "--pv-orphaned" });

const HIST_H = 34, LANE_H = 6, LANES = 3, AXIS_H = 14, PAD_TOP = 4;
/** The narrowest window the wheel zooms to. */
const MIN_SPAN_MS = 500;

/**
 * @typedef {{seek: (t: number, debounce: boolean) => void, select: (c: RecordedCascade) => void, changed: () => void,
 *   error: (message: string) => void, count?: (c: RecordedCascade) => string}} TimelineHooks
 *   count: a cascade's count in words, as every place says it ("5 of 6 gone · 1 kept": cascades.js)
 */

export class Timeline {
  /** @param {HTMLCanvasElement} canvas @param {HTMLElement} tooltip @param {TimelineHooks} hooks */
  constructor(canvas, tooltip, hooks) {
    this.canvas = canvas;
    this.ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
    this.tooltip = tooltip;
    this.hooks = hooks;
    /** the range picked: a span ending now, or 0 for the whole recording */ this.range = 3600e3;
    /** the window drawn (epoch ms) */ this.from = Date.now() - this.range;
    this.to = Date.now() + this.range * 0.04;
    /** the window follows now (not zoomed or moved by the user) */ this.followNow = true;
    /** @type {TimelineData|null} */ this.data = null;
    /** the moment shown in time travel, NaN when live */ this.cursor = NaN;
    /** @type {RecordedCascade|null} */ this.selected = null;
    /** @type {{oldest?: string, newest?: string}|null} */ this.recording = null;
    this.w = 0;
    this.h = HIST_H + LANES * LANE_H + AXIS_H + PAD_TOP + 4;
    this.dragging = false;
    this.loading = 0;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.loadTimer = undefined;
    /** @type {Record<string, string>} */ this.colors = {};
    /** cascade spans as last drawn, for hit tests */
    /** @type {{c: RecordedCascade, x0: number, x1: number, y: number}[]} */ this.spans = [];
    /** Events in the window (from the buckets) and when the data came. */
    this.total = 0;
    this.fetchMs = 0;
    /** the error and retry dots last drawn, for tests: the bucket's time, counts and colours */
    /** @type {{t: number, errors: number, retries: number, colors: string[]}[]} */ this.dotsDrawn = [];
    this.readColors();
    canvas.addEventListener("pointerdown", (ev) => this.down(ev));
    canvas.addEventListener("pointermove", (ev) => this.move(ev));
    canvas.addEventListener("pointerup", (ev) => this.up(ev));
    canvas.addEventListener("pointerleave", () => (this.tooltip.hidden = true));
    canvas.addEventListener("wheel", (ev) => this.wheel(ev), { passive: false });
    new ResizeObserver(() => this.resize()).observe(canvas);
    // A window that follows now moves with it.
    setInterval(() => {
      if (!this.followNow || document.hidden) return;
      this.setWindow(...this.following(), true);
    }, 5000);
  }


  readColors() {
    const cs = getComputedStyle(document.documentElement);
    for (const n of ["--fg", "--muted", "--line", "--accent", "--bg", "--panel", "--group-border", "--st-deleting", "--st-foreground",
      "--pv-orphaned", "--danger", "--retry", "--st-removed"]) this.colors[n] = cs.getPropertyValue(n).trim() || "#888";
    this.draw();
  }

  resize() {
    const r = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(r.width));
    if (w === this.w) return;
    this.w = w;
    this.canvas.width = w * dpr;
    this.canvas.height = this.h * dpr;
    this.canvas.style.height = `${this.h}px`;
    this.load(0);
  }

  /** The oldest recorded moment (for "all"), or an hour ago before it is known. */
  oldest() {
    const o = this.recording?.oldest ? Date.parse(this.recording.oldest) : NaN;
    return Number.isFinite(o) ? o : Date.now() - 3600e3;
  }

  /** Picks a range: the last ms, or 0 for the whole recording. @param {number} ms */
  setRange(ms) {
    this.range = ms;
    this.followNow = true;
    this.setWindow(...this.following());
    this.hooks.changed();
  }

  /**
   * The window that follows now: the range, and a little room after now so that what just
   * happened is not squeezed against the edge.
   * @returns {[number, number]}
   */
  following() {
    const now = Date.now();
    // Nothing is recorded before the recording's start: the window starts there at the
    // earliest (with a little room), so that a young recording is not a sliver at the edge.
    const oldest = this.recording?.oldest ? Date.parse(this.recording.oldest) : NaN;
    let from = this.range ? now - this.range : this.oldest();
    if (Number.isFinite(oldest) && oldest > from) from = Math.max(from, oldest - Math.max(2000, (now - oldest) * 0.05));
    return [from, now + Math.max(1000, (now - from) * 0.04)];
  }

  /**
   * The window drawn; its data are fetched after a short pause (wheel, drag).
   * @param {number} from @param {number} to @param {boolean} [quiet] a periodic refresh: no loading mark
   */
  setWindow(from, to, quiet = false) {
    this.from = from;
    this.to = Math.max(to, from + MIN_SPAN_MS);
    this.draw();
    this.load(quiet ? 0 : 150);
  }

  /** The window stops following now (time travel: it holds still on the past). */
  hold() {
    if (!this.followNow) return;
    this.followNow = false;
    this.hooks.changed();
  }

  /** Closes in on a cascade (with some room either side) and marks it selected. @param {RecordedCascade} c */
  focusCascade(c) {
    this.selected = c;
    const end = c.end ?? Math.max(c.start + 1000, this.recordedNewest());
    const span = Math.max(end - c.start, 400);
    this.followNow = false;
    // Room after the end for playing on while the last removals fade (travelui.js: 1.5 s).
    this.setWindow(c.start - span * 0.2 - 300, end + Math.max(span * 0.3, 1800));
  }

  recordedNewest() {
    const n = this.recording?.newest ? Date.parse(this.recording.newest) : NaN;
    return Number.isFinite(n) ? n : Date.now();
  }

  /** @param {number} delay */
  load(delay) {
    clearTimeout(this.loadTimer);
    this.loadTimer = setTimeout(async () => {
      if (!this.w) return;
      const id = ++this.loading;
      const from = this.from, to = this.to, t0 = performance.now();
      try {
        const d = await fetchTimeline(from, to, Math.max(20, Math.min(400, Math.floor(this.w / 4))));
        if (id !== this.loading) return;
        this.data = d;
        this.fetchMs = performance.now() - t0;
        if (d.recording) this.recording = d.recording;
        if (this.followNow && !this.dragging) {
          // The recording's start is known now: the window may start later.
          const [f, t] = this.following();
          if (Math.abs(f - this.from) > (this.to - this.from) * 0.02) {
            this.setWindow(f, t, true);
            return;
          }
        }
        this.total = d.buckets.reduce((s, b) => s + b.events, 0);
        // The selected cascade, as the server knows it now (a running one grows).
        if (this.selected) this.selected = d.cascades.find((c) => String(c.id) === String(this.selected?.id)) || this.selected;
        this.draw();
        this.hooks.changed();
      } catch (e) {
        if (id === this.loading) this.hooks.error(/** @type {any} */ (e).message || String(e));
      }
    }, delay);
  }

  /** @param {number} t */
  x(t) {
    return ((t - this.from) / (this.to - this.from)) * this.w;
  }

  /** @param {number} x */
  t(x) {
    return this.from + (x / this.w) * (this.to - this.from);
  }

  draw() {
    const { ctx, colors: C, w } = this;
    if (!w) return;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, this.h);
    const top = PAD_TOP, histBottom = top + HIST_H, lanesTop = histBottom + 2, axisTop = lanesTop + LANES * LANE_H + 2;
    ctx.fillStyle = C["--bg"];
    ctx.fillRect(0, top, w, axisTop - top);
    const d = this.data;
    // Now, when in the window: a thin line behind the bars.
    const nowX = this.x(Date.now());
    if (nowX >= 0 && nowX <= w) {
      ctx.fillStyle = "#12b76a";
      ctx.fillRect(Math.min(w - 1, nowX), top, 1, axisTop - top);
    }
    // Gaps: hatched, over everything they cover.
    if (d) {
      for (const g of d.gaps) {
        const x0 = Math.max(0, this.x(g.start)), x1 = Math.min(w, this.x(g.end));
        if (x1 < 0 || x0 > w) continue;
        ctx.save();
        ctx.beginPath();
        ctx.rect(x0, top, Math.max(2, x1 - x0), axisTop - top);
        ctx.clip();
        ctx.strokeStyle = C["--muted"];
        ctx.globalAlpha = 0.5;
        ctx.lineWidth = 1;
        for (let x = x0 - 40; x < x1 + 40; x += 6) {
          ctx.beginPath();
          ctx.moveTo(x, axisTop);
          ctx.lineTo(x + (axisTop - top), top);
          ctx.stroke();
        }
        ctx.restore();
      }
      // Buckets: all actions (accent), deletes (red) over them, errors as a dot on top.
      const maxE = Math.max(1, ...d.buckets.map((b) => b.events));
      this.dotsDrawn = [];
      const scale = (/** @type {number} */ v) => (v ? Math.max(1.5, (Math.sqrt(v) / Math.sqrt(maxE)) * (HIST_H - 4)) : 0);
      for (const b of d.buckets) {
        const x0 = this.x(b.t), x1 = this.x(b.t + d.bucket);
        if (x1 < 0 || x0 > w) continue;
        const bw = Math.max(1, x1 - x0 - 1);
        const he = scale(b.events), hd = scale(b.deletes);
        ctx.fillStyle = C["--accent"];
        ctx.globalAlpha = 0.35;
        ctx.fillRect(x0, histBottom - he, bw, he);
        ctx.globalAlpha = 0.85;
        ctx.fillStyle = C["--st-deleting"];
        ctx.fillRect(x0, histBottom - hd, bw, hd);
        ctx.globalAlpha = 1;
        // Errors (red) and retried conflicts (their own colour): a dot each, side by side
        // when a bucket has both.
        const dots = [b.errors ? "--danger" : "", b.retries ? "--retry" : ""].filter(Boolean);
        // An error is a filled red dot; a retry a ring, so the two differ in shape as well.
        dots.forEach((col, i) => {
          const cx = x0 + bw / 2 + (dots.length > 1 ? (i ? 3.5 : -3.5) : 0);
          ctx.beginPath();
          if (col === "--retry") {
            ctx.strokeStyle = C[col];
            ctx.lineWidth = 1.6;
            ctx.arc(cx, top + 3, 2.4, 0, Math.PI * 2);
            ctx.stroke();
          } else {
            ctx.fillStyle = C[col];
            ctx.arc(cx, top + 3, 2.5, 0, Math.PI * 2);
            ctx.fill();
          }
        });
        if (dots.length) this.dotsDrawn.push({ t: b.t, errors: b.errors || 0, retries: b.retries || 0, colors: dots.map((c) => C[c]) });
      }
      // Cascades: spans in up to LANES lanes, the selected one outlined.
      this.spans = [];
      /** @type {number[]} */
      const laneEnd = new Array(LANES).fill(-Infinity);
      const sorted = [...d.cascades].sort((a, b) => a.start - b.start);
      for (const c of sorted) {
        const end = c.end ?? this.recordedNewest();
        const x0 = this.x(c.start), x1 = Math.max(x0 + 4, this.x(end));
        if (x1 < 0 || x0 > w) continue;
        let lane = laneEnd.findIndex((e) => e < x0 - 1);
        if (lane < 0) lane = laneEnd.indexOf(Math.min(...laneEnd));
        laneEnd[lane] = x1;
        const y = lanesTop + lane * LANE_H;
        ctx.fillStyle = C[POLICY_COLOR[c.policy] || "--muted"] || C["--muted"];
        ctx.fillRect(x0, y, x1 - x0, LANE_H - 1);
        if (this.selected && String(this.selected.id) === String(c.id)) {
          ctx.strokeStyle = C["--fg"];
          ctx.lineWidth = 1.5;
          ctx.strokeRect(x0 - 1, y - 1, x1 - x0 + 2, LANE_H + 1);
        }
        this.spans.push({ c, x0, x1, y });
      }
    }
    // The axis: a few round times.
    ctx.fillStyle = C["--muted"];
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "top";
    const span = this.to - this.from;
    const step = niceStep(span / Math.max(2, Math.floor(w / 110)));
    ctx.strokeStyle = C["--line"];
    ctx.lineWidth = 1;
    for (let t = Math.ceil(this.from / step) * step; t < this.to; t += step) {
      const x = Math.round(this.x(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, axisTop);
      ctx.stroke();
      const label = tickLabel(t, step);
      const tw = ctx.measureText(label).width;
      if (x + 3 + tw < w) ctx.fillText(label, x + 3, axisTop + 1);
    }
    // The cursor of time travel.
    if (Number.isFinite(this.cursor)) {
      const x = Math.max(1, Math.min(w - 1, this.x(this.cursor)));
      ctx.fillStyle = C["--fg"];
      ctx.fillRect(x - 1, top, 2, axisTop - top);
      ctx.beginPath();
      ctx.moveTo(x - 6, 0);
      ctx.lineTo(x + 6, 0);
      ctx.lineTo(x, 8);
      ctx.closePath();
      ctx.fill();
    }
  }

  /** @param {number} t the moment shown, NaN for live */
  setCursor(t) {
    this.cursor = t;
    // Playing past the window's right edge moves the window along.
    if (Number.isFinite(t) && !this.dragging && (t > this.to || t < this.from)) {
      const span = this.to - this.from;
      this.followNow = false;
      this.setWindow(t - span * 0.2, t + span * 0.8);
      return;
    }
    this.draw();
  }

  /** The cascade span under x, y. @param {number} x @param {number} y */
  spanAt(x, y) {
    return this.spans.find((s) => x >= s.x0 - 2 && x <= s.x1 + 2 && y >= s.y - 2 && y <= s.y + LANE_H + 2) || null;
  }

  /** A cascade's count in words (the hook's, else the recording's). @param {RecordedCascade} c */
  count(c) {
    if (this.hooks.count) return this.hooks.count(c);
    const t = recordedTally(c);
    return t ? countWords(t, c.policy) : "";
  }

  /** @param {PointerEvent} ev */
  pos(ev) {
    const r = this.canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  /** @param {PointerEvent} ev */
  down(ev) {
    const p = this.pos(ev);
    const s = this.spanAt(p.x, p.y);
    if (s) {
      this.hooks.select(s.c);
      return;
    }
    this.dragging = true;
    // The window holds still under the cursor (Back to live makes it follow now again).
    this.followNow = false;
    this.canvas.setPointerCapture(ev.pointerId);
    this.hooks.seek(this.t(p.x), true);
  }

  /** @param {PointerEvent} ev */
  move(ev) {
    const p = this.pos(ev);
    if (this.dragging) {
      this.hooks.seek(this.t(Math.max(0, Math.min(this.w, p.x))), true);
      this.tooltip.hidden = true;
      return;
    }
    const s = this.spanAt(p.x, p.y);
    this.canvas.style.cursor = s ? "pointer" : "ew-resize";
    const t = this.t(p.x);
    let text = clock(t);
    if (s) {
      const c = s.c;
      text = `${c.policy} deletion of ${c.root.kind} ${c.root.namespace ? c.root.namespace + "/" : ""}${c.root.name}\n` +
        `${clock(c.start)} – ${c.end ? clock(c.end) : "still running"}` +
        `${this.count(c) ? ` · ${this.count(c)}` : ""}${failures(c)}\nclick: select it and go to its start`;
    } else if (this.data) {
      const b = this.data.buckets.find((x) => t >= x.t && t < x.t + (this.data?.bucket || 0));
      // Per-user reads leave objects out, not counts: a count names nothing.
      const whole = document.getElementById("signed-in-as") ? " in the whole cluster" : "";
      if (b) text += `\n${b.events} events · ${b.deletes} deletes${failures(b)}${whole}`;
      const g = this.data.gaps.find((x) => t >= x.start && t <= x.end);
      if (g) text += `\nnot recorded: ${g.reason || "a gap"}`;
      text += "\ndrag: travel to a moment";
    }
    this.tooltip.textContent = text;
    this.tooltip.style.left = `${Math.min(p.x + 12, this.w - 260)}px`;
    this.tooltip.style.bottom = `${this.h + 6}px`;
    this.tooltip.hidden = false;
  }

  /** @param {PointerEvent} ev */
  up(ev) {
    if (!this.dragging) return;
    this.dragging = false;
    const p = this.pos(ev);
    this.hooks.seek(this.t(Math.max(0, Math.min(this.w, p.x))), true);
  }

  /** @param {WheelEvent} ev */
  wheel(ev) {
    ev.preventDefault();
    const p = this.pos(/** @type {any} */ (ev));
    const at = this.t(p.x);
    if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const dt = (ev.deltaX / this.w) * (this.to - this.from);
      this.followNow = false;
      this.setWindow(this.from + dt, this.to + dt);
      return;
    }
    const f = Math.exp(ev.deltaY * 0.002);
    const span = Math.max(MIN_SPAN_MS, (this.to - this.from) * f);
    const from = at - ((at - this.from) / (this.to - this.from)) * span;
    this.followNow = false;
    this.setWindow(from, from + span);
  }
}

/**
 * " · 1 error · 2 retried conflicts": the failed actions and, apart, the conflicts retried
 * (not failures).
 * @param {{errors?: number, retries?: number}} x a bucket or a cascade
 */
export function failures(x) {
  const e = x.errors || 0, r = x.retries || 0;
  return `${e ? ` · ${e} ${e === 1 ? "error" : "errors"}` : ""}${r ? ` · ${r} retried ${r === 1 ? "conflict" : "conflicts"}` : ""}`;
}

/** A round step of time near ms. @param {number} ms */
function niceStep(ms) {
  const steps = [100, 250, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 3 * 3600e3,
    6 * 3600e3, 12 * 3600e3, 86400e3, 2 * 86400e3, 7 * 86400e3];
  return steps.find((s) => s >= ms) || steps[steps.length - 1];
}

/** @param {number} t @param {number} step */
function tickLabel(t, step) {
  const d = new Date(t);
  const hm = d.toTimeString().slice(0, 5);
  if (step < 1000) return clock(t).slice(0, step % 100 ? 12 : 10); // 16:18:45.5, 16:18:45.25
  if (step < 60e3) return d.toTimeString().slice(0, 8);
  if (step >= 86400e3) return d.toDateString().slice(4, 10);
  return hm;
}
