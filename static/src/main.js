// @ts-check
// gcscope's UI, its composition root: makes the page's state (page.js) and the panels, and
// hands them to the modules that follow the stream (conn.js), draw frames (frame.js), keep
// the view in the URL (view.js), take the user's input (pointer.js, search.js, filters.js,
// shortcuts.js), and travel in time (timetravel.js). Entry point of the bundle that
// `make generate` builds into static/app.js.

import { newPage } from "./page.js";
import { ObjectPanel } from "./panel.js";
import { QueuesPanel } from "./queues.js";
import { DeleteDialog } from "./dialog.js";
import { CascadeStrip, progress, progressText } from "./cascades.js";
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
import { wireView } from "./view.js";
import { startFrames } from "./frame.js";
import { wireStream } from "./conn.js";
import { ClusterPicker } from "./clusters.js";
import { Search } from "./search.js";
import { wireFilters } from "./filters.js";
import { wirePointer } from "./pointer.js";
import { Selection } from "./selection.js";
import { renderLegend } from "./legend.js";
import { wireNotices } from "./notices.js";
import { wireTheme } from "./theme.js";
import { wireExportMenu } from "./exportmenu.js";
import { wireTimeTravel } from "./timetravel.js";
import { testHooks } from "./testhooks.js";
import { wireSidePanel } from "./sidepanel.js";

const page = newPage();
const { live, liveCascades, renderer, layout, view, replay } = page;
/** Select and centre on uid: what every list and link in the page does. @param {string} uid */
const show = (uid) => page.select(uid, true);

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
  focus: (uid) => page.setFocus(uid),
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
    page.legend();
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

page.legend = () => renderLegend(renderer);
wireNotices(page);
const theme = wireTheme(page);
const syncFilterControls = wireFilters(page);
const { readURL, updateFocusChip } = wireView(page, { tabs, objectPanel, setTheme: theme.setTheme, syncFilterControls });
const search = new Search(page);
search.selectAll = { count: () => selection.matchCount(), run: () => selection.selectMatching() };
wirePointer(page, selection);
wireSidePanel();
const exportMenu = wireExportMenu(page);
const { stream, showConn } = wireStream(page, { objectPanel });
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
  focus: (uid) => page.setFocus(uid),
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
    else if (view.focus) page.setFocus(null);
    else if (view.ns.length || view.kind.length) {
      view.ns = [];
      view.kind = [];
      page.viewChanged();
    } else page.select(null);
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

// --- hooks for tests, the frame loop, time travel ---

const api = testHooks(page, { stuckView, tabs, shortcuts, selection });
// What needs attention: the side panel's first words while nothing is selected.
const glance = new Glance($("glance"), liveCascades, live, {
  select: show,
  showStuck: () => tabs.show("stuck"),
  stuck: () => ({ count: stuckView.counted, threshold: stuckView.threshold }),
});
startFrames(page, {
  cascadeStrip, objectPanel, health, discoveryBanner, stuckView, queuesPanel, glance, selection,
  drew(now) {
    if (page.travelUI?.travel.playing && api.playFrames.length < 100_000) api.playFrames.push(now);
  },
  firstDrawn: () => (api.ready = true),
});
if (page.hasHistory) {
  wireTimeTravel(page, { objectPanel, queuesPanel, cascadeStrip, tabs, showConn, seeked: (ms) => api.seeks.push(ms) });
}

// --- start ---

readURL();
search.input.value = view.q;
renderer.selected = view.sel;
updateFocusChip();
page.legend();
page.updateEmpty();
clusters.follow();
if (replay) page.travelUI?.startReplay(parseTime(page.atURL), view.sel);
else if (!clusters.waiting) { // a cluster whose engine is starting has no stream yet (clusters.js)
  stream.open();
  // ?at=: opened at a recorded moment (the live state loads underneath all the same).
  const at = parseTime(page.atURL);
  if (page.travelUI && Number.isFinite(at)) page.travelUI.travel.seek(at).then(() => { if (view.sel) page.select(view.sel, true, true); });
}
if (view.q) page.runSearch();
