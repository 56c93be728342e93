// @ts-check
// gcscope's UI: wires the stream, the store, the layout, the canvas and the panels, and
// keeps the view (filters, focus, selection, theme) in the URL so every view can be
// shared. Entry point of the bundle that `make generate` builds into static/app.js.

import { Store, GHOST_MS } from "./store.js";
import { Layout, sortKey } from "./layout.js";
import { Renderer, PREVIEW } from "./render.js";
import { Stream } from "./stream.js";
import { ObjectPanel } from "./panel.js";
import { QueuesPanel } from "./queues.js";
import { DeleteDialog } from "./dialog.js";
import { Cascades, CascadeStrip, progress, progressText, namespaceStatus } from "./cascades.js";
import { CollectorHealth } from "./health.js";
import { STATES, MARKERS, EDGES, stateOf } from "./states.js";
import { viewSVG, viewPNG, graphDOT, download } from "./export.js";
import { h, $, describe, clock } from "./dom.js";
import { post } from "./api.js";
import { ScenarioPlayer } from "./scenarios.js";
import { TravelUI } from "./travelui.js";
import { historyPage, parseTime, isoTime } from "./history.js";
import { Tabs } from "./tabs.js";
import { StuckView } from "./stuck.js";
import { DiscoveryBanner } from "./banner.js";
import { Shortcuts, shortcutTable } from "./shortcuts.js";

const body = document.body;
/** A recording served with no cluster (`gcscope replay FILE`): no live stream, no writes. */
const replay = body.dataset.replay === "true";
const readOnly = body.dataset.readOnly === "true" || replay;
/** The server records the engine's feed (--history): history view, timeline, time travel. */
const hasHistory = body.dataset.history === "true" || replay;

/** The live state, kept by the stream whatever the page shows. */
const live = new Store();
const liveCascades = new Cascades(live);
/** The state the page shows: the live one, or a recorded moment's (time travel). */
let store = live;
let cascades = liveCascades;
const layout = new Layout();
const canvas = /** @type {HTMLCanvasElement} */ ($("graph"));
const renderer = new Renderer(canvas, store, layout);
renderer.cascades = cascades;

/** What the user looks at; mirrored in the URL. */
const view = {
  /** @type {string[]} */ ns: [],
  /** @type {string[]} */ kind: [],
  q: "",
  /** @type {string|null} */ focus: null,
  /** @type {string|null} */ sel: null,
};
/** ?at=: the recorded moment the page was opened at. */
let atURL = "";
/** History and time travel, with --history (set up below; declared here, before anything can call for it). @type {TravelUI|null} */
let travelUI = null;
/** @type {Set<string>|null} the focus closure, when focused */
let focusSet = null;

const perf = { snapshotMs: /** @type {number|null} */ (null), firstFrameMs: /** @type {number|null} */ (null), applied: 0, drawn: 0, layoutMs: 0 };
let firstSnapshotPending = false;
let layoutDue = false;
let lastLiveCascades = 0;
let lastLayout = 0, layoutCost = 0, lastQueues = -Infinity, lastFilters = 0, lastCascades = 0, lastStrip = 0, lastStuckCount = -Infinity;
let fittedOnce = false;

// --- the view and the URL ---

function readURL() {
  const p = new URLSearchParams(location.search);
  view.ns = p.getAll("ns");
  view.kind = p.getAll("kind");
  view.q = p.get("q") || "";
  view.focus = p.get("focus");
  view.sel = p.get("sel");
  /** a recorded moment to travel to (with --history), RFC 3339 */
  atURL = p.get("at") || "";
  const theme = p.get("theme");
  if (theme === "dark" || theme === "light") setTheme(theme, false);
}

