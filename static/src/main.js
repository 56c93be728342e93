// @ts-check
// gcscope's UI, wired in one place: this module builds the stores (store.js, cascades.js,
// detail.js), the drawing (layout.js, render.js) and the views (the panels, the filters, the
// search, the view in the URL, the frame loop), and connects them. Data flows one way: the
// stream's frames change the stores (conn.js), and the stores' changes reach the views,
// through the frame loop (frame.js) or, for a whole snapshot, from liveApplied below. The
// other modules only define behaviour: each takes what it calls as arguments. Entry point
// of the bundle that `make generate` builds into static/app.js.

import { newPage, newView, firstContent } from "./page.js";
import { Store } from "./store.js";
import { Cascades, CascadeStrip, progress, progressText } from "./cascades.js";
import { Layout } from "./layout.js";
import { Renderer } from "./render.js";
import { Detail, DETAIL_K } from "./detail.js";
import { ObjectPanel } from "./panel.js";
import { QueuesPanel } from "./queues.js";
import { DeleteDialog } from "./dialog.js";
import { Glance } from "./glance.js";
import { CollectorHealth } from "./health.js";
import { $, describe } from "./dom.js";
import { post } from "./api.js";
import { ScenarioPlayer } from "./scenarios.js";
import { parseTime } from "./history.js";
import { Tabs } from "./tabs.js";
import { StuckView } from "./stuck.js";
import { DiscoveryBanner } from "./banner.js";
import { Shortcuts, shortcutTable } from "./shortcuts.js";
import { PageView } from "./view.js";
import { newFrames } from "./frame.js";
import { connect } from "./conn.js";
import { ConnDot } from "./conndot.js";
import { ClusterPicker } from "./clusters.js";
import { Search } from "./search.js";
import { Filters } from "./filters.js";
import { wirePointer } from "./pointer.js";
import { Selection } from "./selection.js";
import { renderLegend } from "./legend.js";
import { updateEmpty } from "./notices.js";
import { wireTheme } from "./theme.js";
import { wireExportMenu } from "./exportmenu.js";
import { newTimeTravel } from "./timetravel.js";
import { testHooks } from "./testhooks.js";
import { wireSidePanel } from "./sidepanel.js";

// --- the stores and the drawing ---

/** The live state: the stream keeps it, whatever the page shows. */
const live = new Store();
const liveCascades = new Cascades(live);
const layout = new Layout();
const canvas = /** @type {HTMLCanvasElement} */ ($("graph"));
const renderer = new Renderer(canvas, live, layout);
renderer.cascades = liveCascades;
const view = newView();
// Summary first: what the page holds of a large cluster, asked of the stream (made below).
const detail = new Detail({ view, renderer, layout }, (frame) => stream.send(frame));
renderer.countsNote = (ns) => detail.loading(ns) ? "loading its objects…" : renderer.cam.k < DETAIL_K ? "zoom in to load its objects" : "";
const page = newPage({ live, liveCascades, layout, canvas, renderer, view, detail });
const { replay } = page;
/** Select and centre on uid: what every list and link in the page does. @param {string} uid */
const show = (uid) => pageView.select(uid, true);
const legend = () => renderLegend(renderer);

// --- panels ---

