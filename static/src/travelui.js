// @ts-check
// The page's history and time travel (with --history, or a replay; see docs/ui.md): the
// travel banner, the timeline and its controls, the history tab, recorded cascades to
// select and play, what time travel's keys do, and replay mode's opening. It owns none of the
// page's state: timetravel.js hands it what it needs (the live store, select, writeURL, …) and
// shows the store it asks for; TimeTravel (travel.js) keeps the recorded moment's state.

import { TimeTravel, SPEEDS } from "./travel.js";
import { Timeline, RANGES } from "./timeline.js";
import { HistoryView } from "./historyview.js";
import { historyPage, parseTime, isoTime, cascadeOf, timeline as fetchTimeline } from "./history.js";
import { $, clock } from "./dom.js";
import { get, apiPath } from "./api.js";
import { countText, countWords, recordedTally } from "./cascades.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./cascades.js").Cascades} Cascades */
/** @typedef {import("./history.js").RecordedCascade} RecordedCascade */

/**
 * What the page gives time travel: the live state to go back to, and the page's own steps.
 * @typedef {object} TravelPage
 * @property {boolean} replay a recording served by gcscope replay: no live stream, no "now"
 * @property {Store} live the live state, shown again on leaving time travel
 * @property {Cascades} liveCascades
 * @property {(s: Store, c: Cascades) => void} showStore shows a store and its cascades (time travel's, or the live one)
 * @property {(ms: number) => void} seeked the store shown holds another moment now (the seek took ms): lay it out again
 * @property {() => void} applied playing applied recorded events to the store shown
 * @property {() => void} showConn the connection's dot, which says when what is drawn is past
 * @property {(uid: string, center: boolean, keepTab: boolean) => void} select
 * @property {() => void} writeURL
 * @property {(text: string) => void} toast
 * @property {import("./tabs.js").Tabs} tabs the side panel's tabs (the history view is one)
 */

/** "15:29:54.123 · Mon 23 Nov" @param {number} t */
function momentText(t) {
  return `${clock(t)} · ${new Date(t).toLocaleDateString("en-GB", { weekday: "short", day: "numeric", month: "short" })}`;
}

/** "Mon 23 Nov, 15:52:58.224 – 15:53:00.668" (the second date only when it differs). @param {number} from @param {number} to */
function rangeText(from, to) {
  const day = (/** @type {number} */ t) => new Date(t).toLocaleDateString("en-GB", { weekday: "short", day: "numeric", month: "short" });
  return `${day(from)}, ${clock(from)} – ${day(to) === day(from) ? "" : day(to) + ", "}${clock(to)}`;
}

/**
 * The last recorded cascade uid took part in (as its owner or a member): the server's
 * /history/cascades, else found from the object's own events.
 * @param {string} uid
 * @returns {Promise<RecordedCascade|null>}
 */
async function lastCascadeOf(uid) {
  try {
    const r = await get(`/api/v1/history/cascades?uid=${encodeURIComponent(uid)}`);
    const list = /** @type {any[]} */ (Array.isArray(r) ? r : r.cascades || []).map(cascadeOf);
    list.sort((a, b) => b.start - a.start);
    return list[0] || null;
  } catch (e) {
    if (/** @type {any} */ (e).status !== 404) throw e;
  }
  // A server without /history/cascades: the object's own deletion, from its events.
  const page = await historyPage({ uid, type: ["nodeUpdated", "nodeRemoved"], order: "newest", limit: 500 });
  const evs = page.events.filter((/** @type {any} */ e) => e.node?.uid === uid || e.object?.uid === uid);
  const i = evs.findIndex((/** @type {any} */ e) => e.type === "nodeRemoved" || e.node?.beingDeleted);
  if (i < 0) return null;
  const end = evs[i].type === "nodeRemoved" ? parseTime(evs[i].time) : null;
  let j = i;
  while (j + 1 < evs.length && evs[j + 1].type === "nodeUpdated" && evs[j + 1].node?.beingDeleted) j++;
  const first = evs[j].node || evs[i].node || evs[i].object;
  const fin = first?.finalizers || [];
  return { id: `object:${uid}`, root: { ...(evs[i].object || first), uid }, start: parseTime(evs[j].time),
    end, policy: fin.includes("foregroundDeletion") ? "Foreground" : fin.includes("orphan") ? "Orphan" : "Background" };
}