function writeURL() {
  const p = new URLSearchParams();
  for (const n of view.ns) p.append("ns", n);
  for (const k of view.kind) p.append("kind", k);
  if (view.q) p.set("q", view.q);
  if (view.focus) p.set("focus", view.focus);
  if (view.sel) p.set("sel", view.sel);
  // Time travel, paused at a moment: that moment is part of the view.
  const travel = travelUI?.travel;
  if (travel?.active && !travel.playing && Number.isFinite(travel.at)) p.set("at", isoTime(travel.at));
  const t = document.documentElement.dataset.theme;
  if (t && new URLSearchParams(location.search).get("theme")) p.set("theme", t);
  const url = location.pathname + (p.size ? "?" + p : "");
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

/** The filter the layout applies: the API's namespace and kind filters, and the focus. @param {import("./store.js").NodeState} n */
function keep(n) {
  if (view.ns.length && !view.ns.includes(n.namespace || "")) return false;
  if (view.kind.length && !view.kind.some((k) => k.toLowerCase() === n.kind.toLowerCase())) return false;
  if (focusSet && !focusSet.has(n.uid)) return false;
  return true;
}

function viewChanged() {
  store.dirtyNamespaces.add("*");
  layoutDue = true;
  writeURL();
  syncFilterControls();
  updateFocusChip();
}

// --- the frame loop ---

/**
 * Lays out again the dirty namespaces given (all of them by default: the user acted).
 * @param {number} now @param {Set<string>} [dirty]
 */
function relayout(now, dirty = store.dirtyNamespaces) {
  const anchorUID = renderer.centerItem();
  const before = anchorUID ? layout.box(anchorUID) : null;
  if (view.focus) {
    focusSet = store.closure([view.focus]);
    for (const [u, g] of store.ghosts) if (g.node.owners?.some((o) => focusSet?.has(o.uid)) || focusSet.has(u)) focusSet.add(u);
    dirty = store.dirtyNamespaces;
    dirty.add("*");
  } else focusSet = null;
  const t0 = performance.now();
  layout.update(store, keep, dirty, renderer.expanded, (ns) => {
    // A namespace being deleted: its box is wide enough for its progress too.
    const c = cascades.ofNamespace(ns);
    return c ? namespaceStatus(c, true) : "";
  });
  layoutCost = performance.now() - t0;
  perf.layoutMs = layoutCost;
  if (dirty === store.dirtyNamespaces) dirty.clear();
  else for (const ns of dirty) store.dirtyNamespaces.delete(ns);
  lastLayout = now;
  layoutDue = store.dirtyNamespaces.size > 0;
  if (!fittedOnce && layout.items.size) {
    fittedOnce = true;
    if (!(view.sel && revealAndCenter(view.sel, 1))) renderer.open(layout.workloadBounds());
  } else renderer.anchor(anchorUID, before);
  renderer.dirty = true;
  updateEmpty();
}

/**
 * The dirty namespaces whose layout may change now: not one in the middle of a cascade (a
 * removal still fading, or a cascade's counts moving, in the last GHOST_MS), so that nothing
 * moves while the user watches; it is laid out once it has settled.
 * @param {number} now
 */
function settledDirty(now) {
  const dirty = store.dirtyNamespaces;
  if (dirty.has("*")) return dirty;
  /** @type {Set<string>} */
  const out = new Set();
  for (const ns of dirty) {
    if (now - (store.removedAt.get(ns) ?? -Infinity) > GHOST_MS && !cascades.progressing(ns, now, GHOST_MS)) out.add(ns);
  }
  return out;
}

/** @param {number} now */
function tick(now) {
  if (store !== live) {
    // Time travel: the live state goes on underneath, its cascades followed, unseen.
    live.expire(now);
    if (live.touched.size || (liveCascades.active.size && now - lastLiveCascades > 100)) {
      lastLiveCascades = now;
      liveCascades.observe(live.touched, now);
      live.touched.clear();
    }
    live.dirtyNamespaces.clear();
  }
  if (store.expire(now)) layoutDue = true;
  if (store.dirtyNamespaces.size) layoutDue = true;
  // Cascades start from what changed; their counts are refreshed a few times a second,
  // before the layout, which holds still while one progresses.
  if (store.touched.size || (cascades.active.size && now - lastCascades > 100)) {
    lastCascades = now;
    cascades.observe(store.touched, now);
    if (cascades.active.size) renderer.dirty = true;
  }
  // Under heavy churn the layout runs at most every few frames, never more than a
  // quarter of the time.
  if (layoutDue && now - lastLayout >= Math.max(60, 4 * layoutCost)) {
    const ready = settledDirty(now);
    if (ready.size) relayout(now, ready);
  }
  if ((cascades.changed || cascades.active.size) && now - lastStrip > 250) {
    cascades.changed = false;
    lastStrip = now;
    cascadeStrip.render();
    // The selected owner's progress line follows its cascade (the owner itself may not change).
    if (view.sel && cascades.of(view.sel)) objectPanel.renderSoon();
  }
  if (store.touched.size) {
    renderer.dirty = true;
    for (const uid of store.touched) renderer.invalidate(uid);
    if (view.sel && store.touched.has(view.sel)) objectPanel.changed();
    store.touched.clear();
  }
  if (health) {
    if (live.shadowChanged) health.poke();
    live.shadowChanged = false;
    health.tick(now);
  }
  // Discovery is the live cluster's, whatever moment the page shows.
  if (live.syncChanged) {
    live.syncChanged = false;
    discoveryBanner.update(live.sync.discoveryFailures);
  }
  discoveryBanner.tick(now);
  if (now - lastStuckCount > 1000) {
    lastStuckCount = now;
    stuckView.count(live, Date.now());
  }
  if (store.queuesChanged && now - lastQueues > 250) {
    store.queuesChanged = false;
    lastQueues = now;
    queuesPanel.render();
  }
  if (now - lastFilters > 2000) {
    lastFilters = now;
    fillFilterOptions();
  }
  const drew = renderer.frame(now);
  if (drew && travelUI?.travel.playing && api.playFrames.length < 100_000) api.playFrames.push(now);
  perf.drawn = layout.items.size;
  perf.applied = store.applied;
  if (drew && firstSnapshotPending && !layoutDue) {
    firstSnapshotPending = false;
    perf.firstFrameMs = performance.now();
    api.ready = true;
  }
  requestAnimationFrame(tick);
}

// --- the stream ---

const conn = $("conn");
/** The stream's state and what it said of it. */
let connState = "connecting", connDetail = "";
/** Time travel over a live stream: what is drawn is past, the live state goes on underneath. */
const livePast = () => body.classList.contains("travel") && connState === "live";
/** The connection's dot: the stream's state, and in time travel that what is drawn is past. */
function showConn() {
  if (replay) return; // TravelUI.startReplay owns it
  const past = livePast();
  conn.dataset.state = connState;
  conn.textContent = past ? "○ live underneath" : connState === "live" ? "● live" : connState === "connecting" ? "connecting…" : connState === "offline" ? "offline — click to retry" : "reconnecting…";
  conn.title = past ? "Time travel: the page shows a recorded moment while the live stream goes on underneath. Click (or Esc) to go back to live." : connDetail;
}
const stream = new Stream({
  // The stream feeds the live store: it resumes from the live seq, whatever the page shows.
  seq: () => live.seq,
  onState(state, detail) {
    connState = state;
    connDetail = detail;
    showConn();
  },
  onFrame(f) {
    // Always into the live store: time travel shows another one and loses nothing of this.
    if (f.type === "snapshot") {
      live.applySnapshot(f);
      // What the user may see changed: objects gone from view are not deleted.
      if (f.reason === "permissions") liveCascades.reset();
      // A reload mid-cascade: pick up the cascades under way.
      liveCascades.observe([...live.nodes.keys()], performance.now());
      if (perf.snapshotMs === null) {
        perf.snapshotMs = performance.now();
        firstSnapshotPending = true;
      }
      if (store !== live) return;
      layoutDue = true;
      fillFilterOptions();
      if (view.sel) objectPanel.show(view.sel);
      // ?q= highlights its matches once there is something to match.
      if (view.q) runSearch();
    } else if (f.type === "deltas") {
      live.applyEvents(f.events);
      if (tracer && store === live) tracer.engine();
    }
  },
});
conn.addEventListener("click", () => (livePast() ? travelUI?.backToLive() : stream.retry()));

// --- panels ---

/** The side panel's tabs: the object, the stuck deletions, the history view (with --history). */
const tabs = new Tabs();

const objectPanel = new ObjectPanel($("object-body"), $("object-placeholder"), store, {
  readOnly,
  travelAt: () => (travelUI?.travel.active ? travelUI.travel.at : null),
  replay: hasHistory ? (uid) => travelUI?.replayLastCascade(uid) : undefined,
  select: (uid) => select(uid, true),
  focus: (uid) => setFocus(uid),
  del: (uid) => dialog.open(uid),
  cascade(uid) {
    const c = cascades.of(uid);
    return c ? { text: progressText(c, cascades.now()), progress: progress(c), running: c.end === null } : null;
  },
  // A namespace being deleted: its box says what the engine last said holds it, when no
  // member held by a finalizer says it already (discovery failing, say).
  explained(uid, ex) {
    const nsr = ex?.deletion?.namespace;
    const c = liveCascades.of(uid);
    if (c && c.policy === "Namespace") c.explained = nsr?.deletionTimestamp && nsr.next ? `next: ${nsr.next}` : "";
  },
});
// The stuck deletions (the Stuck tab): asked of the server only while shown; its badge is counted here.
const stuckView = new StuckView($("stuck-panel"), document.getElementById("stuck-count"), {
  select: (uid) => select(uid, true),
  known: (uid) => live.nodes.has(uid),
});
tabs.onShow((tab) => stuckView.setShown(tab === "stuck"));
// API discovery failing: the banner at the top of the page.
const discoveryBanner = new DiscoveryBanner($("discovery-banner"));
const cascadeStrip = new CascadeStrip($("cascades"), cascades, (uid) => select(uid, true));
// Shadow mode: how the cluster's collector follows the engine's decisions.
const health = $("collector-health") ? new CollectorHealth($("collector-health"), (uid) => select(uid, true)) : null;
const queuesPanel = new QueuesPanel($("queues"), $("actions"), $("sync-state"), store, (uid) => select(uid, true));
const dialog = new DeleteDialog(live, {
  preview(m) {
    renderer.preview = m;
    renderer.previewVersion++;
    renderer.dirty = true;
    legend();
  },
  select: (uid) => select(uid, true),
  done(uid, policy) {
    const n = store.nodes.get(uid);
    toast(`Deletion of ${n ? describe(n) : uid} accepted (${policy}). Follow the cascade in the graph and the queues.`);
    objectPanel.refreshExplain(300);
  },
});

/**
 * Opens or folds a set of loners (objects of one kind with no owner and no dependent).
 * Only its namespace is laid out again; the view stays on the set.
 * @param {import("./layout.js").Block} b
 */
function toggleLoners(b) {
  const open = !renderer.expanded.has(b.parent);
  if (open) renderer.expanded.add(b.parent);
  else renderer.expanded.delete(b.parent);
  store.dirtyNamespaces.add(b.group.ns);
  const at = { x: b.group.x + b.x, y: b.group.y + b.y };
  relayout(performance.now());
  const nb = layout.groups.get(b.group.ns)?.blocks.find((x) => x.parent === b.parent);
  if (!nb) return;
  if (open) renderer.fit({ x: nb.group.x + nb.x, y: nb.group.y + nb.y, w: nb.w, h: nb.h }, true, 1);
  else renderer.pan((at.x - nb.group.x - nb.x) * renderer.cam.k, (at.y - nb.group.y - nb.y) * renderer.cam.k);
}

/**
 * Centres on uid, first opening the set of loners it is folded into.
 * @param {string} uid @param {number} [k]
 */
function revealAndCenter(uid, k) {
  const b = layout.items.get(uid)?.block;
  if (b?.loner && renderer.collapsed(b)) {
    renderer.expanded.add(b.parent);
    store.dirtyNamespaces.add(b.group.ns);
    relayout(performance.now());
  }
  return renderer.centerOn(uid, k);
}

/**
 * Selects an object (null: none), centring on it when asked. The object panel comes to the
 * front, unless the history view asked (keepTab: the user goes on down its list).
 * @param {string|null} uid @param {boolean} [center] @param {boolean} [keepTab]
 */
function select(uid, center = false, keepTab = false) {
  if (uid && !keepTab && tabs.shown() !== "object") tabs.show("object");
  view.sel = uid;
  renderer.selected = uid;
  renderer.dirty = true;
  objectPanel.show(uid);
  if (uid && center && !revealAndCenter(uid)) {
    // Not drawn under the current filters: widen the view to show it.
    const n = store.nodes.get(uid);
    if (n && !keep(n)) {
      view.ns = [];
      view.kind = [];
      if (view.focus && focusSet && !focusSet.has(uid)) view.focus = null;
      viewChanged();
      relayout(performance.now());
      renderer.centerOn(uid);
    }
  }
  writeURL();
}

/** @param {string|null} uid */
function setFocus(uid) {
  view.focus = uid;
  if (uid && !view.sel) select(uid);
  viewChanged();
  relayout(performance.now());
  renderer.fit(layout.bounds);
}

function updateFocusChip() {
  const chip = $("focus-chip");
  chip.hidden = !view.focus;
  if (view.focus) {
    const n = store.nodes.get(view.focus);
    $("focus-name").textContent = n ? describe(n) : view.focus;
  }
}
$("focus-clear").addEventListener("click", () => setFocus(null));

// --- filters ---

const nsSelect = /** @type {HTMLSelectElement} */ ($("filter-ns"));
const kindSelect = /** @type {HTMLSelectElement} */ ($("filter-kind"));
let filterKey = "";

function fillFilterOptions() {
  const nss = new Set(view.ns), kinds = new Set(view.kind);
  for (const n of store.nodes.values()) {
    nss.add(n.namespace || "");
    kinds.add(n.kind);
  }
  const nsList = [...nss].sort(), kindList = [...kinds].sort();
  const key = nsList.join(",") + "|" + kindList.join(",");
  if (key === filterKey) return;
  filterKey = key;
  nsSelect.replaceChildren(h("option", { value: "*" }, "all"), ...nsList.map((ns) => h("option", { value: ns }, ns || "(cluster-scoped)")));
  kindSelect.replaceChildren(h("option", { value: "*" }, "all"), ...kindList.map((k) => h("option", { value: k }, k)));
  syncFilterControls();
}

function syncFilterControls() {
  nsSelect.value = view.ns.length === 1 ? view.ns[0] : "*";
  kindSelect.value = view.kind.length === 1 ? view.kind[0] : "*";
}

nsSelect.addEventListener("change", () => {
  view.ns = nsSelect.value === "*" ? [] : [nsSelect.value];
  viewChanged();
  relayout(performance.now());
  renderer.fit(layout.bounds);
});
kindSelect.addEventListener("change", () => {
  view.kind = kindSelect.value === "*" ? [] : [kindSelect.value];
  viewChanged();
  relayout(performance.now());
  renderer.fit(layout.bounds);
});

// --- search ---

const search = /** @type {HTMLInputElement} */ ($("search"));
const results = $("search-results");
/** @type {string[]} */
let resultUIDs = [];

function runSearch() {
  const q = search.value.trim().toLowerCase();
  view.q = search.value.trim();
  renderer.matches = new Set();
  resultUIDs = [];
  if (q) {
    /** @type {{uid: string, score: number, key: string}[]} */
    const found = [];
    for (const n of store.nodes.values()) {
      const score = searchScore(n, q);
      if (score < 0) continue;
      renderer.matches.add(n.uid);
      found.push({ uid: n.uid, score, key: sortKey(n) });
    }
    found.sort((a, b) => a.score - b.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    resultUIDs = found.slice(0, 50).map((f) => f.uid);
  }
  renderer.dirty = true;
  results.replaceChildren(...resultUIDs.map((u, i) => {
    const n = /** @type {any} */ (store.nodes.get(u));
    return h("li", { role: "option", "data-uid": u, class: i === 0 ? "active" : "", onmousedown: (/** @type {Event} */ ev) => { ev.preventDefault(); choose(u); } },
      h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""}`));
  }), renderer.matches.size > 50 ? h("li.muted", null, `${renderer.matches.size - 50} more highlighted in the graph`) : "");
  if (q && !resultUIDs.length) results.replaceChildren(h("li.muted", null, "no object matches"));
  // With a recording: objects that are gone too.
  if (q && hasHistory) results.append(h("li.recorded", { role: "option", id: "search-recording",
    onmousedown: (/** @type {Event} */ ev) => { ev.preventDefault(); searchRecording(search.value.trim()); } },
  h("b", null, "Search the recording"), h("span.muted", null, ` for “${search.value.trim()}”: deleted objects too`)));
  results.hidden = !q || document.activeElement !== search;
  writeURL();
}

/**
 * How well n matches q (lower is better, -1: not at all): the name exactly, then a name
 * that starts with it, then one that contains it, then the kind, namespace or uid.
 * @param {import("./store.js").NodeState} n @param {string} q lower case
 */
function searchScore(n, q) {
  const name = n.name.toLowerCase();
  if (name === q || n.uid === q) return 0;
  if (name.startsWith(q)) return 1;
  if (name.includes(q)) return 2;
  if (n.kind.toLowerCase() === q) return 3;
  return (n.kind + "\u0000" + (n.namespace || "") + "\u0000" + n.uid).toLowerCase().includes(q) ? 4 : -1;
}

/**
 * The recorded removals of objects whose name contains name, in any case, as the live
 * search matches (the newest first): a click travels to just before the removal, the
 * object selected, to see it or replay its last cascade.
 * @param {string} name
 */
async function searchRecording(name) {
  results.replaceChildren(h("li.muted", null, "searching the recording…"));
  try {
    const page = await historyPage({ nameContains: name, type: "nodeRemoved", order: "newest", limit: 20 });
    const seen = new Set();
    const found = page.events.filter((/** @type {any} */ e) => !seen.has(e.node?.uid) && seen.add(e.node?.uid));
    results.replaceChildren(...found.map((/** @type {any} */ e) => {
      const n = e.node, t = parseTime(e.time);
      return h("li", { role: "option", "data-uid": n.uid, "data-removed": e.time, onmousedown: (/** @type {Event} */ ev) => {
        ev.preventDefault();
        results.hidden = true;
        search.blur();
        travelUI?.travel.seek(t - 0.001).then(() => select(n.uid, true));
      } }, h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""} · removed ${clock(t)}`));
    }));
    if (!found.length) results.replaceChildren(h("li.muted", null, `the recording holds no removal of an object whose name contains “${name}”`));
  } catch (e) {
    results.replaceChildren(h("li.muted", null, `the recording could not be searched: ${/** @type {any} */ (e).message || e}`));
  }
  results.hidden = false;
}