/** The side panel's tabs: the object, the stuck deletions, the history view (with --history). */
const tabs = new Tabs();
const objectPanel = new ObjectPanel($("object-body"), $("object-placeholder"), page.store, {
  readOnly: page.readOnly,
  travelAt: () => (page.travelUI?.travel.active ? page.travelUI.travel.at : null),
  replay: page.hasHistory ? (uid) => page.travelUI?.replayLastCascade(uid) : undefined,
  // Offered only when the recording holds a cascade the object took part in.
  hasCascade: page.hasHistory ? async (uid) => !!(await page.travelUI?.lastCascadeOf(uid)) : undefined,
  select: show,
  focus: (uid) => pageView.setFocus(uid),
  del: (uid) => dialog.open(uid),
  cascade(uid) {
    const c = page.cascades.of(uid);
    return c ? { text: progressText(c, page.cascades.now()), progress: progress(c), running: c.end === null } : null;
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
  select: show,
  known: (uid) => live.nodes.has(uid),
});
tabs.onShow((tab) => stuckView.setShown(tab === "stuck"));
// API discovery failing: the banner at the top of the page.
const discoveryBanner = new DiscoveryBanner($("discovery-banner"));
const cascadeStrip = new CascadeStrip($("cascades"), page.cascades, show);
// Shadow mode: how the cluster's collector follows the engine's decisions.
const health = $("collector-health") ? new CollectorHealth($("collector-health"), show) : null;
const queuesPanel = new QueuesPanel($("queues"), $("actions"), $("sync-state"), page.store, show);
const dialog = new DeleteDialog(live, {
  preview(m) {
    renderer.preview = m;
    renderer.previewVersion++;
    renderer.dirty = true;
    legend();
  },
  select: show,
  done(uid, policy, n) {
    page.toast(`Deletion of ${n ? describe(n) : uid} accepted (${policy}). Follow the cascade in the graph and the queues.`);
    objectPanel.refreshExplain(300);
  },
  // A set's deletes were sent: those that started leave the selection (the others stay, to retry).
  setDone(outcomes, policy) {
    const started = outcomes.filter((o) => !o.error);
    for (const o of started) selection.uids.delete(o.object.uid);
    selection.changed();
    page.toast(`${started.length.toLocaleString("en-US")} of ${outcomes.length.toLocaleString("en-US")} deletions started (${policy}). Follow the cascades in the graph and the queues.`);
    objectPanel.refreshExplain(300);
  },
});
// The objects selected together (shift-click), deleted with one confirmation.
const selection = new Selection(page, { openSet: (uids) => dialog.openSet(uids) });

// --- the view, the input, the stream ---

const theme = wireTheme({
  readColors() {
    renderer.readColors();
    page.travelUI?.timeline.readColors();
  },
  writeURL: () => pageView.writeURL(),
});
const filters = new Filters(page, () => {
  pageView.changed();
  frames.relayout(performance.now());
  renderer.fit(layout.bounds);
});
/** The frame loop (started below) and the layout it keeps. */
const frames = newFrames(page, {
  cascadeStrip, objectPanel, health, discoveryBanner, stuckView, queuesPanel, selection, filters,
  glance: new Glance($("glance"), liveCascades, live, { // what needs attention, while nothing is selected
    select: show,
    showStuck: () => tabs.show("stuck"),
    stuck: () => ({ count: stuckView.counted, threshold: stuckView.threshold }),
  }),
  drew(now) {
    if (page.travelUI?.travel.playing && hooks.api.playFrames.length < 100_000) hooks.api.playFrames.push(now);
  },
  firstDrawn: () => (hooks.api.ready = true),
});
const relayout = (/** @type {number} */ now) => frames.relayout(now);
const pageView = new PageView(page, { tabs, objectPanel, setTheme: theme.setTheme, syncFilters: () => filters.sync(), relayout });
const search = new Search(page, {
  select: (uid, center) => pageView.select(uid, center),
  writeURL: () => pageView.writeURL(),
  selectAll: { count: () => selection.matchCount(), run: () => selection.selectMatching() },
});
wirePointer(page, { selection, view: pageView, relayout });
wireSidePanel();
const exportMenu = wireExportMenu(page);

/**
 * A frame of the stream was applied to the live store: what shows the live store follows.
 * The frame loop picks up the objects that changed; a snapshot (or summary first, the
 * counts) changes what the filters offer, and may hold the selected object or the search's
 * matches at last.
 * @param {import("./frames.gen.js").Frame} f
 */
function liveApplied(f) {
  const shown = page.store === live;
  if (f.type === "summary") {
    // Summary first: the counts are the first frame's content.
    if (detail.mode === "summary") firstContent(page);
    if (shown) filters.fill();
  } else if (f.type === "snapshot") {
    // A summary-first stream's first snapshot holds nothing: on a small cluster the
    // first frame is the snapshot of everything the page then asks for.
    if (detail.mode === "full" && f.reason === "subscribe") firstContent(page);
    if (!shown) return;
    page.layoutDue = true;
    filters.fill();
    if (view.sel) objectPanel.show(view.sel);
    // ?q= highlights its matches once there is something to match.
    if (view.q) search.run();
  } else if (f.type === "deltas" && shown) hooks.engineChanged();
}
const connDot = new ConnDot({ replay, backToLive: () => page.travelUI?.backToLive(), retry: () => stream.retry() });
const stream = connect(page, { applied: liveApplied, onState: (state, words) => connDot.set(state, words) });
const clusters = new ClusterPicker();

// --- slow motion ---

const slow = /** @type {HTMLInputElement|null} */ (document.getElementById("slow-motion"));
slow?.addEventListener("change", async () => {
  try {
    const res = await post("/api/v1/slow-motion", { enabled: slow.checked });
    slow.checked = res.enabled;
    page.toast(res.enabled ? `Slow motion on: the engine waits ${res.actionDelay} before each write.` : "Slow motion off: the engine writes at full speed.");
  } catch (e) {
    slow.checked = !slow.checked;
    page.toast(`Slow motion: ${/** @type {any} */ (e).message || e}`);
  }
});

// --- scenario player (only on gcscope's embedded cluster: see scenarios.js) ---

new ScenarioPlayer({ select: show, has: (uid) => page.store.nodes.has(uid), toast: (text) => page.toast(text) });

// --- keyboard (see shortcuts.js) ---

const helpDialog = /** @type {HTMLDialogElement} */ ($("help-dialog"));
const shortcuts = new Shortcuts(shortcutTable({
  replay,
  selected: () => view.sel,
  focus: (uid) => pageView.setFocus(uid),
  del: (uid) => dialog.open(uid), // read-only: a preview
  delSelected() {
    if (!selection.size) return false;
    selection.openDialog();
    return true;
  },
  escape() {
    if (!exportMenu.hidden) exportMenu.hidden = true;
    else if (selection.clear()) return true;
    else if (page.travelUI?.travel.active && !replay) return false; // back to live: time travel's row
    else if (view.focus) pageView.setFocus(null);
    else if (view.ns.length || view.kind.length) {
      view.ns = [];
      view.kind = [];
      pageView.changed();
    } else pageView.select(null);
    return true;
  },
  search,
  fit: () => renderer.fit(layout.bounds),
  zoom: (k) => renderer.zoomAt(renderer.w / 2, renderer.h / 2, k),
  toggleExpanded(uid) {
    if (renderer.expanded.has(uid)) renderer.expanded.delete(uid);
    else renderer.expanded.add(uid);
    renderer.dirty = true;
  },
  toggleTheme: theme.toggleTheme,
  toggleStuck: () => tabs.toggle("stuck"),
  help: () => helpDialog.showModal(),
  pickCluster: () => clusters.open(),
  travelUI: () => page.travelUI,
}), page.hasHistory, clusters.present);
shortcuts.listen();
search.input.addEventListener("keydown", (ev) => shortcuts.handle(ev, "search"));
shortcuts.renderHelp($("help-keys"));
$("help-button").addEventListener("click", () => helpDialog.showModal());

// --- hooks for tests, time travel, the frame loop ---

const hooks = testHooks(page, { stuckView, tabs, shortcuts, selection, select: show, stream });
if (page.hasHistory) {
  page.travelUI = newTimeTravel(page, {
    objectPanel, queuesPanel, cascadeStrip, tabs, filters, search, view: pageView, relayout,
    showConn: () => connDot.show(),
    seeked: (ms) => hooks.api.seeks.push(ms),
    applied: () => hooks.engineChanged(),
  });
}
frames.start();

// --- start ---

pageView.readURL();
search.input.value = view.q;
renderer.selected = view.sel;
pageView.updateFocusChip();
legend();
updateEmpty(page);
clusters.follow();
if (replay) page.travelUI?.startReplay(parseTime(page.atURL), view.sel);
else if (!clusters.waiting) { // a cluster whose engine is starting has no stream yet (clusters.js)
  stream.open();
  // ?at=: opened at a recorded moment (the live state loads underneath all the same).
  const at = parseTime(page.atURL);
  if (page.travelUI && Number.isFinite(at)) page.travelUI.travel.seek(at).then(() => { if (view.sel) pageView.select(view.sel, true, true); });
}
if (view.q) search.run();