export class TravelUI {
  /** @param {TravelPage} page */
  constructor(page) {
    this.page = page;
    const { replay } = page;
    /** @type {RecordedCascade|null} */ this.selectedCascade = null;
    /** The window of the whole recording, in replay mode. @type {[number, number]} */
    this.replayWindow = [0, 0];
    const body = document.body;
    const banner = $("travel-banner"), tTime = $("travel-time"), tNote = $("travel-note");
    const tr = new TimeTravel({
      enter: () => {
        body.classList.add("travel");
        page.showConn();
        banner.hidden = false;
        // Travelling (by a link as by a drag): the timeline's window holds still, off now.
        tl.hold();
        page.showStore(tr.store, tr.cascades);
        this.updateControls();
      },
      leave: () => {
        body.classList.remove("travel");
        page.showConn();
        banner.hidden = true;
        this.selectedCascade = null;
        tl.selected = null;
        page.showStore(page.live, page.liveCascades);
        page.writeURL();
        tl.setCursor(NaN);
        // The timeline follows now again, over the range picked.
        tl.setRange(tl.range);
        this.updateControls();
      },
      moment(t) {
        tl.setCursor(t);
        tTime.textContent = momentText(t);
        tTime.dataset.at = isoTime(t);
      },
      seeked(state, ms) {
        page.writeURL();
        if (!replay) tNote.textContent = state.note || (tr.playing ? "" : "the live state goes on underneath");
        page.seeked(ms);
      },
      applied() {
        page.applied();
      },
      // A step (→, ←) moves the moment shown without a seek: the URL follows it, so that a
      // link shared then opens that moment.
      stepped() {
        page.writeURL();
      },
      playing: (on) => {
        page.writeURL();
        if (!replay && !on && tr.active) tNote.textContent = "paused · the live state goes on underneath";
        else if (!replay && on) tNote.textContent = `playing at ${tr.speed}×`;
        this.updateControls();
      },
      error(m) {
        page.toast(`Time travel: ${m}`);
        // The moment refused is not the view: the URL names the one shown, if any.
        page.writeURL();
      },
    });
    this.travel = tr;
    const tl = new Timeline(/** @type {HTMLCanvasElement} */ ($("timeline-canvas")), $("tl-tooltip"), {
      seek: (t, debounce) => tr.seek(t, { debounce }),
      select: (c) => this.selectCascade(c),
      changed: () => {
        this.updateTimelineTitle();
        this.historyView?.setWindow(tl.from, tl.to, this.windowTitle(), this.historyTabShown());
        if (this.historyTabShown()) this.historyView?.render(); // its rows' cascade counts
        for (const b of document.querySelectorAll("#timeline [data-range]")) {
          const ms = RANGES.find(([k]) => k === /** @type {HTMLElement} */ (b).dataset.range)?.[1];
          b.setAttribute("aria-pressed", String(tl.followNow && ms === tl.range));
        }
      },
      error: (m) => ($("tl-title").textContent = `The timeline could not be read: ${m}`),
      count: (c) => this.cascadeCount(c),
    });
    this.timeline = tl;
    // While the live page follows a cascade, the timeline is read again every second (not
    // every 5 s), so that its caption and spans have the cascade as soon as the recording
    // does (the recorder writes within a second), and once more after it ends.
    let cascadeSeen = -Infinity;
    setInterval(() => {
      if (replay || tr.active || document.hidden || !tl.followNow) return;
      if (page.liveCascades.active.size) cascadeSeen = Date.now();
      if (Date.now() - cascadeSeen < 3000) tl.load(0);
    }, 1000);
    // A cascade found under way at the moment shown began when the recording says, and
    // concerned as many objects as it says (those gone before the moment included).
    tr.cascades.recorded = (uid, t) => tl.data?.cascades.find((c) => c.root.uid === uid && c.start <= t && (c.end === null || c.end >= t));
    this.historyView = new HistoryView($("history-panel"), {
      cascade: (id) => tl.data?.cascades.find((c) => String(c.id) === id) || null,
      count: (c) => this.cascadeCount(c),
      async cascadeOf(id) {
        const first = await historyPage({ cascade: id, order: "oldest", limit: 1 });
        const last = await historyPage({ cascade: id, order: "newest", limit: 1 });
        const e = first.events[0];
        if (!e) return null;
        const a = e.action || {};
        return { id, root: a.for || a.object || e.object, policy: a.policy || "", start: parseTime(e.time), end: parseTime(last.events[0]?.time || e.time) };
      },
      selectCascade: (c) => this.selectCascade(c),
      play: (c) => this.playCascade(c),
      object(ref, t) {
        if (!ref?.uid) return;
        tr.seek(t - 0.001).then(() => page.select(ref.uid, true, true));
      },
    });
    for (const b of document.querySelectorAll("#timeline [data-range]")) {
      b.addEventListener("click", () => {
        const ms = RANGES.find(([k]) => k === /** @type {HTMLElement} */ (b).dataset.range)?.[1] ?? 3600e3;
        if (replay) tl.setWindow(...this.replayWindow); // a recording has no "now": all of it
        else tl.setRange(ms);
      });
    }
    $("tl-play").addEventListener("click", () => this.togglePlay());
    // From live, a step goes to the newest recorded moment first.
    $("tl-step").addEventListener("click", () => (tr.active ? tr.step() : tr.seek(tl.recordedNewest())));
    $("tl-back").addEventListener("click", () => (tr.active ? tr.stepBack() : tr.seek(tl.recordedNewest())));
    $("tl-speed").addEventListener("change", () => this.setSpeed(Number(/** @type {HTMLSelectElement} */ ($("tl-speed")).value)));
    $("tl-live").addEventListener("click", () => (tr.active ? this.backToLive() : tl.setRange(tl.range)));
    $("back-to-live").addEventListener("click", () => this.backToLive());
    $("back-to-live").hidden = replay;
    page.tabs.onShow((tab) => {
      if (tab === "history") this.historyView.setWindow(this.timeline.from, this.timeline.to, this.windowTitle(), true);
    });
    if (replay) tl.followNow = false;
    this.updateControls();
  }