/** @param {string} uid */
function choose(uid) {
  results.hidden = true;
  search.blur();
  select(uid, true);
}

search.addEventListener("input", runSearch);
search.addEventListener("focus", () => { if (search.value) runSearch(); });
search.addEventListener("blur", () => setTimeout(() => (results.hidden = true), 100));
search.addEventListener("keydown", (ev) => shortcuts.handle(ev, "search"));

// --- canvas interaction ---

const tooltip = $("tooltip");
/** @type {{x: number, y: number, moved: boolean, id: number}|null} */
let drag = null;

canvas.addEventListener("pointerdown", (ev) => {
  drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
  canvas.setPointerCapture(ev.pointerId);
});
canvas.addEventListener("pointermove", (ev) => {
  const r = canvas.getBoundingClientRect();
  if (drag) {
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (drag.moved || Math.abs(dx) + Math.abs(dy) > 3) {
      drag.moved = true;
      renderer.pan(dx, dy);
      drag.x = ev.clientX;
      drag.y = ev.clientY;
      tooltip.hidden = true;
      return;
    }
  }
  const hit = renderer.hit(ev.clientX - r.left, ev.clientY - r.top);
  const uid = hit?.item?.uid || null;
  if (uid !== renderer.hover) {
    renderer.hover = uid;
    renderer.dirty = true;
  }
  const nsDel = !hit?.item && !hit?.block && hit?.group?.ns ? cascades.ofNamespace(hit.group.ns) : null;
  if (nsDel) {
    // Over a namespace being deleted: how far it is and what holds it, in full.
    tooltip.textContent = `Namespace ${nsDel.ref.name}: ${nsDel.end === null ? "Terminating" : "deleted"}\n${progressText(nsDel, cascades.now())}` +
      (nsDel.baseline ? "" : "\n(the page found it under way: what went before is not known)") + "\nclick: its Namespace, and why it is still there";
    tooltip.style.left = `${ev.clientX - r.left + 14}px`;
    tooltip.style.top = `${ev.clientY - r.top + 14}px`;
    tooltip.hidden = false;
  } else if (hit?.item || hit?.block) {
    const b = hit.block;
    const text = hit.item ? tooltipText(hit.item)
      : b?.loner ? (hit.caption ? "click to fold them back into one box" : `${b.uids.length} ${b.loner}s with no owner and no dependent: the collector has nothing to do with them — click to list them`)
      : `${b?.uids.length} dependents of ${describe(/** @type {any} */ (store.nodes.get(b?.parent || "") || { kind: "", name: "?" }))} — click to open`;
    tooltip.textContent = text;
    tooltip.style.left = `${ev.clientX - r.left + 14}px`;
    tooltip.style.top = `${ev.clientY - r.top + 14}px`;
    tooltip.hidden = false;
  } else tooltip.hidden = true;
  canvas.style.cursor = hit?.item || hit?.block || nsDel ? "pointer" : "grab";
});
canvas.addEventListener("pointerleave", () => {
  tooltip.hidden = true;
  renderer.hover = null;
  renderer.dirty = true;
});
canvas.addEventListener("pointerup", (ev) => {
  // Only a press that began on the canvas is a click on it (a menu closing under the
  // pointer is not).
  const press = drag;
  drag = null;
  if (!press || press.moved) return;
  const r = canvas.getBoundingClientRect();
  const hit = renderer.hit(ev.clientX - r.left, ev.clientY - r.top);
  if (hit?.block?.loner) toggleLoners(hit.block);
  else if (hit?.block) {
    renderer.expanded.add(hit.block.parent);
    const b = hit.block;
    renderer.fit({ x: b.group.x + b.x, y: b.group.y + b.y, w: b.w, h: b.h });
  } else if (hit?.item) select(hit.item.uid);
  else if (hit?.group?.ns && cascades.ofNamespace(hit.group.ns)?.end === null) {
    // A namespace being deleted: its box stands for its Namespace (which is drawn apart, cluster-scoped).
    select(/** @type {any} */ (cascades.ofNamespace(hit.group.ns)).owner);
  } else select(null);
});
canvas.addEventListener("dblclick", (ev) => {
  const r = canvas.getBoundingClientRect();
  const hit = renderer.hit(ev.clientX - r.left, ev.clientY - r.top);
  if (hit?.item) setFocus(hit.item.uid);
});
canvas.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const r = canvas.getBoundingClientRect();
  if (ev.ctrlKey || Math.abs(ev.deltaY) >= Math.abs(ev.deltaX)) renderer.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * (ev.ctrlKey ? 0.01 : 0.0015)));
  else renderer.pan(-ev.deltaX, -ev.deltaY);
}, { passive: false });

/** @param {import("./layout.js").Item} it */
function tooltipText(it) {
  const n = it.node, live = store.nodes.get(it.uid);
  const st = live ? stateOf(store, live) : "removed";
  const label = STATES.find((s) => s.id === st)?.label || st;
  return `${n.kind} ${n.name}${n.namespace ? "\nnamespace " + n.namespace : ""}\n${label}` +
    `${n.finalizers?.length ? "\nfinalizers: " + n.finalizers.join(", ") : ""}`;
}

new ResizeObserver(() => renderer.resize()).observe(canvas);
$("zoom-in").addEventListener("click", () => renderer.zoomAt(renderer.w / 2, renderer.h / 2, 1.4));
$("zoom-out").addEventListener("click", () => renderer.zoomAt(renderer.w / 2, renderer.h / 2, 1 / 1.4));
$("zoom-fit").addEventListener("click", () => renderer.fit(layout.bounds));

// --- legend, empty state, toast ---

function legend() {
  const sw = (/** @type {string} */ color, /** @type {string} */ cls = "swatch") => h(`span.${cls}`, { style: `--c: var(${color})` });
  const rows = [
    h("div.lh", null, "Objects"),
    ...STATES.map((s) => h("div.li", { title: s.help }, sw(s.color, s.id === "virtual" ? "swatch.dashed" : "swatch"), s.label)),
    ...MARKERS.map((m) => h("div.li", { title: m.help }, sw(m.color, m.id === "invalid" ? "marker.tri" : "marker"), m.label)),
    h("div.li", { title: "a collapsed set of siblings: zoom in or click it" }, h("span.swatch.block"), "N siblings (zoom in or click)"),
    h("div.lh", null, "Owner references"),
    ...EDGES.map((e) => h("div.li", null, h(`span.edge${e.dash ? ".dash" : ""}${e.strong ? ".strong" : ""}`), e.label)),
  ];
  if (renderer.preview.size) {
    rows.push(h("div.lh", null, "Delete preview"),
      ...Object.entries(PREVIEW).filter(([k]) => k !== "target").map(([, p]) => h("div.li", null, sw(p.color), p.label)));
  }
  $("legend-body").replaceChildren(...rows);
}