  /**
   * A recorded cascade's count in words, as every place says it (cascades.js): the
   * recording's (history.Cascade.Count), or, while it runs and the live page follows it, the
   * live count (the recording learns of a member once the collector reaches it, the page as
   * soon as the deletion begins: the same definition, a moment earlier).
   * @param {RecordedCascade} c
   */
  cascadeCount(c) {
    const live = c.end === null && !this.page.replay && !this.travel.active ? this.page.liveCascades.of(c.root.uid) : null;
    if (live) return countText(live);
    const t = recordedTally(c);
    return t ? countWords(t, c.policy) : "";
  }

  backToLive() {
    if (this.page.replay) return;
    this.travel.leave();
  }

  /**
   * Selects a recorded cascade: the timeline closes in on it (unless zoom is false) and time
   * travel goes to its start, its owner selected.
   * @param {RecordedCascade} c @param {boolean} [zoom]
   */
  selectCascade(c, zoom = true) {
    this.selectedCascade = c;
    if (zoom) this.timeline.focusCascade(c);
    else {
      this.timeline.selected = c;
      this.timeline.draw();
    }
    return this.travel.seek(c.start - 1).then(() => {
      if (this.travel.active) this.page.select(c.root.uid, true, true);
    });
  }

  /** Plays a recorded cascade from just before its start to a moment after its end. @param {RecordedCascade} c */
  async playCascade(c) {
    await this.selectCascade(c);
    const end = c.end ?? this.timeline.recordedNewest();
    this.travel.play({ until: end + 1500 });
  }

  /** The last recorded cascade uid took part in, or null. @param {string} uid */
  lastCascadeOf(uid) {
    return lastCascadeOf(uid);
  }

  /** "Replay the last cascade" of an object, live or gone. @param {string} uid */
  async replayLastCascade(uid) {
    try {
      const c = await lastCascadeOf(uid);
      if (!c) {
        this.page.toast("The recording holds no deletion of this object.");
        return;
      }
      await this.playCascade(c);
    } catch (e) {
      this.page.toast(`Replay: ${/** @type {any} */ (e).message || e}`);
    }
  }

  /** Downloads the recorded events of the window the timeline shows (/api/v1/history/export). */
  exportHistory() {
    const tl = this.timeline;
    const a = document.createElement("a");
    a.href = `${apiPath("/api/v1/history/export")}?from=${encodeURIComponent(isoTime(tl.from))}&to=${encodeURIComponent(isoTime(tl.to))}`;
    a.download = "";
    document.body.append(a);
    a.click();
    a.remove();
    this.page.toast(`Exporting the history from ${momentText(tl.from)} to ${momentText(tl.to)}.`);
  }

  /** What the timeline's window is, in words. */
  windowTitle() {
    const tl = this.timeline;
    if (this.page.replay && tl.from === this.replayWindow[0] && tl.to === this.replayWindow[1]) return "over the whole recording";
    if (tl.followNow && !this.page.replay) {
      const r = RANGES.find(([, ms]) => ms === tl.range)?.[0];
      return r === "15m" ? "in the last 15 minutes" : r === "1h" ? "in the last hour" : r === "24h" ? "in the last 24 hours" : "since the recording began";
    }
    return `between ${clock(tl.from).slice(0, 8)} and ${clock(tl.to).slice(0, 8)}`;
  }

  updateControls() {
    const tr = this.travel;
    const playBtn = $("tl-play");
    playBtn.textContent = tr.playing ? "❚❚ Pause" : "▶ Play";
    playBtn.dataset.state = tr.playing ? "playing" : "paused";
    $("tl-live").hidden = this.page.replay;
    $("tl-live").classList.toggle("on", !tr.active);
    $("tl-live").textContent = tr.active ? "Back to live" : "● Live";
    document.body.dataset.travel = tr.active ? (tr.playing ? "playing" : "paused") : "";
  }