function updateEmpty() {
  const el = $("empty");
  if (layout.items.size) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  const focused = view.focus ? store.current(view.focus) : null;
  el.textContent = perf.snapshotMs === null ? "Waiting for the engine's first snapshot…"
    : view.focus && (!focused || focused.ghost) ? `${focused ? describe(focused.node) : "The object you focused on"} was deleted, and with it what it owned. Esc shows everything.`
    : store.nodes.size ? "No object matches the filters. Clear them (Esc) to see everything." : "The graph is empty.";
}

/** @type {ReturnType<typeof setTimeout>|undefined} */
let toastTimer;
/** @param {string} text */
function toast(text) {
  const el = $("toast");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}

// --- theme ---

/** @param {"light"|"dark"} t @param {boolean} remember */
function setTheme(t, remember) {
  document.documentElement.dataset.theme = t;
  if (remember) localStorage.setItem("gcscope-theme", t);
  renderer?.readColors();
  travelUI?.timeline.readColors(); // (set theme only runs once the module has run: see "start")
}

function toggleTheme() {
  const cur = document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  setTheme(cur === "dark" ? "light" : "dark", true);
  writeURL();
}
$("theme-toggle").addEventListener("click", toggleTheme);
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
  renderer.readColors();
  travelUI?.timeline.readColors();
});

// --- export ---

const exportMenu = $("export-menu");
$("export-button").addEventListener("click", () => (exportMenu.hidden = !exportMenu.hidden));
exportMenu.addEventListener("click", async (ev) => {
  const what = /** @type {HTMLElement} */ (ev.target).dataset.export;
  exportMenu.hidden = true;
  const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
  const nodes = [...layout.items.values()].flatMap((it) => store.nodes.get(it.uid) || []);
  if (what === "svg") download(new Blob([viewSVG(renderer)], { type: "image/svg+xml" }), `gcscope-${stamp}.svg`);
  else if (what === "png") download(/** @type {Blob} */ (await viewPNG(canvas)), `gcscope-${stamp}.png`);
  else if (what === "dot") download(new Blob([graphDOT(nodes)], { type: "text/vnd.graphviz" }), `gcscope-${stamp}.dot`);
  else if (what === "history") travelUI?.exportHistory();
  else if (what === "json") download(new Blob([JSON.stringify({ seq: store.seq, filter: { namespace: view.ns, kind: view.kind, focus: view.focus }, nodes }, null, 1)], { type: "application/json" }), `gcscope-${stamp}.json`);
});

// --- slow motion ---

const slow = /** @type {HTMLInputElement|null} */ (document.getElementById("slow-motion"));
slow?.addEventListener("change", async () => {
  try {
    const res = await post("/api/v1/slow-motion", { enabled: slow.checked });
    slow.checked = res.enabled;
    toast(res.enabled ? `Slow motion on: the engine waits ${res.actionDelay} before each write.` : "Slow motion off: the engine writes at full speed.");
  } catch (e) {
    slow.checked = !slow.checked;
    toast(`Slow motion: ${/** @type {any} */ (e).message || e}`);
  }
});