  /** The history view, or back to the object's (the h key). */
  toggleHistoryTab() {
    this.showTab(this.historyTabShown() ? "object" : "history");
  }

  /** One speed slower (-1) or faster (+1) (the [ and ] keys). @param {number} d */
  speedStep(d) {
    const i = SPEEDS.indexOf(this.travel.speed) + d;
    this.setSpeed(SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, i))]);
  }

  /** @param {number} s */
  setSpeed(s) {
    this.travel.setSpeed(s);
    /** @type {HTMLSelectElement} */ ($("tl-speed")).value = String(s);
  }

  togglePlay() {
    const tr = this.travel, tl = this.timeline;
    if (tr.playing) return tr.pause();
    if (tr.active) {
      const c = this.selectedCascade;
      const inside = c && tr.at >= c.start - 2000 && tr.at <= (c.end ?? Infinity);
      tr.play({ until: inside && c ? (c.end ?? tl.recordedNewest()) + 1500 : null });
      return;
    }
    // Live: play the selected cascade, else the last one in the timeline.
    const list = tl.data?.cascades || [];
    const c = this.selectedCascade || [...list].sort((a, b) => b.start - a.start)[0];
    if (c) this.playCascade(c);
    else this.page.toast("No cascade in the timeline's window to play: drag the timeline to a moment first, or pick a longer range.");
  }

  historyTabShown() {
    return this.page.tabs.shown() === "history";
  }

  /** @param {"object"|"history"} tab */
  showTab(tab) {
    this.page.tabs.show(tab);
  }

  updateTimelineTitle() {
    const tl = this.timeline;
    const d = tl.data;
    const n = d?.cascades.length || 0;
    // Capped: the timeline lists the newest cascades only; say there are more.
    let cascadesText = d?.cascadesCapped ? `more than ${n.toLocaleString("en-US")} cascades (the newest drawn)` : `${n} cascade${n === 1 ? "" : "s"}`;
    // Deletions the collector only watched (a Pod its ReplicaSet deleted) are not drawn.
    const singles = d?.singleDeletions || 0;
    if (singles) cascadesText += ` · ${singles.toLocaleString("en-US")} single deletion${singles === 1 ? "" : "s"}`;
    const whole = document.getElementById("signed-in-as") ? " (whole cluster)" : "";
    $("tl-title").textContent = d ? `${this.windowTitle()} · ${tl.total.toLocaleString("en-US")} events${whole} · ${cascadesText}` : "loading…";
    $("tl-title").title = singles ? "Single deletions: objects deleted with no dependents, the collector had nothing to do; not drawn. Search or select one to replay it." : "";
  }

  /**
   * Replay mode: the recording at the moment the URL names (?at=), else from its largest
   * cascade, or its start; no live stream. The object the URL selects (?sel=) stays selected.
   * @param {number} at the URL's moment, NaN when none @param {string|null} sel the URL's selection
   */
  async startReplay(at, sel) {
    const tl = this.timeline;
    const conn = $("conn");
    conn.dataset.state = "replay";
    conn.textContent = "replay";
    conn.title = "a recording, served by gcscope replay: no cluster, nothing live";
    try {
      const first = await historyPage({ order: "oldest", limit: 1 });
      const rec = first.recording || {};
      const from = parseTime(rec.oldest || first.events[0]?.time), to = parseTime(rec.newest) || from + 60e3;
      tl.recording = rec;
      tl.followNow = false;
      const pad = Math.max(500, (to - from) * 0.02);
      this.replayWindow[0] = from - pad;
      this.replayWindow[1] = to + pad;
      tl.setWindow(...this.replayWindow);
      $("travel-tag").textContent = "Replay of a recording";
      $("travel-note").textContent = rangeText(from, to);
      $("travel-note").dataset.range = `${isoTime(from)}/${isoTime(to)}`;
      // A link to a moment of the replay: that moment (unless the recording does not hold it).
      if (Number.isFinite(at)) {
        await this.travel.seek(at);
        if (this.travel.active) {
          if (sel) this.page.select(sel, true, true);
          return;
        }
      }
      const d = await fetchTimeline(from, to + 1, 100).catch(() => null);
      // The largest (the earliest of equals): a Pod a ReplicaSet deleted is a cascade of
      // one, not what the recording was shared for.
      const c = d?.cascades.sort((a, b) => (b.objects ?? 0) - (a.objects ?? 0) || a.start - b.start)[0];
      if (c) await this.selectCascade(c, false);
      else await this.travel.seek(from);
      if (sel) this.page.select(sel, true, true);
    } catch (e) {
      this.page.toast(`The recording could not be read: ${/** @type {any} */ (e).message || e}`);
    }
  }
}