// --- scenario player (only on gcscope's embedded cluster: see scenarios.js) ---

new ScenarioPlayer({ select: (uid) => select(uid, true), has: (uid) => store.nodes.has(uid), toast });

// --- keyboard (see shortcuts.js) ---

const helpDialog = /** @type {HTMLDialogElement} */ ($("help-dialog"));
const shortcuts = new Shortcuts(shortcutTable({
  replay,
  selected: () => view.sel,
  focus: setFocus,
  del: (uid) => dialog.open(uid), // read-only: a preview
  escape() {
    if (!exportMenu.hidden) exportMenu.hidden = true;
    else if (travelUI?.travel.active && !replay) return false; // back to live: time travel's row
    else if (view.focus) setFocus(null);
    else if (view.ns.length || view.kind.length) {
      view.ns = [];
      view.kind = [];
      viewChanged();
    } else select(null);
    return true;
  },
  search: {
    focus() {
      search.focus();
      search.select();
    },
    chooseFirst() {
      if (!resultUIDs.length) return false;
      choose(resultUIDs[0]);
      return true;
    },
    clear() {
      search.value = "";
      runSearch();
      search.blur();
    },
  },
  fit: () => renderer.fit(layout.bounds),
  zoom: (k) => renderer.zoomAt(renderer.w / 2, renderer.h / 2, k),
  toggleExpanded(uid) {
    if (renderer.expanded.has(uid)) renderer.expanded.delete(uid);
    else renderer.expanded.add(uid);
    renderer.dirty = true;
  },
  toggleTheme,
  toggleStuck: () => tabs.toggle("stuck"),
  help: () => helpDialog.showModal(),
  travelUI: () => travelUI,
}), hasHistory);
shortcuts.listen();
shortcuts.renderHelp($("help-keys"));
$("help-button").addEventListener("click", () => helpDialog.showModal());

// --- the store shown ---

/**
 * Shows store s and its cascades: the live state, or time travel's. The layout is done
 * again at once, anchored on what is in the middle of the screen, so the view stays put.
 * @param {Store} s @param {Cascades} c
 */
function showStore(s, c) {
  store = s;
  cascades = c;
  renderer.store = s;
  renderer.cascades = c;
  objectPanel.store = s;
  queuesPanel.store = s;
  cascadeStrip.cascades = c;
  s.touched.clear();
  s.dirtyNamespaces.add("*");
  relayout(performance.now());
  refreshViews();
}

/** The panels, strip, filters and search after the store shown was replaced. */
function refreshViews() {
  queuesPanel.lastActionsKey = "";
  queuesPanel.render(true);
  cascades.changed = true;
  cascadeStrip.render();
  objectPanel.show(view.sel);
  filterKey = "";
  fillFilterOptions();
  if (view.q) runSearch();
  updateEmpty();
}

// --- history and time travel (with --history; see travelui.js and docs/ui.md) ---

if (hasHistory) {
  travelUI = new TravelUI({
    replay,
    live,
    liveCascades,
    showStore,
    seeked(ms) {
      api.seeks.push(ms);
      if (perf.snapshotMs === null) {
        perf.snapshotMs = performance.now();
        firstSnapshotPending = true;
      }
      relayout(performance.now());
      refreshViews();
      if (tracer) tracer.engine();
    },
    applied() {
      if (tracer) tracer.engine();
    },
    showConn,
    select,
    writeURL,
    toast,
    tabs,
  });
}

// --- hooks for tests and benchmarks ---

/**
 * A trace of some objects' states, for tests: what the stream said (each change, when its
 * frame arrived), what the canvas drew (each change, in the frame that drew it), and where
 * the layout put each object (each change, drawn on screen or not), all on
 * performance.now()'s clock, so a test can check that every state was drawn in time and
 * that nothing moved.
 * @type {{uids: string[], engineLog: any[], drawnLog: any[], placedLog: any[], engine: () => void}|null}
 */
let tracer = null;

/** @param {string[]} uids */
function trace(uids) {
  renderer.recordDrawn();
  /** @type {Record<string, string>} */
  const lastEngine = {};
  /** @type {Record<string, {state: string, x: number, y: number}>} */
  const lastDrawn = {};
  /** @type {Record<string, {x: number, y: number}>} */
  const lastPlaced = {};
  const t = {
    uids, engineLog: /** @type {any[]} */ ([]), drawnLog: /** @type {any[]} */ ([]), placedLog: /** @type {any[]} */ ([]),
    engine() {
      const now = performance.now();
      for (const u of uids) {
        const n = store.nodes.get(u);
        const st = n ? stateOf(store, n) : "removed";
        if (lastEngine[u] !== st) t.engineLog.push({ uid: u, state: st, t: now });
        lastEngine[u] = st;
      }
    },
  };
  const drawn = () => {
    if (tracer !== t) return;
    for (const u of uids) {
      const d = renderer.drawnState?.get(u);
      const l = lastDrawn[u];
      if (d && (!l || l.state !== d.state || l.x !== d.x || l.y !== d.y)) {
        t.drawnLog.push({ uid: u, state: d.state, x: d.x, y: d.y, t: d.at });
        lastDrawn[u] = d;
      }
      const b = layout.box(u), p = lastPlaced[u];
      if (b && (!p || p.x !== b.x || p.y !== b.y)) {
        t.placedLog.push({ uid: u, state: "", x: b.x, y: b.y, t: performance.now() });
        lastPlaced[u] = b;
      }
    }
    requestAnimationFrame(drawn);
  };
  tracer = t;
  t.engine();
  requestAnimationFrame(drawn);
}

const api = {
  ready: false,
  perf,
  /** The uids drawn now (after filters and focus; removed ones fading out excluded). */
  drawnUIDs: () => [...layout.items.values()].filter((it) => store.nodes.has(it.uid)).map((it) => it.uid),
  /** Starts recording what the canvas draws (see Renderer.drawnState). */
  recordDrawn: () => renderer.recordDrawn(),
  /** What the canvas last drew for uid since recordDrawn: {state, x, y, at}. @param {string} uid */
  drawn: (uid) => renderer.drawnState?.get(uid) || null,
  /** The caption the canvas last drew under uid's box since recordDrawn (a running cascade's "waiting on … · 2.5 s so far"). @param {string} uid */
  caption: (uid) => renderer.drawnCaptions?.get(uid) ?? null,
  /** What the canvas last drew as namespace ns's box title, and under it, since recordDrawn: {text, caption, at}. @param {string} ns */
  nsDrawn: (ns) => renderer.drawnTitles?.get(ns) ?? null,
  /** Every change of a namespace box's title as drawn since recordDrawn, frame by frame: [{ns, text, caption, inLayout, t}] (text "": no longer drawn). @param {string} ns */
  titleLog: (ns) => renderer.titleLog.filter((e) => e.ns === ns),
  /** The deletion of namespace ns the page follows: {gone, total, baseline, end, waitingOn}, or null. @param {string} ns */
  nsDeletion: (ns) => {
    const c = cascades.ofNamespace(ns);
    return c ? { gone: c.gone, total: c.total, baseline: c.baseline, end: c.end, waitingOn: c.waitingOn } : null;
  },
  stuckView,
  tabs,
  cascades,
  /** Starts tracing uids' states: the stream's and the canvas's (see trace). @param {string[]} uids */
  trace: (uids) => trace(uids),
  /** The trace so far: {engine: [{uid, state, t}], drawn: [{uid, state, x, y, t}], placed: [{uid, x, y, t}]}. */
  traceLog: () => ({ engine: tracer?.engineLog || [], drawn: tracer?.drawnLog || [], placed: tracer?.placedLog || [] }),
  /** @param {string} uid */
  select: (uid) => select(uid, true),
  view,
  /**
   * The state of each object of namespace ns in the store shown (or, which = "live", the
   * live one), as the canvas would draw it: {uid: state}.
   * @param {string} ns @param {string} [which]
   */
  nsStates: (ns, which) => {
    const s = which === "live" ? live : store;
    /** @type {Record<string, string>} */
    const out = {};
    for (const u of s.byNamespace.get(ns) || []) out[u] = stateOf(s, /** @type {any} */ (s.nodes.get(u)));
    return out;
  },
  /** The store shown: the live one, or time travel's. */
  get store() { return store; },
  live,
  renderer,
  /** The keyboard shortcuts the page binds, as the help lists them: [[label, help]]. */
  shortcuts: () => shortcuts.listed(),
  /** Time travel (with --history): {active, at, playing, speed, lastSeekMs, store}. */
  travel: () => travelUI?.travel ?? null,
  timeline: () => travelUI?.timeline ?? null,
  /** Seeks, the time each took from the ask to the state applied (ms). */
  seeks: /** @type {number[]} */ ([]),
  /** Frames drawn while playing: [performance.now()], for fps. */
  playFrames: /** @type {number[]} */ ([]),
};
/** @type {any} */ (window).gcscope = api;

// --- start ---

const saved = localStorage.getItem("gcscope-theme");
if (saved === "dark" || saved === "light") setTheme(saved, false);
readURL();
search.value = view.q;
renderer.selected = view.sel;
updateFocusChip();
legend();
updateEmpty();
if (replay) travelUI?.startReplay(parseTime(atURL), view.sel);
else {
  stream.open();
  // ?at=: opened at a recorded moment (the live state loads underneath all the same).
  const at = parseTime(atURL);
  if (travelUI && Number.isFinite(at)) travelUI.travel.seek(at).then(() => { if (view.sel) select(view.sel, true, true); });
}
if (view.q) runSearch();
requestAnimationFrame(tick);
