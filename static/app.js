// src/dom.js
var handlers = /* @__PURE__ */ new WeakMap();
function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === void 0 || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
      handlers.set(el, { ...handlers.get(el), [k.slice(2)]: v });
    } else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") {
      for (const decl of String(v).split(";")) {
        const i = decl.indexOf(":");
        if (i > 0) el.style.setProperty(decl.slice(0, i).trim(), decl.slice(i + 1).trim());
      }
    } else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== void 0 && c !== false) el.append(c);
  return el;
}
function patchChildren(parent, children) {
  let i = 0;
  for (const c of children) {
    const n = typeof c === "string" ? document.createTextNode(c) : c;
    const cur = parent.childNodes[i++];
    if (!cur) parent.appendChild(n);
    else if (cur === n) continue;
    else if (!n.isConnected && cur.nodeType === Node.TEXT_NODE && n.nodeType === Node.TEXT_NODE) {
      if (cur.nodeValue !== n.nodeValue) cur.nodeValue = n.nodeValue;
    } else if (!n.isConnected && cur instanceof Element && n instanceof Element && sameKind(cur, n)) morph(cur, n);
    else parent.replaceChild(n, cur);
  }
  while (parent.childNodes.length > i) parent.lastChild?.remove();
}
function sameKind(a, b) {
  return a.tagName === b.tagName && a.id === b.id && a.getAttribute("data-uid") === b.getAttribute("data-uid") && a.getAttribute("data-owner") === b.getAttribute("data-owner");
}
function morph(el, fresh) {
  for (const { name } of [...el.attributes]) if (!fresh.hasAttribute(name)) el.removeAttribute(name);
  for (const { name, value } of fresh.attributes) {
    if (el.getAttribute(name) === value) continue;
    if (name === "style") el.style.cssText = /** @type {HTMLElement} */
    fresh.style.cssText;
    else el.setAttribute(name, value);
  }
  const had = handlers.get(el) || {}, has = handlers.get(fresh) || {};
  for (const type of /* @__PURE__ */ new Set([...Object.keys(had), ...Object.keys(has)])) {
    if (had[type] === has[type]) continue;
    if (had[type]) el.removeEventListener(type, had[type]);
    if (has[type]) el.addEventListener(type, has[type]);
  }
  handlers.set(el, has);
  patchChildren(el, [...fresh.childNodes]);
}
function $(id) {
  return (
    /** @type {HTMLElement} */
    document.getElementById(id)
  );
}
function describe(o) {
  return `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`;
}
function duration(ns) {
  const ms = ns / 1e6;
  if (ms < 1) return `${Math.round(ns / 1e3)} µs`;
  if (ms < 1e3) return `${Math.round(ms)} ms`;
  return `${(ms / 1e3).toFixed(1)} s`;
}
function clock(t) {
  const d = new Date(t);
  return hms(t) + "." + String(d.getMilliseconds()).padStart(3, "0");
}
function hms(t) {
  return new Date(t).toTimeString().slice(0, 8);
}

// src/notices.js
function updateEmpty(page2) {
  const el = $("empty");
  if (page2.layout.items.size || page2.layout.groups.size) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  const { view: view2, store } = page2;
  const focused = view2.focus ? store.current(view2.focus) : null;
  const waiting = document.body.classList.contains("cluster-waiting");
  el.textContent = waiting ? `The engine of ${document.body.dataset.cluster} is not running yet: the banner above says why.` : page2.perf.snapshotMs === null ? "Waiting for the engine's first snapshot…" : view2.focus && (!focused || focused.ghost) ? `${focused ? describe(focused.node) : "The object you focused on"} was deleted, and with it what it owned. Esc shows everything.` : store.nodes.size ? "No object matches the filters. Clear them (Esc) to see everything." : "The graph is empty.";
}
var toastTimer;
function toast(text) {
  const el = $("toast");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.hidden = true, 6e3);
}

// src/page.js
function newView() {
  return { ns: [], kind: [], q: "", focus: null, sel: null };
}
function newPage(parts) {
  const body = document.body;
  const replay2 = body.dataset.replay === "true";
  return {
    replay: replay2,
    readOnly: body.dataset.readOnly === "true" || replay2,
    hasHistory: body.dataset.history === "true" || replay2,
    ...parts,
    store: parts.live,
    cascades: parts.liveCascades,
    atURL: "",
    focusSet: null,
    perf: { snapshotMs: null, firstFrameMs: null, applied: 0, drawn: 0, layoutMs: 0 },
    firstSnapshotPending: false,
    layoutDue: false,
    centerDue: null,
    travelUI: null,
    toast
  };
}
function firstContent(page2) {
  if (page2.perf.snapshotMs !== null) return;
  page2.perf.snapshotMs = performance.now();
  page2.firstSnapshotPending = true;
}

// src/states.js
var GC_FINALIZERS = ["foregroundDeletion", "orphan"];
var STATES = (
  /** @type {const} */
  [
    { id: "normal", label: "normal", color: "--node-border", help: "observed, not being deleted" },
    { id: "deleting", label: "being deleted", color: "--st-deleting", help: "has a deletionTimestamp" },
    { id: "foreground", label: "deleting dependents", color: "--st-foreground", help: "foreground deletion in progress" },
    { id: "waiting", label: "waiting on blocking dependents", color: "--st-waiting", help: "foreground deletion waits for dependents with blockOwnerDeletion" },
    { id: "held", label: "held by finalizers", color: "--st-held", help: "being deleted, but another controller's finalizer keeps it" },
    { id: "virtual", label: "virtual / missing owner", color: "--st-virtual", help: "named as an owner, never observed" },
    { id: "removed", label: "removed", color: "--st-removed", help: "just deleted; fades out" }
  ]
);
var MARKERS = (
  /** @type {const} */
  [
    { id: "invalid", label: "invalid owner reference", color: "--st-invalid", help: "owner in another namespace, or a namespaced owner of a cluster-scoped object" },
    { id: "queued", label: "in a work queue", color: "--st-queued", help: "queued or being worked on" },
    { id: "backoff", label: "in backoff", color: "--st-backoff", help: "a retry is scheduled" },
    {
      id: "orphaned",
      label: "orphaned (owner reference removed)",
      color: "--st-orphaned",
      help: "the garbage collector removed its reference to an owner (an Orphan delete, or an absent or deleting owner): its panel says which, by whom and when, until dismissed or a day old"
    }
  ]
);
function isOrphaned(n) {
  return !!n?.orphaned?.length;
}
var EDGES = (
  /** @type {const} */
  [
    { id: "controller", label: "controller reference", dash: false, strong: false },
    { id: "plain", label: "other owner reference", dash: true, strong: false },
    { id: "block", label: "blockOwnerDeletion", dash: false, strong: true },
    {
      id: "cycle",
      label: "on an ownership cycle",
      dash: false,
      strong: false,
      help: "The reference that closes the cycle runs back up around the outside, its arrowhead at the dependent"
    }
  ]
);
function holdingFinalizers(n) {
  return (n.finalizers || []).filter((f) => !GC_FINALIZERS.includes(f));
}
function stateOf(store, n) {
  if (n.virtual) return "virtual";
  if (n.deletingDependents && (n.finalizers || []).includes("foregroundDeletion")) return blockingDependents(store, n.uid).length ? "waiting" : "foreground";
  if (n.beingDeleted) return holdingFinalizers(n).length ? "held" : "deleting";
  return "normal";
}
function blockingDependents(store, uid) {
  const out = [];
  for (const d of store.dependents.get(uid) || []) {
    const n = store.nodes.get(d);
    if (n && (n.owners || []).some((o) => o.uid === uid && o.blockOwnerDeletion)) out.push(n);
  }
  return out;
}
function invalidReason(n, owner) {
  if (!owner || owner.virtual || !owner.namespace) return "";
  if (!n.namespace) return `a cluster-scoped object cannot be owned by namespaced ${owner.kind} ${owner.namespace}/${owner.name}`;
  if (owner.namespace !== n.namespace) return `owner ${owner.kind} ${owner.name} is in namespace ${owner.namespace}, not ${n.namespace}`;
  return "";
}
function hasInvalidOwner(store, n) {
  return (n.owners || []).some((o) => invalidReason(n, store.nodes.get(o.uid)) !== "");
}
function kindHue(kind) {
  let h2 = 0;
  for (let i = 0; i < kind.length; i++) h2 = h2 * 31 + kind.charCodeAt(i) >>> 0;
  return h2 % 360;
}
var PREVIEW = (
  /** @type {const} */
  {
    target: { label: "to delete", color: "--pv-deleted" },
    deleted: { label: "goes", color: "--pv-deleted" },
    orphaned: { label: "orphaned", color: "--pv-orphaned" },
    kept: { label: "kept (another owner, or an invalid reference)", color: "--pv-kept" },
    waiting: { label: "waits on finalizer", color: "--pv-waiting" }
  }
);

// src/store.js
var QUEUE_NAMES = ["graphChanges", "attemptToDelete", "attemptToOrphan"];
var GHOST_MS = 1600;
var BORN_MS = 1200;
var DELETION_SEEN_MS = 250;
var MAX_ACTIONS = 200;
var HISTORY = 300;
var Store = class {
  constructor() {
    this.nodes = /* @__PURE__ */ new Map();
    this.byNamespace = /* @__PURE__ */ new Map();
    this.dependents = /* @__PURE__ */ new Map();
    this.ghosts = /* @__PURE__ */ new Map();
    this.shownDeleting = /* @__PURE__ */ new Map();
    this.born = /* @__PURE__ */ new Map();
    this.queues = /* @__PURE__ */ new Map();
    this.actions = [];
    this.sync = { resources: [] };
    this.syncChanged = false;
    this.deleting = /* @__PURE__ */ new Map();
    this.mode = "";
    this.seq = 0;
    this.clock = null;
    this.applied = 0;
    this.snapshots = 0;
    this.dirtyNamespaces = /* @__PURE__ */ new Set();
    this.touched = /* @__PURE__ */ new Set();
    this.removedAt = /* @__PURE__ */ new Map();
    this.queuesChanged = false;
    this.shadowChanged = false;
    this.unknownTypes = /* @__PURE__ */ new Set();
    this.resetQueues([]);
  }
  /**
   * @param {SnapshotFrame} frame
   * @param {boolean} [fade] objects missing from it fade out as removals do; false when the
   *   page asked for other objects (summary first: detail.js), those it no longer holds are not gone
   */
  applySnapshot(frame, fade = true) {
    const now = performance.now();
    const incoming = /* @__PURE__ */ new Map();
    for (const n of frame.nodes || []) incoming.set(n.uid, n);
    if (fade) {
      for (const [uid, n] of this.nodes) if (!incoming.has(uid)) this.ghosts.set(uid, { node: n, at: now });
    } else {
      for (const [uid, n] of this.nodes) {
        const m = incoming.get(uid);
        if (!m || m.namespace !== n.namespace || !sameOwners(m, n) || m.virtual !== n.virtual) this.markNamespace(n.namespace);
        if (m) this.touched.add(uid);
      }
      for (const [uid, n] of incoming) if (!this.nodes.has(uid)) this.markNamespace(n.namespace);
    }
    const seen = this.deleting;
    this.nodes = incoming;
    this.dependents.clear();
    this.byNamespace.clear();
    this.deleting = /* @__PURE__ */ new Map();
    for (const n of this.nodes.values()) {
      this.link(n);
      this.index(n, true);
      if (n.beingDeleted) this.deleting.set(n.uid, fade ? -Infinity : seen.get(n.uid) ?? -Infinity);
    }
    if (frame.queues) this.resetQueues(frame.queues);
    if (frame.sync) {
      this.sync = frame.sync;
      this.syncChanged = true;
    }
    if (frame.mode) this.mode = frame.mode;
    this.seq = frame.seq;
    this.snapshots++;
    if (fade) this.dirtyNamespaces.add("*");
    this.queuesChanged = true;
  }
  /** Every type of events.gen.js's EVENT_TYPES has its case (static/store_events_test.go).
   * @param {Event[]} events the events of a deltas frame, in order */
  applyEvents(events) {
    const now = performance.now();
    for (const e of events) {
      if (e.seq <= this.seq) continue;
      this.applied++;
      switch (e.type) {
        case "nodeAdded":
        case "nodeUpdated":
          this.upsert(
            /** @type {NodeState} */
            e.node,
            now
          );
          break;
        case "nodeRemoved":
          this.remove(
            /** @type {NodeState} */
            e.node.uid,
            now
          );
          break;
        case "edgeAdded":
        case "edgeRemoved":
          this.patchEdge(
            e.type === "edgeAdded",
            /** @type {Edge} */
            e.edge
          );
          break;
        case "queue":
          this.applyQueueEvent(
            /** @type {QueueTransition} */
            e.queue,
            Date.parse(e.time) || Date.now()
          );
          break;
        case "action":
          this.addAction({ .../** @type {GcAction} */
          e.action, time: Date.parse(e.time) || Date.now() });
          break;
        case "sync":
          this.sync = /** @type {SyncState} */
          e.sync;
          this.queuesChanged = true;
          this.syncChanged = true;
          break;
        case "shadow":
          this.shadowChanged = true;
          break;
        default:
          this.unknownTypes.add(e.type);
      }
      this.seq = e.seq;
    }
  }
  /** @param {NodeState} n @param {number} now */
  upsert(n, now) {
    const old = this.nodes.get(n.uid);
    if (old) {
      this.unlink(old);
      if (old.namespace !== n.namespace) this.index(old, false);
    } else {
      this.born.set(n.uid, now);
      this.ghosts.delete(n.uid);
      this.shownDeleting.delete(n.uid);
    }
    this.nodes.set(n.uid, n);
    this.link(n);
    this.index(n, true);
    if (!n.beingDeleted) this.deleting.delete(n.uid);
    else if (!this.deleting.has(n.uid)) this.deleting.set(n.uid, now);
    this.touched.add(n.uid);
    if (!old || old.virtual !== n.virtual || !sameOwners(old, n) || old.namespace !== n.namespace) {
      this.markNamespace(n.namespace);
      if (old && old.namespace !== n.namespace) this.markNamespace(old.namespace);
      for (const o of n.owners || []) {
        const owner = this.nodes.get(o.uid);
        if (owner) this.markNamespace(owner.namespace);
      }
    }
  }
  /** @param {string} uid @param {number} now */
  remove(uid, now) {
    const n = this.nodes.get(uid);
    if (!n) return;
    const shown = stateOf(this, n);
    this.unlink(n);
    this.index(n, false);
    const deletingSince = this.deleting.get(uid);
    this.deleting.delete(uid);
    this.nodes.delete(uid);
    this.born.delete(uid);
    this.ghosts.set(uid, { node: n, at: now, removed: true, deletingSince });
    this.touched.add(uid);
    for (const [u, h2] of this.shownDeleting) if (h2.owners.includes(uid)) this.release(u);
    const owners = (n.owners || []).map((o) => o.uid);
    const ownerGone = owners.some((o) => (this.ghosts.get(o)?.at ?? -Infinity) >= /** @type {number} */
    deletingSince);
    if (deletingSince !== void 0 && now < deletingSince + DELETION_SEEN_MS && !ownerGone) {
      this.shownDeleting.set(uid, { until: deletingSince + DELETION_SEEN_MS, state: shown, owners });
    }
  }
  /** Ends uid's hold: from now on it is shown removed. @param {string} uid */
  release(uid) {
    if (this.shownDeleting.delete(uid)) this.touched.add(uid);
  }
  /** @param {boolean} added @param {{dependent: string, owner: string, controller?: boolean, blockOwnerDeletion?: boolean}} e */
  patchEdge(added, e) {
    const n = this.nodes.get(e.dependent);
    if (!n) return;
    const owners = n.owners || [];
    const has = owners.some((o) => o.uid === e.owner);
    if (added === has) return;
    this.unlink(n);
    const owner = this.nodes.get(e.owner);
    n.owners = added ? [...owners, {
      uid: e.owner,
      kind: owner?.kind || "",
      name: owner?.name || "",
      apiVersion: owner?.apiVersion || "",
      controller: e.controller,
      blockOwnerDeletion: e.blockOwnerDeletion
    }] : owners.filter((o) => o.uid !== e.owner);
    this.link(n);
    this.markNamespace(n.namespace);
  }
  /** @param {NodeState} n */
  link(n) {
    for (const o of n.owners || []) {
      let s = this.dependents.get(o.uid);
      if (!s) this.dependents.set(o.uid, s = /* @__PURE__ */ new Set());
      s.add(n.uid);
      this.touched.add(o.uid);
    }
  }
  /** @param {NodeState} n */
  unlink(n) {
    for (const o of n.owners || []) {
      const s = this.dependents.get(o.uid);
      if (!s) continue;
      s.delete(n.uid);
      if (s.size === 0) this.dependents.delete(o.uid);
      this.touched.add(o.uid);
    }
  }
  /** Adds n to, or removes it from, its namespace's index. @param {NodeState} n @param {boolean} add */
  index(n, add) {
    const ns = n.namespace || "";
    let s = this.byNamespace.get(ns);
    if (add) {
      if (!s) this.byNamespace.set(ns, s = /* @__PURE__ */ new Set());
      s.add(n.uid);
    } else if (s) {
      s.delete(n.uid);
      if (s.size === 0) this.byNamespace.delete(ns);
    }
  }
  /** @param {string|undefined} ns */
  markNamespace(ns) {
    this.dirtyNamespaces.add(ns || "");
  }
  /** The object as last heard of: live, or fading out after its removal. @param {string} uid */
  current(uid) {
    const n = this.nodes.get(uid);
    if (n) return { node: n, ghost: false };
    const g = this.ghosts.get(uid);
    return g ? { node: g.node, ghost: true } : null;
  }
  /**
   * Drops ghosts and birth marks that are over; true when a ghost went (the layout
   * changes). A namespace's ghosts go together, once no removal has happened in it for
   * GHOST_MS: during a cascade the removed objects fade where they stood, and the
   * survivors move only when it has settled.
   */
  expire(now = performance.now()) {
    let gone = false;
    const lastRemoval = /* @__PURE__ */ new Map();
    for (const g of this.ghosts.values()) {
      const ns = g.node.namespace || "";
      lastRemoval.set(ns, Math.max(lastRemoval.get(ns) ?? 0, g.at));
    }
    for (const [uid, g] of this.ghosts) {
      if (now - /** @type {number} */
      lastRemoval.get(g.node.namespace || "") > GHOST_MS) {
        this.ghosts.delete(uid);
        this.markNamespace(g.node.namespace);
        gone = true;
      }
    }
    for (const [uid, t] of this.born) if (now - t > BORN_MS) this.born.delete(uid);
    for (const [uid, h2] of this.shownDeleting) if (now >= h2.until || !this.ghosts.has(uid)) this.release(uid);
    this.removedAt = lastRemoval;
    return gone;
  }
  /** @param {QueueState[]} queues the snapshot's queue states */
  resetQueues(queues) {
    const old = this.queues;
    this.queues = /* @__PURE__ */ new Map();
    for (const name of QUEUE_NAMES) {
      const q = (
        /** @type {Partial<QueueState>} */
        queues.find((x) => x.name === name) || {}
      );
      const items = /* @__PURE__ */ new Map();
      for (const it of q.items || []) {
        const queuedItems = it.queuedItems ?? (it.queued ? 1 : 0), inFlightItems = it.inFlightItems ?? (it.inFlight ? 1 : 0);
        items.set(it.object.uid, {
          object: it.object,
          change: it.change,
          queued: queuedItems > 0,
          inFlight: inFlightItems > 0,
          queuedItems,
          inFlightItems,
          backoffUntil: it.backoffUntil ? Date.parse(it.backoffUntil) : null,
          retries: it.retries || 0,
          since: Date.parse(it.since) || Date.now()
        });
      }
      this.queues.set(name, {
        name,
        depth: q.depth || 0,
        inFlight: q.inFlight || 0,
        adds: q.adds || 0,
        retries: q.retries || 0,
        items,
        history: old.get(name)?.history || [],
        maxHistory: HISTORY
      });
    }
    if (queues.length) {
      this.actions = [];
      for (const q of queues) for (const a of q.recent || []) this.actions.push({ ...a, time: void 0 });
      this.actions.reverse();
    }
  }
  /** The engine's queue mirror (gc/feed.go), applied to one transition. @param {QueueTransition} e @param {number} now */
  applyQueueEvent(e, now) {
    const q = this.queues.get(e.queue);
    if (!q) return;
    if (e.op === "passed") {
      q.adds += e.passed || 0;
      this.takeCounts(q, e.counts);
      return;
    }
    let it = q.items.get(e.object.uid);
    if (!it) {
      it = { object: e.object, queued: false, inFlight: false, queuedItems: 0, inFlightItems: 0, backoffUntil: null, retries: 0, since: now };
      q.items.set(e.object.uid, it);
    }
    it.object = e.object;
    it.retries = e.retries || 0;
    if (e.change) it.change = e.change;
    switch (e.op) {
      case "added":
        q.adds++;
        if (!e.merged) {
          if (!it.queuedItems) it.since = now;
          it.queuedItems++;
          q.depth++;
        }
        it.backoffUntil = null;
        break;
      case "addedAfter":
        q.retries++;
        it.backoffUntil = now + (e.delay || 0) / 1e6;
        break;
      case "taken":
        if (it.queuedItems > 0) {
          it.queuedItems--;
          q.depth--;
        }
        it.inFlightItems++;
        q.inFlight++;
        it.since = now;
        break;
      case "done":
        if (it.inFlightItems > 0) {
          it.inFlightItems--;
          q.inFlight--;
        }
        break;
      case "forgotten":
        it.retries = 0;
        break;
    }
    it.queued = it.queuedItems > 0;
    it.inFlight = it.inFlightItems > 0;
    this.takeCounts(q, e.counts);
    if (!it.queued && !it.inFlight && it.backoffUntil == null && !it.retries) q.items.delete(e.object.uid);
    this.touched.add(e.object.uid);
  }
  /**
   * A queue event's counts are the whole queue's just after it, also when this client is
   * sent only some objects' transitions: they set the queue's.
   * @param {Queue} q @param {QueueCounts|undefined} counts
   */
  takeCounts(q, counts) {
    if (counts) {
      q.depth = counts.depth;
      q.inFlight = counts.inFlight;
    }
    this.queuesChanged = true;
  }
  /** @param {Action} a */
  addAction(a) {
    this.actions.unshift(a);
    if (this.actions.length > MAX_ACTIONS) this.actions.length = MAX_ACTIONS;
    this.queuesChanged = true;
    this.touched.add(a.object.uid);
  }
  /** Samples each queue's depth once; the queues panel calls it every second. */
  sampleQueues() {
    for (const q of this.queues.values()) {
      q.history.push(q.depth);
      if (q.history.length > q.maxHistory) q.history.shift();
    }
  }
  /** @param {string} uid where the object is in the queues: "queued", "in flight", "backoff" per queue */
  queueStatus(uid) {
    const out = [];
    for (const q of this.queues.values()) {
      const it = q.items.get(uid);
      if (it) out.push({ queue: q.name, item: it });
    }
    return out;
  }
  /** The uids connected to these through ownerReferences, both ways, transitively
   * (the API's ?uid= closure). @param {Iterable<string>} uids */
  closure(uids) {
    const seen = /* @__PURE__ */ new Set();
    const stack = [...uids].filter((u) => this.nodes.has(u));
    while (stack.length) {
      const u = (
        /** @type {string} */
        stack.pop()
      );
      if (seen.has(u)) continue;
      seen.add(u);
      const n = this.nodes.get(u);
      for (const o of n?.owners || []) if (!seen.has(o.uid)) stack.push(o.uid);
      for (const d of this.dependents.get(u) || []) if (!seen.has(d)) stack.push(d);
    }
    return seen;
  }
};
function sameOwners(a, b) {
  const x = a.owners || [], y = b.owners || [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    if (x[i].uid !== y[i].uid || !!x[i].controller !== !!y[i].controller) return false;
  }
  return true;
}

// src/cascades.js
var KEEP_MS = 12e4;
var KEEP_FINISHED = 20;
var TIMESTAMP_MS = 1e3;
function isNamespaceObject(n) {
  return n.kind === "Namespace" && n.apiVersion === "v1";
}
var Cascades = class {
  /**
   * @param {Store} store
   * @param {() => number} [clock] the moment shown, epoch ms: now (live), or the recorded
   *   moment (time travel: frozen while paused, the playback clock while playing)
   */
  constructor(store, clock2 = Date.now) {
    this.store = store;
    this.now = clock2;
    this.recorded = null;
    this.active = /* @__PURE__ */ new Map();
    this.seenAlive = /* @__PURE__ */ new Set();
    this.finished = [];
    this.changed = false;
    this.lastObserved = -Infinity;
  }
  /**
   * Forgets every cascade: the objects shown were replaced by others that do not say
   * what became of them (what the user may see changed), so a member no longer shown is
   * not gone. observe() then picks up the cascades under way again.
   */
  reset() {
    this.active.clear();
    this.finished = [];
    this.changed = true;
  }
  /**
   * Forgets the cascades whose owner the store no longer holds (summary first: the page
   * stopped asking for it, which says nothing of its deletion).
   */
  forgetUnheld() {
    for (const uid of this.active.keys()) {
      if (!this.store.nodes.has(uid)) {
        this.active.delete(uid);
        this.changed = true;
      }
    }
  }
  /**
   * Looks at the objects that changed (or all of them, after a snapshot) for cascades that
   * start, then brings every running cascade up to date.
   * @param {Iterable<string>} uids @param {number} now performance.now() (progressedAt)
   */
  observe(uids, now) {
    const { store } = this;
    const t = this.now();
    for (const uid of uids) {
      if (this.active.has(uid)) continue;
      const n = store.nodes.get(uid);
      if (n) {
        if (isNamespaceObject(n) && !n.virtual) {
          if (!n.beingDeleted) this.seenAlive.add(uid);
          else this.begin(uid, n, "Namespace", t, now);
          continue;
        }
        if (!n.beingDeleted || n.virtual) continue;
        const fin = n.finalizers || [];
        const policy = fin.includes("foregroundDeletion") ? "Foreground" : fin.includes("orphan") ? "Orphan" : null;
        if (policy && store.dependents.get(uid)?.size) this.begin(uid, n, policy, t, now);
      } else {
        const g = store.ghosts.get(uid);
        if (g && !g.node.virtual && this.liveDependents(uid).length) this.begin(uid, g.node, "Background", t, now);
      }
    }
    this.update(now);
    this.lastObserved = now;
  }
  /**
   * Adds to members the objects removed since the last look that uid owned (or that
   * members did): one look can see the owner's deletion and its first dependents' removal
   * together (a busy page draws a frame of many events), and those went in the cascade.
   * @param {string} uid @param {Set<string>} members
   */
  addRemovedSinceLastLook(uid, members) {
    for (let grew = true; grew; ) {
      grew = false;
      for (const [u, g] of this.store.ghosts) {
        if (!g.removed || g.at < this.lastObserved || members.has(u)) continue;
        if (g.node.owners?.some((o) => o.uid === uid || members.has(o.uid))) {
          members.add(u);
          grew = true;
        }
      }
    }
  }
  /**
   * @param {string} uid @param {NodeState} n @param {"Foreground"|"Background"|"Orphan"|"Namespace"} policy
   * @param {number} t the moment shown, when the page sees the cascade @param {number} now performance.now()
   */
  begin(uid, n, policy, t, now) {
    const ns = policy === "Namespace";
    const members = ns ? new Set(this.store.byNamespace.get(n.name) || []) : policy === "Orphan" ? new Set(this.liveDependents(uid)) : this.descendants(uid);
    if (!ns && policy !== "Orphan") this.addRemovedSinceLastLook(uid, members);
    if (!ns) this.addInvalidDependents(uid, members);
    const deleted = Date.parse(n.deletionTimestamp || "");
    const underWay = deleted < t - TIMESTAMP_MS;
    const start = underWay ? deleted : t;
    const c = {
      owner: uid,
      ref: { kind: n.kind, namespace: n.namespace, name: n.name },
      policy,
      start,
      end: null,
      members,
      gone: 0,
      orphaned: 0,
      total: members.size + 1,
      ownerGone: false,
      waitingOn: "",
      eta: null,
      nested: false,
      progressedAt: now,
      namespaces: /* @__PURE__ */ new Set([n.namespace || ""]),
      estimated: true,
      // A namespace's members that went before the page saw its deletion are not known:
      // only one the page saw alive, or whose deletion began just now, has a baseline.
      baseline: !ns || !underWay || this.seenAlive.has(uid),
      explained: ""
    };
    if (ns) {
      c.namespaces.add(n.name);
      this.store.markNamespace(n.name);
    }
    this.refineStart(c, t);
    for (const m of members) c.namespaces.add(this.store.nodes.get(m)?.namespace || "");
    this.active.set(uid, c);
    this.changed = true;
  }
  /** @param {number} now performance.now() (progressedAt) */
  update(now) {
    const t = this.now();
    for (const c of this.active.values()) {
      if (!c.nested) {
        for (const o of this.active.values()) if (o !== c && o.members.has(c.owner)) c.nested = true;
      }
      if (c.estimated) this.refineStart(c, t);
      const before = `${c.gone}/${c.orphaned}/${c.total}/${c.waitingOn}`;
      this.measure(c, t);
      if (`${c.gone}/${c.orphaned}/${c.total}/${c.waitingOn}` !== before) {
        this.changed = true;
        c.progressedAt = now;
      }
      if (this.settled(c)) {
        c.end = Math.max(t, c.start);
        c.eta = 0;
        this.active.delete(c.owner);
        this.finished.unshift(c);
        this.changed = true;
      }
    }
    while (this.finished.length > KEEP_FINISHED || this.finished.length && t - /** @type {number} */
    this.finished[this.finished.length - 1].end > KEEP_MS) {
      this.finished.pop();
      this.changed = true;
    }
  }
  /**
   * The recorded start of a cascade found under way (time travel), once the recording's
   * cascades are known. @param {Cascade} c @param {number} t the moment shown
   */
  refineStart(c, t) {
    const s = this.recorded?.(c.owner, t)?.start;
    if (s === void 0 || !Number.isFinite(s) || s > t) return;
    c.start = s;
    c.estimated = false;
    this.changed = true;
  }
  /** Counts a cascade's members: gone, staying, and what it waits on. @param {Cascade} c @param {number} t the moment shown */
  measure(c, t) {
    if (c.policy === "Namespace") return this.measureNamespace(c, t);
    const { store } = this;
    if (c.policy !== "Orphan") {
      for (const d of this.descendants(c.owner)) {
        if (c.members.has(d)) continue;
        c.members.add(d);
        c.namespaces.add(store.nodes.get(d)?.namespace || "");
      }
    }
    this.addInvalidDependents(c.owner, c.members);
    let gone = 0, orphaned = 0;
    for (const u of c.members) {
      const n = store.nodes.get(u);
      if (!n) gone += this.goneNow(u) ? 1 : 0;
      else if (!this.hangsFrom(c, n)) orphaned++;
    }
    c.ownerGone = this.goneNow(c.owner);
    if (c.ownerGone) gone++;
    const seen = c.members.size + 1;
    const before = Math.max(0, (this.recorded?.(c.owner, t)?.objects ?? 0) - seen);
    if (c.policy === "Orphan") orphaned += before;
    else gone += before;
    c.gone = gone;
    c.orphaned = orphaned;
    c.total = seen + before;
    const left = c.total - gone - orphaned;
    const elapsed = t - c.start;
    const held = this.heldMember(c);
    c.waitingOn = held ? `${held.kind} ${held.name} held by finalizer ${holdingFinalizers(held)[0]}` : this.blockedOn(c);
    c.eta = !held && gone > 0 && left > 0 ? elapsed / gone * left : null;
  }
  /**
   * A namespace's deletion: its members (those that appear while it runs included) gone,
   * what holds it (a member held by another controller's finalizer, else what the engine
   * last said), and, with a baseline, the time left at the rate so far.
   * @param {Cascade} c @param {number} t the moment shown
   */
  measureNamespace(c, t) {
    const { store } = this;
    for (const u of store.byNamespace.get(c.ref.name) || []) {
      if (!c.members.has(u)) c.members.add(u);
    }
    let gone = 0;
    for (const u of c.members) if (this.goneNow(u)) gone++;
    c.ownerGone = this.goneNow(c.owner);
    if (c.ownerGone) gone++;
    c.gone = gone;
    c.orphaned = 0;
    c.total = c.members.size + 1;
    const held = this.heldMember(c);
    c.waitingOn = held ? `held by finalizer ${holdingFinalizers(held)[0]} (${held.kind} ${held.name})` : c.explained;
    const left = c.total - gone;
    c.eta = c.baseline && !held && gone > 0 && left > 0 ? (t - c.start) / gone * left : null;
  }
  /**
   * Whether uid is gone as the page shows it: out of the graph, and not held being deleted
   * (DELETION_SEEN_MS), so a count never runs ahead of the boxes it counts.
   * @param {string} uid
   */
  goneNow(uid) {
    return !this.store.nodes.has(uid) && !this.store.shownDeleting.has(uid);
  }
  /** The deletion of namespace name, running or recently finished, if the page follows one. @param {string} name */
  ofNamespace(name) {
    for (const c of this.active.values()) if (c.policy === "Namespace" && c.ref.name === name) return c;
    return this.finished.find((c) => c.policy === "Namespace" && c.ref.name === name) || null;
  }
  /** A cascade is over when nothing of it is left to do. @param {Cascade} c */
  settled(c) {
    return this.goneNow(c.owner) && c.gone + c.orphaned >= c.total;
  }
  /**
   * Whether member n still hangs from the cascade: a valid reference of it names the owner
   * or (not in an Orphan delete, which lets go of its direct dependents) a member, gone or
   * not (a reference to a deleted owner is work the collector has yet to do). A member
   * that does not stays: orphaned, or kept through an invalid reference.
   * @param {Cascade} c @param {NodeState} n
   */
  hangsFrom(c, n) {
    const { store } = this;
    return (n.owners || []).some((o) => (o.uid === c.owner || c.policy !== "Orphan" && c.members.has(o.uid)) && !invalidReason(n, store.nodes.get(o.uid) || store.ghosts.get(o.uid)?.node));
  }
  /**
   * Adds to members the objects that name the owner or a member through an invalid
   * reference (a cluster-scoped object naming a namespaced owner, an owner in another
   * namespace): the collector never deletes them for it, so they stay (kept).
   * @param {string} uid the owner @param {Set<string>} members
   */
  addInvalidDependents(uid, members) {
    const { store } = this;
    for (const u of [uid, ...members]) {
      const owner = store.nodes.get(u) || store.ghosts.get(u)?.node;
      for (const d of store.dependents.get(u) || []) {
        if (d === uid || members.has(d)) continue;
        const dn = store.nodes.get(d);
        if (dn && invalidReason(dn, owner)) members.add(d);
      }
    }
  }
  /** A member being deleted that another controller's finalizer holds, if any. @param {Cascade} c */
  heldMember(c) {
    for (const m of c.members) {
      const n = this.store.nodes.get(m);
      if (n && n.beingDeleted && holdingFinalizers(n).length) return n;
    }
    return null;
  }
  /**
   * What holds a foreground cascade up, in words: its owner's first blocking dependent
   * (with how many of its own dependents remain).
   * @param {Cascade} c
   */
  blockedOn(c) {
    const { store } = this;
    if (c.policy !== "Foreground" || !store.nodes.has(c.owner)) return "";
    const blockers = blockingDependents(store, c.owner);
    if (!blockers.length) return "";
    const b = blockers[0];
    const below = [...this.descendants(b.uid)].flatMap((u) => store.nodes.get(u) || []);
    const kinds = /* @__PURE__ */ new Map();
    for (const n of below) kinds.set(n.kind, (kinds.get(n.kind) || 0) + 1);
    const what = [...kinds].map(([k, n]) => `${n} ${k}${n === 1 ? "" : "s"}`).join(", ");
    const more = blockers.length > 1 ? ` and ${blockers.length - 1} more` : "";
    return `${b.kind} ${b.name}${what ? ` (${what})` : ""}${more}`;
  }
  /** Dependents of uid that still exist, through valid references. @param {string} uid */
  liveDependents(uid) {
    const { store } = this;
    const owner = store.nodes.get(uid) || store.ghosts.get(uid)?.node;
    return [...store.dependents.get(uid) || []].filter((d) => {
      const dn = store.nodes.get(d);
      return dn && !invalidReason(dn, owner);
    });
  }
  /**
   * Every object below uid through valid ownerReferences (uid itself excluded). An invalid
   * reference (a cluster-scoped object naming a namespaced owner, or an owner in another
   * namespace) is one the collector never follows from the owner's side.
   * @param {string} uid
   */
  descendants(uid) {
    const { store } = this;
    const seen = /* @__PURE__ */ new Set();
    const stack = [uid];
    while (stack.length) {
      const u = (
        /** @type {string} */
        stack.pop()
      );
      const owner = store.nodes.get(u) || store.ghosts.get(u)?.node;
      for (const d of store.dependents.get(u) || []) {
        if (d === uid || seen.has(d)) continue;
        const dn = store.nodes.get(d);
        if (!dn || invalidReason(dn, owner)) continue;
        seen.add(d);
        stack.push(d);
      }
    }
    return seen;
  }
  /**
   * Whether a cascade is making progress in namespace ns (its counts changed in the last
   * ms): its layout should hold still. A stuck cascade does not hold it.
   * @param {string} ns @param {number} now @param {number} ms
   */
  progressing(ns, now, ms) {
    for (const c of this.active.values()) if (now - c.progressedAt < ms && c.namespaces.has(ns)) return true;
    return false;
  }
  /** The cascade of owner uid, running or recently finished. @param {string} uid */
  of(uid) {
    return this.active.get(uid) || this.finished.find((c) => c.owner === uid) || null;
  }
};
function progressText(c, now) {
  const parts = [countText(c)];
  if (c.end !== null) {
    parts.push(`done in ${secs(c.end - c.start)}`);
    return parts.join(" · ");
  }
  parts.push(cascadeCaption(c, now));
  return parts.join(" · ");
}
function cascadeCaption(c, now) {
  const parts = [];
  if (c.waitingOn) parts.push(c.policy === "Namespace" ? c.waitingOn : `waiting on ${c.waitingOn}`);
  parts.push(c.eta !== null ? `~${secs(c.eta)} left` : `${secs(now - c.start)} so far`);
  return parts.join(" · ");
}
function tally(c) {
  return { gone: c.gone, of: c.total - c.orphaned, kept: c.orphaned };
}
function recordedTally(rc) {
  if (rc.objects === void 0 || rc.deleted === void 0) return null;
  const kept = rc.kept || 0;
  return { gone: rc.deleted, of: rc.objects - kept, kept };
}
function countWords(t, policy) {
  const kept = t.kept ? ` · ${t.kept} ${policy === "Orphan" ? "orphaned" : "kept"}` : "";
  return `${t.gone} of ${t.of} gone${kept}`;
}
function countText(c) {
  const t = tally(c);
  if (!c.baseline) return c.end === null ? `${t.of - t.gone} left` : `${t.gone} gone`;
  return countWords(t, c.policy);
}
function progress(c) {
  if (c.end !== null) return 1;
  if (!c.baseline) return 0;
  return (c.gone + c.orphaned) / Math.max(1, c.total);
}
function namespaceStatus(c, widest = false) {
  if (widest) return `  ·  Terminating  ·  ${c.total} of ${c.total} gone`;
  return `  ·  ${c.end === null ? "Terminating" : "deleted"}  ·  ${countText(c)}`;
}
function policyText(c) {
  return c.policy === "Namespace" ? "namespace deletion" : c.policy;
}
var CascadeStrip = class {
  /** @param {HTMLElement} el @param {Cascades} cascades @param {(uid: string) => void} select */
  constructor(el, cascades, select) {
    this.el = el;
    this.cascades = cascades;
    this.select = select;
  }
  render() {
    const { cascades } = this;
    const now = cascades.now();
    const list = [...[...cascades.active.values()].sort((a, b) => b.start - a.start), ...cascades.finished].filter((c) => !c.nested).slice(0, 4);
    this.el.hidden = list.length === 0;
    patchChildren(this.el, list.map((c) => {
      const running = c.end === null;
      const bar = h("span.meter", null, h("span", { style: `width: ${Math.round(progress(c) * 100)}%` }));
      return h(
        "button.cascade",
        {
          type: "button",
          "data-owner": c.owner,
          "data-state": running ? "running" : "done",
          "data-policy": c.policy,
          title: c.policy === "Namespace" ? `Deletion of namespace ${c.ref.name} (the namespace controller deletes its content, then the namespace): ${progressText(c, now)}` : `${c.policy} deletion of ${describe(c.ref)}: ${progressText(c, now)}`,
          onclick: () => this.select(c.owner)
        },
        h("span.policy", null, policyText(c)),
        h("b", null, `${c.ref.kind} ${c.ref.name}`),
        bar,
        h("span.muted", null, `${countText(c)} · ${secs(running ? now - c.start : (
          /** @type {number} */
          c.end - c.start
        ))}`)
      );
    }));
  }
};
function secs(ms) {
  ms = Math.max(0, ms);
  return ms < 1e4 ? `${(ms / 1e3).toFixed(1)} s` : `${Math.round(ms / 1e3)} s`;
}

// src/cycles.js
function cycleEdges(owners) {
  const index = /* @__PURE__ */ new Map();
  const low = /* @__PURE__ */ new Map();
  const component = /* @__PURE__ */ new Map();
  const stack = [];
  const onStack = /* @__PURE__ */ new Set();
  let next = 0, components = 0;
  const out = (u) => (owners.get(u) || []).filter((o) => owners.has(o));
  for (const root of owners.keys()) {
    if (index.has(root)) continue;
    const walk = [];
    const enter = (u) => {
      index.set(u, next);
      low.set(u, next++);
      stack.push(u);
      onStack.add(u);
      walk.push({ u, edges: out(u), i: 0 });
    };
    enter(root);
    while (walk.length) {
      const top = walk[walk.length - 1];
      if (top.i < top.edges.length) {
        const o = top.edges[top.i++];
        if (!index.has(o)) enter(o);
        else if (onStack.has(o)) low.set(top.u, Math.min(
          /** @type {number} */
          low.get(top.u),
          /** @type {number} */
          index.get(o)
        ));
        continue;
      }
      walk.pop();
      if (walk.length) {
        const up = walk[walk.length - 1].u;
        low.set(up, Math.min(
          /** @type {number} */
          low.get(up),
          /** @type {number} */
          low.get(top.u)
        ));
      }
      if (low.get(top.u) === index.get(top.u)) {
        let v;
        do {
          v = /** @type {string} */
          stack.pop();
          onStack.delete(v);
          component.set(v, components);
        } while (v !== top.u);
        components++;
      }
    }
  }
  const edges = /* @__PURE__ */ new Set();
  for (const [u, os] of owners) {
    for (const o of os) if (owners.has(o) && (o === u || component.get(o) === component.get(u))) edges.add(cycleKey(u, o));
  }
  return edges;
}
function cycleKey(dependent, owner) {
  return `${dependent} ${owner}`;
}

// src/layout.js
var NODE_W = 180;
var NODE_H = 40;
var GAP_X = 16;
var GAP_Y = 60;
var LEAF_GAP_Y = 12;
var LEAF_COLS = 8;
var GROUP_PAD = 24;
var CYCLE_BULGE = 56;
var CYCLE_ROOM = Math.ceil(CYCLE_BULGE * 0.75) + 8;
var GROUP_TITLE = 44;
var GROUP_ROW = 10 * (NODE_W + GAP_X);
var GROUP_GAP = 80;
var LONER_MIN = 4;
var LONER_CAPTION = 28;
var TITLE_FONT = 20;
var MIN_WORLD_ROW = 9e3;
var KIND_RANK = [
  "Namespace",
  "Node",
  "CustomResourceDefinition",
  "Deployment",
  "StatefulSet",
  "DaemonSet",
  "CronJob",
  "Job",
  "ReplicaSet",
  "ReplicationController",
  "ControllerRevision",
  "Pod",
  "PersistentVolumeClaim",
  "Service",
  "EndpointSlice",
  "Endpoints",
  "ConfigMap",
  "Secret",
  "ServiceAccount"
];
function sortKey(n) {
  const r = KIND_RANK.indexOf(n.kind);
  return String(r < 0 ? 99 : r).padStart(2, "0") + n.kind + "\0" + n.name + "\0" + n.uid;
}
var Layout = class {
  constructor() {
    this.groups = /* @__PURE__ */ new Map();
    this.items = /* @__PURE__ */ new Map();
    this.bounds = { x: 0, y: 0, w: 0, h: 0 };
    this.byName = false;
    this.version = 0;
    this.boxesKey = "";
  }
  /**
   * Lays out again the namespaces in dirty ("*": all) with the members the filter keeps.
   * @param {import("./store.js").Store} store
   * @param {(n: NodeState) => boolean} keep
   * @param {Set<string>} dirty
   * @param {Set<string>} [expanded] loner sets drawn open (keys from lonerKey)
   * @param {(ns: string) => string} [status] what a namespace's title says besides (LayoutOptions)
   * @param {Counted|null} [counted] summary first: the namespaces counted (their boxes), with
   *   keepNamespace, whether the filter keeps one
   * @param {(ns: string) => boolean} [keepNamespace]
   */
  update(store, keep2, dirty, expanded = /* @__PURE__ */ new Set(), status = () => "", counted3 = null, keepNamespace = () => true) {
    const all = dirty.has("*");
    this.byName = !!counted3;
    const members = /* @__PURE__ */ new Map();
    const add = (n, ghost) => {
      const ns = n.namespace || "";
      if (!all && !dirty.has(ns)) return;
      if (!keep2(n)) return;
      let m = members.get(ns);
      if (!m) members.set(ns, m = []);
      m.push({ node: n, ghost });
    };
    if (all) for (const n of store.nodes.values()) add(n, false);
    else {
      for (const ns of dirty) for (const u of store.byNamespace.get(ns) || []) add(
        /** @type {NodeState} */
        store.nodes.get(u),
        false
      );
    }
    for (const g of store.ghosts.values()) if (!store.nodes.has(g.node.uid)) add(g.node, true);
    const redo = all ? /* @__PURE__ */ new Set([...this.groups.keys(), ...members.keys(), ...counted3?.counts.keys() || []]) : new Set(dirty);
    for (const ns of redo) {
      const old = this.groups.get(ns);
      if (old) {
        for (const it of old.items) if (this.items.get(it.uid) === it) this.items.delete(it.uid);
      }
      const m = members.get(ns);
      const count = counted3?.counts.get(ns);
      if (!m || m.length === 0) {
        if (count && keepNamespace(ns)) this.groups.set(ns, summaryGroup(ns, count, status));
        else this.groups.delete(ns);
        continue;
      }
      const g = layoutGroup(ns, m, { loner: (n) => isLoner(store, n), expanded, status });
      if (count && !counted3?.holds(ns)) g.total = count.objects;
      this.groups.set(ns, g);
      for (const it of g.items) this.items.set(it.uid, it);
    }
    this.pack();
  }
  /**
   * Where namespace ns's box goes among the shelves (pack): those with ownership first, by
   * name; cluster-scoped last. Ownership is what people come to look at; cluster-scoped
   * objects (mostly RBAC and API machinery) go last. One not laid out yet ranks first.
   * @param {string} a @param {string} b
   */
  compare(a, b) {
    const rank = (ns) => ns === "" ? 2 : this.byName || (this.groups.get(ns)?.owned ?? true) ? 0 : 1;
    return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
  }
  /** Places the namespace boxes in shelves, in compare's order. */
  pack() {
    const names = [...this.groups.keys()].sort((a, b) => this.compare(a, b));
    let area = 0, widest = 0;
    for (const g of this.groups.values()) {
      area += (g.w + GROUP_GAP) * (g.h + GROUP_GAP);
      widest = Math.max(widest, g.w);
    }
    const row = Math.max(widest, MIN_WORLD_ROW, 2 ** Math.ceil(Math.log2(Math.sqrt(area * 1.8) || 1)));
    let x = 0, y = 0, shelf = 0, maxW = 0, key = 0;
    for (const ns of names) {
      const g = (
        /** @type {Group} */
        this.groups.get(ns)
      );
      if (x > 0 && x + g.w > row) {
        x = 0;
        y += shelf + GROUP_GAP;
        shelf = 0;
      }
      g.x = x;
      g.y = y;
      x += g.w + GROUP_GAP;
      shelf = Math.max(shelf, g.h);
      maxW = Math.max(maxW, x - GROUP_GAP);
      key = Math.imul(key, 31) + Math.round(g.x * 7 + g.y * 13 + g.w * 17 + g.h * 19) + (g.summary ? 1 : 0) | 0;
    }
    this.bounds = { x: 0, y: 0, w: maxW, h: y + shelf };
    const boxesKey = `${names.length}/${key}`;
    if (boxesKey !== this.boxesKey) {
      this.boxesKey = boxesKey;
      this.version++;
    }
  }
  /** Where the workloads are: the boxes of the namespaces with ownership (all boxes if none). */
  workloadBounds() {
    const gs = [...this.groups.values()].filter((g) => g.owned);
    if (!gs.length) return this.bounds;
    const x0 = Math.min(...gs.map((g) => g.x)), y0 = Math.min(...gs.map((g) => g.y));
    const x1 = Math.max(...gs.map((g) => g.x + g.w)), y1 = Math.max(...gs.map((g) => g.y + g.h));
    return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
  }
  /** @param {string} uid the item's absolute box, or null when it is not drawn */
  box(uid) {
    const it = this.items.get(uid);
    if (!it) return null;
    return { x: it.group.x + it.x, y: it.group.y + it.y, w: NODE_W, h: NODE_H };
  }
};
function isLoner(store, n) {
  return !n.owners?.length && !store.dependents.has(n.uid) && !n.virtual;
}
function lonerKey(ns, kind) {
  return `loners\0${ns}\0${kind}`;
}
function layoutGroup(ns, members, opts) {
  const g = { ns, title: ns || "cluster-scoped", x: 0, y: 0, w: 0, h: 0, items: [], blocks: [], owned: 0, cycles: /* @__PURE__ */ new Set() };
  const byUID = /* @__PURE__ */ new Map();
  const loners = /* @__PURE__ */ new Map();
  for (const m of members) {
    const e = { ...m, key: sortKey(m.node) };
    if (opts.loner(m.node)) {
      let l = loners.get(m.node.kind);
      if (!l) loners.set(m.node.kind, l = []);
      l.push(e);
    } else byUID.set(m.node.uid, e);
  }
  for (const [kind, l] of loners) {
    if (l.length >= LONER_MIN) continue;
    for (const e of l) byUID.set(e.node.uid, e);
    loners.delete(kind);
  }
  for (const e of byUID.values()) if (e.node.owners?.length || !opts.loner(e.node)) g.owned++;
  g.cycles = cycleEdges(new Map([...byUID].map(([uid, e]) => [uid, (e.node.owners || []).map((o) => o.uid)])));
  const parent = /* @__PURE__ */ new Map();
  for (const [uid, m] of byUID) {
    let p = null;
    const owners = (m.node.owners || []).filter((o) => o.uid !== uid && byUID.has(o.uid));
    const ctl = owners.find((o) => o.controller);
    if (ctl) p = ctl.uid;
    else if (owners.length) {
      p = owners.reduce((a, b) => (
        /** @type {Member} */
        byUID.get(a.uid).key <= /** @type {Member} */
        byUID.get(b.uid).key ? a : b
      )).uid;
    }
    parent.set(uid, p);
  }
  breakCycles(parent, byUID);
  const children = /* @__PURE__ */ new Map();
  const roots = [];
  for (const [uid, p] of parent) {
    if (p === null) roots.push(uid);
    else {
      let c = children.get(p);
      if (!c) children.set(p, c = []);
      c.push(uid);
    }
  }
  const byKey = (a, b) => {
    const x2 = (
      /** @type {Member} */
      byUID.get(a).key
    ), y2 = (
      /** @type {Member} */
      byUID.get(b).key
    );
    return x2 < y2 ? -1 : x2 > y2 ? 1 : 0;
  };
  roots.sort(byKey);
  for (const c of children.values()) c.sort(byKey);
  const size = /* @__PURE__ */ new Map();
  const measure = (u) => {
    const kids = children.get(u) || [];
    const inner = [];
    const leaves = [];
    for (const k of kids) (children.has(k) ? inner : leaves).push(k);
    let cw = 0, ch = 0;
    for (const k of inner) {
      const s2 = measure(k);
      cw += s2.w + GAP_X;
      ch = Math.max(ch, s2.h);
    }
    if (leaves.length) {
      const cols = Math.min(leaves.length, LEAF_COLS), rows = Math.ceil(leaves.length / LEAF_COLS);
      cw += cols * NODE_W + (cols - 1) * GAP_X + GAP_X;
      ch = Math.max(ch, rows * NODE_H + (rows - 1) * LEAF_GAP_Y);
    }
    if (cw > 0) cw -= GAP_X;
    const s = { w: Math.max(NODE_W, cw), h: NODE_H + (kids.length ? GAP_Y + ch : 0), inner, leaves, cw };
    size.set(u, s);
    return s;
  };
  const place = (u, x2, y2, block) => {
    const s = (
      /** @type {Extent} */
      size.get(u)
    );
    const m = (
      /** @type {Member} */
      byUID.get(u)
    );
    g.items.push({ uid: u, node: m.node, ghost: m.ghost, group: g, x: x2 + (s.w - NODE_W) / 2, y: y2, parent: parent.get(u) || null, block });
    let cx = x2 + (s.w - s.cw) / 2;
    const cy = y2 + NODE_H + GAP_Y;
    for (const k of s.inner) {
      place(k, cx, cy, null);
      cx += /** @type {Extent} */
      size.get(k).w + GAP_X;
    }
    if (s.leaves.length) {
      const cols = Math.min(s.leaves.length, LEAF_COLS), rows = Math.ceil(s.leaves.length / LEAF_COLS);
      let b = null;
      if (s.leaves.length > LEAF_COLS) {
        b = { group: g, parent: u, x: cx, y: cy, w: cols * NODE_W + (cols - 1) * GAP_X, h: rows * NODE_H + (rows - 1) * LEAF_GAP_Y, uids: s.leaves };
        g.blocks.push(b);
      }
      s.leaves.forEach((k, i) => {
        const lm = (
          /** @type {Member} */
          byUID.get(k)
        );
        g.items.push({
          uid: k,
          node: lm.node,
          ghost: lm.ghost,
          group: g,
          parent: u,
          block: b,
          x: cx + i % LEAF_COLS * (NODE_W + GAP_X),
          y: cy + Math.floor(i / LEAF_COLS) * (NODE_H + LEAF_GAP_Y)
        });
      });
    }
  };
  let x = 0, y = 0, shelf = 0, w = 0;
  const slot = (sw, sh) => {
    if (x > 0 && x + sw > GROUP_ROW) {
      x = 0;
      y += shelf + GAP_Y;
      shelf = 0;
    }
    const at = { x: GROUP_PAD + x, y: GROUP_TITLE + y };
    x += sw + GAP_X;
    shelf = Math.max(shelf, sh);
    w = Math.max(w, x - GAP_X);
    return at;
  };
  const onCycle = new Set([...g.cycles].map((k) => k.slice(0, k.indexOf(" "))));
  const cycleIn = (u) => (
    /** @type {boolean} */
    onCycle.has(u) || children.get(u)?.some(cycleIn)
  );
  for (const r of roots) {
    const s = measure(r);
    const room = onCycle.size && cycleIn(r) ? CYCLE_ROOM : 0;
    const at = slot(s.w + 2 * room, s.h);
    place(r, at.x + room, at.y, null);
  }
  const kinds = [...loners.keys()].sort((a, b) => sortKey(
    /** @type {any} */
    { kind: a, name: "", uid: "" }
  ) < sortKey(
    /** @type {any} */
    { kind: b, name: "", uid: "" }
  ) ? -1 : 1);
  for (const kind of kinds) {
    const l = (
      /** @type {Member[]} */
      loners.get(kind)
    );
    l.sort((a, b2) => a.key < b2.key ? -1 : a.key > b2.key ? 1 : 0);
    const key = lonerKey(ns, kind);
    const open = opts.expanded.has(key);
    const cols = Math.min(l.length, LEAF_COLS), rows = Math.ceil(l.length / LEAF_COLS);
    const gw = cols * NODE_W + (cols - 1) * GAP_X, gh = rows * NODE_H + (rows - 1) * LEAF_GAP_Y;
    const at = open ? slot(gw, LONER_CAPTION + gh) : slot(NODE_W, NODE_H);
    const b = { group: g, parent: key, loner: kind, uids: l.map((e) => e.node.uid), x: at.x, y: at.y, w: open ? gw : NODE_W, h: open ? LONER_CAPTION + gh : NODE_H };
    g.blocks.push(b);
    l.forEach((e, i) => {
      const ix = open ? at.x + i % LEAF_COLS * (NODE_W + GAP_X) : at.x;
      const iy = open ? at.y + LONER_CAPTION + Math.floor(i / LEAF_COLS) * (NODE_H + LEAF_GAP_Y) : at.y;
      g.items.push({ uid: e.node.uid, node: e.node, ghost: e.ghost, group: g, parent: null, block: b, x: ix, y: iy });
    });
  }
  g.w = Math.max(w, 2 * NODE_W, titleWidth(g.title + opts.status(ns), g.items.length)) + 2 * GROUP_PAD;
  g.h = GROUP_TITLE + y + shelf + GROUP_PAD;
  return g;
}
function summaryGroup(ns, count, status) {
  const n = Math.ceil(2 ** (Math.ceil(Math.log2(Math.max(1, count.objects)) * 4) / 4));
  const cols = Math.max(2, Math.ceil(Math.sqrt(n))), rows = Math.ceil(n / cols);
  const title = ns || "cluster-scoped";
  const w = Math.max(cols * (NODE_W + GAP_X) - GAP_X, titleWidth(title + status(ns), count.objects));
  return {
    ns,
    title,
    x: 0,
    y: 0,
    w: w + 2 * GROUP_PAD,
    h: GROUP_TITLE + rows * (NODE_H + LEAF_GAP_Y) - LEAF_GAP_Y + GROUP_PAD,
    items: [],
    blocks: [],
    owned: 0,
    cycles: /* @__PURE__ */ new Set(),
    summary: count,
    total: count.objects
  };
}
function groupCount(g) {
  const n = g.summary ? 0 : g.items.length;
  if (g.total === void 0 || g.total === n) return String(n);
  return n ? `${n} of ${g.total}` : String(g.total);
}
var measureCtx;
function titleWidth(title, count) {
  const text = `${title}  ·  ${count}`;
  if (measureCtx === void 0) measureCtx = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(1, 1).getContext("2d") : null;
  if (!measureCtx) return text.length * TITLE_FONT * 0.62;
  measureCtx.font = `600 ${TITLE_FONT}px system-ui, sans-serif`;
  return measureCtx.measureText(text).width + 16;
}
function breakCycles(parent, byUID) {
  const state = /* @__PURE__ */ new Map();
  for (const start of parent.keys()) {
    if (state.get(start) === 2) continue;
    const path2 = [];
    let u = (
      /** @type {string|null} */
      start
    );
    while (u !== null && !state.has(u)) {
      state.set(u, 1);
      path2.push(u);
      u = parent.get(u) ?? null;
    }
    if (u !== null && state.get(u) === 1) {
      const circle = path2.slice(path2.indexOf(u));
      const low = circle.reduce((a, b) => (
        /** @type {Member} */
        byUID.get(a).key <= /** @type {Member} */
        byUID.get(b).key ? a : b
      ));
      parent.set(low, null);
    }
    for (const p of path2) state.set(p, 2);
  }
}

// src/textfit.js
function clamp(v, lo, hi) {
  return Math.max(lo, Math.min(hi, v));
}
var truncCache = /* @__PURE__ */ new Map();
function truncate(ctx, s, width) {
  return fit(ctx, s, width, false);
}
function truncateMiddle(ctx, s, width) {
  return fit(ctx, s, width, true);
}
function fit(ctx, s, width, middle) {
  const key = ctx.font + "\0" + width + "\0" + (middle ? "m" : "") + "\0" + s;
  const hit = truncCache.get(key);
  if (hit !== void 0) return hit;
  const cut = (n) => middle ? s.slice(0, Math.ceil(n / 2)) + "…" + s.slice(s.length - Math.floor(n / 2)) : s.slice(0, n) + "…";
  let out = s;
  if (ctx.measureText(s).width > width) {
    let lo = 0, hi = s.length - 1;
    while (lo < hi) {
      const mid = lo + hi + 1 >> 1;
      if (ctx.measureText(cut(mid)).width <= width) lo = mid;
      else hi = mid - 1;
    }
    out = cut(lo);
  }
  if (truncCache.size > 2e4) truncCache.clear();
  truncCache.set(key, out);
  return out;
}

// src/titles.js
function drawTitles(r, visible) {
  const { ctx, cam, colors: C } = r;
  ctx.setTransform(r.dpr, 0, 0, r.dpr, 0, 0);
  ctx.textBaseline = "middle";
  const titled = /* @__PURE__ */ new Set();
  for (const g of visible) {
    const sx = g.x * cam.k + cam.x, sy = g.y * cam.k + cam.y, sw = g.w * cam.k, sh = g.h * cam.k;
    const text = `${g.title}  ·  ${groupCount(g)}`;
    const del = namespaceDeletion(r, g);
    const status = del ? namespaceStatus(del) : "";
    const band = GROUP_TITLE * cam.k;
    let size2 = Math.min(18, TITLE_FONT * cam.k);
    if (size2 >= 10) {
      ctx.font = `600 ${size2}px system-ui, sans-serif`;
      ctx.fillStyle = C["--fg"];
      const top = clamp(0, sy, sy + sh - band);
      const y = top + band / 2, x = Math.max(sx, 0) + 8 * cam.k, room2 = sx + sw - 8 * cam.k - x;
      const base = del && ctx.measureText(text + status).width > room2 ? g.title : text;
      const shown = truncate(ctx, base, room2);
      ctx.fillText(shown, x, y);
      let drawnText = shown, caption = "";
      if (del) {
        const used = ctx.measureText(shown).width;
        const st = shown === base && room2 - used > 20 ? truncate(ctx, status, room2 - used) : "";
        ctx.fillStyle = C["--st-deleting"];
        ctx.fillText(st, x + used, y);
        drawnText += st;
        caption = drawNamespaceProgress(r, del, sx, top, sw, sy + sh, band);
      }
      recordTitle(r, g.ns, drawnText, caption, titled, x, x + ctx.measureText(drawnText).width, sx + sw);
      continue;
    }
    let py = Math.max(sy, 0) + 1, plateH = Math.min(16, sy + sh - py - 1);
    const gap = Math.min(14, GROUP_GAP * cam.k - 1), over = plateH < 13 && gap >= 10 && sy >= 0;
    if (!over && plateH < 13) plateH = Math.min(13, plateH + Math.max(0, gap - 1));
    if (over) {
      plateH = gap;
      py = sy - plateH - 1;
      size2 = plateH - 2;
    } else if (plateH >= 13) size2 = plateH - 5;
    else if (plateH >= 11) size2 = plateH - 3;
    else continue;
    ctx.font = `600 ${size2}px system-ui, sans-serif`;
    const full = del ? text + status : text;
    const short = del ? `${g.title}  ·  ${del.end === null ? "Terminating" : "deleted"}` : text;
    const px = Math.max(sx, 0) + 3, room = sx + sw - px - 9;
    const plate = [full, short].find((t) => ctx.measureText(t).width <= room) ?? truncate(ctx, g.title, room);
    if (plate.length < 3) continue;
    const tw = ctx.measureText(plate).width;
    if (!over) {
      ctx.fillStyle = C["--group-bg"];
      ctx.globalAlpha = 0.9;
      ctx.fillRect(px, py, tw + 6, plateH);
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = del ? C["--st-deleting"] : C["--fg"];
    ctx.fillText(plate, px + 3, py + plateH / 2);
    recordTitle(r, g.ns, plate, "", titled, px + 3, px + 3 + tw, sx + sw);
  }
  if (r.drawnTitles) {
    for (const ns of r.drawnTitles.keys()) {
      if (titled.has(ns)) continue;
      r.drawnTitles.delete(ns);
      r.titleLog.push({ ns, text: "", caption: "", inLayout: r.layout.groups.has(ns), t: r.drawClock });
    }
  }
  const size = 13 * cam.k;
  if (size < 8) return;
  ctx.font = `${Math.min(size, 15)}px system-ui, sans-serif`;
  ctx.fillStyle = C["--muted"];
  for (const g of visible) {
    for (const b of g.blocks) {
      if (!b.loner || r.collapsed(b)) continue;
      const n = b.uids.length;
      const text = `${n} ${b.loner}${n === 1 ? "" : "s"} with no owner and no dependent  ·  click here to fold`;
      ctx.fillText(truncate(ctx, text, b.w * cam.k), (g.x + b.x) * cam.k + cam.x, (g.y + b.y + LONER_CAPTION / 2 - 2) * cam.k + cam.y);
    }
  }
}
function namespaceDeletion(r, g) {
  return g.ns && r.cascades ? r.cascades.ofNamespace(g.ns) : null;
}
function drawNamespaceProgress(r, del, sx, top, sw, bottom, band) {
  const { ctx, cam, colors: C } = r;
  const bx = sx + 8 * cam.k, bw = sw - 16 * cam.k, by = top + band - 6;
  ctx.fillStyle = C["--muted"];
  ctx.globalAlpha = 0.3;
  ctx.fillRect(bx, by, bw, 3);
  ctx.globalAlpha = 1;
  ctx.fillStyle = C["--st-deleting"];
  ctx.fillRect(bx, by, bw * progress(del), 3);
  if (del.end !== null || 80 * cam.k < 18) return "";
  ctx.font = "11px system-ui, sans-serif";
  const caption = truncate(ctx, cascadeCaption(del, r.cascades?.now() ?? Date.now()), sw);
  const w = ctx.measureText(caption).width + 10;
  ctx.fillStyle = C["--bg"];
  ctx.globalAlpha = 0.9;
  ctx.fillRect(sx, bottom + 3, w, 16);
  ctx.globalAlpha = 1;
  ctx.fillStyle = C["--st-deleting"];
  ctx.fillText(caption, sx + 5, bottom + 11);
  return caption;
}
function recordTitle(r, ns, text, caption, titled, x, right, boxRight) {
  if (!r.drawnTitles) return;
  titled.add(ns);
  const last = r.drawnTitles.get(ns);
  if (!last || last.text !== text || last.caption !== caption) {
    r.titleLog.push({ ns, text, caption, inLayout: true, t: r.drawClock });
    if (r.titleLog.length > 1e5) r.titleLog.splice(0, 5e4);
  }
  r.drawnTitles.set(ns, { text, caption, at: r.drawClock, x, right, boxRight });
}
function drawCounts(r, visible) {
  const { ctx, cam, colors: C } = r;
  ctx.setTransform(r.dpr, 0, 0, r.dpr, 0, 0);
  ctx.textBaseline = "middle";
  ctx.textAlign = "center";
  r.drawnCounts?.clear();
  for (const g of visible) {
    if (!g.summary) continue;
    const x0 = g.x * cam.k + cam.x, y0 = (g.y + GROUP_TITLE) * cam.k + cam.y;
    const sx = Math.max(0, x0), sw = Math.min(r.w, x0 + g.w * cam.k) - sx;
    const top = Math.max(0, y0), sh = Math.min(r.h, (g.y + g.h) * cam.k + cam.y) - top;
    if (sw < 120 || sh < 60) continue;
    const size = Math.min(16, Math.max(11, sh / 8));
    const cx = sx + sw / 2, room = sw - 16;
    const c = g.summary;
    const lines = [[`${c.objects.toLocaleString("en-US")} object${c.objects === 1 ? "" : "s"}`, C["--fg"]]];
    if (c.beingDeleted) lines.push([`${c.beingDeleted.toLocaleString("en-US")} being deleted`, C["--st-deleting"]]);
    const note = r.countsNote(g.ns);
    if (note) lines.push([note, C["--muted"]]);
    const shown = lines.slice(0, Math.max(1, Math.floor(sh / (size * 1.6))));
    let y = top + sh / 2 - (shown.length - 1) * size * 1.5 / 2;
    for (const [text, color] of shown) {
      ctx.font = `${color === C["--fg"] ? "600 " : ""}${size}px system-ui, sans-serif`;
      ctx.fillStyle = color;
      const t = truncate(ctx, text, room);
      ctx.fillText(t, cx, y);
      if (r.drawnCounts) {
        const half = ctx.measureText(t).width / 2;
        r.drawnCounts.set(`${g.ns}
${text}`, { ns: g.ns, text: t, left: cx - half, right: cx + half, y });
      }
      y += size * 1.5;
    }
  }
  ctx.textAlign = "start";
}

// src/nodes.js
function itemState(r, it) {
  const cur = r.store.current(it.uid);
  if (!cur) return "removed";
  if (!cur.ghost) return stateOf(r.store, cur.node);
  return r.store.shownDeleting.get(it.uid)?.state ?? "removed";
}
function record(r, it, state, now) {
  r.drawnState?.set(it.uid, { state, x: it.group.x + it.x, y: it.group.y + it.y, at: r.drawClock, multi: r.multi.has(it.uid), orphaned: false });
}
function itemColor(r, it, now) {
  const C = r.colors;
  const st = itemState(r, it);
  if (st === "removed") return C["--st-removed"];
  const pv = r.preview.get(it.uid);
  if (pv) return C[PREVIEW[pv].color];
  if (st === "normal") return kindColor(it.node.kind, 45, 55);
  return C[STATE_COLOR[st]];
}
function ringed(r) {
  const out = [...r.matches, ...r.multi, ...r.preview.keys()];
  if (r.selected) out.push(r.selected);
  return out;
}
function drawRing(r, it, px) {
  const { ctx, colors: C } = r;
  const sel = it.uid === r.selected;
  const pv = r.preview.get(it.uid);
  const multi = r.multi.has(it.uid);
  const x = it.group.x + it.x, y = it.group.y + it.y;
  ctx.strokeStyle = sel || multi && !pv ? C["--accent"] : pv ? C[PREVIEW[pv].color] : C["--match"];
  const off = (sel ? 3 : multi && !pv ? 4 : 6) * px;
  ctx.lineWidth = (sel || multi ? 3 : 2) * px;
  if (multi && !sel && !pv) ctx.setLineDash([7 * px, 4 * px]);
  ctx.strokeRect(x - off, y - off, NODE_W + 2 * off, NODE_H + 2 * off);
  ctx.setLineDash([]);
  if (multi) {
    const r2 = Math.max(7, 7 * px), cx = x - off, cy = y - off;
    ctx.fillStyle = C["--accent"];
    ctx.beginPath();
    ctx.arc(cx, cy, r2, 0, 2 * Math.PI);
    ctx.fill();
    ctx.strokeStyle = C["--node-bg"];
    ctx.lineWidth = r2 * 0.3;
    ctx.beginPath();
    ctx.moveTo(cx - r2 * 0.45, cy);
    ctx.lineTo(cx - r2 * 0.1, cy + r2 * 0.38);
    ctx.lineTo(cx + r2 * 0.5, cy - r2 * 0.35);
    ctx.stroke();
  }
}
function drawItem(r, it, now, px, labels) {
  const { ctx, store, colors: C } = r;
  const cur = store.current(it.uid);
  const ghost = !cur || cur.ghost && !store.shownDeleting.has(it.uid);
  const n = cur ? cur.node : it.node, x = it.group.x + it.x, y = it.group.y + it.y;
  const st = itemState(r, it);
  record(r, it, st, now);
  const stColor = C[STATE_COLOR[st]];
  let alpha = 1;
  if (ghost) {
    const g = store.ghosts.get(it.uid);
    alpha = g ? Math.max(0.05, 1 - (now - g.at) / GHOST_MS) : 0.05;
  }
  ctx.globalAlpha = alpha;
  ctx.fillStyle = ghost ? C["--st-removed-fill"] : C["--node-bg"];
  ctx.beginPath();
  ctx.roundRect(x, y, NODE_W, NODE_H, 6);
  ctx.fill();
  ctx.fillStyle = kindColor(n.kind, 55, 50);
  ctx.fillRect(x, y + 3, 5, NODE_H - 6);
  ctx.strokeStyle = stColor;
  ctx.lineWidth = (st === "normal" ? 1 : 2.5) * px;
  if (st === "virtual") ctx.setLineDash([5 * px, 3 * px]);
  ctx.stroke();
  ctx.setLineDash([]);
  const born = store.born.get(it.uid);
  if (born !== void 0) {
    ctx.globalAlpha = Math.max(0, 1 - (now - born) / BORN_MS);
    ctx.strokeStyle = C["--accent"];
    ctx.lineWidth = 4 * px;
    ctx.strokeRect(x - 4 * px, y - 4 * px, NODE_W + 8 * px, NODE_H + 8 * px);
    ctx.globalAlpha = alpha;
  }
  const pv = r.preview.get(it.uid);
  if (pv) {
    ctx.globalAlpha = 0.28;
    ctx.fillStyle = C[PREVIEW[pv].color];
    ctx.fillRect(x, y, NODE_W, NODE_H);
    ctx.globalAlpha = alpha;
  }
  if (it.uid === r.selected || r.matches.has(it.uid) || pv || r.multi.has(it.uid)) drawRing(r, it, px);
  else if (it.uid === r.hover) {
    ctx.strokeStyle = C["--accent"];
    ctx.lineWidth = 1.5 * px;
    ctx.strokeRect(x - 2 * px, y - 2 * px, NODE_W + 4 * px, NODE_H + 4 * px);
  }
  let mx = x + NODE_W - 9;
  if (!ghost && hasInvalidOwner(store, n)) {
    ctx.fillStyle = C["--st-invalid"];
    ctx.beginPath();
    ctx.moveTo(mx, y + 3);
    ctx.lineTo(mx + 6, y + 14);
    ctx.lineTo(mx - 6, y + 14);
    ctx.closePath();
    ctx.fill();
    mx -= 15;
  }
  const qs = store.queueStatus(it.uid);
  if (qs.length) {
    const backoff = qs.some((q) => q.item.backoffUntil != null && !q.item.inFlight && !q.item.queued);
    ctx.fillStyle = backoff ? C["--st-backoff"] : C["--st-queued"];
    ctx.beginPath();
    ctx.arc(mx, y + 9, 5, 0, 2 * Math.PI);
    ctx.fill();
    mx -= 15;
  }
  const orphaned = !ghost && isOrphaned(n);
  if (orphaned) {
    ctx.strokeStyle = C["--st-orphaned"];
    ctx.lineWidth = 3;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(x + 8, y + 1.5);
    ctx.lineTo(x + NODE_W - 8, y + 1.5);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = C["--st-orphaned"];
    ctx.beginPath();
    ctx.moveTo(mx, y + 3);
    ctx.lineTo(mx + 6, y + 9);
    ctx.lineTo(mx, y + 15);
    ctx.lineTo(mx - 6, y + 9);
    ctx.closePath();
    ctx.fill();
    const d = r.drawnState?.get(it.uid);
    if (d) d.orphaned = true;
  }
  const cascade = r.cascades?.active.get(it.uid);
  if (cascade) {
    ctx.fillStyle = C["--muted"];
    ctx.globalAlpha = alpha * 0.35;
    ctx.fillRect(x + 6, y + NODE_H - 5, NODE_W - 12, 3);
    ctx.globalAlpha = alpha;
    ctx.fillStyle = stColor;
    ctx.fillRect(x + 6, y + NODE_H - 5, (NODE_W - 12) * progress(cascade), 3);
  }
  if (labels) {
    ctx.textBaseline = "alphabetic";
    ctx.fillStyle = C["--muted"];
    ctx.font = "11px system-ui, sans-serif";
    let kindLabel = n.kind + (st === "normal" ? orphaned ? " · orphaned" : "" : " · " + (STATES.find((s) => s.id === st)?.label || st));
    if (cascade) {
      kindLabel = `${n.kind} · ${countText(cascade)}`;
      if (ctx.measureText(kindLabel).width > NODE_W - 30) kindLabel = countText(cascade);
    }
    if (pv) kindLabel = `${PREVIEW[pv].label} · ${n.kind}`;
    const kindShown = truncate(ctx, kindLabel, NODE_W - 30);
    ctx.fillText(kindShown, x + 11, y + 15);
    ctx.fillStyle = C["--fg"];
    ctx.font = (n.virtual ? "italic " : "") + "600 13px system-ui, sans-serif";
    const nameShown = truncateMiddle(ctx, n.name || "(unnamed)", NODE_W - 16);
    ctx.fillText(nameShown, x + 11, y + 32);
    const drawn = r.drawnState?.get(it.uid);
    if (drawn) drawn.label = [kindShown, nameShown];
    if (cascade && cascade.end === null) {
      ctx.font = "10px system-ui, sans-serif";
      const full = cascadeCaption(cascade, r.cascades?.now() ?? Date.now()), cut = full.lastIndexOf(" · ");
      const caption = cut > 0 && ctx.measureText(full).width > NODE_W + 40 ? truncate(ctx, full.slice(0, cut), NODE_W + 40 - ctx.measureText(full.slice(cut)).width) + full.slice(cut) : truncate(ctx, full, NODE_W + 40);
      r.drawnCaptions?.set(it.uid, caption);
      const w = ctx.measureText(caption).width + 10;
      ctx.fillStyle = C["--group-bg"];
      ctx.globalAlpha = alpha * 0.9;
      ctx.fillRect(x + NODE_W / 2 - w / 2, y + NODE_H + 3, w, 14);
      ctx.globalAlpha = alpha;
      ctx.fillStyle = stColor;
      ctx.textAlign = "center";
      ctx.fillText(caption, x + NODE_W / 2, y + NODE_H + 14);
      ctx.textAlign = "start";
    }
  }
  ctx.globalAlpha = 1;
}
var STATE_COLOR = Object.fromEntries(STATES.map((s) => [s.id, s.color]));
var kindColors = /* @__PURE__ */ new Map();
function kindColor(kind, s, l) {
  const key = `${kind}/${s}/${l}`;
  let c = kindColors.get(key);
  if (!c) kindColors.set(key, c = `hsl(${kindHue(kind)} ${s}% ${l}%)`);
  return c;
}

// src/blocks.js
function drawBlock(r, b, px, ctx = r.ctx) {
  const C = r.colors;
  const x = b.group.x + b.x, y = b.group.y + b.y;
  ctx.fillStyle = C["--node-bg"];
  ctx.strokeStyle = C["--node-border"];
  ctx.lineWidth = 1.5 * px;
  ctx.beginPath();
  ctx.roundRect(x, y, b.w, b.h, 10);
  ctx.fill();
  ctx.stroke();
  const cache = (
    /** @type {any} */
    b.group.cache
  );
  let counts = cache?.blockCounts.get(b);
  if (!counts) {
    counts = blockCounts(r, b);
    cache?.blockCounts.set(b, counts);
  }
  let bx = x + 8;
  const bw = b.w - 16, bh = Math.min(14, b.h / 4);
  for (const [col, c] of counts) {
    ctx.fillStyle = col;
    const w = bw * c / b.uids.length;
    ctx.fillRect(bx, y + b.h - bh - 8, w, bh);
    bx += w;
  }
}
function drawBlockRing(r, b, px) {
  const { ctx, colors: C } = r;
  const multi = r.multi.size > 0 && b.uids.some((u) => r.multi.has(u)) && !(r.selected && b.uids.includes(r.selected));
  ctx.strokeStyle = multi ? C["--accent"] : C["--match"];
  ctx.lineWidth = 3 * px;
  if (multi) ctx.setLineDash([7 * px, 4 * px]);
  ctx.strokeRect(b.group.x + b.x - 6 * px, b.group.y + b.y - 6 * px, b.w + 12 * px, b.h + 12 * px);
  ctx.setLineDash([]);
}
function blockCounts(r, b) {
  const { store, colors: C } = r;
  const counts = /* @__PURE__ */ new Map();
  for (const u of b.uids) {
    const n = store.nodes.get(u);
    const col = !n ? C["--st-removed"] : r.preview.has(u) ? C[PREVIEW[
      /** @type {PreviewKind} */
      r.preview.get(u)
    ].color] : C[STATE_COLOR[stateOf(store, n)]];
    counts.set(col, (counts.get(col) || 0) + 1);
  }
  return counts;
}
function drawBlockLabel(r, b) {
  const { ctx, cam, colors: C } = r;
  const sx = (b.group.x + b.x) * cam.k + cam.x, sy = (b.group.y + b.y) * cam.k + cam.y;
  const sw = b.w * cam.k, sh = b.h * cam.k;
  if (sw < 40 || sh < 16) return;
  const kinds = /* @__PURE__ */ new Map();
  for (const u of b.uids) {
    const k = r.store.nodes.get(u)?.kind || r.store.ghosts.get(u)?.node.kind || "?";
    kinds.set(k, (kinds.get(k) || 0) + 1);
  }
  const text = [...kinds].map(([k, c]) => `${c} ${k}${c === 1 ? "" : "s"}`).join(", ");
  ctx.font = `600 ${clamp(sh * 0.18, 11, 16)}px system-ui, sans-serif`;
  ctx.fillStyle = C["--fg"];
  ctx.textAlign = "center";
  ctx.fillText(truncate(ctx, text, sw - 10), sx + sw / 2, sy + Math.min(sh * 0.35, 24));
  ctx.textAlign = "start";
}

// src/cells.js
var BITMAP_BUDGET_MS = 6;
var STALE_MS = 100;
var BITMAP_MAX = 4096;
function drawCells(r, visible, now, px) {
  const ctx = r.ctx;
  let drawn = 0;
  const budgetEnd = performance.now() + BITMAP_BUDGET_MS;
  for (const g of visible) {
    if (g.summary) continue;
    const bm = groupBitmap(r, g, now, budgetEnd);
    ctx.drawImage(bm.canvas, g.x, g.y, g.w, g.h);
    drawn += bm.count;
  }
  const rings = ringed(r);
  if (rings.length) {
    const shown = new Set(visible);
    for (const u of rings) {
      const it = r.layout.items.get(u);
      if (!it || !shown.has(it.group)) continue;
      if (it.block && r.collapsed(it.block)) drawBlockRing(r, it.block, px);
      else drawRing(r, it, px);
    }
  }
  r.drawn = drawn;
}
function groupBitmap(r, g, now, budgetEnd) {
  const kb = 2 ** (Math.ceil(Math.log2(r.cam.k) * 2) / 2);
  const key = `${cacheKey(r)}/${kb}/${r.dpr}`;
  let c = (
    /** @type {any} */
    g.cache
  );
  if (c && c.key === key && !c.stale) return c;
  if (c && c.canvas && performance.now() > budgetEnd && (!c.stale || now - c.stale < STALE_MS)) return c;
  const scale = Math.min(kb * r.dpr, BITMAP_MAX / g.w, BITMAP_MAX / g.h);
  const w = Math.max(1, Math.ceil(g.w * scale)), h2 = Math.max(1, Math.ceil(g.h * scale));
  const canvas2 = c?.canvas && c.canvas.width === w && c.canvas.height === h2 ? c.canvas : r.bitmap(w, h2);
  const bctx = (
    /** @type {OffscreenCanvasRenderingContext2D} */
    canvas2.getContext("2d")
  );
  bctx.setTransform(1, 0, 0, 1, 0, 0);
  bctx.clearRect(0, 0, w, h2);
  bctx.setTransform(scale, 0, 0, scale, -g.x * scale, -g.y * scale);
  c = { canvas: canvas2, key, count: 0, stale: 0, blockCounts: /* @__PURE__ */ new Map() };
  g.cache = c;
  const cells = /* @__PURE__ */ new Map();
  for (const it of g.items) {
    if (it.block && r.collapsed(it.block)) continue;
    const col = itemColor(r, it, now);
    record(r, it, itemState(r, it), now);
    let p = cells.get(col);
    if (!p) cells.set(col, p = new Path2D());
    p.rect(g.x + it.x, g.y + it.y, NODE_W, NODE_H);
    c.count++;
  }
  for (const [col, p] of cells) {
    bctx.fillStyle = col;
    bctx.fill(p);
  }
  for (const b of g.blocks) if (r.collapsed(b)) drawBlock(
    r,
    b,
    1 / kb,
    /** @type {any} */
    bctx
  );
  return c;
}
function cacheKey(r) {
  return `${r.expanded.size}/${r.previewVersion}/${r.colors["--bg"]}/${r.leafSetsCollapse()}`;
}
function markStale(r, uid) {
  const it = r.layout.items.get(uid);
  const c = it && /** @type {any} */
  it.group.cache;
  if (!c) return;
  if (!c.stale) c.stale = performance.now();
  c.blockCounts = /* @__PURE__ */ new Map();
}

// src/boxes.js
function boxesBitmap(r) {
  const b = r.layout.bounds, need = r.cam.k * r.dpr;
  const key = `${r.layout.version}/${r.dpr}/${r.colors["--bg"]}`;
  const had = r.boxes;
  if (had?.key === key && had.scale >= need && had.scale <= 2.9 * need) return had;
  const kb = 2 ** (Math.ceil(Math.log2(r.cam.k) * 2) / 2 + 0.5);
  const pad = 4 / kb;
  const scale = kb * r.dpr;
  const w = Math.ceil((b.w + 2 * pad) * scale), h2 = Math.ceil((b.h + 2 * pad) * scale);
  if (w > BITMAP_MAX || h2 > BITMAP_MAX || r.layout.groups.size < 2) return null;
  const canvas2 = r.boxes?.canvas.width === w && r.boxes.canvas.height === h2 ? r.boxes.canvas : r.bitmap(w, h2);
  const bctx = (
    /** @type {OffscreenCanvasRenderingContext2D} */
    canvas2.getContext("2d")
  );
  bctx.setTransform(1, 0, 0, 1, 0, 0);
  bctx.clearRect(0, 0, w, h2);
  bctx.setTransform(scale, 0, 0, scale, (pad - b.x) * scale, (pad - b.y) * scale);
  const boxes = new Path2D(), shaded = new Path2D();
  for (const g of r.layout.groups.values()) addBox(boxes, shaded, g);
  drawBoxes(bctx, r.colors, boxes, shaded, 1 / kb);
  r.boxes = { canvas: canvas2, key, pad, scale };
  return r.boxes;
}
function addBox(boxes, shaded, g) {
  boxes.rect(g.x, g.y, g.w, g.h);
  if (g.summary) shaded.rect(g.x + GROUP_PAD / 2, g.y + GROUP_TITLE, g.w - GROUP_PAD, g.h - GROUP_TITLE - GROUP_PAD / 2);
}
function drawBoxes(ctx, C, boxes, shaded, px) {
  ctx.fillStyle = C["--group-bg"];
  ctx.fill(boxes);
  ctx.strokeStyle = C["--group-border"];
  ctx.lineWidth = px;
  ctx.stroke(boxes);
  ctx.fillStyle = C["--node-bg"];
  ctx.globalAlpha = 0.45;
  ctx.fill(shaded);
  ctx.globalAlpha = 1;
}

// src/edges.js
function drawEdges(r, items, blocks, px) {
  const { ctx, layout: layout2, colors: C } = r;
  const paths = {
    ctl: new Path2D(),
    plain: new Path2D(),
    ctlBlock: new Path2D(),
    plainBlock: new Path2D(),
    hi: new Path2D(),
    cycle: new Path2D(),
    cycleHead: new Path2D(),
    hiHead: new Path2D()
  };
  const seenBlocks = /* @__PURE__ */ new Set();
  const curve = (p, x0, y0, x1, y1) => {
    const my = (y0 + y1) / 2;
    p.moveTo(x0, y0);
    p.bezierCurveTo(x0, my, x1, my, x1, y1);
  };
  for (const it of items) {
    const n = r.store.current(it.uid)?.node || it.node;
    const x1 = it.group.x + it.x, y1 = it.group.y + it.y;
    for (const o of n.owners || []) {
      const ob = layout2.box(o.uid);
      if (!ob) continue;
      const hi = r.selected === it.uid || r.selected === o.uid;
      const key = cycleKey(it.uid, o.uid);
      const cycle = it.group.cycles.has(key);
      if (cycle && ob.y + NODE_H > y1) {
        let b;
        if (o.uid === it.uid) {
          const xs2 = x1 + NODE_W - 56, xe2 = x1 + NODE_W - 16;
          b = [xs2, y1, xs2 - 8, y1 - 34, xe2 + 8, y1 - 34, xe2, y1];
        } else {
          const left = ob.x <= x1;
          const xs2 = left ? ob.x : ob.x + NODE_W, ys2 = ob.y + NODE_H * 0.65;
          const xe2 = left ? x1 : x1 + NODE_W, ye = y1 + NODE_H * 0.35;
          const out = left ? Math.min(xs2, xe2) - CYCLE_BULGE : Math.max(xs2, xe2) + CYCLE_BULGE;
          b = [xs2, ys2, out, ys2, out, ye, xe2, ye];
        }
        const p = hi ? paths.hi : paths.cycle;
        p.moveTo(b[0], b[1]);
        p.bezierCurveTo(b[2], b[3], b[4], b[5], b[6], b[7]);
        arrowhead(hi ? paths.hiHead : paths.cycleHead, b[6], b[7], b[4], b[5], 8 * px);
        r.drawnEdges?.set(key, { cycle, back: true, x: (b[0] + 3 * b[2] + 3 * b[4] + b[6]) / 8, y: (b[1] + 3 * b[3] + 3 * b[5] + b[7]) / 8 });
        continue;
      }
      const stroke = cycle ? "cycle" : (o.controller ? "ctl" : "plain") + (o.blockOwnerDeletion ? "Block" : "");
      const xs = ob.x + NODE_W / 2, ys = ob.y + NODE_H, xe = x1 + NODE_W / 2;
      curve(hi ? paths.hi : (
        /** @type {any} */
        paths[stroke]
      ), xs, ys, xe, y1);
      r.drawnEdges?.set(key, { cycle, back: false, x: (xs + xe) / 2, y: (ys + y1) / 2 });
    }
  }
  for (const b of blocks) {
    if (seenBlocks.has(b)) continue;
    seenBlocks.add(b);
    const ob = layout2.box(b.parent);
    if (ob) curve(paths.ctlBlock, ob.x + NODE_W / 2, ob.y + NODE_H, b.group.x + b.x + b.w / 2, b.group.y + b.y);
  }
  const strokes = (
    /** @type {const} */
    [["ctl", false, false], ["plain", true, false], ["ctlBlock", false, true], ["plainBlock", true, true]]
  );
  for (const [key, dash, strong] of strokes) {
    ctx.strokeStyle = strong ? C["--edge-block"] : C["--edge"];
    ctx.lineWidth = (strong ? 1.8 : 1) * px;
    ctx.setLineDash(dash ? [6 * px, 4 * px] : []);
    ctx.stroke(paths[key]);
  }
  ctx.setLineDash([]);
  ctx.strokeStyle = ctx.fillStyle = C["--edge-cycle"];
  ctx.lineWidth = 2 * px;
  ctx.stroke(paths.cycle);
  ctx.fill(paths.cycleHead);
  ctx.strokeStyle = ctx.fillStyle = C["--accent"];
  ctx.lineWidth = 2.5 * px;
  ctx.stroke(paths.hi);
  ctx.fill(paths.hiHead);
}
function arrowhead(p, x, y, fx, fy, s) {
  const d = Math.hypot(x - fx, y - fy) || 1, ux = (x - fx) / d, uy = (y - fy) / d;
  p.moveTo(x, y);
  p.lineTo(x - ux * s - uy * s * 0.55, y - uy * s + ux * s * 0.55);
  p.lineTo(x - ux * s + uy * s * 0.55, y - uy * s - ux * s * 0.55);
  p.closePath();
}

// src/render.js
var COLLAPSE_PX = 70;
var CELL_PX = 14;
var MIN_K = 5e-3;
var MAX_K = 3;
var ZOOM_COLUMN = 60;
var READABLE_K = 0.6;
var Renderer = class {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {import("./store.js").Store} store
   * @param {import("./layout.js").Layout} layout
   */
  constructor(canvas2, store, layout2) {
    this.canvas = canvas2;
    this.ctx = /** @type {CanvasRenderingContext2D} */
    canvas2.getContext("2d", { alpha: false });
    this.store = store;
    this.layout = layout2;
    this.cam = { x: 0, y: 0, k: 1 };
    this.w = 0;
    this.h = 0;
    this.dpr = 1;
    this.selected = null;
    this.hover = null;
    this.matches = /* @__PURE__ */ new Set();
    this.multi = /* @__PURE__ */ new Set();
    this.preview = /* @__PURE__ */ new Map();
    this.drawnState = null;
    this.drawnEdges = null;
    this.drawnCaptions = null;
    this.drawnTitles = null;
    this.drawnCounts = null;
    this.countsNote = () => "";
    this.titleLog = [];
    this.previewVersion = 0;
    this.expanded = /* @__PURE__ */ new Set();
    this.colors = {};
    this.cascades = null;
    this.dirty = true;
    this.boxes = null;
    this.anim = null;
    this.drawn = 0;
    this.drawClock = 0;
    this.contextLosses = 0;
    canvas2.addEventListener("contextlost", () => this.contextLosses++);
    canvas2.addEventListener("contextrestored", () => this.redrawAll());
    this.readColors();
    this.resize();
  }
  /** A bitmap to cache a drawing in, drawn again should the browser take its memory back. @param {number} w @param {number} h */
  bitmap(w, h2) {
    const c = new OffscreenCanvas(w, h2);
    c.addEventListener("contextlost", () => this.contextLosses++);
    c.addEventListener("contextrestored", () => this.redrawAll());
    return c;
  }
  /** Drops every cached drawing and draws the next frame from scratch. */
  redrawAll() {
    for (const g of this.layout.groups.values()) g.cache = null;
    this.boxes = null;
    this.dirty = true;
  }
  readColors() {
    const cs = getComputedStyle(document.documentElement);
    const names = [
      "--bg",
      "--fg",
      "--muted",
      "--node-bg",
      "--node-border",
      "--group-bg",
      "--group-border",
      "--edge",
      "--edge-block",
      "--edge-cycle",
      "--accent",
      "--match",
      ...STATES.map((s) => s.color),
      "--st-invalid",
      "--st-queued",
      "--st-backoff",
      "--st-orphaned",
      "--st-removed-fill",
      ...Object.values(PREVIEW).map((p) => p.color)
    ];
    for (const n of names) this.colors[n] = cs.getPropertyValue(n).trim() || "#888";
    this.dirty = true;
  }
  resize() {
    const r = this.canvas.getBoundingClientRect();
    this.dpr = window.devicePixelRatio || 1;
    this.w = Math.max(1, r.width);
    this.h = Math.max(1, r.height);
    this.canvas.width = Math.round(this.w * this.dpr);
    this.canvas.height = Math.round(this.h * this.dpr);
    this.dirty = true;
  }
  // --- camera ---
  /** @param {number} sx @param {number} sy */
  toWorld(sx, sy) {
    return { x: (sx - this.cam.x) / this.cam.k, y: (sy - this.cam.y) / this.cam.k };
  }
  /**
   * Fits r into the view, clear of the zoom buttons' column at the right (ZOOM_COLUMN), so
   * that no box of a graph fitted whole is drawn under them.
   * @param {{x:number,y:number,w:number,h:number}} r @param {boolean} [animate] @param {number} [maxK]
   */
  fit(r, animate = true, maxK = 1.2) {
    const pad = 40, right = Math.max(pad, ZOOM_COLUMN);
    const k = clamp(Math.min((this.w - pad - right) / Math.max(r.w, 1), (this.h - 2 * pad) / Math.max(r.h, 1)), MIN_K, maxK);
    this.moveTo({ k, x: (this.w - right + pad) / 2 - (r.x + r.w / 2) * k, y: this.h / 2 - (r.y + r.h / 2) * k }, animate);
  }
  /**
   * The first view: r fitted when it can be at a zoom where labels read (READABLE_K);
   * otherwise its top-left corner at that zoom, so the user starts on readable workloads
   * rather than on a map of cells.
   * @param {{x:number,y:number,w:number,h:number}} r
   */
  open(r) {
    const pad = 40;
    const fitK = Math.min((this.w - pad - Math.max(pad, ZOOM_COLUMN)) / Math.max(r.w, 1), (this.h - 2 * pad) / Math.max(r.h, 1));
    if (fitK >= READABLE_K) return this.fit(r, false, 1);
    this.moveTo({ k: READABLE_K, x: pad - r.x * READABLE_K, y: pad - r.y * READABLE_K }, false);
  }
  /** @param {string} uid @param {number} [k] */
  centerOn(uid, k) {
    const b = this.layout.box(uid);
    if (!b) return false;
    const kk = k ?? Math.max(this.cam.k, 0.9);
    this.moveTo({ k: kk, x: this.w / 2 - (b.x + b.w / 2) * kk, y: this.h / 2 - (b.y + b.h / 2) * kk }, true);
    return true;
  }
  /** @param {{x:number,y:number,k:number}} to @param {boolean} animate */
  moveTo(to, animate) {
    if (!animate) {
      this.cam = to;
      this.anim = null;
    } else this.anim = { from: { ...this.cam }, to, t0: performance.now(), ms: 350 };
    this.dirty = true;
  }
  /** @param {number} sx @param {number} sy @param {number} factor */
  zoomAt(sx, sy, factor) {
    const k = clamp(this.cam.k * factor, MIN_K, MAX_K);
    const f = k / this.cam.k;
    this.cam = { k, x: sx - (sx - this.cam.x) * f, y: sy - (sy - this.cam.y) * f };
    this.anim = null;
    this.dirty = true;
  }
  /** @param {number} dx @param {number} dy */
  pan(dx, dy) {
    this.cam = { ...this.cam, x: this.cam.x + dx, y: this.cam.y + dy };
    this.anim = null;
    this.dirty = true;
  }
  /**
   * Keeps the object at the same place on screen across a new layout, so live updates
   * never move what the user is looking at.
   * @param {string|null} uid @param {{x:number,y:number}|null} before its world position before
   */
  anchor(uid, before) {
    if (!uid || !before) return;
    const b = this.layout.box(uid);
    if (!b) return;
    const wx = b.x - before.x, wy = b.y - before.y;
    if (!wx && !wy) return;
    if (this.anim) {
      const { from, to } = this.anim;
      from.x -= wx * from.k;
      from.y -= wy * from.k;
      to.x -= wx * to.k;
      to.y -= wy * to.k;
    } else this.pan(-wx * this.cam.k, -wy * this.cam.k);
  }
  /** The object nearest the middle of the screen, to anchor on. */
  centerItem() {
    if (this.selected && this.layout.items.has(this.selected)) return this.selected;
    const c = this.toWorld(this.w / 2, this.h / 2);
    let best = null, bestD = Infinity;
    for (const g of this.layout.groups.values()) {
      if (c.x < g.x || c.y < g.y || c.x > g.x + g.w || c.y > g.y + g.h) continue;
      for (const it of g.items) {
        const d = Math.abs(g.x + it.x + NODE_W / 2 - c.x) + Math.abs(g.y + it.y + NODE_H / 2 - c.y);
        if (d < bestD) {
          bestD = d;
          best = it.uid;
        }
      }
    }
    return best;
  }
  /** The namespace box in the middle of the screen, if any. @returns {string|null} */
  centerGroup() {
    const c = this.toWorld(this.w / 2, this.h / 2);
    for (const g of this.layout.groups.values()) if (c.x >= g.x && c.y >= g.y && c.x <= g.x + g.w && c.y <= g.y + g.h) return g.ns;
    return null;
  }
  // --- hit testing ---
  /** A set of loners is one count box until expanded; a set of leaf siblings while too small to read. @param {Block} b */
  collapsed(b) {
    if (b.loner) return !this.expanded.has(b.parent);
    return !this.expanded.has(b.parent) && this.leafSetsCollapse();
  }
  /** Whether sets of leaf siblings are too small to read at this zoom (drawn as their count). */
  leafSetsCollapse() {
    return NODE_W * this.cam.k < COLLAPSE_PX;
  }
  /**
   * @param {number} sx @param {number} sy
   * @returns {{item?: Item, block?: Block, group?: Group, caption?: boolean}|null}
   */
  hit(sx, sy) {
    const p = this.toWorld(sx, sy);
    for (const g of this.layout.groups.values()) {
      if (p.x < g.x || p.y < g.y || p.x > g.x + g.w || p.y > g.y + g.h) continue;
      const lx = p.x - g.x, ly = p.y - g.y;
      for (const b of g.blocks) {
        if (lx < b.x || ly < b.y || lx > b.x + b.w || ly > b.y + b.h) continue;
        if (this.collapsed(b)) return { block: b, group: g };
        if (b.loner && ly <= b.y + LONER_CAPTION) return { block: b, group: g, caption: true };
      }
      for (const it of g.items) {
        if (lx >= it.x && ly >= it.y && lx <= it.x + NODE_W && ly <= it.y + NODE_H) {
          if (it.block && this.collapsed(it.block)) continue;
          return { item: it, group: g };
        }
      }
      return { group: g };
    }
    return null;
  }
  // --- drawing ---
  /** @param {number} now */
  frame(now) {
    if (this.anim) {
      const t = Math.min(1, (now - this.anim.t0) / this.anim.ms);
      const e = t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
      const { from, to } = this.anim;
      const k = Math.exp(Math.log(from.k) + (Math.log(to.k) - Math.log(from.k)) * e);
      this.cam = { k, x: from.x + (to.x - from.x) * e, y: from.y + (to.y - from.y) * e };
      if (t >= 1) {
        this.cam = to;
        this.anim = null;
      }
      this.dirty = true;
    }
    const animating = this.store.ghosts.size > 0 || this.store.born.size > 0;
    if (!this.dirty && !animating) return false;
    this.draw(now);
    this.dirty = false;
    return true;
  }
  /**
   * The whole layout (the graph after filters and focus) drawn as the page draws it, at
   * scale k (1: a box 180 px wide, its name in 13 px type), on a canvas of its own.
   * @param {number} k
   */
  drawWhole(k) {
    const b = this.layout.bounds, pad = 24;
    const canvas2 = document.createElement("canvas");
    canvas2.width = Math.ceil((b.w + 2 * pad) * k);
    canvas2.height = Math.ceil((b.h + 2 * pad) * k);
    const ctx = canvas2.getContext("2d");
    if (!ctx) throw new Error(`no canvas of ${canvas2.width} × ${canvas2.height} px`);
    const { cam, w, h: h2, dpr, drawn, drawnState, drawnEdges, drawnCaptions, drawnTitles, drawnCounts } = this;
    const screen = this.ctx;
    try {
      Object.assign(this, {
        ctx,
        cam: { k, x: (pad - b.x) * k, y: (pad - b.y) * k },
        w: canvas2.width,
        h: canvas2.height,
        dpr: 1,
        drawnState: null,
        drawnEdges: null,
        drawnCaptions: null,
        drawnTitles: null,
        drawnCounts: null
      });
      this.draw(performance.now());
    } finally {
      Object.assign(this, { ctx: screen, cam, w, h: h2, dpr, drawn, drawnState, drawnEdges, drawnCaptions, drawnTitles, drawnCounts, dirty: true });
    }
    return canvas2;
  }
  /** @param {number} now */
  draw(now) {
    this.drawClock = performance.now();
    const { ctx, cam, colors: C } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = C["--bg"];
    ctx.fillRect(0, 0, this.w, this.h);
    const vx0 = -cam.x / cam.k, vy0 = -cam.y / cam.k, vx1 = (this.w - cam.x) / cam.k, vy1 = (this.h - cam.y) / cam.k;
    const px = 1 / cam.k;
    const cellMode = NODE_W * cam.k < CELL_PX;
    const labels = NODE_H * cam.k >= 22;
    ctx.setTransform(this.dpr * cam.k, 0, 0, this.dpr * cam.k, this.dpr * cam.x, this.dpr * cam.y);
    const visible = [];
    const terminating = [];
    const bm = cellMode ? boxesBitmap(this) : null;
    const boxes = new Path2D(), shaded = new Path2D();
    for (const g of this.layout.groups.values()) {
      if (g.x > vx1 || g.y > vy1 || g.x + g.w < vx0 || g.y + g.h < vy0) continue;
      visible.push(g);
      if (!bm) addBox(boxes, shaded, g);
      const del = namespaceDeletion(this, g);
      if (del && del.end === null) terminating.push(g);
    }
    if (bm) {
      const b = this.layout.bounds;
      ctx.drawImage(bm.canvas, b.x - bm.pad, b.y - bm.pad, b.w + 2 * bm.pad, b.h + 2 * bm.pad);
    } else drawBoxes(ctx, C, boxes, shaded, px);
    ctx.strokeStyle = C["--st-deleting"];
    ctx.lineWidth = 2.5 * px;
    for (const g of terminating) ctx.strokeRect(g.x, g.y, g.w, g.h);
    if (cellMode) drawCells(this, visible, now, px);
    else {
      const items = [];
      const blocks = [];
      for (const g of visible) {
        for (const b of g.blocks) if (this.collapsed(b) && inView(g.x + b.x, g.y + b.y, b.w, b.h)) blocks.push(b);
        for (const it of g.items) {
          if (it.block && this.collapsed(it.block)) continue;
          if (inView(g.x + it.x, g.y + it.y, NODE_W, NODE_H)) items.push(it);
        }
      }
      this.drawn = items.length;
      drawEdges(this, items, blocks, px);
      for (const b of blocks) {
        drawBlock(this, b, px);
        if (this.selected && b.uids.includes(this.selected) || this.matches.size && b.uids.some((u) => this.matches.has(u)) || this.multi.size && b.uids.some((u) => this.multi.has(u))) drawBlockRing(this, b, px);
      }
      for (const it of items) drawItem(this, it, now, px, labels);
    }
    function inView(x, y, w, h2) {
      return !(x > vx1 || y > vy1 || x + w < vx0 || y + h2 < vy0);
    }
    drawTitles(this, visible);
    drawCounts(this, visible);
    for (const g of visible) for (const b of g.blocks) if (this.collapsed(b)) drawBlockLabel(this, b);
  }
  /** Starts keeping drawnState, and redraws everything so that it starts complete. */
  recordDrawn() {
    this.drawnState ??= /* @__PURE__ */ new Map();
    this.drawnEdges ??= /* @__PURE__ */ new Map();
    this.drawnCaptions ??= /* @__PURE__ */ new Map();
    this.drawnTitles ??= /* @__PURE__ */ new Map();
    this.drawnCounts ??= /* @__PURE__ */ new Map();
    this.redrawAll();
  }
  /** Marks the cached drawing of the namespace holding uid stale. @param {string} uid */
  invalidate(uid) {
    markStale(this, uid);
  }
};

// src/detail.js
var FULL_LIMIT = 2e4;
var DETAIL_BUDGET = 2e4;
var DETAIL_K = 0.15;
var SETTLE_MS = 150;
var Detail = class {
  /**
   * @param {{view: import("./page.js").View, renderer: import("./render.js").Renderer, layout: import("./layout.js").Layout}} page what the page shows
   * @param {(frame: object) => void} send a frame to the stream (a subscribe)
   * @param {() => number} [fullLimit]
   */
  constructor(page2, send, fullLimit = () => Number(document.body.dataset.fullLimit) || FULL_LIMIT) {
    this.page = page2;
    this.send = send;
    this.fullLimit = fullLimit;
    this.mode = "";
    this.counts = /* @__PURE__ */ new Map();
    this.objects = 0;
    this.kinds = [];
    this.asked = { namespaces: [], uids: [], kinds: [] };
    this.answered = null;
    this.timer = void 0;
    this.detailMs = null;
  }
  /** The stream's query (a reconnection asks again for what it held). */
  query() {
    const q = new URLSearchParams();
    if (this.mode === "full") return q;
    q.set("summary", "true");
    for (const ns of this.asked.namespaces) q.append("namespace", ns);
    for (const u of this.asked.uids) q.append("uid", u);
    for (const k of this.asked.kinds) q.append("kind", k);
    return q;
  }
  /**
   * A summary frame: the counts; the first one decides the mode. Returns the namespaces
   * whose counts changed (their boxes are laid out again).
   * @param {import("./frames.gen.js").Summary} f
   */
  onSummary(f) {
    const changed = /* @__PURE__ */ new Set();
    const next = new Map(f.namespaces.map((n) => [n.name, n]));
    for (const [ns, c] of next) {
      const o = this.counts.get(ns);
      if (!o || o.objects !== c.objects || o.beingDeleted !== c.beingDeleted) changed.add(ns);
    }
    for (const ns of this.counts.keys()) if (!next.has(ns)) changed.add(ns);
    this.counts = next;
    this.objects = f.objects;
    this.kinds = [...new Set(f.kinds.map((k) => k.kind))].sort();
    if (!this.mode) {
      this.mode = f.objects <= this.fullLimit() ? "full" : "summary";
      if (this.mode === "full") this.send({ type: "subscribe", queues: true });
      else this.want();
    }
    return changed;
  }
  /** Whether the page holds a namespace's objects (asked for and answered), so its box is laid out from them. @param {string} ns */
  holds(ns) {
    return this.mode !== "summary" || !!this.answered?.namespaces.includes(ns);
  }
  /** Whether a namespace's objects are asked for and not yet here. @param {string} ns */
  loading(ns) {
    return this.mode === "summary" && this.asked.namespaces.includes(ns) && !this.holds(ns);
  }
  /**
   * A snapshot under the subscription last asked for arrived. Returns the namespaces the
   * page now holds or no longer holds (their boxes are laid out again).
   * @returns {string[]}
   */
  onSnapshot() {
    if (this.mode !== "summary") return [];
    const before = new Set(this.answered?.namespaces || []), after = new Set(this.asked.namespaces);
    this.answered = { ...this.asked };
    if (this.detailMs === null && (this.asked.namespaces.length || this.asked.uids.length)) this.detailMs = performance.now();
    return [...before, ...after].filter((ns) => before.has(ns) !== after.has(ns));
  }
  /** The page holds what it shows: what it would ask for now is what it asked for, and answered. */
  settled() {
    return this.mode !== "summary" || this.timer === void 0 && same(this.wanted(), this.asked) && !!this.answered && same(this.answered, this.asked);
  }
  /** The view moved or the selection changed: ask again once it rests. */
  viewMoved() {
    if (this.mode !== "summary") return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.want(), SETTLE_MS);
  }
  /** What the page should hold now. @returns {Wanted} */
  wanted() {
    const { view: view2, renderer: renderer2, layout: layout2 } = this.page;
    const uids = [...new Set([view2.sel, view2.focus].filter((u) => !!u))].map(String);
    const kinds = [...view2.kind];
    const near = [];
    const filtered = view2.ns.length ? new Set(view2.ns) : null;
    if (renderer2.cam.k >= DETAIL_K || filtered) {
      const c = renderer2.toWorld(renderer2.w / 2, renderer2.h / 2);
      const v0 = renderer2.toWorld(0, 0), v1 = renderer2.toWorld(renderer2.w, renderer2.h);
      for (const g of layout2.groups.values()) {
        if (filtered && !filtered.has(g.ns)) continue;
        const inView = !(g.x > v1.x || g.y > v1.y || g.x + g.w < v0.x || g.y + g.h < v0.y);
        if (!inView && !filtered) continue;
        const dx = Math.max(g.x - c.x, 0, c.x - g.x - g.w), dy = Math.max(g.y - c.y, 0, c.y - g.y - g.h);
        near.push({ ns: g.ns, d: dx + dy });
      }
    }
    near.sort((a, b) => a.d - b.d || (a.ns < b.ns ? -1 : 1));
    const namespaces = [];
    let budget = DETAIL_BUDGET;
    for (const { ns } of near) {
      const n = this.counts.get(ns)?.objects ?? 0;
      if (n > budget && namespaces.length) break;
      namespaces.push(ns);
      budget -= n;
    }
    return { namespaces: namespaces.sort(), uids: uids.sort(), kinds };
  }
  /** Asks the stream for what the page should hold, when that changed. */
  want() {
    clearTimeout(this.timer);
    this.timer = void 0;
    if (this.mode !== "summary") return;
    const w = this.wanted();
    if (same(w, this.asked)) return;
    this.asked = w;
    this.page.renderer.dirty = true;
    this.send({ type: "subscribe", summary: true, queues: true, namespaces: w.namespaces, uids: w.uids, kinds: w.kinds });
  }
};
function same(a, b) {
  return a.namespaces.join("\n") === b.namespaces.join("\n") && a.uids.join("\n") === b.uids.join("\n") && a.kinds.join("\n") === b.kinds.join("\n");
}

// src/actionresult.js
var RETRIED_WHY = "409 Conflict: another writer changed the object first; the collector reads it again and retries (harmless)";
function actionResult(a) {
  if (a.error) return a.errorReason === "Conflict" ? "retried" : "error";
  if (a.shadow) return "shadow";
  return a.verb === "keep" ? "kept" : "ok";
}
function errorText(a) {
  if (!a.error) return "";
  return a.errorReason === "Conflict" ? `conflict, retried: ${a.error}` : `error: ${a.error}`;
}

// src/api.js
var APIError = class extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
};
async function decode(r) {
  const text = await r.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!r.ok) throw new APIError(r.status, body?.error || String(r.status), body?.message || text || r.statusText);
  return body;
}
function apiPath(path2) {
  const c = document.body.dataset.cluster;
  if (!c || !path2.startsWith("/api/v1/") || /^\/api\/v1\/clusters(\/|\?|$)/.test(path2)) return path2;
  return `/api/v1/clusters/${encodeURIComponent(c)}/${path2.slice("/api/v1/".length)}`;
}
async function get(path2) {
  return decode(await fetch(apiPath(path2), { headers: { Accept: "application/json" }, credentials: "same-origin" }));
}
async function post(path2, body) {
  const send = () => fetch(apiPath(path2), {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": document.body.dataset.csrfToken || "" },
    body: JSON.stringify(body)
  });
  try {
    return await decode(await send());
  } catch (e) {
    if (!(e instanceof APIError) || e.status !== 403 || e.code !== "csrf") throw e;
    const s = await get("/api/v1/session");
    if (!s?.csrfToken || s.csrfToken === document.body.dataset.csrfToken) throw e;
    const me = document.getElementById("signed-in-as")?.textContent;
    if (me !== void 0 && s.user?.name !== me) {
      throw new APIError(403, "csrf", `this browser is now signed in as ${s.user?.name || "nobody"}, not ${me}: reload the page`);
    }
    document.body.dataset.csrfToken = s.csrfToken;
    return decode(await send());
  }
}
var explain = (uid) => get(`/api/v1/objects/${encodeURIComponent(uid)}/explain`);
var deleteObject = (uid, policy, dryRun) => post(`/api/v1/objects/${encodeURIComponent(uid)}/delete`, { propagationPolicy: policy, dryRun });
var MAX_SET = 5e3;
var deleteSet = (uids, policy, dryRun) => post("/api/v1/deletions", { uids, propagationPolicy: policy, dryRun });
var dismissOrphanMarks = (uid) => post(`/api/v1/objects/${encodeURIComponent(uid)}/orphan-marks/dismiss`, {});

// src/vlist.js
var VirtualList = class {
  /**
   * key, when given, names what a row shows: a row whose key is unchanged keeps its node
   * across set() (a list reloaded every few seconds does not swap the node under a click).
   * @param {{render: (item: T, index: number) => Node, key?: (item: T) => string, rowHeight?: number, maxRows?: number, id?: string, className?: string}} o
   */
  constructor(o) {
    this.render = o.render;
    this.key = o.key;
    this.keyed = /* @__PURE__ */ new Map();
    this.rowHeight = o.rowHeight || 22;
    this.maxRows = o.maxRows || 12;
    this.items = [];
    this.top = 0;
    this.drawn = [-1, -1];
    this.space = h("div.vlist-space");
    this.window = h("div.vlist-window");
    this.space.append(this.window);
    this.el = h(`div.vlist${o.className ? "." + o.className : ""}`, { id: o.id, role: "list" }, this.space);
    this.pending = false;
    this.el.addEventListener("scroll", () => {
      this.top = this.el.scrollTop;
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.draw();
      });
    }, { passive: true });
  }
  /** Replaces the items and redraws the rows in view. @param {T[]} items */
  set(items) {
    this.items = items;
    this.el.style.height = `${Math.min(items.length, this.maxRows) * this.rowHeight}px`;
    this.space.style.height = `${items.length * this.rowHeight}px`;
    this.drawn = [-1, -1];
    this.draw();
  }
  /** After the list was put (back) into the page: its scroll position, as the user left it. */
  restore() {
    if (this.top && this.el.scrollTop !== this.top) this.el.scrollTop = this.top;
    this.top = this.el.scrollTop;
    this.draw();
  }
  draw() {
    const n = this.items.length;
    const first = Math.max(0, Math.floor(this.top / this.rowHeight) - 4);
    const last = Math.min(n, first + this.maxRows + 8);
    if (this.drawn[0] === first && this.drawn[1] === last) return;
    this.drawn = [first, last];
    const rows = [];
    const keyed = /* @__PURE__ */ new Map();
    for (let i = first; i < last; i++) {
      const k = this.key?.(this.items[i]);
      let row = k === void 0 ? void 0 : this.keyed.get(k);
      if (!row) {
        row = h("div.vlist-row", { role: "listitem" }, this.render(this.items[i], i));
        row.style.height = row.style.lineHeight = `${this.rowHeight}px`;
      }
      if (k !== void 0) keyed.set(k, row);
      rows.push(row);
    }
    this.keyed = keyed;
    this.window.style.transform = `translateY(${first * this.rowHeight}px)`;
    const now = this.window.children;
    if (rows.length !== now.length || rows.some((r, i) => r !== now[i])) this.window.replaceChildren(...rows);
  }
};

// src/deletion.js
var LIVENESS = (
  /** @type {Record<string, string>} */
  {
    alive: "controller alive",
    down: "controller down",
    none: "no controller found",
    unknown: "controller: cannot tell"
  }
);
function age(s) {
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr}h ${m % 60}m`;
  return `${Math.floor(hr / 24)}d ${hr % 24}h`;
}
function since(iso) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const d = new Date(t);
  const day = d.toDateString() === (/* @__PURE__ */ new Date()).toDateString() ? "" : `${d.toLocaleDateString("en-GB", { day: "numeric", month: "short" })} `;
  return `${day}${clock(t).slice(0, 8)} (${age((Date.now() - t) / 1e3)} ago)`;
}
function sinceNode(iso) {
  return h("span.since", { "data-since": iso }, since(iso));
}
function retick(root) {
  for (const el of root.querySelectorAll("[data-since]")) {
    const text = since(
      /** @type {HTMLElement} */
      el.dataset.since || ""
    );
    if (el.textContent !== text) el.textContent = text;
  }
}
function originView(o, link, opts = {}) {
  const c = o.controller || { state: "unknown", says: "" };
  const added = o.manager ? h(
    "p.added",
    null,
    h("code.hold", null, o.finalizer),
    " added by ",
    h("b.manager", null, o.manager),
    o.operation || o.subresource || o.time ? h("span.muted", null, ` (${[o.operation, o.subresource ? `subresource ${o.subresource}` : "", o.time ? `at ${since(o.time)}` : ""].filter(Boolean).join(", ")})`) : null
  ) : h("p.added", null, h("code.hold", null, o.finalizer), h("span.muted", null, `: who added it is not known${o.unknown ? ` — ${o.unknown}` : ""}`));
  return h(
    "div.origin",
    { "data-finalizer": o.finalizer, "data-manager": o.manager || "", "data-liveness": c.state },
    added,
    h(
      "p.liveness",
      null,
      h(`span.live.${c.state}`, { title: "Whether the controller that should remove it looks alive, as gcscope found it" }, LIVENESS[c.state] || c.state),
      c.says ? ` ${c.says}` : ""
    ),
    c.evidence?.length ? h("ul.evidence", null, ...c.evidence.map((e) => h("li", null, link(e.object), h("span.muted", null, ` — ${e.detail}`)))) : null,
    opts.risk === false || !o.risk ? null : riskLine(o.risk)
  );
}
function riskLine(risk) {
  return h("p.risk", null, h("b", null, "Risk if removed by hand: "), risk);
}
function apiServiceView(a) {
  const svc = a.service ? h("span", null, " · Service ", h("code", null, a.service), a.serviceExists ? ` exists, ${a.readyEndpoints} ready endpoint${a.readyEndpoints === 1 ? "" : "s"}` : " does not exist") : a.hidden ? h("span.muted", null, " · you may not read it") : null;
  return h(
    "div.apiservice",
    { "data-name": a.name, "data-available": a.available },
    h(
      "p",
      null,
      "APIService ",
      h("b", null, a.name),
      h("span.muted", null, ` (${a.groupVersion})`),
      " · Available: ",
      h(a.available === "True" ? "span" : "b.bad", null, a.available || "Unknown"),
      a.reason ? ` (${a.reason})` : "",
      a.since ? h("span.muted", null, " since ", sinceNode(a.since)) : null,
      svc
    ),
    a.message ? h("p.muted", null, a.message) : null,
    a.problem ? h("p.problem", null, h("b", null, "Problem: "), a.problem) : null,
    a.next ? h("p.next", null, h("b", null, "Next: "), a.next) : null
  );
}
function failureList(failures2) {
  const gvs = Object.keys(failures2).sort();
  return h("ul.failures", null, ...gvs.map((gv) => h(
    "li",
    { "data-gv": gv },
    h("code", null, gv),
    " since ",
    sinceNode(failures2[gv].since),
    ": ",
    h("span.muted", null, failures2[gv].error)
  )));
}
function namespaceView(ns, link) {
  const c = ns.content || { total: 0, byKind: [] };
  const deleting = !!ns.deletionTimestamp;
  const rows = [];
  rows.push(h(
    "p.ns-phase",
    { id: "ns-phase" },
    h("b", { class: deleting ? "terminating" : "" }, ns.phase || (deleting ? "Terminating" : "Active")),
    deleting ? ` since ${since(ns.deletionTimestamp)}` : ""
  ));
  const fins = (label2, list, id) => list?.length ? h("p", { id }, `${label2}: `, ...list.map((f) => h(f === "kubernetes" ? "code" : "code.hold", { title: f === "kubernetes" ? "the namespace controller's: removed once the content is gone" : "" }, f))) : null;
  rows.push(fins("spec.finalizers", ns.finalizers, "ns-finalizers"), fins("metadata.finalizers", ns.metadataFinalizers, "ns-meta-finalizers"));
  if (ns.conditions?.length) {
    rows.push(h("ul.conditions", { id: "ns-conditions" }, ...ns.conditions.map((cd) => h(
      "li",
      { "data-type": cd.type, "data-status": cd.status, class: cd.status === "True" ? "true" : "" },
      h("b", null, cd.type),
      ` ${cd.status}`,
      cd.reason ? ` (${cd.reason})` : "",
      cd.message ? h("div.muted", null, cd.message) : null
    ))));
  }
  const left = c.total + (c.hidden || 0);
  rows.push(h(
    "p",
    { id: "ns-content" },
    h("b", null, deleting ? `Content left: ${left}` : `Content: ${left}`),
    left === 1 ? " object" : " objects",
    c.hidden ? h("span.muted", null, ` (${c.hidden} you may not see)`) : ""
  ));
  if (c.byKind?.length) {
    rows.push(h(
      "table.bykind",
      { id: "ns-bykind" },
      h("thead", null, h("tr", null, h("th", null, "kind"), h("th", null, "left"), h("th", null, "being deleted"), h("th", null, "held"))),
      h("tbody", null, ...c.byKind.map((k) => h(
        "tr",
        { "data-kind": k.kind },
        h("td", { title: k.apiVersion }, k.kind),
        h("td", null, String(k.count)),
        h("td", null, k.beingDeleted ? String(k.beingDeleted) : "—"),
        h("td", { class: k.held ? "held" : "" }, k.held ? String(k.held) : "—")
      )))
    ));
  }
  if (c.holders?.length) {
    rows.push(h(
      "div.holders",
      { id: "ns-holders" },
      h("b", null, "Held by finalizers"),
      h("ul.refs", null, ...c.holders.map((hd) => h(
        "li",
        { "data-uid": hd.object.uid },
        link(hd.object),
        " ",
        ...(hd.finalizers || []).map((f) => h("code.hold", null, f)),
        hd.beingDeleted ? h("span.muted", null, hd.since ? ` being deleted since ${since(hd.since)}` : " being deleted") : h("span.muted", null, " (not being deleted yet)")
      ))),
      c.moreHolders ? h("p.muted", null, `and ${c.moreHolders} more`) : null
    ));
  }
  if (c.origins?.length) rows.push(h("div.origins", { id: "ns-origins" }, ...c.origins.map((o) => originView(o, link))));
  if (ns.discoveryFailures && Object.keys(ns.discoveryFailures).length) {
    rows.push(h("div.discovery", { id: "ns-discovery" }, h("b", null, "API discovery fails"), failureList(ns.discoveryFailures)));
  }
  if (ns.apiServices?.length) rows.push(h("div.apiservices", { id: "ns-apiservices" }, ...ns.apiServices.map(apiServiceView)));
  return h("div.ns-deletion", { id: "ns-deletion", "data-phase": ns.phase || "" }, h("h4", null, deleting ? "Namespace deletion" : "Namespace"), ...rows);
}

// src/panel.js
var ORPHAN_CAUSES = (
  /** @type {Record<string, string>} */
  {
    orphanDelete: "its owner was deleted with propagationPolicy Orphan: the collector removed the reference and kept the object",
    ownerAbsent: "the owner it named is gone (a dangling reference): the collector removed the reference, another owner keeps the object",
    ownerDeletingDependents: "its owner is being deleted in the foreground while another owner keeps the object: the collector removed only that reference"
  }
);
function agoText(t) {
  const s = (Date.now() - t) / 1e3;
  return s < 1 ? "just now" : `${age(s)} ago`;
}
function retickAgo(root) {
  for (const el of root.querySelectorAll("[data-ago]")) {
    const text = agoText(Number(
      /** @type {HTMLElement} */
      el.dataset.ago
    ));
    if (el.textContent !== text) el.textContent = text;
  }
}
var EXPLAIN_EVERY_MS = 500;
var EXPLAIN_POLL_MS = 1e3;
var RENDER_EVERY_MS = 250;
var fmt = (n) => n.toLocaleString("en-US");
var counted = (n, noun) => `${fmt(n)} ${noun}${n === 1 ? "" : "s"}`;
function blockerSummaryText(ex) {
  const s = ex.blockerSummary || { total: (ex.blockers || []).length + (ex.hiddenBlockers || 0) };
  const parts = [counted(s.total, "blocking dependent")];
  if (s.inFlight) parts.push(`${fmt(s.inFlight)} in flight`);
  if (s.held) parts.push(`${fmt(s.held)} held by finalizer${s.heldBy?.length === 1 ? "" : "s"} ${(s.heldBy || []).join(", ")}`);
  if (s.waiting) parts.push(`${fmt(s.waiting)} waiting for their own`);
  if (s.beingDeleted) parts.push(`${fmt(s.beingDeleted)} being deleted`);
  if (ex.hiddenBlockers) parts.push(`${fmt(ex.hiddenBlockers)} you may not see`);
  return parts.join(", ");
}
function flatten(bs, hidden, depth, out) {
  for (const b of bs) {
    out.push({ b, depth });
    if (b.blockers?.length || b.hidden) flatten(b.blockers || [], b.hidden || 0, depth + 1, out);
  }
  if (hidden) out.push({ hidden, depth });
  return out;
}
var ObjectPanel = class {
  /**
   * @param {HTMLElement} body
   * @param {HTMLElement} placeholder
   * @param {Store} store
   * @param {{select: (uid: string) => void, focus: (uid: string) => void, del: (uid: string) => void, readOnly: boolean,
   *   cascade?: (uid: string) => {text: string, progress: number, running: boolean}|null,
   *   travelAt?: () => number|null, replay?: (uid: string) => void, hasCascade?: (uid: string) => Promise<boolean>,
   *   explained?: (uid: string, ex: any) => void}} actions
   *   travelAt: the recorded moment shown (time travel), null when live; replay: plays the object's last recorded cascade,
   *   offered once hasCascade says the recording has one;
   *   explained: the engine explained the object (a namespace deletion's box says what holds it)
   */
  constructor(body, placeholder, store, actions) {
    this.body = body;
    this.placeholder = placeholder;
    this.store = store;
    this.actions = actions;
    this.uid = null;
    this.explanation = null;
    this.explainError = "";
    this.explainedAt = 0;
    this.seq = 0;
    this.asking = false;
    this.askAgain = false;
    this.lastAsk = -Infinity;
    this.askTimer = void 0;
    this.lastRender = -Infinity;
    this.renderTimer = void 0;
    this.names = null;
    this.namedBlockers = null;
    this.depsList = new VirtualList({ id: "dependents-list", className: "refs", render: (d) => this.depRow(d) });
    this.blockerList = new VirtualList({ id: "blockers-list", className: "refs", render: (r) => this.blockerRow(r) });
    this.blocking = /* @__PURE__ */ new Set();
    this.last = null;
    this.cascadeKnown = null;
    this.dismissing = null;
    this.dismissError = "";
    setInterval(() => this.poll(), EXPLAIN_POLL_MS);
  }
  /** @param {string|null} uid */
  show(uid) {
    if (uid !== this.uid) {
      this.explanation = null;
      this.explainError = "";
      this.names = null;
      this.lastAsk = -Infinity;
      for (const l of [this.depsList, this.blockerList]) l.top = l.el.scrollTop = 0;
    }
    this.uid = uid;
    this.placeholder.hidden = !!uid;
    this.body.hidden = !uid;
    this.render();
    if (uid) this.scheduleAsk();
  }
  /** Called when the store touched the object: redraw soon, ask the engine again soon. */
  changed() {
    if (!this.uid) return;
    this.renderSoon();
    this.scheduleAsk();
  }
  /**
   * Whether a change to these objects may change what the panel says: its object, one of its
   * dependents, or a blocker it names (a blocking dependent that goes is the next step of a
   * foreground deletion, not to be told a second late).
   * @param {Set<string>} touched
   */
  concerns(touched) {
    const uid = this.uid;
    if (!uid) return false;
    if (touched.has(uid)) return true;
    const deps = this.store.dependents.get(uid);
    const named = this.blockerUids();
    for (const t of touched) if (deps?.has(t) || this.blocking.has(t) || named.has(t)) return true;
    return false;
  }
  /** The uids of the blockers the explanation names, at any depth. @returns {Set<string>} */
  blockerUids() {
    const ex = this.explanation;
    const named = this.namedBlockers;
    if (named && named.ex === ex) return named.uids;
    const uids = /* @__PURE__ */ new Set();
    const visit = (bs) => bs?.forEach((b) => {
      if (b.object?.uid) uids.add(b.object.uid);
      visit(b.blockers);
    });
    visit(ex?.blockers);
    this.namedBlockers = { ex, uids };
    return uids;
  }
  /** Asks the engine again in delay ms (after the user acted on the object). @param {number} delay */
  refreshExplain(delay) {
    setTimeout(() => this.scheduleAsk(), delay);
  }
  /** While the object is being deleted or queued, the engine is asked again every second. */
  poll() {
    retickAgo(this.body);
    const uid = this.uid;
    const n = uid ? this.store.nodes.get(uid) : void 0;
    if (!uid || !n || document.hidden) return;
    if (!this.explanation || n.beingDeleted || n.deletingDependents || this.store.queueStatus(uid).length) this.scheduleAsk();
  }
  /** Asks the engine at once, or as soon as EXPLAIN_EVERY_MS have passed since the last time. */
  scheduleAsk() {
    if (!this.uid || this.askTimer !== void 0) return;
    if (this.asking) {
      this.askAgain = true;
      return;
    }
    const wait = Math.max(0, this.lastAsk + EXPLAIN_EVERY_MS - performance.now());
    this.askTimer = setTimeout(() => {
      this.askTimer = void 0;
      this.ask();
    }, wait);
  }
  async ask() {
    const uid = this.uid;
    if (!uid) return;
    if (this.asking) {
      this.askAgain = true;
      return;
    }
    if (this.actions.travelAt?.() != null) return;
    if (!this.store.nodes.has(uid)) {
      this.explanation = null;
      this.explainError = this.store.ghosts.has(uid) ? "deleted: gone from the engine's graph" : "not in the engine's graph";
      this.renderSoon();
      return;
    }
    const seq = ++this.seq;
    this.asking = true;
    this.askAgain = false;
    this.lastAsk = performance.now();
    try {
      const ex = await explain(uid);
      if (seq === this.seq && uid === this.uid) {
        this.explanation = ex;
        this.explainError = "";
        this.explainedAt = Date.now();
        this.names = null;
        this.actions.explained?.(uid, ex);
      }
    } catch (e) {
      if (seq === this.seq && uid === this.uid) {
        const err = (
          /** @type {any} */
          e
        );
        if (err.status === 404) this.explanation = null;
        this.explainError = err.status === 404 ? "gone from the engine's graph" : String(err.message || err);
      }
    } finally {
      this.asking = false;
    }
    if (uid === this.uid) this.renderSoon();
    if (this.askAgain) {
      this.askAgain = false;
      this.scheduleAsk();
    }
  }
  renderSoon() {
    if (this.renderTimer !== void 0) return;
    const wait = Math.max(0, this.lastRender + RENDER_EVERY_MS - performance.now());
    this.renderTimer = setTimeout(() => {
      this.renderTimer = void 0;
      this.render();
    }, wait);
  }
  /** A link that selects an object of the graph. @param {{uid: string, kind: string, name: string, namespace?: string}} o */
  link(o) {
    const known = this.store.nodes.has(o.uid);
    return h("a", {
      href: `?sel=${encodeURIComponent(o.uid)}`,
      class: known ? "obj" : "obj missing",
      "data-uid": o.uid,
      onclick: (ev) => {
        ev.preventDefault();
        this.actions.select(o.uid);
      }
    }, `${o.kind} ${o.name}`);
  }
  /** @param {any} d a dependent */
  depRow(d) {
    const bad = this.uid ? invalidReason(d, this.store.nodes.get(this.uid)) : "";
    return h(
      "span",
      null,
      this.link(d),
      this.blocking.has(d.uid) ? h("span.tag.block", null, "blocks") : null,
      bad ? h("span.tag.invalid", { title: `invalid reference: ${bad}` }, "invalid reference") : null,
      d.beingDeleted ? h("span.tag", null, "being deleted") : null
    );
  }
  /**
   * Whether to offer "Replay its last cascade": the recording holds one the object took
   * part in (asked of the server; null while not known).
   * @param {string} uid @param {any} n the object in the store, if there
   */
  replayable(uid, n) {
    const ask = this.actions.hasCascade;
    if (!this.actions.replay) return false;
    if (!ask) return true;
    const key = n ? n.beingDeleted ? "deleting" : "present" : "gone";
    const k = this.cascadeKnown;
    const stale = !k || k.uid !== uid || k.key !== key || k.has === false && key !== "present" && performance.now() - k.at > 3e3;
    if (stale && !(k?.uid === uid && k.has === null)) {
      const mine = { uid, key, has: (
        /** @type {boolean|null} */
        null
      ), at: performance.now() };
      this.cascadeKnown = mine;
      ask(uid).then((has) => {
        mine.has = has;
      }, () => {
        mine.has = false;
      }).finally(() => {
        mine.at = performance.now();
        if (this.uid === uid) this.renderSoon();
      });
      return k?.uid === uid ? !!k.has : false;
    }
    return !!k?.has;
  }
  /** @param {{b?: any, hidden?: number, depth: number}} r a row of the blocker tree */
  blockerRow(r) {
    const pad = r.depth ? { style: `padding-left: ${r.depth * 14}px` } : null;
    if (!r.b) return h("span.muted", pad, `and ${fmt(r.hidden || 0)} you may not see`);
    const b = r.b;
    const held = holdingFinalizers(b);
    return h(
      "span",
      pad,
      this.link(b.object),
      held.length ? h("span", null, " held by ", ...held.map((f) => h("code.hold", null, f))) : null,
      b.cycle ? h("span.tag", null, "already above: a cycle") : b.deletingDependents ? h("span.tag", null, "waits for its own") : b.inFlight ? h("span.tag.flight", null, "in flight") : b.beingDeleted && !held.length ? h("span.tag", null, "being deleted") : null
    );
  }
  /** The deletion this object owns, as it goes: a bar and "8 of 11 gone · waiting on …". @param {string} uid */
  cascadeProgress(uid) {
    const c = this.actions.cascade?.(uid);
    if (!c) return null;
    return h(
      "div.cascade-progress",
      { id: "cascade-progress", "data-state": c.running ? "running" : "done" },
      h("span.meter", null, h("span", { style: `width: ${Math.round(c.progress * 100)}%` })),
      h("span", null, c.text)
    );
  }
  render() {
    clearTimeout(this.renderTimer);
    this.renderTimer = void 0;
    this.lastRender = performance.now();
    const uid = this.uid;
    if (!uid) return;
    const store = this.store;
    const n = store.nodes.get(uid);
    const ghost = store.ghosts.get(uid)?.node;
    if (n || ghost) this.last = { uid, node: n || ghost };
    const node = n || ghost || this.explanation?.object || (this.last?.uid === uid ? this.last.node : null);
    if (!node) {
      this.body.replaceChildren(h("p.muted", null, "This object is not in the graph (any more)."));
      return;
    }
    const st = n ? stateOf(store, n) : "removed";
    const stDef = STATES.find((s) => s.id === st);
    const flags = [];
    if (node.beingDeleted) flags.push(h("span.flag.deleting", { title: node.deletionTimestamp || "" }, "beingDeleted"));
    if (node.deletingDependents) flags.push(h("span.flag.foreground", null, "deletingDependents"));
    if (node.virtual) flags.push(h("span.flag.virtual", null, "virtual"));
    if (node.observed) flags.push(h("span.flag", null, "observed"));
    if (!n) flags.splice(0, flags.length, h("span.flag.removed", {
      id: "object-removed-flag",
      title: flags.length ? `last seen with: ${flags.map((f) => f.textContent).join(", ")}` : ""
    }, "removed"));
    const owners = (node.owners || []).map((o) => {
      const ownerNode = store.nodes.get(o.uid);
      const status = this.explanation?.owners?.find((x) => x.uid === o.uid);
      const bad = invalidReason(node, ownerNode);
      return h(
        "li",
        null,
        this.link(o),
        o.controller ? h("span.tag", { title: "controller: true" }, "controller") : null,
        o.blockOwnerDeletion ? h("span.tag.block", { title: "blockOwnerDeletion: true" }, "blocks") : null,
        status ? h(`span.tag.owner-${status.state}`, { title: status.reason }, status.state) : null,
        bad ? h("div.warn", null, "invalid reference: " + bad) : status?.reason ? h("div.muted", null, status.reason) : null
      );
    });
    const deps = (
      /** @type {import("./store.js").NodeState[]} */
      [...store.dependents.get(uid) || []].map((d) => store.nodes.get(d)).filter((d) => !!d)
    );
    deps.sort((a, b) => a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    this.blocking = new Set(n ? blockingDependents(store, uid).map((x) => x.uid) : []);
    const holds = holdingFinalizers(node);
    const qs = store.queueStatus(uid).map(({ queue, item }) => {
      const what = item.inFlight ? "a worker has it" : item.queued ? "queued" : item.backoffUntil ? `in backoff until ${clock(item.backoffUntil)}` : "known";
      return h("li", null, h("b", null, queue), `: ${what}${item.retries ? `, ${item.retries} retries` : ""}`);
    });
    const travelAt = this.actions.travelAt?.() ?? null;
    const ex = n && travelAt === null ? this.explanation : null;
    const outdated = !!(ex && n && (!!ex.object.beingDeleted !== !!n.beingDeleted || !!ex.object.deletingDependents !== !!n.deletingDependents || (ex.object.finalizers || []).join() !== (n.finalizers || []).join() || (ex.object.owners || []).length !== (n.owners || []).length || [...this.blockerUids()].some((u) => store.ghosts.get(u)?.removed)));
    const why = [];
    if (ex) {
      const nsr = ex.deletion?.namespace;
      const terminating = !!nsr?.deletionTimestamp;
      why.push(h("p.next", { id: "next-step" }, h("b", null, "Next step: "), this.linkify(`${terminating && nsr.next ? nsr.next : ex.next}.`)));
      const words = [...ex.words || []];
      for (const w of [...terminating ? nsr.words || [] : [], ...ex.deletion?.discovery || []]) if (!words.includes(w)) words.push(w);
      for (const w of words) {
        if (ex.holds?.length && w.startsWith("held by finalizer ")) continue;
        why.push(h("p.word", null, this.linkify(w)));
      }
      if (ex.deletion?.error) why.push(h("p.warn", null, `More on its deletion could not be read: ${ex.deletion.error}`));
      if (nsr) why.push(namespaceView(nsr, (o) => this.link(o)));
      why.push(...this.holds(ex, node));
      if (ex.blockers?.length || ex.hiddenBlockers) {
        this.blockerList.set(flatten(ex.blockers || [], ex.hiddenBlockers || 0, 0, []));
        why.push(h(
          "div.blockers",
          null,
          h("b", null, "Blocking dependents"),
          h("p.summary", { id: "blocker-summary" }, blockerSummaryText(ex)),
          this.blockerList.el
        ));
      }
      if (ex.lastAction) {
        const a = ex.lastAction;
        why.push(h("p.muted", null, `Last worker action: ${a.queue} ${a.verb}${a.policy ? " " + a.policy : ""}${a.error ? " — " + errorText(a) : ""}${a.reason ? " — " + a.reason : ""}`));
      }
      why.push(h(
        "p.muted.asof",
        { id: "explained-at", "data-at": String(this.explainedAt) },
        this.explainError ? `As of ${clock(this.explainedAt)}; asking again failed: ${this.explainError}` : outdated ? `As of ${clock(this.explainedAt)}: the object or what it waits for has changed since; asking the engine again…` : `As of ${clock(this.explainedAt)}.`
      ));
    } else if (travelAt !== null) {
      why.push(h("p.muted", { id: "travel-explain" }, document.body.dataset.replay === "true" ? `As recorded at ${clock(travelAt)}. A replay has no engine to explain it: its decisions are in the History tab.` : `As recorded at ${clock(travelAt)} (time travel). The engine explains only the live state: back to live (Esc) to ask it.`));
    } else why.push(h("p.muted", null, !n ? "Deleted: it is gone from the engine's graph." : this.explainError ? `Explain: ${this.explainError}` : "asking the engine…"));
    const canDelete = n && !n.virtual && travelAt === null;
    const replay2 = this.replayable(uid, n);
    const ck = this.cascadeKnown;
    const replayKnown = !this.actions.hasCascade ? null : ck?.uid === uid && ck.has !== null ? ck.has ? "yes" : "no" : "asking";
    const readOnly = this.actions.readOnly;
    this.depsList.set(deps);
    patchChildren(this.body, present(
      h(
        "div.obj-head",
        null,
        h("div.kind", null, `${node.kind} · ${node.apiVersion || ""}`),
        h("h2", { id: "object-name" }, node.name),
        h("div.muted", null, node.namespace ? `namespace ${node.namespace}` : "cluster-scoped"),
        h("div.state", { "data-state": st }, h("span.swatch", { style: `background: var(${stDef?.color || "--node-border"})` }), stDef?.label || st),
        this.cascadeProgress(uid)
      ),
      h(
        "div.actions-row",
        { "data-replay": replayKnown },
        h("button", { type: "button", id: "focus-button", title: "Focus on its owners and dependents (f)", onclick: () => this.actions.focus(uid) }, "Focus"),
        canDelete ? h(readOnly ? "button" : "button.danger", {
          type: "button",
          id: "delete-button",
          title: readOnly ? "See what a delete would do (read-only: gcscope refuses deletes)" : "Delete with a propagation policy (Delete)",
          onclick: () => this.actions.del(uid)
        }, readOnly ? "Preview delete…" : "Delete…") : null,
        replay2 ? h("button", {
          type: "button",
          id: "replay-button",
          title: "Play the last recorded deletion this object took part in",
          onclick: () => this.actions.replay?.(uid)
        }, "▶ Replay its last cascade") : null
      ),
      h("section", { id: "explain", "data-explain": "", "data-outdated": outdated ? "" : null }, h("h3", null, n || travelAt !== null ? "Why is it here?" : "What became of it"), ...why),
      h(
        "dl.facts",
        null,
        h("dt", null, "uid"),
        h("dd", null, h("code", null, uid)),
        h("dt", null, "flags"),
        h("dd", null, ...flags.length ? flags : ["—"]),
        h("dt", null, "finalizers"),
        h("dd", { id: "object-finalizers" }, ...node.finalizers?.length ? node.finalizers.map((f) => h(holds.includes(f) ? "code.hold" : "code", null, f)) : ["—"]),
        node.deletionTimestamp ? h("dt", null, "deleted at") : null,
        node.deletionTimestamp ? h("dd", null, node.deletionTimestamp) : null,
        h("dt", null, "queues"),
        h("dd", null, qs.length ? h("ul", null, ...qs) : "—")
      ),
      this.orphanMarks(uid, node, travelAt),
      h("h3", null, `Owners (${fmt(owners.length)})`),
      owners.length ? h("ul.refs", null, ...owners) : h("p.muted", null, node.orphaned?.length ? "none left (orphaned: see above)" : "none: a root"),
      h("h3", { id: "dependents-head" }, `Dependents (${fmt(deps.length)})`),
      deps.length ? this.depsList.el : h("p.muted", null, "none"),
      ex?.hiddenDependents ? h("p.muted", null, `and ${fmt(ex.hiddenDependents)} you may not see`) : null
    ));
    this.depsList.restore();
    if (this.blockerList.el.isConnected) this.blockerList.restore();
  }
  /**
   * The object's orphan marks (node.orphaned): per former owner, a section saying who it was
   * (a link while it is in the graph), by whom the reference was removed, when (ticking, the
   * time itself on hover) and why; and Dismiss, live only (a recorded moment is as it was).
   * It changes only what gcscope remembers, so a read-only gcscope offers it too.
   * @param {string} uid @param {any} node @param {number|null} travelAt
   */
  orphanMarks(uid, node, travelAt) {
    const marks = node.orphaned || [];
    if (!marks.length) return null;
    const live2 = travelAt === null && document.body.dataset.replay !== "true" && this.store.nodes.has(uid);
    const dismissing = this.dismissing === uid;
    const rows = marks.map((m, i) => {
      const t = Date.parse(m.at);
      const o = m.owner;
      const who = m.ownerHidden || !o ? h("i", null, "an owner you may not see") : this.store.nodes.has(o.uid) ? this.link(o) : h("span.obj.gone", { title: `uid ${o.uid}: no longer in the graph` }, `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`);
      return h(
        "div.orphan-mark",
        { "data-cause": m.cause, "data-index": String(i) },
        h("div.orphan-head", null, "Orphaned from ", who, m.controller ? h("span.tag", { title: "the removed reference had controller: true" }, "controller reference") : null),
        h(
          "div",
          null,
          "by ",
          m.by || "the garbage collector",
          ", ",
          Number.isFinite(t) ? h("span.ago", { "data-ago": String(t), title: new Date(t).toLocaleString() + ` (${m.at})` }, agoText(t)) : m.at || "at a moment not known"
        ),
        h("div.muted", { title: ORPHAN_CAUSES[m.cause] || m.cause }, m.reason || ORPHAN_CAUSES[m.cause] || m.cause)
      );
    });
    return h(
      "section.orphan-marks",
      { id: "orphan-marks" },
      h("h3", null, marks.length === 1 ? "Orphaned" : `Orphaned (${fmt(marks.length)} references removed)`),
      ...rows,
      live2 ? h(
        "div.dismiss-row",
        null,
        h("button", {
          type: "button",
          id: "dismiss-orphan",
          disabled: dismissing ? "" : null,
          title: "Forget these marks (gcscope's memory only: nothing is written to the cluster; for every user of this gcscope)",
          onclick: () => this.dismiss(uid)
        }, dismissing ? "Dismissing…" : "Dismiss"),
        h("span.muted", null, "kept a day unless dismissed"),
        this.dismissError ? h("span.error", null, this.dismissError) : null
      ) : null
    );
  }
  /** Dismisses the object's orphan marks; the mark goes when the stream sends the node again. @param {string} uid */
  async dismiss(uid) {
    this.dismissing = uid;
    this.dismissError = "";
    this.render();
    try {
      await dismissOrphanMarks(uid);
    } catch (e) {
      this.dismissError = `Dismiss failed: ${/** @type {any} */
      e.message || e}`;
    } finally {
      this.dismissing = null;
      this.renderSoon();
    }
  }
  /**
   * What holds the object: each finalizer of another controller, who usually removes it,
   * and the kubectl command that would remove it by hand (shown, never run).
   * @param {any} ex @param {any} node
   * @returns {Node[]}
   */
  holds(ex, node) {
    const holds = ex.holds?.length ? ex.holds : (ex.heldBy || []).map((f) => ({ finalizer: f }));
    const origins = ex.deletion?.origins || [];
    return holds.map((hold, i) => {
      const origin = origins.find((o) => o.finalizer === hold.finalizer);
      const fin = h("code.hold", null, hold.finalizer);
      const copy = h("button.copy", { type: "button", title: "Copy the command (gcscope never runs it)", onclick: (ev) => {
        const b = (
          /** @type {HTMLElement} */
          ev.currentTarget
        );
        if (!navigator.clipboard) b.textContent = "Select and copy it";
        else navigator.clipboard.writeText(hold.release || "").then(() => b.textContent = "Copied", () => b.textContent = "Select and copy it");
      } }, "Copy");
      return h(
        "div.hold",
        { id: `hold-${i}`, "data-finalizer": hold.finalizer },
        h("p.held", { id: i === 0 ? "held-by" : void 0 }, node.beingDeleted ? h("span", null, h("b", null, "Held by finalizer "), fin, ": it is deleted, but stays until the controller that owns the finalizer removes it.") : h("span", null, "Carries finalizer ", fin, ": once deleted, it will stay until that finalizer is removed.")),
        hold.owner ? h("p.muted", null, `Who removes it: ${hold.owner}.`) : null,
        // Who added it (managedFields) and whether that controller looks alive; its risk
        // goes beside the command that would release it.
        origin ? originView(origin, (o) => this.link(o), { risk: !(node.beingDeleted && hold.release) }) : null,
        node.beingDeleted && hold.release ? h(
          "div.release",
          null,
          h("p.muted", null, "To release it by hand — gcscope shows this and never runs it; removing a finalizer skips that controller's clean-up. The test op makes the patch fail, instead of removing another finalizer, if the list changed:"),
          h("pre", { class: "release-cmd" }, h("code", null, hold.release)),
          copy,
          origin?.risk ? riskLine(origin.risk) : null
        ) : null
      );
    });
  }
  /** Names the explanation's words may link: "kind name" → the object. */
  linkNames() {
    if (this.names) return this.names;
    const names = /* @__PURE__ */ new Map();
    const add = (o) => {
      names.set(`${o.kind.toLowerCase()} ${o.name.toLowerCase()}`, o);
      if (o.namespace) names.set(`${o.kind.toLowerCase()} ${o.namespace.toLowerCase()}/${o.name.toLowerCase()}`, o);
    };
    const n = this.uid ? this.store.nodes.get(this.uid) : void 0;
    const ex = this.explanation;
    const visit = (bs) => bs?.forEach((b) => {
      add(b.object);
      visit(b.blockers);
    });
    for (const o of n?.owners || []) add(o);
    visit(ex?.blockers);
    for (const o of ex?.owners || []) add(o);
    for (const hd of ex?.deletion?.namespace?.content?.holders || []) add(hd.object);
    this.names = names;
    return names;
  }
  /**
   * The engine's sentences name objects as "kind name"; those it knows become links. One
   * pass over the words, whatever the number of objects.
   * @param {string} text
   */
  linkify(text) {
    const names = this.linkNames();
    if (!names.size) return text;
    const out = h("span");
    const parts = text.split(/(\s+)/);
    let plain = "";
    for (let i = 0; i < parts.length; i++) {
      const kind = parts[i];
      if (i + 2 < parts.length && /^[A-Za-z]/.test(kind)) {
        const raw = parts[i + 2];
        const name = raw.replace(/[;,:.)]+$/, "");
        const o = names.get(`${kind.toLowerCase()} ${name.toLowerCase()}`);
        if (o) {
          out.append(plain, this.link(o));
          plain = raw.slice(name.length);
          i += 2;
          continue;
        }
      }
      plain += kind;
    }
    out.append(plain);
    return out;
  }
};
function present(...children) {
  return (
    /** @type {(Node|string)[]} */
    children.filter((c) => c != null)
  );
}

// src/queues.js
var VERB_WORDS = (
  /** @type {Record<string, string>} */
  {
    delete: "delete",
    patchRemoveRefs: "patch away references",
    patchUnblock: "unblock references",
    removeFinalizer: "remove finalizer",
    orphan: "orphan",
    keep: "keep",
    get: "look up"
  }
);
var QueuesPanel = class {
  /**
   * @param {HTMLElement} queuesEl @param {HTMLElement} actionsEl @param {HTMLElement} syncEl
   * @param {Store} store @param {(uid: string) => void} select
   */
  constructor(queuesEl, actionsEl, syncEl, store, select) {
    this.queuesEl = queuesEl;
    this.actionsEl = actionsEl;
    this.syncEl = syncEl;
    this.store = store;
    this.select = select;
    this.rows = /* @__PURE__ */ new Map();
    for (const q of store.queues.keys()) {
      const r = {
        depth: h("b"),
        flight: h("b"),
        backoff: h("b"),
        adds: h("span.muted"),
        spark: (
          /** @type {HTMLCanvasElement} */
          h("canvas.spark", { width: 300, height: 36, "aria-label": `${q} depth over the last 5 minutes` })
        ),
        items: h("ul.items")
      };
      this.rows.set(q, r);
      queuesEl.append(h(
        "div.queue",
        { "data-queue": q },
        h(
          "div.qhead",
          null,
          h("span.qname", null, q),
          h("span", null, "queued ", r.depth),
          h("span", null, "in flight ", r.flight),
          h("span", null, "backoff ", r.backoff),
          r.adds
        ),
        r.spark,
        r.items
      ));
    }
    this.lastActionsKey = "";
    this.panel = /** @type {HTMLElement|null} */
    queuesEl.closest(".panel");
    this.summary = h("span.queues-summary", { id: "queues-summary" });
    this.toggle = h("button.queues-toggle", {
      type: "button",
      id: "queues-toggle",
      "aria-expanded": "true",
      "aria-controls": queuesEl.id,
      title: "Show or fold the work queues",
      onclick: () => this.userToggle()
    }, "▾");
    const head = this.panel?.querySelector("h2");
    if (head) {
      head.prepend(this.toggle);
      head.append(this.summary);
    }
    this.selected = false;
    this.opened = false;
    this.closed = false;
    setInterval(() => {
      store.sampleQueues();
      this.render(true);
    }, 1e3);
  }
  /** Whether an object is selected: the panel folds, unless the user opened it. @param {boolean} on */
  setSelected(on) {
    if (on === this.selected) return;
    this.selected = on;
    if (!on) this.opened = false;
    this.fold();
  }
  userToggle() {
    if (this.selected) this.opened = !this.opened;
    else this.closed = !this.closed;
    this.fold();
  }
  /** Folds or opens the panel as the selection and the user say. */
  fold() {
    const folded = this.selected ? !this.opened : this.closed;
    this.panel?.classList.toggle("folded", folded);
    this.toggle.textContent = folded ? "▸" : "▾";
    this.toggle.setAttribute("aria-expanded", String(!folded));
    this.renderSummary();
  }
  /** The folded panel's one line: what the queues hold now. */
  renderSummary() {
    let queued = 0, flight = 0, backoff = 0;
    for (const q of this.store.queues.values()) {
      queued += q.depth;
      flight += q.inFlight;
      for (const it of q.items.values()) if (it.backoffUntil != null) backoff++;
    }
    const text = ` · ${queued} queued · ${flight} in flight · ${backoff} in backoff`;
    if (this.summary.textContent !== text) this.summary.textContent = text;
  }
  /** @param {boolean} [sparks] */
  render(sparks = false) {
    this.renderSummary();
    const { store } = this;
    const now = store.clock ?? Date.now();
    for (const [name, q] of store.queues) {
      const r = (
        /** @type {any} */
        this.rows.get(name)
      );
      let backoff = 0;
      for (const it of q.items.values()) if (it.backoffUntil != null) backoff++;
      r.depth.textContent = String(q.depth);
      r.flight.textContent = String(q.inFlight);
      r.backoff.textContent = String(backoff);
      r.adds.textContent = `${q.adds} adds · ${q.retries} retries`;
      const items = [...q.items.values()].sort((a, b) => Number(b.inFlight) - Number(a.inFlight) || a.since - b.since).slice(0, 8);
      patchChildren(r.items, [...items.map((it) => {
        const times = (n) => n > 1 ? ` ×${n}` : "";
        const st = it.inFlight ? `in flight${times(it.inFlightItems)}${it.queued ? `, ${it.queuedItems} queued` : ""}` : it.queued ? `queued${times(it.queuedItems)}` : it.backoffUntil != null ? it.backoffUntil > now ? `retry in ${((it.backoffUntil - now) / 1e3).toFixed(1)} s` : "retry due" : "";
        return h(
          "li",
          { "data-uid": it.object.uid, class: it.inFlight ? "flight" : it.backoffUntil != null ? "backoff" : "" },
          h(
            "a",
            { href: `?sel=${encodeURIComponent(it.object.uid)}`, onclick: (ev) => {
              ev.preventDefault();
              this.select(it.object.uid);
            } },
            describe(it.object)
          ),
          h("span.muted", null, ` ${st}${it.change ? " · " + it.change : ""}${it.retries ? ` · ${it.retries} retries` : ""}`)
        );
      }), q.items.size > 8 ? h("li.muted", null, `and ${q.items.size - 8} more`) : ""]);
      if (sparks) drawSpark(r.spark, q.history, q.maxHistory);
    }
    const sync = store.sync;
    const unsynced = sync.unsynced?.length || 0, failing = Object.keys(sync.failing || {}).length;
    this.syncEl.textContent = sync.discovery ? `no resources monitored: ${sync.discovery}` : `${sync.resources?.length || 0} resources` + (unsynced ? ` · ${unsynced} syncing` : "") + (failing ? ` · ${failing} failing` : "");
    this.syncEl.classList.toggle("warn", !!sync.discovery);
    this.syncEl.title = failing ? Object.entries(sync.failing || {}).map(([r, e]) => `${r}: ${e}`).join("\n") : "";
    this.renderActions();
  }
  renderActions() {
    const acts = this.store.actions.filter((a) => a.verb !== "get").slice(0, 40);
    const key = acts.length ? `${acts.length}:${acts[0].time}:${acts[0].object.uid}:${acts[0].verb}` : "";
    if (key === this.lastActionsKey) return;
    this.lastActionsKey = key;
    patchChildren(this.actionsEl, acts.map((a) => {
      const result = actionResult(a);
      return h(
        "li",
        { class: result, "data-uid": a.object.uid },
        h("span.time", null, a.time ? clock(a.time) : "earlier"),
        h("span.verb", null, VERB_WORDS[a.verb] || a.verb, a.policy ? ` (${a.policy})` : "", a.finalizer ? ` ${a.finalizer}` : ""),
        h("a", { href: `?sel=${encodeURIComponent(a.object.uid)}`, onclick: (ev) => {
          ev.preventDefault();
          this.select(a.object.uid);
        } }, describe(a.object)),
        h("span.result", { title: result === "retried" ? RETRIED_WHY : void 0 }, errorText(a) || (a.shadow ? "shadow: not written" : a.duration ? duration(a.duration) : "")),
        a.reason ? h("div.reason", null, a.reason) : null
      );
    }));
  }
};
function drawSpark(c, hist, max) {
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    c.getContext("2d")
  );
  const w = c.width, hgt = c.height;
  ctx.clearRect(0, 0, w, hgt);
  const top = Math.max(1, ...hist);
  const cs = getComputedStyle(c);
  ctx.fillStyle = cs.getPropertyValue("--accent").trim() || "#36c";
  ctx.globalAlpha = 0.5;
  const bw = w / max;
  hist.forEach((v, i) => {
    const bh = v / top * (hgt - 12);
    ctx.fillRect(w - (hist.length - i) * bw, hgt - bh, Math.max(bw, 1), bh);
  });
  ctx.globalAlpha = 1;
  ctx.fillStyle = cs.getPropertyValue("--muted").trim() || "#888";
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillText(`max ${top} · 5 min`, 2, 10);
}

// src/prediction.js
var ROWS_SHOWN = 200;
function treeOrder(targets, listed, tree) {
  const refs = /* @__PURE__ */ new Map();
  for (const o of [...listed, ...targets]) refs.set(o.uid, o);
  const info = (u) => tree?.node(u) || refs.get(u);
  const byKindName = (a, b) => {
    const x = info(a), y = info(b);
    const ka = x ? `${x.kind}\0${x.name}` : "￿" + a, kb = y ? `${y.kind}\0${y.name}` : "￿" + b;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  const order = /* @__PURE__ */ new Map();
  const visit = (root) => {
    const stack = [[root, null]];
    while (stack.length) {
      const [u, parent] = (
        /** @type {[string, string|null]} */
        stack.pop()
      );
      if (order.has(u)) continue;
      order.set(u, { rank: order.size, parent });
      const deps = tree ? [...tree.dependents(u)].filter((d) => !order.has(d)).sort(byKindName) : [];
      for (let i = deps.length - 1; i >= 0; i--) stack.push([deps[i], u]);
    }
  };
  for (const t of [...targets].sort((a, b) => byKindName(a.uid, b.uid))) visit(t.uid);
  const rest = listed.map((o) => o.uid).filter((u) => !order.has(u)).sort(byKindName);
  const waiting = new Set(rest);
  for (const u of rest) {
    if (order.has(u)) continue;
    if (!(tree?.owners(u) || []).some((o) => waiting.has(o) && !order.has(o))) visit(u);
  }
  for (const u of rest) visit(u);
  return order;
}
var present2 = (...nodes) => (
  /** @type {Node[]} */
  nodes.filter((n) => n !== null)
);
var STEPS = (
  /** @type {Record<number, string>} */
  {
    1: "its Pods, first",
    2: "the rest of its content, once the Pods are gone",
    3: "the namespace itself, once it is empty",
    4: "its own dependents (cluster-scoped), by the collector"
  }
);
function stepTitle(step, last) {
  if (!step) return "in no particular order";
  return step === 1 ? "first: what nothing waits on" : step === last ? "last, once those before it are gone" : "then, once those before it are gone";
}
var targetsOf = (p) => p.targets?.length ? p.targets : [p.target];
function previewMarks(p) {
  const m = /* @__PURE__ */ new Map();
  for (const d of p.deleted || []) m.set(d.object.uid, "deleted");
  for (const d of p.orphaned || []) m.set(d.object.uid, "orphaned");
  for (const d of p.kept || []) m.set(d.object.uid, "kept");
  for (const d of p.waiting || []) m.set(d.object.uid, "waiting");
  for (const t of targetsOf(p)) m.set(t.uid, "target");
  return m;
}
function predictionNodes(res, o) {
  const p = res.prediction;
  const volumes = (
    /** @type {any[]} */
    res.volumes || []
  ), leftBehind = (
    /** @type {any[]} */
    res.leftBehind || []
  );
  const recreated = (
    /** @type {any[]} */
    res.recreated || []
  ), hidden = res.hidden || 0, unread = res.unread || "";
  const would = o.readOnly ? "would" : "will";
  const link = (obj) => h("a", { href: "#", onclick: (ev) => {
    ev.preventDefault();
    o.select(obj.uid);
  } }, describe(obj));
  const order = treeOrder(targetsOf(p), [...p.deleted || [], ...p.orphaned || [], ...p.kept || [], ...p.waiting || []].map((d) => d.object), o.tree);
  const rankOf = (d) => order.get(d.object.uid)?.rank ?? Infinity;
  const row = (d, depth, said2) => {
    const reason = d.reason && d.reason !== said2 ? d.reason : "";
    return h(
      "li",
      { title: d.reason || void 0, "data-uid": d.object.uid, "data-depth": depth ? String(depth) : void 0, style: depth ? `padding-left: ${depth * 16}px` : void 0 },
      link(d.object),
      d.finalizers?.length ? h("span.muted", null, ` held by ${d.finalizers.join(", ")}`) : null,
      reason ? h("span.muted.why", null, ` — ${reason}`) : null
    );
  };
  const rows = (list, all) => {
    const sorted = [...list].sort((a, b) => rankOf(a) - rankOf(b));
    const depth = /* @__PURE__ */ new Map();
    const out = [];
    for (let i = 0; i < sorted.length; i++) {
      const d = sorted[i];
      const parent = order.get(d.object.uid)?.parent ?? null;
      if (parent && depth.has(parent)) {
        const pd = (
          /** @type {number} */
          depth.get(parent)
        );
        depth.set(d.object.uid, pd + 1);
        const owner2 = o.tree?.node(parent);
        out.push(row(d, pd + 1, all || (owner2 ? `its owners go: ${owner2.kind} ${owner2.name}` : "")));
        continue;
      }
      let j = i + 1;
      while (j < sorted.length && parent && (order.get(sorted[j].object.uid)?.parent ?? null) === parent) j++;
      const owner = parent ? o.tree?.node(parent) : void 0;
      if (j - i > 1 && owner && !all) {
        const run = sorted.slice(i, j);
        const reason = mostCommon(run.map((x) => x.reason || ""), true);
        out.push(h("li.pv-owner", { "data-owner": parent }, reason || `dependents of ${owner.kind} ${owner.name}`));
        for (const x of run) {
          depth.set(x.object.uid, 1);
          out.push(row(x, 1, reason));
        }
        i = j - 1;
        continue;
      }
      depth.set(d.object.uid, 0);
      out.push(row(d, 0, all));
    }
    return out;
  };
  const section = (cls, title, list) => {
    if (!list?.length) return null;
    const all = list.length > 1 ? mostCommon(list.map((d) => d.reason || ""), true) : "";
    const items = rows(list, all);
    const ul = h("ul", null, ...items.slice(0, ROWS_SHOWN));
    const more = items.length > ROWS_SHOWN ? h("button.more", { type: "button", onclick: (ev) => {
      ul.append(...items.slice(ROWS_SHOWN));
      ev.currentTarget.remove();
    } }, `Show the other ${fmtN(items.length - ROWS_SHOWN)}`) : null;
    return h(
      `details.pv.${cls}`,
      { open: true },
      h("summary", null, `${title} (${fmtN(list.length)})`),
      all ? h("p.muted.step-why", null, all) : null,
      ul,
      more
    );
  };
  const n = (p.deleted || []).length;
  const targets = new Set(targetsOf(p).map((t) => t.uid));
  const stepped = (p.deleted || []).some((d) => d.step);
  const deleted = stepped ? [...p.deleted].sort((a, b) => (a.step || 99) - (b.step || 99)) : [...p.deleted || []].sort((a, b) => Number(targets.has(b.object.uid)) - Number(targets.has(a.object.uid)));
  const steps = /* @__PURE__ */ new Map();
  if (stepped) {
    for (const d of deleted) {
      let l = steps.get(d.step || 0);
      if (!l) steps.set(d.step || 0, l = []);
      l.push(d);
    }
  }
  const isNamespace = !o.set && p.target.kind === "Namespace" && p.target.apiVersion === "v1";
  const lost = volumes.filter((v) => v.verdict === "data-loss");
  const storage = volumes.filter((v) => v.verdict !== "data-loss" && v.verdict !== "kept");
  const said = new Set([...p.orphaned || [], ...p.kept || []].map((d) => d.object.uid));
  const behind = leftBehind.filter((l) => !said.has(l.object.uid));
  const volumeRow = (v) => h("li", null, link(v.claim), h("div", null, v.says));
  const chosen = o.set && !stepped ? deleted.filter((d) => targets.has(d.object.uid)).map((d) => d.reason === "the target" ? { ...d, reason: "" } : d) : [];
  const withThem = o.set && !stepped ? deleted.filter((d) => !targets.has(d.object.uid)) : [];
  const missing = (
    /** @type {string[]} */
    res.missing || []
  );
  const refusals = (
    /** @type {any[]} */
    res.refusals || []
  );
  const fmt2 = (x) => x.toLocaleString("en-US");
  return present2(
    lost.length ? h(
      "div.data-loss",
      { id: "delete-data-loss", role: "alert" },
      h(
        "p",
        null,
        h("b", null, `Data loss: ${counted(lost.length, "volume")} ${would} be destroyed`),
        ` with ${lost.length === 1 ? "its claim" : "their claims"}. The storage provider deletes the disk; nothing brings the data back.`
      ),
      h("ul", null, ...lost.map(volumeRow))
    ) : null,
    h(
      "p.summary",
      { id: "delete-summary" },
      `${p.policy}: ${counted(n, "object")} ${would} be deleted`,
      o.set ? ` (the ${fmt2(targets.size)} selected${n > targets.size ? ` and ${fmt2(n - targets.size)} with them` : ""})` : "",
      p.orphaned?.length ? `, ${fmt2(p.orphaned.length)} orphaned` : "",
      p.kept?.length ? `, ${fmt2(p.kept.length)} kept` : "",
      p.waiting?.length ? `, ${fmt2(p.waiting.length)} ${would} wait on finalizers` : "",
      "."
    ),
    o.readOnly ? h("p.note", { id: "delete-read-only" }, "A dry run: gcscope runs read-only (--read-only) and refuses deletes. This is what the collector would do.") : null,
    res.refusal ? h("p.warn", { id: "delete-refusal" }, `The cluster refused a dry run of this delete, made as you: ${res.refusal}`) : null,
    refusals.length ? h(
      "div.warn",
      { id: "delete-refusal" },
      h("p", null, `The cluster refused a dry run of ${refusals.length === 1 ? "one of these deletes" : `${fmt2(refusals.length)} of these deletes`}, made as you:`),
      h("ul", null, ...refusals.map((r) => h("li", null, link(r.object), h("span.muted", null, ` — ${r.error}`))))
    ) : null,
    hidden ? h("p.warn", { id: "delete-hidden" }, `It also affects ${hidden} object${hidden === 1 ? "" : "s"} you may not see: the cluster's collector acts on them all the same.`) : null,
    missing.length ? h("p.warn", { id: "delete-missing" }, `${missing.length === 1 ? "One of the objects selected is" : `${fmt2(missing.length)} of the objects selected are`} no longer in the graph (deleted meanwhile, or not yours to see): left out.`) : null,
    p.order ? h("p.order", { id: "delete-order" }, h("b", null, "In this order: "), p.order, ".") : null,
    ...stepped ? [...steps].map(([step, list], i) => {
      const el = section("deleted", `${i + 1}. ${isNamespace && STEPS[step] || stepTitle(step, Math.max(...steps.keys()))}`, list);
      if (el) el.dataset.step = String(step);
      return el;
    }) : o.set ? [section("deleted", "Selected, deleted", chosen), section("deleted", "Deleted with them", withThem)] : [section("deleted", "Deleted", deleted)],
    recreated.length ? h(
      "details.pv.recreated",
      { id: "delete-recreated", open: true },
      h("summary", null, `Comes back (${recreated.length}): ${recreated.length === 1 ? "its controller stays and replaces it" : "their controllers stay and replace them"}`),
      h("ul", null, ...recreated.map((r) => row({ object: r.object, reason: r.says }, 0)))
    ) : null,
    storage.length ? h(
      "details.pv.storage",
      { id: "delete-storage", open: true },
      h("summary", null, `Storage of the other claims it deletes (${storage.length})`),
      h("ul", null, ...storage.map(volumeRow))
    ) : null,
    behind.length ? h(
      "details.pv.left-behind",
      { id: "delete-left-behind", open: true },
      h("summary", null, `Left behind (${behind.length})`),
      h("ul", null, ...behind.map((l) => row({ object: l.object, reason: l.reason }, 0)))
    ) : null,
    unread ? h("p.warn", { id: "delete-unread" }, `Storage not read: ${unread}`) : null,
    section("orphaned", "Orphaned (stay, reference removed)", p.orphaned),
    section("kept", "Kept: another owner holds them, or their reference is invalid", p.kept),
    section("waiting", "Will wait on other controllers' finalizers", p.waiting),
    p.targetWaitsFor?.length ? section("waiting", o.set ? "The selected will wait for" : "The target will wait for", p.targetWaitsFor) : null,
    h("p.muted", null, "Drawn on the graph behind this dialog.")
  );
}
function outcomeNodes(outcomes, policy, select) {
  const failed = outcomes.filter((x) => x.error), started = outcomes.length - failed.length;
  const item = (x) => h(
    "li",
    { "data-uid": x.object.uid, "data-outcome": x.error ? "error" : "started" },
    h("a", { href: "#", onclick: (ev) => {
      ev.preventDefault();
      select(x.object.uid);
    } }, describe(x.object)),
    x.error ? h("span.error", null, ` — refused: ${x.error}${/not found/i.test(x.error) ? " (already gone: another target's cascade may have taken it)" : ""}`) : h("span.muted", null, ` — ${x.result || "deletion started"}`)
  );
  return present2(
    h(
      "p.summary",
      { id: "delete-outcome-summary" },
      `${policy}: ${counted(started, "deletion")} started`,
      failed.length ? `, ${failed.length.toLocaleString("en-US")} refused` : "",
      ` of ${outcomes.length.toLocaleString("en-US")}.`
    ),
    h(
      "details.pv.outcomes",
      { id: "delete-outcomes", open: true },
      h("summary", null, `Each delete (${outcomes.length.toLocaleString("en-US")})`),
      h("ul", null, ...[...outcomes].sort((a, b) => Number(!!b.error) - Number(!!a.error)).map(item))
    ),
    h("p.muted", null, "The collector goes on from here: the graph behind this dialog follows the cascades as the stream reports them.")
  );
}
function errorText2(e) {
  if (!e.status) return `Request failed: ${e.message || e}`;
  const status = `${e.status}${e.code ? " " + e.code : ""}: `;
  const hint = e.status === 409 ? " The object changed (or was recreated) since; look again and retry." : e.status === 403 && e.code === "csrf" ? " Reload the page to get a fresh session." : "";
  return `Refused — ${status}${e.message || e}.${hint}`.replace(/\.\./g, ".");
}
var fmtN = (n) => n.toLocaleString("en-US");
function mostCommon(values, only = false) {
  if (only) return values.length && values.every((v) => v && v === values[0]) ? values[0] : "";
  const n = /* @__PURE__ */ new Map();
  for (const v of values) if (v) n.set(v, (n.get(v) || 0) + 1);
  let best = "", most = 0;
  for (const [v, c] of n) if (c > most) [best, most] = [v, c];
  return best;
}

// src/dialog.js
var TYPED_CONFIRM_OVER = 20;
var setPhrase = (n) => `delete ${n} object${n === 1 ? "" : "s"}`;
var DeleteDialog = class {
  /** @param {import("./store.js").Store} store @param {DialogHooks} hooks */
  constructor(store, hooks2) {
    this.store = store;
    this.hooks = hooks2;
    this.dialog = /** @type {HTMLDialogElement|null} */
    document.getElementById("delete-dialog");
    this.uid = null;
    this.set = null;
    this.sent = false;
    this.seq = 0;
    this.prediction = null;
    this.volumes = [];
    this.explanation = null;
    this.opened = 0;
    if (!this.dialog) return;
    this.readOnly = !document.getElementById("delete-confirm");
    const form = (
      /** @type {HTMLFormElement} */
      $("delete-form")
    );
    form.addEventListener("change", (ev) => {
      if (
        /** @type {HTMLInputElement} */
        ev.target.name === "policy"
      ) this.predict();
    });
    document.getElementById("delete-confirm-input")?.addEventListener("input", () => this.updateConfirm());
    $("delete-cancel").addEventListener("click", () => this.close());
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.confirm();
    });
    this.dialog.addEventListener("close", () => this.cleanup());
  }
  get policy() {
    const el = (
      /** @type {HTMLInputElement|null} */
      document.querySelector('#delete-form input[name="policy"]:checked')
    );
    return el ? el.value : "Background";
  }
  /** Whether the dialog is open. */
  get isOpen() {
    return !!this.dialog?.open;
  }
  /** @param {string} uid */
  open(uid) {
    const n = this.store.nodes.get(uid);
    if (!this.dialog || !n || n.virtual) return;
    this.reset();
    this.uid = uid;
    $("delete-title").textContent = this.readOnly ? `What would deleting ${describe(n)} do?` : `Delete ${describe(n)}`;
    this.show();
    if (n.beingDeleted) this.askWhatHolds(uid);
  }
  /**
   * Opens the dialog for several objects deleted together (the objects the store does not
   * hold, or only names as owners, are left out).
   * @param {string[]} uids
   */
  openSet(uids) {
    const set = uids.filter((u) => !this.store.nodes.get(u)?.virtual && this.store.nodes.has(u));
    if (!this.dialog || !set.length) return;
    this.reset();
    this.set = set;
    const k = set.length.toLocaleString("en-US");
    $("delete-title").textContent = this.readOnly ? `What would deleting these ${k} objects do?` : `Delete ${k} selected object${set.length === 1 ? "" : "s"}`;
    if (this.readOnly) {
      const menu = (
        /** @type {HTMLElement} */
        this.dialog.querySelector("menu")
      );
      menu.prepend(h("button.danger", {
        type: "button",
        id: "delete-set-refused",
        disabled: true,
        "aria-describedby": "delete-read-only",
        title: "gcscope runs read-only (--read-only): it refuses deletes"
      }, `Delete ${k} (read-only)`));
    }
    this.show();
  }
  /** Clears what a former opening left. */
  reset() {
    this.opened++;
    this.uid = null;
    this.set = null;
    this.sent = false;
    this.explanation = null;
    const input = (
      /** @type {HTMLInputElement|null} */
      document.getElementById("delete-confirm-input")
    );
    if (input) input.value = "";
    $("delete-error").hidden = true;
    document.getElementById("delete-set-refused")?.remove();
    const fieldset = (
      /** @type {HTMLFieldSetElement|null} */
      document.querySelector("#delete-form fieldset")
    );
    if (fieldset) fieldset.disabled = false;
    const btn = document.getElementById("delete-confirm");
    if (btn) btn.hidden = false;
    $("delete-cancel").textContent = this.readOnly ? "Close" : "Cancel";
  }
  show() {
    this.showState();
    this.dialog.showModal();
    this.predict();
  }
  /** An object already being deleted: what holds it, from the engine. @param {string} uid */
  async askWhatHolds(uid) {
    const opened = this.opened;
    try {
      const ex = await explain(uid);
      if (this.uid !== uid || opened !== this.opened) return;
      this.explanation = ex;
      this.showState();
    } catch {
    }
  }
  /** Says, above the policies, when the object (or some of a set) is already being deleted and what holds it. */
  showState() {
    const form = (
      /** @type {HTMLElement} */
      $("delete-form")
    );
    let el = document.getElementById("delete-state");
    if (!el) {
      el = h("div.delete-state", { id: "delete-state", role: "note" });
      form.insertBefore(el, form.querySelector("fieldset"));
    }
    if (this.set) {
      const deleting = this.set.filter((u) => this.store.nodes.get(u)?.beingDeleted).length;
      el.hidden = !deleting;
      if (deleting) {
        el.replaceChildren(h(
          "p",
          null,
          h("b", null, `${deleting === this.set.length ? "All" : deleting.toLocaleString("en-US")} of them already being deleted: `),
          "deleting them again only sets the collector's own finalizers to match the policy (foregroundDeletion for Foreground, orphan for Orphan, neither for Background); it removes no other controller's finalizer."
        ));
      }
      return;
    }
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    if (!n || !n.beingDeleted) {
      el.hidden = true;
      return;
    }
    const ex = this.explanation;
    const fins = n.finalizers || [];
    const parts = [];
    if (fins.includes("foregroundDeletion")) {
      const total = ex ? ex.blockerSummary?.total ?? (ex.blockers || []).length + (ex.hiddenBlockers || 0) : -1;
      parts.push(total < 0 ? "in the foreground: the collector deletes its blocking dependents before it" : total === 0 ? "in the foreground; no blocking dependent remains, so the collector removes foregroundDeletion next" : `in the foreground, waiting for ${blockerSummaryText(ex)}`);
    }
    if (fins.includes("orphan")) parts.push("orphaning: the collector takes this owner out of its dependents, then removes the orphan finalizer");
    const holds = ex?.holds?.length ? ex.holds : holdingFinalizers(n).map((f) => ({ finalizer: f }));
    for (const hd of holds) parts.push(`held by finalizer ${hd.finalizer}${hd.owner ? ` (${hd.owner})` : ""}`);
    if (!parts.length) parts.push("nothing holds it any more: the apiserver removes it in a moment");
    const since2 = n.deletionTimestamp ? ` (since ${hms(n.deletionTimestamp)})` : "";
    el.replaceChildren(
      h("p", null, h("b", null, `Already being deleted${since2}: `), `${parts.join("; ")}.`),
      h("p.muted", null, holds.length ? `Deleting it again does not remove ${holds.length === 1 ? "that finalizer" : "those finalizers"}: the apiserver only sets the collector's own to match the policy (foregroundDeletion for Foreground, orphan for Orphan, neither for Background). The object panel shows the command that would release a hold by hand.` : "Deleting it again only sets the collector's own finalizers to match the policy: foregroundDeletion for Foreground, orphan for Orphan, neither for Background (a foreground deletion then stops waiting).")
    );
    el.hidden = false;
  }
  close() {
    this.dialog?.close();
  }
  cleanup() {
    this.opened++;
    this.uid = null;
    this.set = null;
    this.sent = false;
    this.prediction = null;
    this.volumes = [];
    this.explanation = null;
    this.seq++;
    document.getElementById("delete-set-refused")?.remove();
    this.hooks.preview(/* @__PURE__ */ new Map());
  }
  async predict() {
    const uid = this.uid, set = this.set;
    if (!uid && !set || this.sent) return;
    const seq = ++this.seq, policy = this.policy;
    this.prediction = null;
    this.updateConfirm();
    $("delete-preview").replaceChildren(h("p.muted", null, `computing what ${policy} would do…`));
    try {
      const res = set ? await deleteSet(set, policy, true) : await deleteObject(
        /** @type {string} */
        uid,
        policy,
        true
      );
      if (seq !== this.seq) return;
      this.prediction = res.prediction;
      this.volumes = res.volumes || [];
      this.showPrediction(res);
    } catch (e) {
      if (seq !== this.seq) return;
      this.showError(e);
      $("delete-preview").replaceChildren();
    }
    this.updateConfirm();
  }
  /**
   * Shows a dry-run answer (the prediction and what it does beyond the objects it deletes)
   * and draws it on the graph. @param {any} res
   */
  showPrediction(res) {
    this.hooks.preview(previewMarks(res.prediction));
    const store = this.store;
    const tree = {
      dependents: (uid) => store.dependents.get(uid) || [],
      owners: (uid) => (store.nodes.get(uid)?.owners || []).map((o) => o.uid),
      node: (uid) => store.nodes.get(uid)
    };
    $("delete-preview").replaceChildren(...predictionNodes(res, { readOnly: !!this.readOnly, set: !!this.set, select: this.hooks.select, tree }));
  }
  updateConfirm() {
    const btn = (
      /** @type {HTMLButtonElement|null} */
      document.getElementById("delete-confirm")
    );
    const typed = document.getElementById("delete-typed");
    if (!btn || !typed) return;
    const deleted = this.prediction?.deleted?.length || 0;
    const dataLoss = !!this.prediction && this.volumes.some((v) => v.verdict === "data-loss");
    const many = deleted > TYPED_CONFIRM_OVER;
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    const ask = this.set ? !!this.prediction : many || dataLoss;
    typed.hidden = !ask || this.sent;
    typed.classList.toggle("data-loss", dataLoss);
    const want = this.set ? this.prediction ? setPhrase(deleted) : "" : n ? dataLoss && n.namespace ? `${n.namespace}/${n.name}` : n.name : "";
    if (this.set || n) $("delete-typed-name").textContent = want;
    const ok = !!this.prediction && !this.sent && (!ask || /** @type {HTMLInputElement} */
    $("delete-confirm-input").value.trim() === want);
    btn.disabled = !ok;
    btn.textContent = !this.prediction ? "Delete" : this.set ? `Delete ${this.set.length.toLocaleString("en-US")} (${this.policy})` : `Delete (${this.policy})`;
  }
  async confirm() {
    if (!this.prediction || this.readOnly || this.sent) return;
    if (this.set) return this.confirmSet(this.set);
    const uid = this.uid;
    if (!uid) return;
    const policy = this.policy;
    const target = this.store.nodes.get(uid);
    const btn = (
      /** @type {HTMLButtonElement} */
      $("delete-confirm")
    );
    btn.disabled = true;
    btn.textContent = "Deleting…";
    $("delete-error").hidden = true;
    try {
      await deleteObject(uid, policy, false);
      this.close();
      this.hooks.done(uid, policy, target);
    } catch (e) {
      this.showError(e);
      this.updateConfirm();
    }
  }
  /**
   * Deletes the set, each target with its UID precondition (the server's), and shows how
   * each went; the dialog stays open on that, its preview off the graph, so the stream's
   * states show behind it. @param {string[]} set
   */
  async confirmSet(set) {
    const policy = this.policy, opened = this.opened;
    const btn = (
      /** @type {HTMLButtonElement} */
      $("delete-confirm")
    );
    btn.disabled = true;
    btn.textContent = "Deleting…";
    $("delete-error").hidden = true;
    let res;
    try {
      res = await deleteSet(set, policy, false);
    } catch (e) {
      if (opened !== this.opened) return;
      this.showError(e);
      this.updateConfirm();
      return;
    }
    const outcomes = res.outcomes?.length ? res.outcomes : targetsOf(res.prediction).map((t) => ({ object: t, result: "deletion started" }));
    this.hooks.setDone?.(outcomes, policy);
    if (opened !== this.opened) return;
    this.sent = true;
    this.hooks.preview(/* @__PURE__ */ new Map());
    $("delete-title").textContent = `Deleted ${set.length.toLocaleString("en-US")} selected object${set.length === 1 ? "" : "s"} (${policy})`;
    $("delete-preview").replaceChildren(...outcomeNodes(outcomes, policy, this.hooks.select));
    document.querySelector("#delete-form fieldset").disabled = true;
    btn.hidden = true;
    $("delete-typed").hidden = true;
    const close = $("delete-cancel");
    close.textContent = "Close";
    close.focus();
  }
  /** @param {any} e */
  showError(e) {
    const el = $("delete-error");
    el.textContent = errorText2(e);
    el.hidden = false;
  }
};

// src/glance.js
var Glance = class {
  /**
   * @param {HTMLElement} el
   * @param {import("./cascades.js").Cascades} cascades the live state's
   * @param {import("./store.js").Store} store the live state
   * @param {GlanceHooks} hooks
   */
  constructor(el, cascades, store, hooks2) {
    this.el = el;
    this.cascades = cascades;
    this.store = store;
    this.hooks = hooks2;
    this.key = "";
  }
  /** Draws it again when what it says changed. */
  render() {
    const now = this.cascades.now();
    const running = [...this.cascades.active.values()].filter((c) => !c.nested).sort((a, b) => a.start - b.start);
    const stuck = this.hooks.stuck();
    const retried = [];
    for (const it of this.store.queues.get("attemptToDelete")?.items.values() || []) {
      if (it.backoffUntil != null) retried.push({ uid: it.object.uid, what: describe(it.object) });
    }
    const key = JSON.stringify([running.map((c) => [c.owner, countText(c), c.waitingOn]), stuck, retried.map((r) => r.uid)]);
    if (key === this.key) return this.refreshTimes(running, now);
    this.key = key;
    const parts = [h("h2", null, "What needs attention")];
    if (running.length) {
      parts.push(
        h("h3", null, `${running.length === 1 ? "A deletion" : `${fmt(running.length)} deletions`} under way`),
        h("ul.glance-list", { id: "glance-running" }, ...running.slice(0, 5).map((c) => h(
          "li",
          null,
          h(
            "button.link",
            { type: "button", "data-owner": c.owner, onclick: () => this.hooks.select(c.owner), title: "Select it in the graph" },
            h("span.tag", null, c.policy === "Namespace" ? "namespace" : c.policy),
            " ",
            h("b", null, `${c.ref.kind} ${c.ref.name}`)
          ),
          h("div.muted", null, `${countText(c)} · `, h("span.glance-caption", { "data-owner": c.owner }, cascadeCaption(c, now)))
        )))
      );
      if (running.length > 5) parts.push(h("p.muted", null, `and ${fmt(running.length - 5)} more, in the strip over the graph`));
    }
    if (stuck.count) {
      parts.push(h("p", null, h(
        "button.link",
        { type: "button", id: "glance-stuck", onclick: () => this.hooks.showStuck() },
        `${fmt(stuck.count)} ${stuck.count === 1 ? "object" : "objects"} deleted more than ${stuck.threshold} ago and still there →`
      )));
    }
    if (retried.length) {
      parts.push(h(
        "p.muted",
        { id: "glance-retried" },
        `The collector retries ${retried.length === 1 ? "" : `${fmt(retried.length)} objects, `}`,
        h("button.link", { type: "button", onclick: () => this.hooks.select(retried[0].uid) }, retried[0].what),
        retried.length > 1 ? " and others" : "",
        " (see the queues below)."
      ));
    }
    if (!running.length && !stuck.count && !retried.length) parts.push(h("p.muted", { id: "glance-calm" }, "Nothing: no deletion is under way or stuck, and the collector retries nothing."));
    patchChildren(this.el, parts);
  }
  /** The captions' times move on without redrawing the rest. @param {import("./cascades.js").Cascade[]} running @param {number} now */
  refreshTimes(running, now) {
    for (const c of running) {
      const el = this.el.querySelector(`.glance-caption[data-owner="${c.owner}"]`);
      const text = cascadeCaption(c, now);
      if (el && el.textContent !== text) el.textContent = text;
    }
  }
};

// src/health.js
var MIN_EVERY_MS = 500;
var MAX_EVERY_MS = 3e3;
var CollectorHealth = class {
  /** @param {HTMLElement} el @param {(uid: string) => void} select */
  constructor(el, select) {
    this.el = el;
    this.select = select;
    this.asked = 0;
    this.busy = false;
    this.poked = true;
    this.open = false;
    this.report = null;
    this.error = "";
  }
  /** A shadow decision changed on the stream: ask again soon. */
  poke() {
    this.poked = true;
  }
  /** Called every frame: asks when poked (at most every MIN_EVERY_MS) or every MAX_EVERY_MS. @param {number} now */
  tick(now) {
    if (this.busy || now - this.asked < (this.poked ? MIN_EVERY_MS : MAX_EVERY_MS)) return;
    this.busy = true;
    this.poked = false;
    this.asked = now;
    get("/api/v1/shadow").then((r) => {
      this.report = r;
      this.error = "";
    }, (e) => {
      this.error = e.message;
    }).finally(() => {
      this.busy = false;
      this.render();
    });
  }
  render() {
    const r = this.report;
    if (!r || !r.enabled) {
      this.el.hidden = !this.error;
      this.el.replaceChildren(this.error ? h("span.muted", null, `Collector check unavailable: ${this.error}`) : "");
      return;
    }
    const c = r.counts;
    const state = c.diverged ? "diverged" : c.overdue ? "overdue" : "ok";
    this.el.hidden = false;
    this.el.dataset.state = state;
    const count = (key, n, title) => h(`span.count.${key}`, { title, "data-count": key }, h("b", null, n.toLocaleString()), ` ${key}`);
    const lag = r.lag.count ? ` · lag p50 ${duration(r.lag.p50)} · p90 ${duration(r.lag.p90)} · max ${duration(r.lag.max)}` : "";
    const problems = [...r.diverged || [], ...(r.open || []).filter((d) => d.outcome === "overdue")];
    const toggle = problems.length ? h(
      "button.compact",
      { type: "button", "aria-expanded": String(this.open), onclick: () => {
        this.open = !this.open;
        this.render();
      } },
      this.open ? "hide" : `show ${problems.length}`
    ) : null;
    const children = [
      h("span.title", { title: "In shadow mode gcscope's engine decides without acting; the cluster's own collector acts. Each decision is compared with what the cluster then does to the object." }, "Cluster's collector vs gcscope:"),
      count("confirmed", c.confirmed, "The cluster's collector did what gcscope decided"),
      count("pending", c.pending, "Decided by gcscope; the cluster's collector has not acted yet"),
      count("overdue", c.overdue, `Pending for more than ${duration(r.overdueAfter)}: the cluster's collector is behind or stuck`),
      count("diverged", c.diverged, "The cluster's collector did something else"),
      h("span.muted", null, lag),
      toggle
    ];
    if (this.open && problems.length) {
      children.push(h("ol.health-list", null, ...problems.slice(0, 50).map((d) => {
        const a = d.action;
        const what = a.verb === "delete" ? `delete (${a.policy})` : a.finalizer ? `${a.verb} ${a.finalizer}` : a.verb;
        return h(
          "li",
          { "data-outcome": d.outcome },
          h("button.link", { type: "button", title: a.reason || "", onclick: () => this.select(a.object.uid) }, describe(a.object)),
          ` ${d.outcome}: gcscope would ${what}`,
          d.outcome === "diverged" ? ` — the cluster ${d.observed}` : ` — waiting ${duration(d.lag)}`
        );
      })));
    }
    patchChildren(
      this.el,
      /** @type {Node[]} */
      children.filter(Boolean)
    );
  }
};

// src/scenarios.js
var POLL_MS = 400;
var SELECT_GRACE_MS = 5e3;
var SELECT_NONE = "\0none";
var active = (r) => r.state === "running" || r.state === "waiting";
var ScenarioPlayer = class {
  /**
   * @param {{select: (uid: string) => void, has: (uid: string) => boolean, toast: (text: string) => void}} hooks
   */
  constructor(hooks2) {
    this.hooks = hooks2;
    this.button = /** @type {HTMLButtonElement|null} */
    document.getElementById("play-button");
    this.menu = /** @type {HTMLElement} */
    document.getElementById("play-menu");
    this.scenarios = [];
    this.runs = [];
    this.run = null;
    this.shown = "";
    this.selected = "";
    this.endedAt = 0;
    this.stepsOpen = false;
    this.timer = void 0;
    this.card = h("div.scenario-card", { id: "scenario-card", role: "status", "aria-live": "polite", hidden: true });
    if (!this.button || !this.menu) return;
    $("graph-pane").append(this.card);
    this.button.addEventListener("click", () => this.menu.hidden ? this.open() : this.close());
    document.addEventListener("click", (ev) => {
      if (!this.menu.hidden && !this.menu.parentElement?.contains(
        /** @type {Node} */
        ev.target
      )) this.close();
    });
    window.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && !this.menu.hidden) {
        ev.stopImmediatePropagation();
        this.close();
      }
    }, true);
    const url = new URLSearchParams(location.search);
    const urlChose = url.has("sel") || url.has("tab");
    this.refresh().then(() => {
      const last = this.runs.filter(active).pop();
      if (last) this.follow(last, !urlChose);
    });
  }
  /** Reads the scenarios and the runs the server remembers, and rebuilds the menu. */
  async refresh() {
    try {
      const res = await get("/api/v1/scenarios");
      this.scenarios = res.scenarios || [];
      this.runs = res.runs || [];
    } catch (e) {
      this.scenarios = [];
      this.hooks.toast(`Scenarios: ${/** @type {any} */
      e.message || e}`);
    }
    this.buildMenu();
  }
  async open() {
    this.buildMenu();
    this.menu.hidden = false;
    this.button?.setAttribute("aria-expanded", "true");
    await this.refresh();
  }
  close() {
    this.menu.hidden = true;
    this.button?.setAttribute("aria-expanded", "false");
  }
  buildMenu() {
    const delay = document.body.dataset.actionDelay || "";
    const header = (
      /** @type {HTMLInputElement|null} */
      document.getElementById("slow-motion")
    );
    const on = header ? header.checked : document.body.dataset.slowMotion === "true";
    const slow2 = delay ? h(
      "label.play-slow",
      { title: "The collector waits before each of its writes, so every state of the cascade can be seen" },
      h("input", { type: "checkbox", id: "play-slow", checked: on, onchange: (ev) => this.switchSlowMotion(
        /** @type {HTMLInputElement} */
        ev.target
      ) }),
      `Slow motion: the collector waits ${delay} before each write`
    ) : h(
      "label.play-slow.muted",
      { title: "Start gcscope with --gc-action-delay=2s to offer slow motion" },
      h("input", { type: "checkbox", id: "play-slow", disabled: true }),
      "Slow motion: start gcscope with --gc-action-delay=2s"
    );
    const items = this.scenarios.map((s) => h("button.play-item", {
      type: "button",
      "data-scenario": s.id,
      title: s.steps.map((t, i) => `${i + 1}. ${t}`).join("\n"),
      onclick: () => this.play(s.id)
    }, h("b", null, "▶ " + s.title), h("span", null, s.description)));
    const runs = this.runs.filter(active).map((r) => h("button.play-run", {
      type: "button",
      "data-run": r.id,
      onclick: () => {
        this.close();
        this.follow(r);
      }
    }, `Show ${r.id} (${r.state})`));
    this.menu.replaceChildren(
      slow2,
      ...items,
      h(
        "div.play-foot",
        null,
        ...runs,
        h(
          "button",
          { type: "button", id: "play-cleanup", title: "Delete every play-* namespace (holds released first) and the CRDs the runs made", onclick: () => this.cleanupAll() },
          "Clean up played namespaces"
        )
      )
    );
  }
  /**
   * Turns slow motion to what the menu's box says, if it says otherwise; returns the server's answer.
   * @param {HTMLInputElement|null} [box] the box clicked (the menu may have been rebuilt since)
   */
  async syncSlowMotion(box = (
    /** @type {HTMLInputElement|null} */
    this.menu.querySelector("#play-slow")
  )) {
    if (!box || box.disabled) return null;
    const header = (
      /** @type {HTMLInputElement|null} */
      document.getElementById("slow-motion")
    );
    const now = header ? header.checked : document.body.dataset.slowMotion === "true";
    if (box.checked === now) return null;
    const res = await post("/api/v1/slow-motion", { enabled: box.checked });
    if (header) header.checked = res.enabled;
    const shown = (
      /** @type {HTMLInputElement|null} */
      this.menu.querySelector("#play-slow")
    );
    box.checked = res.enabled;
    if (shown) shown.checked = res.enabled;
    document.body.dataset.slowMotion = String(res.enabled);
    return res;
  }
  /** The menu's box switches slow motion as soon as it is clicked, as the header's switch does. @param {HTMLInputElement} box */
  async switchSlowMotion(box) {
    try {
      const res = await this.syncSlowMotion(box);
      if (res) this.hooks.toast(res.enabled ? `Slow motion on: the engine waits ${res.actionDelay} before each write.` : "Slow motion off: the engine writes at full speed.");
    } catch (e) {
      box.checked = !box.checked;
      this.hooks.toast(`Slow motion: ${/** @type {any} */
      e.message || e}`);
    }
  }
  /** @param {string} id */
  async play(id) {
    try {
      await this.syncSlowMotion();
      this.close();
      const run = (
        /** @type {Run} */
        await post(`/api/v1/scenarios/${encodeURIComponent(id)}/play`, {})
      );
      this.follow(run);
    } catch (e) {
      this.close();
      this.hooks.toast(`Play: ${/** @type {any} */
      e.message || e}`);
    }
  }
  /**
   * Shows run in the card and follows it until it ends; select: its main object is selected
   * as soon as the graph has it (a run picked up by a page whose URL names a view: not).
   * @param {Run} run @param {boolean} [select]
   */
  follow(run, select = true) {
    clearTimeout(this.timer);
    if (this.run?.id !== run.id) {
      this.selected = select ? "" : run.focus || SELECT_NONE;
      this.endedAt = 0;
    }
    this.run = run;
    this.render();
    this.schedule();
  }
  schedule() {
    clearTimeout(this.timer);
    const r = this.run;
    if (!r) return;
    const pending = active(r) || r.focus && this.selected !== r.focus && Date.now() - this.endedAt < SELECT_GRACE_MS;
    if (pending) this.timer = setTimeout(() => this.poll(), POLL_MS);
  }
  async poll() {
    const r = this.run;
    if (!r) return;
    try {
      const next = (
        /** @type {Run} */
        await get(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}`)
      );
      if (this.run?.id !== r.id) return;
      if (active(r) && !active(next)) this.endedAt = Date.now();
      this.run = next;
      this.render();
    } catch (e) {
      if (
        /** @type {any} */
        e.status === 404
      ) {
        this.hide();
        return;
      }
    }
    this.schedule();
  }
  hide() {
    clearTimeout(this.timer);
    this.run = null;
    this.shown = "";
    this.card.hidden = true;
  }
  /** Redraws the card when the run changed, and selects its main object once drawn. */
  render() {
    const r = this.run;
    if (!r) return;
    if (r.focus && this.selected === SELECT_NONE) this.selected = r.focus;
    if (r.focus && this.selected !== r.focus && this.hooks.has(r.focus)) {
      this.selected = r.focus;
      this.hooks.select(r.focus);
    }
    this.card.dataset.focus = r.focus && this.selected === r.focus ? this.hooks.has(r.focus) ? "decided" : "pending" : "";
    const key = JSON.stringify(r);
    if (key === this.shown) return;
    this.shown = key;
    const n = r.steps.length;
    const cur = r.steps[r.step] || r.steps[0];
    let now;
    if (r.state === "done") now = `Done. ${r.steps[n - 1]?.detail || ""}`;
    else if (r.state === "failed") now = `Failed at step ${r.step + 1}/${n}: ${r.error || cur.detail || ""}`;
    else if (r.state === "stopped") now = `Stopped at step ${r.step + 1}/${n}: ${r.error || ""}`;
    else now = `step ${r.step + 1}/${n}: ${cur.state === "running" ? cur.title : cur.detail || cur.title}`;
    this.card.dataset.state = r.state;
    this.card.dataset.run = r.id;
    const done = r.steps.filter((s) => s.state === "done").length;
    this.card.replaceChildren(
      h(
        "div.sc-head",
        null,
        h("b", null, r.title),
        h("button.sc-close", { type: "button", title: "Close (the run goes on)", "aria-label": "Close", onclick: () => this.hide() }, "×")
      ),
      h("p.sc-now", { id: "scenario-now" }, now),
      h(
        "div.sc-actions",
        null,
        r.hold ? h("button.primary", { type: "button", id: "scenario-release", onclick: () => this.release() }, "Release the hold") : null,
        r.focus ? h("button", { type: "button", title: "Select the scenario's main object", onclick: () => this.show() }, "Show") : null,
        h("button", { type: "button", id: "scenario-cleanup", title: `Delete ${r.namespaces.join(" and ")}`, onclick: () => this.cleanup() }, "Clean up")
      ),
      h(
        "details.sc-steps",
        { open: this.stepsOpen, ontoggle: (ev) => this.stepsOpen = /** @type {HTMLDetailsElement} */
        ev.target.open },
        h("summary", null, `Steps: ${done} of ${n} done · ${r.namespaces.join(", ")}`),
        h("ol", null, ...r.steps.map((s) => h(
          "li",
          { "data-state": s.state },
          h("span", null, s.title),
          s.detail && s.state !== "running" ? h("div.sc-detail", null, s.detail) : null
        )))
      )
    );
    this.card.hidden = false;
  }
  /** Selects the run's main object again, if the graph still has it. */
  show() {
    const f = this.run?.focus;
    if (f && this.hooks.has(f)) this.hooks.select(f);
    else this.hooks.toast("The scenario's main object is no longer in the graph: the collector has deleted it.");
  }
  async release() {
    const r = this.run;
    if (!r) return;
    try {
      const next = await post(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}/release`, {});
      this.hooks.toast(r.scenario?.startsWith("namespace-") ? "Released: the namespace controller finishes deleting the namespace (its next retry can take up to a minute)." : "Hold released: the collector finishes the cascade.");
      if (this.run?.id === r.id) this.follow(next);
    } catch (e) {
      this.hooks.toast(`Release: ${/** @type {any} */
      e.message || e}`);
    }
  }
  async cleanup() {
    const r = this.run;
    if (!r) return;
    try {
      const out = await post(`/api/v1/scenarios/runs/${encodeURIComponent(r.id)}/cleanup`, {});
      this.hide();
      this.hooks.toast(`Deleting ${(out.namespaces || []).join(", ") || "nothing"}.`);
    } catch (e) {
      this.hooks.toast(`Clean up: ${/** @type {any} */
      e.message || e}`);
    }
  }
  async cleanupAll() {
    this.close();
    try {
      const out = await post("/api/v1/scenarios/cleanup", {});
      this.hide();
      const ns = out.namespaces || [], crds = out.crds || [];
      this.hooks.toast(ns.length || crds.length ? `Deleting ${ns.length} played namespace${ns.length === 1 ? "" : "s"}${crds.length ? ` and ${crds.length} CRD${crds.length === 1 ? "" : "s"}` : ""}.` : "Nothing to clean up.");
    } catch (e) {
      this.hooks.toast(`Clean up: ${/** @type {any} */
      e.message || e}`);
    }
  }
};

// src/history.js
function parseTime(s) {
  if (!s) return NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) return Date.parse(s);
  const base = Date.parse(m[1] + m[3]);
  const frac = m[2] ? Number("0." + m[2]) * 1e3 : 0;
  return base + frac;
}
function isoTime(t) {
  const ms = Math.floor(t);
  const micro = Math.round((t - ms) * 1e3);
  const s = new Date(ms).toISOString();
  return micro ? s.slice(0, -1) + String(Math.min(999, micro)).padStart(3, "0") + "Z" : s;
}
function query(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === void 0 || v === null || v === "") continue;
    for (const x of Array.isArray(v) ? v : [v]) p.append(k, String(x));
  }
  return p.toString();
}
var historyPage = (params) => get(`/api/v1/history?${query(params)}`);
var stateAt = (t) => get(`/api/v1/history/state?${query({ at: isoTime(t) })}`);
var stateAtSeq = (session, seq) => get(`/api/v1/history/state?${query({ session, seq })}`);
function cascadeOf(c) {
  return { ...c, start: parseTime(c.start), end: c.end ? parseTime(c.end) : null };
}
async function timeline(from, to, n) {
  const t = await get(`/api/v1/history/timeline?${query({ from: isoTime(from), to: isoTime(to), buckets: n })}`);
  return {
    from: parseTime(t.from),
    to: parseTime(t.to),
    bucket: t.bucket / 1e6,
    buckets: (t.buckets || []).map((b) => ({ ...b, t: parseTime(b.t) })),
    cascades: (t.cascades || []).map(cascadeOf),
    cascadesCapped: !!t.cascadesCapped,
    singleDeletions: t.singleDeletions || 0,
    gaps: (t.gaps || []).map((g) => ({ ...g, start: parseTime(g.start), end: parseTime(g.end) })),
    recording: t.recording
  };
}
var EventReader = class {
  /** @param {number} from epoch ms @param {number|null} to @param {number} [pageSize] */
  constructor(from, to, pageSize = 2e3) {
    this.params = { from: isoTime(from), to: to === null ? void 0 : isoTime(to), order: "oldest", limit: pageSize };
    this.buf = [];
    this.i = 0;
    this.cursor = void 0;
    this.done = false;
    this.loading = null;
    this.gaps = [];
  }
  /** Fetches the next page unless one is on its way or the end was reached. */
  fill() {
    if (this.done || this.loading) return this.loading;
    this.loading = (async () => {
      const page2 = await historyPage({ ...this.params, cursor: this.cursor });
      this.buf = this.buf.slice(this.i).concat(page2.events);
      this.i = 0;
      for (const g of page2.gaps || []) this.gaps.push(g);
      this.cursor = page2.nextCursor;
      if (!this.cursor) this.done = true;
    })().finally(() => this.loading = null);
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
};

// src/tabs.js
var Tabs = class {
  constructor() {
    this.tabs = /* @__PURE__ */ new Map();
    this.listeners = [];
    for (const b of document.querySelectorAll('.tabs [role="tab"]')) {
      const button = (
        /** @type {HTMLElement} */
        b
      );
      const panel = $(button.getAttribute("aria-controls") || "");
      if (!panel) continue;
      const name = button.id.replace(/^tab-/, "");
      this.tabs.set(name, { button, panel });
      button.addEventListener("click", () => this.show(name));
    }
    this.current = [...this.tabs].find(([, t]) => t.button.getAttribute("aria-selected") === "true")?.[0] || "object";
  }
  /** The tab shown: "object", "stuck" or "history". */
  shown() {
    return this.current;
  }
  /** @param {string} name */
  has(name) {
    return this.tabs.has(name);
  }
  /** Shows the tab name (the others' panels hidden) and tells the listeners. @param {string} name */
  show(name) {
    if (!this.tabs.has(name)) return;
    this.current = name;
    for (const [n, t] of this.tabs) {
      t.panel.hidden = n !== name;
      t.button.setAttribute("aria-selected", String(n === name));
    }
    for (const f of this.listeners) f(name);
  }
  /** Shows the tab name, or the object panel when it is already shown (its key pressed again). @param {string} name */
  toggle(name) {
    this.show(this.current === name ? "object" : name);
  }
  /** @param {(name: string) => void} f called with the tab shown, each time one is */
  onShow(f) {
    this.listeners.push(f);
  }
};

// src/stuck.js
var THRESHOLDS = (
  /** @type {const} */
  [["0s", 0], ["1m", 6e4], ["5m", 3e5], ["1h", 36e5]]
);
var DEFAULT_THRESHOLD = "5m";
var POLL_MS2 = 3e3;
var CAUSES = (
  /** @type {Record<string, string>} */
  {
    finalizer: "finalizer",
    foreground: "foreground",
    orphan: "orphaning",
    namespace: "namespace",
    discovery: "discovery",
    termination: "termination",
    unknown: "unknown"
  }
);
var StuckView = class {
  /**
   * @param {HTMLElement} el the view's panel
   * @param {HTMLElement|null} badge the tab's count
   * @param {{select: (uid: string) => void, known: (uid: string) => boolean}} hooks
   */
  constructor(el, badge, hooks2) {
    this.el = el;
    this.badge = badge;
    this.hooks = hooks2;
    this.threshold = DEFAULT_THRESHOLD;
    this.counted = 0;
    this.shown = false;
    this.report = null;
    this.error = "";
    this.seq = 0;
    this.timer = void 0;
    this.buttons = THRESHOLDS.map(([d]) => h("button", {
      type: "button",
      "data-threshold": d,
      "aria-pressed": String(d === this.threshold),
      onclick: () => this.setThreshold(d)
    }, d));
    this.summary = h("p.muted", { id: "stuck-summary" }, "");
    this.body = h("div", { id: "stuck-groups" });
    el.replaceChildren(
      h("h2", null, "Stuck deletions"),
      h("div.stuck-bar", null, h("span.muted", null, "deleted more than"), h("span.stuck-thresholds", { role: "group", "aria-label": "Threshold" }, ...this.buttons), h("span.muted", null, "ago")),
      this.summary,
      this.body
    );
  }
  /** The threshold in ms. */
  get thresholdMs() {
    return (
      /** @type {number} */
      THRESHOLDS.find(([d]) => d === this.threshold)?.[1] ?? 3e5
    );
  }
  /** @param {string} d one of THRESHOLDS */
  setThreshold(d) {
    this.threshold = d;
    for (const b of this.buttons) b.setAttribute("aria-pressed", String(b.dataset.threshold === d));
    this.report = null;
    this.render();
    if (this.shown) this.load();
  }
  /** The tab shows or hides: it asks at once and then every POLL_MS while shown. @param {boolean} on */
  setShown(on) {
    if (on === this.shown) return;
    this.shown = on;
    clearTimeout(this.timer);
    this.timer = void 0;
    if (on) this.load();
  }
  async load() {
    clearTimeout(this.timer);
    const seq = ++this.seq, threshold = this.threshold;
    try {
      const r = await get(`/api/v1/stuck?olderThan=${encodeURIComponent(threshold)}`);
      if (seq !== this.seq) return;
      this.report = r;
      this.error = "";
    } catch (e) {
      if (seq !== this.seq) return;
      this.error = /** @type {any} */
      e.message || String(e);
    }
    this.render();
    if (this.shown) this.timer = setTimeout(() => this.load(), POLL_MS2);
  }
  /**
   * The tab's badge: the objects of the store being deleted for longer than the threshold.
   * @param {import("./store.js").Store} store @param {number} now epoch ms
   */
  count(store, now) {
    if (!this.badge) return;
    const ms = this.thresholdMs;
    let n = 0;
    for (const uid of store.deleting.keys()) {
      const t = Date.parse(store.nodes.get(uid)?.deletionTimestamp || "");
      if (Number.isFinite(t) && now - t >= ms) n++;
    }
    this.counted = n;
    const text = n ? fmt(n) : "";
    if (this.badge.textContent !== text) this.badge.textContent = text;
    this.badge.hidden = !n;
    this.badge.title = `${counted2(n)} being deleted for more than ${this.threshold}`;
  }
  render() {
    const r = this.report;
    if (this.error) {
      this.summary.textContent = `The stuck list could not be read: ${this.error}`;
      if (!r) this.body.replaceChildren();
      return;
    }
    if (!r) {
      this.summary.textContent = this.shown ? "asking the engine…" : "";
      this.body.replaceChildren();
      return;
    }
    const groups = (
      /** @type {any[]} */
      r.groups || []
    );
    this.summary.textContent = r.total ? `${counted2(r.total)} deleted more than ${r.olderThan} ago and still there, in ${groups.length === 1 ? "1 group" : `${groups.length} groups`}${r.hidden ? ` (and ${fmt(r.hidden)} you may not see)` : ""}. As of ${since(r.at)}.` : `Nothing deleted more than ${r.olderThan} ago is still there${r.hidden ? ` that you may see (${fmt(r.hidden)} you may not)` : ""}. As of ${since(r.at)}.`;
    const failures2 = r.discoveryFailures && Object.keys(r.discoveryFailures).length ? h("div.stuck-discovery", null, h("b", null, "API discovery fails: "), "no namespace can finish deleting while it does.", failureList(r.discoveryFailures)) : null;
    patchChildren(this.body, [...failures2 ? [failures2] : [], ...groups.map((g) => this.group(g))]);
  }
  /** @param {any} g a group of the report */
  group(g) {
    const link = (o) => this.link(o);
    return h(
      "section.stuck-group",
      { "data-cause": g.cause, "data-finalizer": g.finalizer || "" },
      h(
        "div.sg-head",
        null,
        h(`span.cause.${g.cause}`, null, CAUSES[g.cause] || g.cause),
        h("b.sg-count", null, fmt(g.count)),
        h("span.sg-says", null, headWords(g))
      ),
      g.origin ? originView(g.origin, link) : null,
      h("ul.stuck-objects", null, ...(g.objects || []).map((o) => h(
        "li",
        { "data-uid": o.object.uid },
        link(o.object),
        h("span.for", { title: `deleted at ${o.since}` }, ` for ${age(o.forSeconds)}`),
        o.detail ? h("span.muted", null, ` · ${o.detail}`) : null,
        o.finalizers?.length ? h("span", null, " ", ...o.finalizers.map((f) => h("code.hold", null, f))) : null
      ))),
      g.more ? h("p.muted", null, `and ${fmt(g.more)} more`) : null
    );
  }
  /** A link that selects the object. @param {any} o an ObjectRef */
  link(o) {
    return h("a", {
      href: `?sel=${encodeURIComponent(o.uid)}`,
      class: this.hooks.known(o.uid) ? "obj" : "obj missing",
      "data-uid": o.uid,
      onclick: (ev) => {
        ev.preventDefault();
        this.hooks.select(o.uid);
      }
    }, describe(o));
  }
};
function headWords(g) {
  let says = String(g.says || "");
  const o = g.origin;
  if (!o) return says;
  const alive = o.controller?.says || "";
  if (alive && says.endsWith(`: ${alive}`)) says = says.slice(0, -alive.length - 2);
  if (o.manager) says = says.replace(` (added by ${o.manager})`, "");
  return says;
}
function counted2(n) {
  return `${fmt(n)} object${n === 1 ? "" : "s"}`;
}

// src/banner.js
var TICK_MS = 1e3;
var DiscoveryBanner = class {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.el = el;
    this.failures = {};
    this.key = "";
    this.apiServices = [];
    this.healthError = "";
    this.asked = 0;
    this.drawn = 0;
  }
  /**
   * The stream's sync state changed: shows the failures (and asks for the APIServices
   * behind them when they are new), or hides the banner when there are none.
   * @param {Record<string, import("./deletion.js").GroupFailure>|undefined} failures
   */
  update(failures2) {
    const f = failures2 || {};
    const key = Object.keys(f).sort().map((gv) => `${gv}@${f[gv].since}`).join(",");
    if (key === this.key) return;
    this.key = key;
    this.failures = f;
    if (!key) {
      this.apiServices = [];
      this.el.hidden = true;
      this.el.replaceChildren();
      return;
    }
    this.render();
    this.askHealth(key);
  }
  /** @param {string} key the failures asked about */
  async askHealth(key) {
    const n = ++this.asked;
    try {
      const r = await get("/api/v1/health");
      if (n !== this.asked || key !== this.key) return;
      this.apiServices = r?.apiServices || [];
      this.healthError = "";
    } catch (e) {
      if (n !== this.asked) return;
      this.healthError = /** @type {any} */
      e.message || String(e);
    }
    this.render();
  }
  /** Writes the relative times again ("30s ago", then "31s ago"), each second. @param {number} now */
  tick(now) {
    if (this.el.hidden || now - this.drawn < TICK_MS) return;
    this.drawn = now;
    retick(this.el);
  }
  render() {
    this.drawn = performance.now();
    const gvs = Object.keys(this.failures);
    if (!gvs.length) return;
    const failing = this.apiServices.filter((a) => gvs.includes(a.groupVersion));
    const others = this.apiServices.filter((a) => !gvs.includes(a.groupVersion));
    this.el.hidden = false;
    this.el.replaceChildren(h(
      "div.banner-body",
      null,
      h(
        "p",
        null,
        h("b", null, `API discovery fails for ${gvs.length === 1 ? "1 group version" : `${gvs.length} group versions`}`),
        ": their resources are not watched (the collector cannot see what they own), and the namespace controller cannot finish deleting any namespace while one fails."
      ),
      failureList(this.failures),
      ...[...failing, ...others].map(apiServiceView),
      this.healthError ? h("p.muted", null, `The APIServices could not be read: ${this.healthError}`) : null
    ));
  }
};

// src/shortcuts.js
function shortcutTable(p) {
  const travel = () => p.travelUI()?.travel;
  return [
    { label: "/", keys: ["/"], help: "search", run(ev) {
      ev.preventDefault();
      p.search.focus();
    } },
    { label: "Enter", keys: ["Enter"], where: "search", help: "go to the first result", run: () => p.search.chooseFirst() },
    { label: "Esc", keys: ["Escape"], where: "search", help: "in the search box: empty it and leave", run: () => p.search.clear() },
    { label: "f", keys: ["f"], help: "focus on the selected object's owners and dependents", run() {
      const s = p.selected();
      if (s) p.focus(s);
    } },
    {
      label: "Delete, d",
      keys: ["Delete", "d"],
      help: "delete the selected object (or the objects selected together)…",
      // In time travel or a replay (read-only): a preview at most, and not from a key.
      run() {
        if (travel()?.active || p.replay || p.delSelected()) return;
        const s = p.selected();
        if (s) p.del(s);
      }
    },
    { label: "Esc", keys: ["Escape"], help: "close, clear the objects selected together, clear focus, clear filters, clear selection", run: () => p.escape() },
    { label: "0", keys: ["0"], help: "fit the view", run: () => p.fit() },
    { label: "+ / −", keys: ["+", "=", "-"], help: "zoom", run: (ev) => p.zoom(ev.key === "-" ? 1 / 1.4 : 1.4) },
    { label: "e", keys: ["e"], help: "expand or collapse the selected object's dependents", run() {
      const s = p.selected();
      if (s) p.toggleExpanded(s);
    } },
    { label: "t", keys: ["t"], help: "light or dark", run: () => p.toggleTheme() },
    { label: "c", keys: ["c"], clusters: true, help: "switch cluster", run: () => p.pickCluster() },
    { label: "s", keys: ["s"], help: "the stuck view: deletions that take too long, and why", run: () => p.toggleStuck() },
    { label: "h", keys: ["h"], history: true, help: "the history view: what the collector did", run: () => p.travelUI()?.toggleHistoryTab() },
    {
      label: "Space",
      keys: [" "],
      history: true,
      help: "time travel: play or pause",
      run(ev) {
        if (
          /** @type {HTMLElement} */
          ev.target.matches("button, a")
        ) return false;
        ev.preventDefault();
        p.travelUI()?.togglePlay();
      }
    },
    {
      label: "← / →",
      keys: ["ArrowLeft", "ArrowRight"],
      history: true,
      help: "time travel: step back or forward one change",
      run(ev) {
        const tr = travel();
        if (!tr?.active) return false;
        ev.preventDefault();
        if (ev.key === "ArrowRight") tr.step();
        else tr.stepBack();
      }
    },
    { label: "[ / ]", keys: ["[", "]"], history: true, help: "time travel: slower or faster", run: (ev) => p.travelUI()?.speedStep(ev.key === "]" ? 1 : -1) },
    {
      label: "Esc",
      keys: ["Escape"],
      history: true,
      help: "time travel: back to live",
      run() {
        if (!travel()?.active || p.replay) return false;
        p.travelUI()?.backToLive();
      }
    },
    { label: "?", keys: ["?"], help: "this help", run: () => p.help() }
  ];
}
var Shortcuts = class {
  /** @param {Shortcut[]} table @param {boolean} hasHistory @param {boolean} [hasClusters] */
  constructor(table, hasHistory, hasClusters = false) {
    this.rows = table.filter((s) => (hasHistory || !s.history) && (hasClusters || !s.clusters));
  }
  /**
   * Runs the first row that takes ev's key where it was pressed; whether one did.
   * @param {KeyboardEvent} ev @param {"page"|"search"} where
   */
  handle(ev, where) {
    for (const s of this.rows) {
      if ((s.where || "page") === where && s.keys.includes(ev.key) && s.run(ev) !== false) return true;
    }
    return false;
  }
  /** The page's key handler: shortcuts work unless the user types in a field, is in a dialog, or holds a modifier. */
  listen() {
    document.addEventListener("keydown", (ev) => {
      const t = (
        /** @type {HTMLElement} */
        ev.target
      );
      if (t.matches("input, select, textarea") || document.querySelector("dialog[open]") || ev.metaKey || ev.ctrlKey || ev.altKey) return;
      this.handle(ev, "page");
    });
  }
  /** Fills the help's list of keys. @param {HTMLElement} dl */
  renderHelp(dl) {
    dl.replaceChildren(...this.rows.flatMap((s) => [h("dt", null, s.label), h("dd", null, s.help)]));
  }
  /** The rows as the help lists them, for tests: [[label, help]]. */
  listed() {
    return this.rows.map((s) => [s.label, s.help]);
  }
};

// src/view.js
var PageView = class {
  /** @param {Page} page @param {ViewParts} parts */
  constructor(page2, parts) {
    this.page = page2;
    this.parts = parts;
    $("focus-clear").addEventListener("click", () => this.setFocus(null));
  }
  writeURL() {
    const { page: page2 } = this;
    const { view: view2 } = page2;
    const p = new URLSearchParams();
    if (document.body.dataset.cluster) p.set("cluster", document.body.dataset.cluster);
    for (const n of view2.ns) p.append("ns", n);
    for (const k of view2.kind) p.append("kind", k);
    if (view2.q) p.set("q", view2.q);
    if (view2.focus) p.set("focus", view2.focus);
    if (view2.sel) p.set("sel", view2.sel);
    const travel = page2.travelUI?.travel;
    if (travel?.active && !travel.playing && Number.isFinite(travel.at)) p.set("at", isoTime(travel.at));
    const t = document.documentElement.dataset.theme;
    if (t && new URLSearchParams(location.search).get("theme")) p.set("theme", t);
    const url = location.pathname + (p.size ? "?" + p : "");
    if (url !== location.pathname + location.search) history.replaceState(null, "", url);
  }
  /** The user changed the view: lay out again, write the URL. */
  changed() {
    this.page.store.dirtyNamespaces.add("*");
    this.page.layoutDue = true;
    this.writeURL();
    this.parts.syncFilters();
    this.updateFocusChip();
  }
  /**
   * Selects an object (null: none), centring on it when asked. The object panel comes to the
   * front, unless the history view asked (keepTab: the user goes on down its list).
   * @param {string|null} uid @param {boolean} [center] @param {boolean} [keepTab]
   */
  select(uid, center = false, keepTab = false) {
    const { page: page2, parts } = this;
    const { view: view2, renderer: renderer2 } = page2;
    page2.centerDue = null;
    if (uid && !keepTab && parts.tabs.shown() !== "object") parts.tabs.show("object");
    view2.sel = uid;
    renderer2.selected = uid;
    renderer2.dirty = true;
    parts.objectPanel.show(uid);
    if (uid && center && !revealAndCenter(page2, parts.relayout, uid)) {
      const n = page2.store.nodes.get(uid);
      if (n && keep(page2, n)) {
        page2.centerDue = uid;
      } else if (n) {
        view2.ns = [];
        view2.kind = [];
        if (view2.focus && page2.focusSet && !page2.focusSet.has(uid)) view2.focus = null;
        this.changed();
        parts.relayout(performance.now());
        renderer2.centerOn(uid);
      } else if (page2.detail.mode === "summary") {
        page2.centerDue = uid;
      }
    }
    this.writeURL();
  }
  /** @param {string|null} uid */
  setFocus(uid) {
    const { page: page2 } = this;
    page2.view.focus = uid;
    if (uid && !page2.view.sel) this.select(uid);
    this.changed();
    this.parts.relayout(performance.now());
    page2.renderer.fit(page2.layout.bounds);
  }
  updateFocusChip() {
    const { view: view2 } = this.page;
    const chip = $("focus-chip");
    chip.hidden = !view2.focus;
    if (view2.focus) {
      const n = this.page.store.nodes.get(view2.focus);
      $("focus-name").textContent = n ? describe(n) : view2.focus;
    }
  }
  /** Reads the view from the URL. */
  readURL() {
    const { page: page2, parts } = this;
    const { view: view2 } = page2;
    const p = new URLSearchParams(location.search);
    view2.ns = p.getAll("ns");
    view2.kind = p.getAll("kind");
    view2.q = p.get("q") || "";
    view2.focus = p.get("focus");
    view2.sel = p.get("sel");
    page2.atURL = p.get("at") || "";
    const theme2 = p.get("theme");
    if (theme2 === "dark" || theme2 === "light") parts.setTheme(theme2, false);
    const tab = p.get("tab");
    if (tab && parts.tabs.has(tab)) parts.tabs.show(tab);
  }
};
function keep(page2, n) {
  const { view: view2, focusSet } = page2;
  if (view2.ns.length && !view2.ns.includes(n.namespace || "")) return false;
  if (view2.kind.length && !view2.kind.some((k) => k.toLowerCase() === n.kind.toLowerCase())) return false;
  if (focusSet && !focusSet.has(n.uid)) return false;
  return true;
}
function revealAndCenter(page2, relayout2, uid, k) {
  const { layout: layout2, renderer: renderer2 } = page2;
  const b = layout2.items.get(uid)?.block;
  if (b?.loner && renderer2.collapsed(b)) {
    renderer2.expanded.add(b.parent);
    page2.store.dirtyNamespaces.add(b.group.ns);
    relayout2(performance.now());
  }
  return renderer2.centerOn(uid, k);
}
function toggleLoners(page2, relayout2, b) {
  const { layout: layout2, renderer: renderer2 } = page2;
  const open = !renderer2.expanded.has(b.parent);
  if (open) renderer2.expanded.add(b.parent);
  else renderer2.expanded.delete(b.parent);
  page2.store.dirtyNamespaces.add(b.group.ns);
  const at = { x: b.group.x + b.x, y: b.group.y + b.y };
  relayout2(performance.now());
  const nb = layout2.groups.get(b.group.ns)?.blocks.find((x) => x.parent === b.parent);
  if (!nb) return;
  if (open) renderer2.fit({ x: nb.group.x + nb.x, y: nb.group.y + nb.y, w: nb.w, h: nb.h }, true, 1);
  else renderer2.pan((at.x - nb.group.x - nb.x) * renderer2.cam.k, (at.y - nb.group.y - nb.y) * renderer2.cam.k);
}

// src/frame.js
function newFrames(page2, p) {
  const { live: live2, liveCascades: liveCascades2, layout: layout2, renderer: renderer2, view: view2, perf } = page2;
  let lastLiveCascades = 0;
  let lastLayout = 0, layoutCost = 0, lastQueues = -Infinity, lastFilters = 0, lastCascades = 0, lastStrip = 0, lastStuckCount = -Infinity, lastGlance = -Infinity;
  let fittedOnce = false;
  let lastShown = "";
  function relayout2(now, dirty = page2.store.dirtyNamespaces) {
    const store = page2.store;
    const anchorUID = renderer2.centerItem();
    const before = anchorUID ? layout2.box(anchorUID) : null;
    const anchorNS = anchorUID ? null : renderer2.centerGroup();
    const nsBefore = anchorNS !== null ? layout2.groups.get(anchorNS) : null;
    const nsAt = nsBefore ? { x: nsBefore.x, y: nsBefore.y } : null;
    if (view2.focus) {
      const focusSet = store.closure([view2.focus]);
      for (const [u, g] of store.ghosts) if (g.node.owners?.some((o) => focusSet.has(o.uid)) || focusSet.has(u)) focusSet.add(u);
      page2.focusSet = focusSet;
      dirty = store.dirtyNamespaces;
      dirty.add("*");
    } else page2.focusSet = null;
    const t0 = performance.now();
    const counted3 = store === live2 && page2.detail.mode === "summary" ? page2.detail : null;
    layout2.update(store, (n) => keep(page2, n), dirty, renderer2.expanded, (ns) => {
      const c = page2.cascades.ofNamespace(ns);
      return c ? namespaceStatus(c, true) : "";
    }, counted3, (ns) => !view2.ns.length || view2.ns.includes(ns));
    layoutCost = performance.now() - t0;
    perf.layoutMs = layoutCost;
    if (dirty === store.dirtyNamespaces) dirty.clear();
    else for (const ns of dirty) store.dirtyNamespaces.delete(ns);
    lastLayout = now;
    page2.layoutDue = store.dirtyNamespaces.size > 0;
    if (!fittedOnce && (layout2.items.size || counted3 && layout2.groups.size)) {
      fittedOnce = true;
      if (!(view2.sel && revealAndCenter(page2, relayout2, view2.sel, 1))) {
        renderer2.open(layout2.workloadBounds());
        if (view2.sel && counted3) page2.centerDue = view2.sel;
      }
    } else if (page2.centerDue && layout2.items.has(page2.centerDue)) {
      revealAndCenter(page2, relayout2, page2.centerDue);
      page2.centerDue = null;
    } else if (anchorUID) renderer2.anchor(anchorUID, before);
    else if (anchorNS !== null && nsAt) {
      const g = layout2.groups.get(anchorNS);
      if (g && (g.x !== nsAt.x || g.y !== nsAt.y)) renderer2.pan((nsAt.x - g.x) * renderer2.cam.k, (nsAt.y - g.y) * renderer2.cam.k);
    }
    renderer2.dirty = true;
    updateEmpty(page2);
  }
  function settledDirty(now) {
    const store = page2.store;
    const dirty = store.dirtyNamespaces;
    const settled = (ns) => now - (store.removedAt.get(ns) ?? -Infinity) > GHOST_MS && !page2.cascades.progressing(ns, now, GHOST_MS);
    const watched = [...layout2.groups.keys()].filter((ns) => !settled(ns));
    if (dirty.has("*")) {
      if (!watched.length) return dirty;
      dirty.delete("*");
      for (const ns of layout2.groups.keys()) dirty.add(ns);
      for (const ns of store.byNamespace.keys()) dirty.add(ns);
      for (const g of store.ghosts.values()) dirty.add(g.node.namespace || "");
      if (store === live2 && page2.detail.mode === "summary") for (const ns of page2.detail.counts.keys()) dirty.add(ns);
    }
    const out = /* @__PURE__ */ new Set();
    for (const ns of dirty) if (settled(ns) && !watched.some((w) => layout2.compare(ns, w) < 0)) out.add(ns);
    return out;
  }
  function tick(now) {
    const { store, cascades } = page2;
    if (store !== live2) {
      live2.expire(now);
      if (live2.touched.size || liveCascades2.active.size && now - lastLiveCascades > 100) {
        lastLiveCascades = now;
        liveCascades2.observe(live2.touched, now);
        live2.touched.clear();
      }
      live2.dirtyNamespaces.clear();
    }
    if (store.expire(now)) page2.layoutDue = true;
    if (store.dirtyNamespaces.size) page2.layoutDue = true;
    if (store.touched.size || cascades.active.size && now - lastCascades > 100) {
      lastCascades = now;
      cascades.observe(store.touched, now);
      if (cascades.active.size) renderer2.dirty = true;
    }
    if (page2.layoutDue && now - lastLayout >= Math.max(60, 4 * layoutCost)) {
      const ready = settledDirty(now);
      if (ready.size) relayout2(now, ready);
    }
    if ((cascades.changed || cascades.active.size) && now - lastStrip > (cascades.changed ? 100 : 250)) {
      cascades.changed = false;
      lastStrip = now;
      p.cascadeStrip.render();
      if (view2.sel && cascades.of(view2.sel)) p.objectPanel.render();
    }
    if (store.touched.size) {
      renderer2.dirty = true;
      for (const uid of store.touched) renderer2.invalidate(uid);
      if (view2.sel && p.objectPanel.concerns(store.touched)) p.objectPanel.changed();
      store.touched.clear();
    }
    if (p.health) {
      if (live2.shadowChanged) p.health.poke();
      live2.shadowChanged = false;
      p.health.tick(now);
    }
    if (live2.syncChanged) {
      live2.syncChanged = false;
      p.discoveryBanner.update(live2.sync.discoveryFailures);
    }
    p.discoveryBanner.tick(now);
    if (now - lastStuckCount > 1e3) {
      lastStuckCount = now;
      p.stuckView.count(live2, Date.now());
    }
    if (!view2.sel && now - lastGlance > 500) {
      lastGlance = now;
      p.glance.render();
    }
    p.queuesPanel.setSelected(!!view2.sel);
    if (store.queuesChanged && now - lastQueues > 250) {
      store.queuesChanged = false;
      lastQueues = now;
      p.queuesPanel.render();
    }
    if (now - lastFilters > 2e3) {
      lastFilters = now;
      p.filters.fill();
    }
    const shown = `${renderer2.cam.x}/${renderer2.cam.y}/${renderer2.cam.k}/${view2.sel}/${view2.focus}/${view2.ns}/${view2.kind}/${layout2.bounds.w}/${layout2.bounds.h}`;
    if (shown !== lastShown) {
      lastShown = shown;
      page2.detail.viewMoved();
    }
    p.selection?.tick(now);
    const drew = renderer2.frame(now);
    if (drew) p.drew(now);
    perf.drawn = layout2.items.size;
    perf.applied = store.applied;
    if (drew && page2.firstSnapshotPending && !page2.layoutDue) {
      page2.firstSnapshotPending = false;
      perf.firstFrameMs = performance.now();
      p.firstDrawn();
    }
    requestAnimationFrame(tick);
  }
  return { relayout: relayout2, start: () => requestAnimationFrame(tick) };
}

// src/clusters.js
var POLL_MS3 = 2e3;
var ClusterPicker = class {
  constructor() {
    this.select = /** @type {HTMLSelectElement|null} */
    document.getElementById("cluster-picker");
    this.cluster = document.body.dataset.cluster || "";
    this.banner = document.getElementById("cluster-banner");
    if (this.banner) document.body.classList.add("cluster-waiting");
    this.clusters = [];
    this.select?.addEventListener("change", () => this.go(
      /** @type {HTMLSelectElement} */
      this.select.value
    ));
  }
  /** Whether the page has a picker (several clusters). */
  get present() {
    return this.select !== null;
  }
  /** Whether the page's cluster has no engine yet: the page waits, and opens no stream. */
  get waiting() {
    return this.banner !== null;
  }
  /** Goes to name's page. @param {string} name */
  go(name) {
    if (name === this.cluster) return;
    const p = new URLSearchParams({ cluster: name });
    const theme2 = new URLSearchParams(location.search).get("theme");
    if (theme2) p.set("theme", theme2);
    location.assign(`/?${p}`);
  }
  /** Opens the picker (the c key). */
  open() {
    const s = this.select;
    if (!s) return;
    s.focus();
    try {
      s.showPicker();
    } catch {
    }
  }
  /** Follows the clusters' states: the picker's words, and the waiting page's banner. */
  follow() {
    if (!this.present) return;
    const poll = async () => {
      try {
        const r = (
          /** @type {{clusters: ClusterStatus[]}} */
          await get("/api/v1/clusters")
        );
        this.update(r.clusters);
      } catch {
      }
      setTimeout(poll, POLL_MS3);
    };
    poll();
  }
  /** @param {ClusterStatus[]} clusters */
  update(clusters2) {
    this.clusters = clusters2;
    for (const c of clusters2) {
      const o = [...this.select?.options || []].find((o2) => o2.value === c.name);
      if (!o) continue;
      o.textContent = label(c);
      o.dataset.state = c.state;
      o.title = [c.server, c.reason].filter(Boolean).join(" — ");
    }
    const mine = clusters2.find((c) => c.name === this.cluster);
    if (this.banner && mine && mine.state !== document.body.dataset.clusterState) location.reload();
    else if (!this.banner && mine) this.showRefused(mine.state === "refused" ? mine : null);
  }
  /**
   * Says above the graph that the page's cluster does not accept the user's credential, or
   * takes it back (c null) once it does.
   * @param {ClusterStatus|null} c
   */
  showRefused(c) {
    let el = document.getElementById("cluster-refused");
    if (!c) {
      if (el) el.hidden = true;
      return;
    }
    if (!el) {
      el = document.createElement("div");
      el.id = "cluster-refused";
      el.className = "banner cluster-banner";
      el.dataset.state = "refused";
      el.setAttribute("role", "alert");
      const next = document.getElementById("discovery-banner");
      if (next) next.before(el);
      else document.body.prepend(el);
    }
    const name = document.createElement("b");
    name.textContent = c.name;
    el.replaceChildren("The cluster ", name, ` does not accept your credential: ${refusalWhy(c.reason)}. You are still signed in here: the other clusters of the picker are yours to open, and this page tries again.`);
    el.hidden = false;
  }
};
function refusalWhy(reason) {
  const why = (reason || "").replace(/^(?:cluster "(?:[^"\\]|\\.)*" )?(?:does not accept|no longer accepts) your credential:\s*/, "");
  return why || "no reason given";
}
function label(c) {
  switch (c.state) {
    case "ready":
      return c.reason ? `${c.name} (unhealthy)` : c.name;
    case "idle":
      return `${c.name} (not started)`;
    default:
      return `${c.name} (${c.state})`;
  }
}

// src/stream.js
var OFFLINE_AFTER_MS = 1e3;
var REFUSED_RETRY_MS = 15e3;
var SIGNED_OUT = 4401;
var REFUSED = 4403;
var TRY_AGAIN_LATER = 1013;
var Stream = class {
  /** @param {Handlers} h */
  constructor(h2) {
    this.h = h2;
    this.ws = null;
    this.attempt = 0;
    this.closed = false;
    this.hadSnapshot = false;
    this.timer = void 0;
    this.offlineTimer = void 0;
    this.liveAt = 0;
    this.lostAt = 0;
    this.retryText = "";
    this.down = { kind: "lost", why: "" };
    this.refusals = 0;
    this.handled = Promise.resolve();
    this.inflating = 0;
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
    let broken = false;
    this.ws = ws;
    this.h.onState(this.attempt ? "reconnecting" : "connecting", "opening the stream…");
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
      if (typeof data === "string" && !this.inflating) return this.frame(data);
      this.inflating++;
      this.handled = this.handled.then(async () => {
        if (broken) return;
        let text;
        try {
          text = typeof data === "string" ? data : await inflate(data);
        } catch (err) {
          console.error("gcscope: a stream frame could not be inflated:", err);
          broken = true;
          if (this.ws === ws) ws.close(4e3, "a frame could not be inflated");
          return;
        }
        this.frame(text);
      }).catch(reportError).finally(() => this.inflating--);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
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
        }, () => {
        });
      }
      if (ev.code === REFUSED) this.down = { kind: "refused", why: refusalWhy(ev.reason) };
      else if (ev.code === TRY_AGAIN_LATER && ev.reason) this.down = { kind: "away", why: ev.reason };
      else if (!(ev.code === 1006 && this.down.kind === "refused")) this.down = { kind: "lost", why: "" };
      const refused = this.down.kind === "refused";
      const base = refused ? REFUSED_RETRY_MS * 2 ** Math.min(this.refusals++, 2) : Math.min(15e3, 500 * 2 ** this.attempt);
      const delay = base * (0.75 + Math.random() / 2);
      this.attempt++;
      const why = ev.reason ? `: ${ev.reason}` : ev.code === 1006 ? ": connection lost" : ` (${ev.code})`;
      if (refused) this.h.onState("offline", `cluster ${this.clusterName()} refuses your credential: ${this.down.why}; retrying in ${Math.round(delay / 1e3)} s`);
      else this.h.onState(this.attempt > 6 ? "offline" : "reconnecting", `disconnected${why}; retrying in ${Math.round(delay / 1e3)} s`);
      this.retryText = `retrying at ${clock(Date.now() + delay).slice(0, 8)}`;
      this.offline();
      this.timer = setTimeout(() => this.handled.then(() => {
        if (!this.closed && !this.ws) this.open();
      }), delay);
    };
  }
  /** Handles one frame's text. @param {string} text */
  frame(text) {
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
      this.offlineTimer = void 0;
      document.body.classList.add("offline");
    }
    if (document.body.classList.contains("offline")) return this.note();
    if (this.offlineTimer !== void 0) return;
    this.offlineTimer = setTimeout(() => {
      this.offlineTimer = void 0;
      document.body.classList.add("offline");
      this.note();
    }, OFFLINE_AFTER_MS);
  }
  online() {
    clearTimeout(this.offlineTimer);
    this.offlineTimer = void 0;
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
      el.textContent = `The cluster ${this.clusterName()} refuses your credential now: ${why}. You are still signed in to gcscope. The graph is dimmed: it shows the cluster${as} and no longer follows it. Trying again (${this.retryText}; click the dot at the top right to retry now)…`;
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
    this.offlineTimer = void 0;
    this.ws?.close(1e3, "signed out");
    this.h.onState("offline", "signed out");
    document.body.classList.add("offline");
    this.note();
    const el = (
      /** @type {HTMLElement} */
      document.getElementById("offline-note")
    );
    const link = document.createElement("a");
    link.href = "/login";
    link.textContent = "Sign in again";
    el.replaceChildren(`Signed out: ${why || "your sign-in is no longer accepted (signed out, gcscope restarted, or the token was revoked or expired)"}. The graph is dimmed and no longer follows the cluster. `, link);
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
    this.ws?.close(1e3, "bye");
  }
};
async function inflate(buf) {
  return new Response(new Blob([buf]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).text();
}

// src/conn.js
function connect(s, on) {
  const handlers2 = frameHandlers(s, on.applied);
  return new Stream({
    // It resumes from the live seq, whatever the page shows.
    seq: () => s.live.seq,
    query: () => s.detail.query(),
    onState: on.onState,
    onFrame(f) {
      const handle = (
        /** @type {((f: Frame) => void)|undefined} */
        handlers2[f.type]
      );
      if (handle) handle(f);
    }
  });
}
function frameHandlers(s, applied) {
  const { live: live2, liveCascades: liveCascades2, detail: detail2 } = s;
  return {
    summary(f) {
      for (const ns of detail2.onSummary(f)) live2.markNamespace(ns);
      applied(f);
    },
    snapshot(f) {
      const asked = detail2.mode === "summary" && f.reason === "subscribe";
      live2.applySnapshot(f, !asked);
      for (const ns of detail2.onSnapshot()) live2.markNamespace(ns);
      if (f.reason === "permissions") liveCascades2.reset();
      if (asked) liveCascades2.forgetUnheld();
      liveCascades2.observe([...live2.nodes.keys()], performance.now());
      applied(f);
    },
    deltas(f) {
      live2.applyEvents(f.events);
      applied(f);
    },
    // The answer to the stream's ping: that the connection is alive is all it says.
    pong() {
    }
  };
}

// src/conndot.js
var ConnDot = class {
  /**
   * @param {{replay: boolean, backToLive: () => void, retry: () => void}} parts
   *   replay: a recording, whose TravelUI owns the dot; backToLive: leave time travel; retry: open the stream now
   */
  constructor(parts) {
    this.parts = parts;
    this.el = $("conn");
    this.state = "connecting";
    this.detail = "";
    this.el.addEventListener("click", () => this.livePast() ? parts.backToLive() : parts.retry());
  }
  /** Time travel over a live stream: what is drawn is past, the live state goes on underneath. */
  livePast() {
    return document.body.classList.contains("travel") && this.state === "live";
  }
  /** The stream's state changed. @param {string} state @param {string} words */
  set(state, words) {
    this.state = state;
    this.detail = words;
    this.show();
  }
  /** Says the stream's state, and in time travel that what is drawn is past. */
  show() {
    if (this.parts.replay) return;
    const { el, state } = this;
    const past = this.livePast();
    el.dataset.state = state;
    el.textContent = past ? "○ live underneath" : state === "live" ? "● live" : state === "connecting" ? "connecting…" : state === "offline" ? "offline — click to retry" : "reconnecting…";
    el.title = past ? "Time travel: the page shows a recorded moment while the live stream goes on underneath. Click (or Esc) to go back to live." : this.detail;
  }
};

// src/search.js
var SERVER_RESULTS = 200;
function searchScore(n, q) {
  const name = n.name.toLowerCase();
  if (name === q || n.uid === q) return 0;
  if (name.startsWith(q)) return 1;
  if (name.includes(q)) return 2;
  if (n.kind.toLowerCase() === q) return 3;
  return (n.kind + "\0" + (n.namespace || "") + "\0" + n.uid).toLowerCase().includes(q) ? 4 : -1;
}
var Search = class {
  /** @param {Page} page @param {SearchParts} parts */
  constructor(page2, parts) {
    this.page = page2;
    this.parts = parts;
    this.input = /** @type {HTMLInputElement} */
    $("search");
    this.results = $("search-results");
    this.resultUIDs = [];
    this.timer = void 0;
    this.asked = "";
    const input = this.input;
    input.addEventListener("input", () => this.run());
    input.addEventListener("focus", () => {
      if (input.value) this.run();
    });
    input.addEventListener("blur", () => setTimeout(() => this.results.hidden = true, 100));
  }
  run() {
    const { page: page2, input, results } = this;
    const { renderer: renderer2, store, view: view2 } = page2;
    const q = input.value.trim().toLowerCase();
    view2.q = input.value.trim();
    renderer2.matches = /* @__PURE__ */ new Set();
    this.resultUIDs = [];
    clearTimeout(this.timer);
    if (q && store === page2.live && page2.detail.mode === "summary") {
      results.replaceChildren(h("li.muted", null, "searching the cluster…"));
      results.hidden = document.activeElement !== input;
      this.timer = setTimeout(() => this.runOnServer(q), 200);
      this.parts.writeURL();
      return;
    }
    if (q) {
      const found = [];
      for (const n of store.nodes.values()) {
        const score = searchScore(n, q);
        if (score < 0) continue;
        renderer2.matches.add(n.uid);
        found.push({ uid: n.uid, score, key: sortKey(n) });
      }
      found.sort((a, b) => a.score - b.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      this.resultUIDs = found.slice(0, 50).map((f) => f.uid);
    }
    renderer2.dirty = true;
    results.replaceChildren(...this.resultUIDs.map((u, i) => {
      const n = (
        /** @type {any} */
        store.nodes.get(u)
      );
      return h(
        "li",
        { role: "option", "data-uid": u, class: i === 0 ? "active" : "", onmousedown: (ev) => {
          ev.preventDefault();
          this.choose(u);
        } },
        h("b", null, n.name),
        h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""}`)
      );
    }), renderer2.matches.size > 50 ? h("li.muted", null, `${renderer2.matches.size - 50} more highlighted in the graph`) : "");
    if (q && !this.resultUIDs.length) results.replaceChildren(h("li.muted", null, "no object matches"));
    if (q) this.appendSelectAll();
    if (q && page2.hasHistory) results.append(h(
      "li.recorded",
      {
        role: "option",
        id: "search-recording",
        onmousedown: (ev) => {
          ev.preventDefault();
          this.searchRecording(input.value.trim());
        }
      },
      h("b", null, "Search the recording"),
      h("span.muted", null, ` for “${input.value.trim()}”: deleted objects too`)
    ));
    results.hidden = !q || document.activeElement !== input;
    this.parts.writeURL();
  }
  /**
   * Summary first: the server's search of the whole graph (GET /api/v1/graph?q=, what the
   * user may see), its results listed and, where the page holds them, highlighted.
   * @param {string} q lower case
   */
  async runOnServer(q) {
    const { page: page2, input, results } = this;
    const asked = this.asked = q;
    let found;
    try {
      found = await get(`/api/v1/graph?q=${encodeURIComponent(q)}&limit=${SERVER_RESULTS}`);
    } catch (e) {
      if (this.asked === asked) results.replaceChildren(h("li.muted", null, `the search failed: ${/** @type {any} */
      e.message || e}`));
      return;
    }
    if (this.asked !== asked || input.value.trim().toLowerCase() !== q) return;
    const nodes = found.nodes || [];
    nodes.sort((a, b) => searchScore(a, q) - searchScore(b, q) || (sortKey(a) < sortKey(b) ? -1 : 1));
    this.resultUIDs = nodes.slice(0, 50).map((n) => n.uid);
    page2.renderer.matches = new Set(nodes.map((n) => n.uid));
    page2.renderer.dirty = true;
    results.replaceChildren(
      ...nodes.slice(0, 50).map((n, i) => h(
        "li",
        {
          role: "option",
          "data-uid": n.uid,
          class: i === 0 ? "active" : "",
          onmousedown: (ev) => {
            ev.preventDefault();
            this.choose(n.uid);
          }
        },
        h("b", null, n.name),
        h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""}`)
      )),
      found.nextCursor ? h("li.muted", null, `more than ${SERVER_RESULTS}: type more of the name`) : ""
    );
    if (!nodes.length) results.replaceChildren(h("li.muted", null, "no object in the cluster matches"));
    this.appendSelectAll();
    results.hidden = document.activeElement !== input;
  }
  /**
   * The recorded removals of objects whose name contains name, in any case, as the live
   * search matches (the newest first): a click travels to just before the removal, the
   * object selected, to see it or replay its last cascade.
   * @param {string} name
   */
  async searchRecording(name) {
    const { page: page2, results, input } = this;
    results.replaceChildren(h("li.muted", null, "searching the recording…"));
    try {
      const found = await historyPage({ nameContains: name, type: "nodeRemoved", order: "newest", limit: 20 });
      const seen = /* @__PURE__ */ new Set();
      const events = found.events.filter((e) => !seen.has(e.node?.uid) && seen.add(e.node?.uid));
      results.replaceChildren(...events.map((e) => {
        const n = e.node, t = parseTime(e.time);
        return h("li", { role: "option", "data-uid": n.uid, "data-removed": e.time, onmousedown: (ev) => {
          ev.preventDefault();
          results.hidden = true;
          input.blur();
          page2.travelUI?.travel.seek(t - 1e-3).then(() => this.parts.select(n.uid, true));
        } }, h("b", null, n.name), h("span.muted", null, ` ${n.kind}${n.namespace ? " · " + n.namespace : ""} · removed ${clock(t)}`));
      }));
      if (!events.length) results.replaceChildren(h("li.muted", null, `the recording holds no removal of an object whose name contains “${name}”`));
    } catch (e) {
      results.replaceChildren(h("li.muted", null, `the recording could not be searched: ${/** @type {any} */
      e.message || e}`));
    }
    results.hidden = false;
  }
  /** The row that selects every match drawn, for a set delete (the bar over the graph has the same button). */
  appendSelectAll() {
    const n = this.parts.selectAll?.count() || 0;
    if (!n) return;
    this.results.append(h("li.select-all", { role: "option", id: "search-select-all", onmousedown: (ev) => {
      ev.preventDefault();
      this.results.hidden = true;
      this.input.blur();
      this.parts.selectAll?.run();
    } }, h("b", null, `Select all ${n.toLocaleString("en-US")} matching`), h("span.muted", null, " drawn, to delete them together")));
  }
  /** @param {string} uid */
  choose(uid) {
    this.results.hidden = true;
    this.input.blur();
    this.parts.select(uid, true);
  }
  /** The / key: to the search box. */
  focus() {
    this.input.focus();
    this.input.select();
  }
  /** Enter: the first result, if there is one. */
  chooseFirst() {
    if (!this.resultUIDs.length) return false;
    this.choose(this.resultUIDs[0]);
    return true;
  }
  /** Esc in the search box: empty it and leave. */
  clear() {
    this.input.value = "";
    this.run();
    this.input.blur();
  }
};

// src/filters.js
var Filters = class {
  /**
   * @param {Page} page
   * @param {(which: "ns"|"kind") => void} chose the user chose an option: view.ns or view.kind changed
   */
  constructor(page2, chose) {
    this.page = page2;
    this.nsSelect = /** @type {HTMLSelectElement} */
    $("filter-ns");
    this.kindSelect = /** @type {HTMLSelectElement} */
    $("filter-kind");
    this.key = "";
    const { view: view2 } = page2;
    const onChange = (select, which) => select.addEventListener("change", () => {
      view2[which] = select.value === "*" ? [] : [select.value];
      chose(which);
    });
    onChange(this.nsSelect, "ns");
    onChange(this.kindSelect, "kind");
  }
  /** The controls say the view's filters. */
  sync() {
    const { view: view2 } = this.page;
    this.nsSelect.value = view2.ns.length === 1 ? view2.ns[0] : "*";
    this.kindSelect.value = view2.kind.length === 1 ? view2.kind[0] : "*";
  }
  /** The options: the namespaces and kinds of the state shown, and those the view filters on. */
  fill() {
    const { page: page2 } = this;
    const { view: view2 } = page2;
    const nss = new Set(view2.ns), kinds = new Set(view2.kind);
    for (const n of page2.store.nodes.values()) {
      nss.add(n.namespace || "");
      kinds.add(n.kind);
    }
    if (page2.store === page2.live && page2.detail.mode === "summary") {
      for (const ns of page2.detail.counts.keys()) nss.add(ns);
      for (const k of page2.detail.kinds) kinds.add(k);
    }
    const nsList = [...nss].sort(), kindList = [...kinds].sort();
    const key = nsList.join(",") + "|" + kindList.join(",");
    if (key === this.key) return;
    this.key = key;
    this.nsSelect.replaceChildren(h("option", { value: "*" }, "all"), ...nsList.map((ns) => h("option", { value: ns }, ns || "(cluster-scoped)")));
    this.kindSelect.replaceChildren(h("option", { value: "*" }, "all"), ...kindList.map((k) => h("option", { value: k }, k)));
    this.sync();
  }
  /** The options rebuilt, whatever they were (another store is shown). */
  refresh() {
    this.key = "";
    this.fill();
  }
};

// src/pointer.js
function wirePointer(page2, parts) {
  const { selection: selection2, view: view2 } = parts;
  const rd = page2.renderer;
  const tooltip = $("tooltip");
  let drag = null;
  page2.canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    page2.canvas.setPointerCapture(ev.pointerId);
  });
  page2.canvas.addEventListener("pointermove", (ev) => {
    const r = page2.canvas.getBoundingClientRect();
    if (drag) {
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (drag.moved || Math.abs(dx) + Math.abs(dy) > 3) {
        drag.moved = true;
        rd.pan(dx, dy);
        drag.x = ev.clientX;
        drag.y = ev.clientY;
        tooltip.hidden = true;
        return;
      }
    }
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    const uid = hit?.item?.uid || null;
    if (uid !== rd.hover) {
      rd.hover = uid;
      rd.dirty = true;
    }
    const nsDel = !hit?.item && !hit?.block && hit?.group?.ns ? page2.cascades.ofNamespace(hit.group.ns) : null;
    if (nsDel) {
      tooltip.textContent = `Namespace ${nsDel.ref.name}: ${nsDel.end === null ? "Terminating" : "deleted"}
${progressText(nsDel, page2.cascades.now())}` + (nsDel.baseline ? "" : "\n(the page found it under way: what went before is not known)") + "\nclick: its Namespace, and why it is still there";
      tooltip.style.left = `${ev.clientX - r.left + 14}px`;
      tooltip.style.top = `${ev.clientY - r.top + 14}px`;
      tooltip.hidden = false;
    } else if (hit?.item || hit?.block) {
      const b = hit.block;
      const text = hit.item ? tooltipText(hit.item) + (selection2.has(hit.item.uid) ? "\nselected with others (shift-click: take it out)" : "\nshift-click: select it with others") : b?.loner ? hit.caption ? "click to fold them back into one box" : `${b.uids.length} ${b.loner}s with no owner and no dependent: the collector has nothing to do with them — click to list them` : `${b?.uids.length} dependents of ${describe(
        /** @type {any} */
        page2.store.nodes.get(b?.parent || "") || { kind: "", name: "?" }
      )} — click to open`;
      tooltip.textContent = text;
      tooltip.style.left = `${ev.clientX - r.left + 14}px`;
      tooltip.style.top = `${ev.clientY - r.top + 14}px`;
      tooltip.hidden = false;
    } else tooltip.hidden = true;
    page2.canvas.style.cursor = hit?.item || hit?.block || nsDel ? "pointer" : "grab";
  });
  page2.canvas.addEventListener("pointerleave", () => {
    tooltip.hidden = true;
    rd.hover = null;
    rd.dirty = true;
  });
  page2.canvas.addEventListener("pointerup", (ev) => {
    const press = drag;
    drag = null;
    if (!press || press.moved) return;
    const r = page2.canvas.getBoundingClientRect();
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    if (ev.shiftKey || ev.ctrlKey || ev.metaKey) {
      if (hit?.item) selection2.toggle(hit.item.uid);
      else if (hit?.block) selection2.toggleAll(hit.block.uids);
      return;
    }
    if (hit?.block?.loner) toggleLoners(page2, parts.relayout, hit.block);
    else if (hit?.block) {
      rd.expanded.add(hit.block.parent);
      const b = hit.block;
      rd.fit({ x: b.group.x + b.x, y: b.group.y + b.y, w: b.w, h: b.h });
    } else if (hit?.item) view2.select(hit.item.uid);
    else if (hit?.group?.summary) rd.fit(hit.group);
    else if (hit?.group?.ns && page2.cascades.ofNamespace(hit.group.ns)?.end === null) {
      view2.select(
        /** @type {any} */
        page2.cascades.ofNamespace(hit.group.ns).owner
      );
    } else view2.select(null);
  });
  page2.canvas.addEventListener("dblclick", (ev) => {
    if (ev.shiftKey || ev.ctrlKey || ev.metaKey) return;
    const r = page2.canvas.getBoundingClientRect();
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    if (hit?.item) view2.setFocus(hit.item.uid);
  });
  page2.canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = page2.canvas.getBoundingClientRect();
    if (ev.ctrlKey || Math.abs(ev.deltaY) >= Math.abs(ev.deltaX)) rd.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * (ev.ctrlKey ? 0.01 : 15e-4)));
    else rd.pan(-ev.deltaX, -ev.deltaY);
  }, { passive: false });
  function tooltipText(it) {
    const n = it.node, live2 = page2.store.nodes.get(it.uid);
    const st = live2 ? stateOf(page2.store, live2) : "removed";
    const label2 = STATES.find((s) => s.id === st)?.label || st;
    return `${n.kind} ${n.name}${n.namespace ? "\nnamespace " + n.namespace : ""}
${label2}${n.finalizers?.length ? "\nfinalizers: " + n.finalizers.join(", ") : ""}`;
  }
  new ResizeObserver(() => rd.resize()).observe(page2.canvas);
  $("zoom-in").addEventListener("click", () => rd.zoomAt(rd.w / 2, rd.h / 2, 1.4));
  $("zoom-out").addEventListener("click", () => rd.zoomAt(rd.w / 2, rd.h / 2, 1 / 1.4));
  $("zoom-fit").addEventListener("click", () => rd.fit(page2.layout.bounds));
}

// src/selection.js
var TICK_MS2 = 250;
var Selection = class {
  /**
   * @param {Page} page
   * @param {{openSet: (uids: string[]) => void}} hooks
   */
  constructor(page2, hooks2) {
    this.page = page2;
    this.hooks = hooks2;
    this.uids = /* @__PURE__ */ new Set();
    page2.renderer.multi = this.uids;
    this.counted = { key: "", matching: (
      /** @type {string[]|null} */
      null
    ) };
    this.lastTick = -Infinity;
    this.count = h("b", { id: "selection-count", "aria-live": "polite" });
    this.note = h("span.sel-note", { id: "selection-note" });
    this.matchButton = /** @type {HTMLButtonElement} */
    h("button", { type: "button", id: "select-matching", onclick: () => this.selectMatching() }, "Select all matching");
    this.deleteButton = /** @type {HTMLButtonElement} */
    h(
      "button.danger",
      { type: "button", id: "delete-selected", onclick: () => this.openDialog() },
      page2.readOnly ? "Preview delete…" : "Delete selected…"
    );
    this.clearButton = /** @type {HTMLButtonElement} */
    h("button", { type: "button", id: "selection-clear", title: "Clear the selection (Esc)", onclick: () => this.clear() }, "Clear");
    this.bar = h(
      "div.selection-bar",
      { id: "selection-bar", role: "region", "aria-label": "Objects selected together", hidden: true },
      this.count,
      this.note,
      this.matchButton,
      this.deleteButton,
      this.clearButton
    );
    $("graph-pane").append(this.bar);
  }
  get size() {
    return this.uids.size;
  }
  /** @param {string} uid */
  has(uid) {
    return this.uids.has(uid);
  }
  /**
   * Shift-, ctrl- or cmd-click on an object: in or out of the selection. The first such
   * click takes the object selected by a plain click along (as file managers do).
   * @param {string} uid
   */
  toggle(uid) {
    const n = this.page.store.nodes.get(uid);
    if (this.uids.has(uid)) this.uids.delete(uid);
    else if (!n || n.virtual) {
      this.page.toast(n ? `${n.kind} ${n.name} is only named as an owner: there is nothing to delete.` : "That object is gone.");
      return;
    } else {
      const sel = this.page.view.sel;
      if (!this.uids.size && sel && sel !== uid && this.page.store.nodes.get(sel) && !this.page.store.nodes.get(sel)?.virtual) this.uids.add(sel);
      if (this.uids.size >= MAX_SET) {
        this.page.toast(`At most ${MAX_SET.toLocaleString("en-US")} objects can be deleted at once: the selection is full.`);
        return;
      }
      this.uids.add(uid);
    }
    this.changed();
  }
  /**
   * Adds the members of a set of siblings drawn as one count (shift-click on it), or takes
   * them all out when every one is in already. @param {string[]} uids
   */
  toggleAll(uids) {
    const live2 = uids.filter((u) => this.page.store.nodes.has(u) && !this.page.store.nodes.get(u)?.virtual);
    if (live2.length && live2.every((u) => this.uids.has(u))) for (const u of live2) this.uids.delete(u);
    else this.add(live2);
    this.changed();
  }
  /** Adds uids, up to MAX_SET in all; says so when some did not fit. @param {string[]} uids */
  add(uids) {
    let left = 0;
    for (const u of uids) {
      if (this.uids.has(u)) continue;
      if (this.uids.size >= MAX_SET) left++;
      else this.uids.add(u);
    }
    if (left) {
      this.page.toast(`Selected ${MAX_SET.toLocaleString("en-US")}, not all ${(MAX_SET + left).toLocaleString("en-US")}: one delete takes at most ${MAX_SET.toLocaleString("en-US")} objects. Delete these, then select the rest.`);
    }
  }
  clear() {
    if (!this.uids.size) return false;
    this.uids.clear();
    this.changed();
    return true;
  }
  /** Takes out objects that are gone (deleted, or never there). */
  prune() {
    let any = false;
    for (const u of this.uids) {
      if (!this.page.live.nodes.has(u)) {
        this.uids.delete(u);
        any = true;
      }
    }
    if (any) this.changed();
  }
  changed() {
    this.page.renderer.dirty = true;
    this.counted.key = "";
    this.render();
  }
  /**
   * The objects drawn that the search and the filters keep, in the layout's order (null
   * when neither the search nor a filter nor the focus narrows the graph): only objects
   * the graph holds, not those only named as owners.
   * @returns {string[]|null}
   */
  matching() {
    const { view: view2, layout: layout2, renderer: renderer2, store } = this.page;
    const q = view2.q.trim();
    if (!q && !view2.ns.length && !view2.kind.length && !view2.focus) return null;
    const out = [];
    for (const it of layout2.items.values()) {
      const n = store.nodes.get(it.uid);
      if (!n || n.virtual) continue;
      if (q && !renderer2.matches.has(it.uid)) continue;
      out.push(it.uid);
    }
    return out;
  }
  /** What narrows the graph, in words ("search “api” · namespace demo-web"). */
  narrowedBy() {
    const { view: view2 } = this.page;
    const parts = [];
    if (view2.q.trim()) parts.push(`search “${view2.q.trim()}”`);
    if (view2.ns.length) parts.push(`namespace ${view2.ns.map((n) => n || "(cluster-scoped)").join(", ")}`);
    if (view2.kind.length) parts.push(`kind ${view2.kind.join(", ")}`);
    if (view2.focus) parts.push("the focus");
    return parts.join(" · ");
  }
  /** The bar's button and the search list's last row: every object matching, up to MAX_SET. */
  selectMatching() {
    const m = this.matching();
    if (!m?.length) return;
    const before = this.uids.size;
    this.add(m);
    this.changed();
    const added = this.uids.size - before;
    if (added && this.uids.size < MAX_SET) this.page.toast(`Selected ${added.toLocaleString("en-US")} object${added === 1 ? "" : "s"} drawn that match (${this.narrowedBy()}).`);
  }
  /** The number of objects "Select all matching" would take now (0: nothing to match). */
  matchCount() {
    this.refreshCount();
    return this.counted.matching?.length || 0;
  }
  openDialog() {
    if (!this.uids.size || this.deleteButton.disabled) return;
    this.hooks.openSet([...this.uids]);
  }
  /** Counts again what matches, when what it depends on changed. */
  refreshCount() {
    const { view: view2, layout: layout2, renderer: renderer2, store } = this.page;
    const travel = this.page.travelUI?.travel.active ? "travel" : "live";
    const key = `${travel}/${store.applied}/${layout2.items.size}/${layout2.version}/${renderer2.matches.size}/${view2.q}/${view2.ns}/${view2.kind}/${view2.focus}/${this.uids.size}`;
    if (key === this.counted.key) return false;
    this.counted.key = key;
    this.counted.matching = this.matching();
    return true;
  }
  /** From the frame loop: prunes what is gone and counts again, a few times a second. @param {number} now */
  tick(now) {
    if (now - this.lastTick < TICK_MS2) return;
    this.lastTick = now;
    if (this.page.store === this.page.live && this.uids.size) this.prune();
    if (this.refreshCount()) this.render();
  }
  render() {
    const { page: page2 } = this;
    this.refreshCount();
    const m = this.counted.matching;
    const unselected = m ? m.filter((u) => !this.uids.has(u)).length : 0;
    const n = this.uids.size;
    this.bar.hidden = !n && !unselected;
    document.getElementById("graph-pane")?.classList.toggle("has-selection", !this.bar.hidden);
    this.count.hidden = !n;
    this.count.textContent = `${n.toLocaleString("en-US")} selected`;
    this.note.hidden = n > 0 || !m;
    this.note.textContent = m ? `${this.narrowedBy()}:` : "";
    this.matchButton.hidden = !unselected;
    const total = m?.length || 0;
    this.matchButton.textContent = total > MAX_SET && !n ? `Select the first ${MAX_SET.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} matching` : `Select all ${total.toLocaleString("en-US")} matching`;
    this.matchButton.title = `Every object drawn that the ${this.narrowedBy()} keeps${total > MAX_SET ? ` (a delete takes at most ${MAX_SET.toLocaleString("en-US")})` : ""}`;
    this.deleteButton.hidden = !n;
    this.clearButton.hidden = !n;
    const travelling = !!page2.travelUI?.travel.active;
    this.deleteButton.disabled = travelling || page2.replay;
    this.deleteButton.title = page2.replay ? "A recording: nothing to delete" : travelling ? "Time travel: go back to live to delete" : page2.readOnly ? "What deleting them all would do (gcscope runs read-only)" : "Delete them all with one confirmation (Delete, d)";
  }
};

// src/legend.js
function renderLegend(renderer2) {
  const sw = (color, cls = "swatch") => h(`span.${cls}`, { style: `--c: var(${color})` });
  const rows = [
    h("div.lh", null, "Objects"),
    ...STATES.map((s) => h("div.li", { title: s.help }, sw(s.color, s.id === "virtual" ? "swatch.dashed" : "swatch"), s.label)),
    ...MARKERS.map((m) => h("div.li", { title: m.help }, sw(m.color, m.id === "invalid" ? "marker.tri" : m.id === "orphaned" ? "marker.orph" : "marker"), m.label)),
    h("div.li", { title: "a collapsed set of siblings: zoom in or click it" }, h("span.swatch.block"), "N siblings (zoom in or click)"),
    h("div.lh", null, "Owner references"),
    ...EDGES.map((e) => h("div.li", { title: "help" in e ? e.help : void 0 }, h(`span.edge${e.dash ? ".dash" : ""}${e.strong ? ".strong" : ""}${e.id === "cycle" ? ".cycle" : ""}`), e.label))
  ];
  if (renderer2.preview.size) {
    rows.push(
      h("div.lh", null, "Delete preview"),
      ...Object.entries(PREVIEW).filter(([k]) => k !== "target").map(([, p]) => h("div.li", null, sw(p.color), p.label))
    );
  }
  $("legend-body").replaceChildren(...rows);
}

// src/theme.js
function wireTheme(parts) {
  const { readColors } = parts;
  function setTheme(t, remember) {
    document.documentElement.dataset.theme = t;
    if (remember) localStorage.setItem("gcscope-theme", t);
    readColors();
  }
  function toggleTheme() {
    const cur = document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    setTheme(cur === "dark" ? "light" : "dark", true);
    parts.writeURL();
  }
  $("theme-toggle").addEventListener("click", toggleTheme);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", readColors);
  const saved = localStorage.getItem("gcscope-theme");
  if (saved === "dark" || saved === "light") setTheme(saved, false);
  return { setTheme, toggleTheme };
}

// src/export.js
function download(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1e4);
}
var esc = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
function viewSVG(r) {
  const { cam, layout: layout2, store, colors: C } = r;
  const vx0 = -cam.x / cam.k, vy0 = -cam.y / cam.k, vw = r.w / cam.k, vh = r.h / cam.k;
  const inView = (x, y, w, h2) => !(x > vx0 + vw || y > vy0 + vh || x + w < vx0 || y + h2 < vy0);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="${vx0} ${vy0} ${vw} ${vh}" width="${r.w}" height="${r.h}" font-family="system-ui, sans-serif">`,
    `<rect x="${vx0}" y="${vy0}" width="${vw}" height="${vh}" fill="${C["--bg"]}"/>`
  ];
  const edges = [], nodes = [];
  for (const g of layout2.groups.values()) {
    if (!inView(g.x, g.y, g.w, g.h)) continue;
    out.push(
      `<g><rect x="${g.x}" y="${g.y}" width="${g.w}" height="${g.h}" fill="${C["--group-bg"]}" stroke="${C["--group-border"]}"/>`,
      `<text x="${g.x + 12}" y="${g.y + 26}" font-size="18" font-weight="600" fill="${C["--fg"]}">${esc(g.title)}</text></g>`
    );
    for (const b of g.blocks) {
      if (!r.collapsed(b) || !inView(g.x + b.x, g.y + b.y, b.w, b.h)) continue;
      nodes.push(`<g><rect x="${g.x + b.x}" y="${g.y + b.y}" width="${b.w}" height="${b.h}" rx="10" fill="${C["--node-bg"]}" stroke="${C["--node-border"]}"/><text x="${g.x + b.x + b.w / 2}" y="${g.y + b.y + 30}" text-anchor="middle" font-size="20" fill="${C["--fg"]}">${b.uids.length} objects</text></g>`);
      const ob = layout2.box(b.parent);
      if (ob) edges.push(path(ob.x + NODE_W / 2, ob.y + NODE_H, g.x + b.x + b.w / 2, g.y + b.y, C["--edge-block"], 1.8, false));
    }
    for (const it of g.items) {
      if (it.block && r.collapsed(it.block)) continue;
      const x = g.x + it.x, y = g.y + it.y;
      if (!inView(x, y, NODE_W, NODE_H)) continue;
      const cur = store.current(it.uid), ghost = !cur || cur.ghost;
      const n = cur ? cur.node : it.node, st = ghost ? "removed" : stateOf(store, n);
      const stroke = C[STATES.find((s) => s.id === st)?.color || "--node-border"];
      nodes.push(`<g><title>${esc(`${n.kind} ${n.namespace ? n.namespace + "/" : ""}${n.name} (${st})`)}</title><rect x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="6" fill="${ghost ? C["--st-removed-fill"] : C["--node-bg"]}" stroke="${stroke}" stroke-width="${st === "normal" ? 1 : 2.5}"${st === "virtual" ? ' stroke-dasharray="5 3"' : ""}/><text x="${x + 11}" y="${y + 15}" font-size="11" fill="${C["--muted"]}">${esc(n.kind + (st === "normal" ? "" : " · " + st))}</text><text x="${x + 11}" y="${y + 32}" font-size="13" font-weight="600" fill="${C["--fg"]}">${esc(n.name.length > 24 ? n.name.slice(0, 23) + "…" : n.name)}</text></g>`);
      for (const o of n.owners || []) {
        const ob = layout2.box(o.uid);
        if (ob) edges.push(path(ob.x + NODE_W / 2, ob.y + NODE_H, x + NODE_W / 2, y, o.blockOwnerDeletion ? C["--edge-block"] : C["--edge"], o.blockOwnerDeletion ? 1.8 : 1, !o.controller));
      }
    }
  }
  out.push(...edges, ...nodes, "</svg>");
  return out.join("\n");
}
function path(x0, y0, x1, y1, color, w, dash) {
  const my = (y0 + y1) / 2;
  return `<path d="M${x0} ${y0}C${x0} ${my} ${x1} ${my} ${x1} ${y1}" fill="none" stroke="${color}" stroke-width="${w}"${dash ? ' stroke-dasharray="6 4"' : ""}/>`;
}
function viewPNG(canvas2) {
  return new Promise((resolve, reject) => canvas2.toBlob((b) => b ? resolve(b) : reject(new Error("the canvas could not be encoded")), "image/png"));
}
var WHOLE_MAX_PIXELS = 4e7;
var LEGIBLE_K = 0.55;
async function wholePNG(r) {
  const b = r.layout.bounds;
  const k = Math.min(1, Math.sqrt(WHOLE_MAX_PIXELS / Math.max(1, (b.w + 48) * (b.h + 48))));
  const canvas2 = r.drawWhole(k);
  return { blob: await viewPNG(canvas2), k, legible: k >= LEGIBLE_K, width: canvas2.width, height: canvas2.height };
}
function graphDOT(nodes) {
  const q = (s) => JSON.stringify(s);
  const lines = ["strict digraph full {"];
  const sorted = [...nodes].sort((a, b) => a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
  const known = new Set(sorted.map((n) => n.uid));
  for (const n of sorted) {
    const [group, version] = n.apiVersion.includes("/") ? n.apiVersion.split("/") : ["", n.apiVersion];
    const label2 = `uid=${n.uid}
namespace=${n.namespace || ""}
${n.kind}.${version}/${n.name}`;
    lines.push(`  ${q(n.uid)} [label=${q(label2)} group=${q(group)} version=${q(version)} kind=${q(n.kind)} namespace=${q(n.namespace || "")} name=${q(n.name)} uid=${q(n.uid)} missing="false" beingDeleted=${q(String(!!n.beingDeleted))} deletingDependents=${q(String(!!n.deletingDependents))} virtual=${q(String(!!n.virtual))}];`);
  }
  for (const n of sorted) for (const o of n.owners || []) if (known.has(o.uid)) lines.push(`  ${q(n.uid)} -> ${q(o.uid)};`);
  lines.push("}");
  return lines.join("\n") + "\n";
}

// src/exportmenu.js
function wireExportMenu(page2) {
  const menu = $("export-menu");
  $("export-button").addEventListener("click", () => menu.hidden = !menu.hidden);
  menu.addEventListener("click", async (ev) => {
    const what = (
      /** @type {HTMLElement} */
      ev.target.dataset.export
    );
    menu.hidden = true;
    const { store, view: view2, renderer: renderer2, layout: layout2 } = page2;
    const stamp = (/* @__PURE__ */ new Date()).toISOString().replace(/[:.]/g, "-").slice(0, 19);
    const nodes = [...layout2.items.values()].flatMap((it) => store.nodes.get(it.uid) || []);
    if (what === "svg") download(new Blob([viewSVG(renderer2)], { type: "image/svg+xml" }), `gcscope-${stamp}.svg`);
    else if (what === "png") download(await viewPNG(page2.canvas), `gcscope-${stamp}.png`);
    else if (what === "whole-png") {
      try {
        const png = await wholePNG(renderer2);
        download(png.blob, `gcscope-${stamp}-whole.png`);
        if (!png.legible) {
          page2.toast(`The whole graph is too large for a legible PNG: saved at ${Math.round(png.k * 100)}% (${png.width} × ${png.height} px), where boxes have no labels. Narrow it with the namespace and kind filters, or export it as SVG.`);
        }
      } catch (e) {
        page2.toast(`Whole graph as PNG: ${/** @type {any} */
        e.message || e}`);
      }
    } else if (what === "dot") download(new Blob([graphDOT(nodes)], { type: "text/vnd.graphviz" }), `gcscope-${stamp}.dot`);
    else if (what === "history") page2.travelUI?.exportHistory();
    else if (what === "json") download(new Blob([JSON.stringify({ seq: store.seq, filter: { namespace: view2.ns, kind: view2.kind, focus: view2.focus }, nodes }, null, 1)], { type: "application/json" }), `gcscope-${stamp}.json`);
  });
  return menu;
}

// src/events.gen.js
var EVENT_TYPES = Object.freeze(["nodeAdded", "nodeUpdated", "nodeRemoved", "edgeAdded", "edgeRemoved", "queue", "action", "sync", "shadow"]);
var PAYLOAD_OF = Object.freeze({
  nodeAdded: "node",
  nodeUpdated: "node",
  nodeRemoved: "node",
  edgeAdded: "edge",
  edgeRemoved: "edge",
  queue: "queue",
  action: "action",
  sync: "sync",
  shadow: "shadow"
});

// src/travel.js
var SEEK_DEBOUNCE_MS = 120;
var SPEEDS = [0.25, 0.5, 1, 2, 4, 8];
var IDLE_SKIP_MS = 2500;
var NODE_EVENTS = EVENT_TYPES.filter((t) => PAYLOAD_OF[t] === "node" || PAYLOAD_OF[t] === "edge");
var TimeTravel = class {
  /** @param {Hooks} hooks */
  constructor(hooks2) {
    this.hooks = hooks2;
    this.store = new Store();
    this.cascades = new Cascades(this.store, () => this.at);
    this.active = false;
    this.at = NaN;
    this.loadedAt = NaN;
    this.session = 0;
    this.seq = 0;
    this.note = "";
    this.playing = false;
    this.speed = 1;
    this.until = null;
    this.reader = null;
    this.seekTimer = void 0;
    this.seekId = 0;
    this.seeking = false;
    this.pending = null;
    this.clock = { rec: 0, wall: 0 };
    this.lastSeekMs = 0;
    this.appliedLog = [];
  }
  /**
   * Shows moment t: at once, or (a drag) after SEEK_DEBOUNCE_MS without another.
   * @param {number} t epoch ms @param {{debounce?: boolean}} [o]
   * @returns {Promise<void>}
   */
  seek(t, o = {}) {
    this.pause();
    if (!this.seeking && this.seekTimer === void 0) this.loadedAt = this.at;
    this.at = t;
    this.hooks.moment(t);
    clearTimeout(this.seekTimer);
    this.seekTimer = void 0;
    const id = ++this.seekId;
    const done = o.debounce ? new Promise((resolve) => {
      this.seekTimer = setTimeout(() => {
        this.seekTimer = void 0;
        this.load(id, () => stateAt(t), t, true).then(resolve, resolve);
      }, SEEK_DEBOUNCE_MS);
    }) : this.load(id, () => stateAt(t), t, true);
    this.pending = done;
    return (
      /** @type {Promise<void>} */
      done
    );
  }
  /**
   * Loads a state into the travel store, unless another seek overtook it.
   * @param {number} id @param {() => Promise<any>} fetch @param {number|null} t the moment shown, null: the state's
   * @param {boolean} [sought] a seek's: refused, the moment shown goes back to the state's
   */
  async load(id, fetch2, t, sought = false) {
    const t0 = performance.now();
    this.seeking = true;
    let state;
    try {
      state = await fetch2();
    } catch (e) {
      if (id === this.seekId) {
        this.seeking = false;
        if (sought) {
          this.at = this.loadedAt;
          if (this.active) this.hooks.moment(this.at);
        }
        this.hooks.error(
          /** @type {any} */
          e.message || String(e)
        );
      }
      return;
    }
    if (id !== this.seekId) return;
    this.seeking = false;
    this.pending = null;
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
    this.seekTimer = void 0;
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
    for (; ; ) {
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
      this.reader = reader;
      return true;
    }
    this.store.applyEvents([e]);
    this.seq = e.seq;
    this.store.clock = parseTime(e.time);
    this.appliedLog.push({ session: e.session, seq: e.seq, time: parseTime(e.time), type: e.type });
    if (this.appliedLog.length > 1e4) this.appliedLog.splice(0, 5e3);
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
    if (o.from !== void 0) await this.seek(o.from);
    else if (this.pending) await this.pending;
    if (!this.active) return;
    this.until = o.until ?? null;
    this.playing = true;
    this.clock = { rec: this.at, wall: performance.now() };
    this.hooks.playing(true);
    const id = this.seekId;
    this.events().fill();
    const frame = async () => {
      if (!this.playing || id !== this.seekId) return;
      const now = performance.now();
      let rec = this.clock.rec + (now - this.clock.wall) * this.speed;
      let n = 0;
      for (; ; ) {
        const r2 = (
          /** @type {EventReader} */
          this.reader
        );
        if (r2.left < 500 && !r2.done) r2.fill();
        const e = r2.peek();
        if (!e) {
          if (r2.done) break;
          await r2.fill();
          if (!this.playing || id !== this.seekId) return;
          continue;
        }
        if (e.session === this.session && e.seq <= this.seq) {
          r2.take();
          continue;
        }
        const t = parseTime(e.time);
        if (this.until !== null && t > this.until) break;
        if (t > rec) {
          if ((t - rec) / this.speed > IDLE_SKIP_MS) {
            this.clock = { rec: t - 300 * this.speed, wall: now };
            rec = this.clock.rec;
          }
          break;
        }
        r2.take();
        if (await this.applyEvent(e)) {
          if (n) this.hooks.applied(n);
          return this.resume(rec);
        }
        if (!this.playing) return;
        n++;
      }
      if (n) this.hooks.applied(n);
      const r = (
        /** @type {EventReader} */
        this.reader
      );
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
    for (; ; ) {
      const e = await this.nextEvent();
      if (!e) break;
      this.reader.take();
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
      const page2 = await historyPage({
        to: isoTime(this.store.clock || this.at),
        session: this.session || void 0,
        order: "newest",
        limit: 50,
        type: NODE_EVENTS
      });
      const e = page2.events.find((x) => x.session === this.session && x.seq <= this.seq);
      if (!e) return;
      last = { session: e.session, seq: e.seq, time: parseTime(e.time), type: e.type };
    }
    const id = ++this.seekId;
    const prev = last;
    await this.load(id, () => stateAtSeq(prev.session, prev.seq - 1), null);
    this.at = Math.min(this.at, prev.time - 1e-3);
    this.hooks.moment(this.at);
    this.hooks.stepped?.();
  }
};

// src/timeline.js
var RANGES = (
  /** @type {const} */
  [["15m", 15 * 6e4], ["1h", 36e5], ["24h", 24 * 36e5], ["all", 0]]
);
var POLICY_COLOR = (
  /** @type {Record<string, string>} */
  { Foreground: "--st-foreground", Background: "--st-deleting", Orphan: "--pv-orphaned" }
);
var HIST_H = 34;
var LANE_H = 6;
var LANES = 3;
var AXIS_H = 14;
var PAD_TOP = 4;
var MIN_SPAN_MS = 500;
var Timeline = class {
  /** @param {HTMLCanvasElement} canvas @param {HTMLElement} tooltip @param {TimelineHooks} hooks */
  constructor(canvas2, tooltip, hooks2) {
    this.canvas = canvas2;
    this.ctx = /** @type {CanvasRenderingContext2D} */
    canvas2.getContext("2d");
    this.tooltip = tooltip;
    this.hooks = hooks2;
    this.range = 36e5;
    this.from = Date.now() - this.range;
    this.to = Date.now() + this.range * 0.04;
    this.followNow = true;
    this.data = null;
    this.cursor = NaN;
    this.selected = null;
    this.recording = null;
    this.w = 0;
    this.h = HIST_H + LANES * LANE_H + AXIS_H + PAD_TOP + 4;
    this.dragging = false;
    this.loading = 0;
    this.loadTimer = void 0;
    this.colors = {};
    this.spans = [];
    this.total = 0;
    this.fetchMs = 0;
    this.dotsDrawn = [];
    this.readColors();
    canvas2.addEventListener("pointerdown", (ev) => this.down(ev));
    canvas2.addEventListener("pointermove", (ev) => this.move(ev));
    canvas2.addEventListener("pointerup", (ev) => this.up(ev));
    canvas2.addEventListener("pointerleave", () => this.tooltip.hidden = true);
    canvas2.addEventListener("wheel", (ev) => this.wheel(ev), { passive: false });
    new ResizeObserver(() => this.resize()).observe(canvas2);
    setInterval(() => {
      if (!this.followNow || document.hidden) return;
      this.setWindow(...this.following(), true);
    }, 5e3);
  }
  readColors() {
    const cs = getComputedStyle(document.documentElement);
    for (const n of [
      "--fg",
      "--muted",
      "--line",
      "--accent",
      "--bg",
      "--panel",
      "--group-border",
      "--st-deleting",
      "--st-foreground",
      "--pv-orphaned",
      "--danger",
      "--retry",
      "--st-removed"
    ]) this.colors[n] = cs.getPropertyValue(n).trim() || "#888";
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
    return Number.isFinite(o) ? o : Date.now() - 36e5;
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
    const oldest = this.recording?.oldest ? Date.parse(this.recording.oldest) : NaN;
    let from = this.range ? now - this.range : this.oldest();
    if (Number.isFinite(oldest) && oldest > from) from = Math.max(from, oldest - Math.max(2e3, (now - oldest) * 0.05));
    return [from, now + Math.max(1e3, (now - from) * 0.04)];
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
    const end = c.end ?? Math.max(c.start + 1e3, this.recordedNewest());
    const span = Math.max(end - c.start, 400);
    this.followNow = false;
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
        const d = await timeline(from, to, Math.max(20, Math.min(400, Math.floor(this.w / 4))));
        if (id !== this.loading) return;
        this.data = d;
        this.fetchMs = performance.now() - t0;
        if (d.recording) this.recording = d.recording;
        if (this.followNow && !this.dragging) {
          const [f, t] = this.following();
          if (Math.abs(f - this.from) > (this.to - this.from) * 0.02) {
            this.setWindow(f, t, true);
            return;
          }
        }
        this.total = d.buckets.reduce((s, b) => s + b.events, 0);
        if (this.selected) this.selected = d.cascades.find((c) => String(c.id) === String(this.selected?.id)) || this.selected;
        this.draw();
        this.hooks.changed();
      } catch (e) {
        if (id === this.loading) this.hooks.error(
          /** @type {any} */
          e.message || String(e)
        );
      }
    }, delay);
  }
  /** @param {number} t */
  x(t) {
    return (t - this.from) / (this.to - this.from) * this.w;
  }
  /** @param {number} x */
  t(x) {
    return this.from + x / this.w * (this.to - this.from);
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
    const nowX = this.x(Date.now());
    if (nowX >= 0 && nowX <= w) {
      ctx.fillStyle = "#12b76a";
      ctx.fillRect(Math.min(w - 1, nowX), top, 1, axisTop - top);
    }
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
      const maxE = Math.max(1, ...d.buckets.map((b) => b.events));
      this.dotsDrawn = [];
      const scale = (v) => v ? Math.max(1.5, Math.sqrt(v) / Math.sqrt(maxE) * (HIST_H - 4)) : 0;
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
        const dots = [b.errors ? "--danger" : "", b.retries ? "--retry" : ""].filter(Boolean);
        dots.forEach((col, i) => {
          const cx = x0 + bw / 2 + (dots.length > 1 ? i ? 3.5 : -3.5 : 0);
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
      this.spans = [];
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
      const label2 = tickLabel(t, step);
      const tw = ctx.measureText(label2).width;
      if (x + 3 + tw < w) ctx.fillText(label2, x + 3, axisTop + 1);
    }
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
      text = `${c.policy} deletion of ${c.root.kind} ${c.root.namespace ? c.root.namespace + "/" : ""}${c.root.name}
${clock(c.start)} – ${c.end ? clock(c.end) : "still running"}${this.count(c) ? ` · ${this.count(c)}` : ""}${failures(c)}
click: select it and go to its start`;
    } else if (this.data) {
      const b = this.data.buckets.find((x) => t >= x.t && t < x.t + (this.data?.bucket || 0));
      const whole = document.getElementById("signed-in-as") ? " in the whole cluster" : "";
      if (b) text += `
${b.events} events · ${b.deletes} deletes${failures(b)}${whole}`;
      const g = this.data.gaps.find((x) => t >= x.start && t <= x.end);
      if (g) text += `
not recorded: ${g.reason || "a gap"}`;
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
    const p = this.pos(
      /** @type {any} */
      ev
    );
    const at = this.t(p.x);
    if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const dt = ev.deltaX / this.w * (this.to - this.from);
      this.followNow = false;
      this.setWindow(this.from + dt, this.to + dt);
      return;
    }
    const f = Math.exp(ev.deltaY * 2e-3);
    const span = Math.max(MIN_SPAN_MS, (this.to - this.from) * f);
    const from = at - (at - this.from) / (this.to - this.from) * span;
    this.followNow = false;
    this.setWindow(from, from + span);
  }
};
function failures(x) {
  const e = x.errors || 0, r = x.retries || 0;
  return `${e ? ` · ${e} ${e === 1 ? "error" : "errors"}` : ""}${r ? ` · ${r} retried ${r === 1 ? "conflict" : "conflicts"}` : ""}`;
}
function niceStep(ms) {
  const steps = [
    100,
    250,
    500,
    1e3,
    2e3,
    5e3,
    1e4,
    15e3,
    3e4,
    6e4,
    12e4,
    3e5,
    6e5,
    9e5,
    18e5,
    36e5,
    72e5,
    3 * 36e5,
    6 * 36e5,
    12 * 36e5,
    864e5,
    2 * 864e5,
    7 * 864e5
  ];
  return steps.find((s) => s >= ms) || steps[steps.length - 1];
}
function tickLabel(t, step) {
  const d = new Date(t);
  const hm = d.toTimeString().slice(0, 5);
  if (step < 1e3) return clock(t).slice(0, step % 100 ? 12 : 10);
  if (step < 6e4) return d.toTimeString().slice(0, 8);
  if (step >= 864e5) return d.toDateString().slice(4, 10);
  return hm;
}

// src/historyview.js
var MAX_ROWS = 1e4;
var VERBS = (
  /** @type {const} */
  [
    ["delete", "deletes"],
    ["removeFinalizer", "finalizers removed"],
    ["orphan", "orphanings"],
    ["patchRemoveRefs", "references patched away"],
    ["patchUnblock", "references unblocked"],
    ["*", "all decisions"]
  ]
);
var HistoryView = class {
  /** @param {HTMLElement} el @param {HistoryHooks} hooks */
  constructor(el, hooks2) {
    this.el = el;
    this.hooks = hooks2;
    this.from = 0;
    this.to = 0;
    this.title = "in the last hour";
    this.rows = [];
    this.truncated = false;
    this.loading = 0;
    this.stale = true;
    this.error = "";
    this.verb = /** @type {string} */
    "delete";
    this.result = "*";
    this.ns = "*";
    this.list = new VirtualList({
      id: "history-list",
      className: "history-rows",
      rowHeight: 74,
      maxRows: 9,
      render: (e) => this.row(e),
      // A recorded decision does not change; what its row shows of its cascade may.
      key: (e) => `${e.pos} ${this.cascadeKey(e)}`
    });
    this.verbSel = /** @type {HTMLSelectElement} */
    h("select", { id: "history-verb", "aria-label": "Decision", onchange: () => {
      this.verb = this.verbSel.value;
      this.load();
    } }, ...VERBS.map(([v, label2]) => h("option", { value: v }, label2)));
    this.resultSel = /** @type {HTMLSelectElement} */
    h("select", { id: "history-result", "aria-label": "Result", onchange: () => {
      this.result = this.resultSel.value;
      this.load();
    } }, h("option", { value: "*" }, "any result"), h("option", { value: "ok" }, "ok"), h("option", { value: "error" }, "errors"));
    this.nsSel = /** @type {HTMLSelectElement} */
    h("select", { id: "history-ns", "aria-label": "Namespace", onchange: () => {
      this.ns = this.nsSel.value;
      this.render();
    } }, h("option", { value: "*" }, "all namespaces"));
    this.head = h("h2", { id: "history-title" });
    this.summary = h("p.muted", { id: "history-summary" });
    el.replaceChildren(this.head, h("div.history-filters", null, this.verbSel, this.resultSel, this.nsSel), this.summary, this.list.el);
  }
  /**
   * Lists the window [from, to), titled "in the last hour" or the like; read now if the
   * view is shown, else when it is next shown.
   * @param {number} from @param {number} to @param {string} title @param {boolean} shown
   */
  setWindow(from, to, title, shown) {
    const same2 = from === this.from && to === this.to && title === this.title;
    this.from = from;
    this.to = to;
    this.title = title;
    if (!shown) {
      this.stale ||= !same2;
      return;
    }
    if (same2 && !this.stale && this.loading) return;
    this.stale = false;
    this.load();
  }
  async load() {
    const id = ++this.loading;
    this.error = "";
    this.renderHead();
    const rows = [];
    let cursor;
    try {
      do {
        const page2 = await historyPage({
          from: isoTime(this.from),
          to: isoTime(this.to),
          type: "action",
          verb: this.verb === "*" ? ["delete", "removeFinalizer", "orphan", "patchRemoveRefs", "patchUnblock"] : this.verb,
          result: this.result === "*" ? void 0 : this.result,
          order: "newest",
          limit: 2e3,
          cursor
        });
        if (id !== this.loading) return;
        rows.push(...page2.events);
        cursor = page2.nextCursor;
      } while (cursor && rows.length < MAX_ROWS);
    } catch (e) {
      if (id !== this.loading) return;
      this.error = /** @type {any} */
      e.message || String(e);
    }
    this.rows = rows;
    this.truncated = !!cursor;
    this.fillNamespaces();
    this.render();
  }
  fillNamespaces() {
    const nss = [...new Set(this.rows.map((e) => e.action?.object?.namespace || ""))].sort();
    if (this.ns !== "*" && !nss.includes(this.ns)) nss.push(this.ns);
    this.nsSel.replaceChildren(h("option", { value: "*" }, "all namespaces"), ...nss.map((n) => h("option", { value: n }, n || "(cluster-scoped)")));
    this.nsSel.value = this.ns;
  }
  renderHead() {
    const verb = VERBS.find(([v]) => v === this.verb)?.[1] || this.verb;
    this.head.textContent = this.verb === "delete" ? `Deleted by the collector ${this.title}` : this.verb === "*" ? `All the collector's decisions ${this.title}` : `The collector's ${verb} ${this.title}`;
  }
  render() {
    this.renderHead();
    const shown = this.ns === "*" ? this.rows : this.rows.filter((e) => (e.action?.object?.namespace || "") === this.ns);
    const errors = shown.filter((e) => e.action && actionResult(e.action) === "error").length;
    const retried = shown.filter((e) => e.action && actionResult(e.action) === "retried").length;
    this.summary.textContent = this.error ? `The history could not be read: ${this.error}` : `${fmt(shown.length)} ${shown.length === 1 ? "decision" : "decisions"}${errors ? ` · ${fmt(errors)} failed` : ""}${retried ? ` · ${fmt(retried)} ${retried === 1 ? "conflict" : "conflicts"} retried` : ""}${this.truncated ? ` (the newest ${fmt(this.rows.length)})` : ""}${shown.length ? " · newest first" : ""}`;
    this.list.set(shown);
    this.list.el.hidden = !shown.length;
  }
  /**
   * What a row shows of its cascade, for its key: whether the timeline knows it, and its
   * count (a running one's changes). @param {any} e
   */
  cascadeKey(e) {
    if (e.cascade === void 0 || e.cascade === null) return "";
    const c = this.hooks.cascade(String(e.cascade));
    return c ? `c ${this.hooks.count?.(c) || ""}` : "";
  }
  /** One decision, on two lines. @param {any} e */
  row(e) {
    const a = e.action || {};
    const t = parseTime(e.time);
    const result = actionResult(a) === "kept" ? "ok" : actionResult(a);
    const c = e.cascade !== void 0 && e.cascade !== null ? this.hooks.cascade(String(e.cascade)) : null;
    const obj = h("a.obj", {
      href: `?sel=${encodeURIComponent(a.object?.uid || "")}`,
      title: "Show it at that moment",
      onclick: (ev) => {
        ev.preventDefault();
        this.hooks.object(a.object, t);
      }
    }, describe(a.object || { kind: "?", name: "?" }));
    const second = [];
    if (c) {
      second.push(
        "cascade of ",
        h("a.cascade-link", {
          href: "#",
          "data-cascade": String(c.id),
          title: `Select this ${c.policy} cascade on the timeline and go to its start`,
          onclick: (ev) => {
            ev.preventDefault();
            this.hooks.selectCascade(this.hooks.cascade(String(c.id)) || c);
          }
        }, `${c.root.kind} ${c.root.name}`),
        h("span.tag", null, c.policy),
        " ",
        this.hooks.count?.(c) ? h("span.hcount", { "data-cascade-count": String(c.id) }, this.hooks.count(c)) : null,
        " ",
        h("button.link.replay", { type: "button", title: "Replay this cascade", onclick: () => this.hooks.play(c) }, "▶")
      );
    } else if (e.cascade !== void 0 && e.cascade !== null) {
      second.push(h("a.cascade-link", { href: "#", "data-cascade": String(e.cascade), onclick: async (ev) => {
        ev.preventDefault();
        const found = await this.hooks.cascadeOf(String(e.cascade));
        if (found) this.hooks.selectCascade(found);
      } }, `cascade ${e.cascade}`));
    }
    const why = errorText(a) || a.reason || "";
    return h(
      "div.hrow",
      { "data-result": result, "data-uid": a.object?.uid || "", title: [a.reason, errorText(a), result === "retried" ? RETRIED_WHY : ""].filter(Boolean).join("\n") },
      h(
        "div.hline",
        null,
        h("span.time", null, clock(t)),
        h("b.verb", null, a.verb, a.policy ? h("span.policy", null, ` ${a.policy}`) : null),
        h("span.dur", null, a.duration ? duration(a.duration) : ""),
        h(`span.result.${result}`, null, result)
      ),
      h("div.hobj", null, obj),
      h("div.hwhy", { class: result === "error" ? "hwhy error" : "hwhy muted" }, why || "—"),
      second.length ? h("div.hcascade.muted", null, ...second) : null
    );
  }
};

// src/travelui.js
function momentText(t) {
  return `${clock(t)} · ${new Date(t).toLocaleDateString("en-GB", { weekday: "short", day: "numeric", month: "short" })}`;
}
function rangeText(from, to) {
  const day = (t) => new Date(t).toLocaleDateString("en-GB", { weekday: "short", day: "numeric", month: "short" });
  return `${day(from)}, ${clock(from)} – ${day(to) === day(from) ? "" : day(to) + ", "}${clock(to)}`;
}
async function lastCascadeOf(uid) {
  try {
    const r = await get(`/api/v1/history/cascades?uid=${encodeURIComponent(uid)}`);
    const list = (
      /** @type {any[]} */
      (Array.isArray(r) ? r : r.cascades || []).map(cascadeOf)
    );
    list.sort((a, b) => b.start - a.start);
    return list[0] || null;
  } catch (e) {
    if (
      /** @type {any} */
      e.status !== 404
    ) throw e;
  }
  const page2 = await historyPage({ uid, type: ["nodeUpdated", "nodeRemoved"], order: "newest", limit: 500 });
  const evs = page2.events.filter((e) => e.node?.uid === uid || e.object?.uid === uid);
  const i = evs.findIndex((e) => e.type === "nodeRemoved" || e.node?.beingDeleted);
  if (i < 0) return null;
  const end = evs[i].type === "nodeRemoved" ? parseTime(evs[i].time) : null;
  let j = i;
  while (j + 1 < evs.length && evs[j + 1].type === "nodeUpdated" && evs[j + 1].node?.beingDeleted) j++;
  const first = evs[j].node || evs[i].node || evs[i].object;
  const fin = first?.finalizers || [];
  return {
    id: `object:${uid}`,
    root: { ...evs[i].object || first, uid },
    start: parseTime(evs[j].time),
    end,
    policy: fin.includes("foregroundDeletion") ? "Foreground" : fin.includes("orphan") ? "Orphan" : "Background"
  };
}
var TravelUI = class {
  /** @param {TravelPage} page */
  constructor(page2) {
    this.page = page2;
    const { replay: replay2 } = page2;
    this.selectedCascade = null;
    this.replayWindow = [0, 0];
    const body = document.body;
    const banner = $("travel-banner"), tTime = $("travel-time"), tNote = $("travel-note");
    const tr = new TimeTravel({
      enter: () => {
        body.classList.add("travel");
        page2.showConn();
        banner.hidden = false;
        tl.hold();
        page2.showStore(tr.store, tr.cascades);
        this.updateControls();
      },
      leave: () => {
        body.classList.remove("travel");
        page2.showConn();
        banner.hidden = true;
        this.selectedCascade = null;
        tl.selected = null;
        page2.showStore(page2.live, page2.liveCascades);
        page2.writeURL();
        tl.setCursor(NaN);
        tl.setRange(tl.range);
        this.updateControls();
      },
      moment(t) {
        tl.setCursor(t);
        tTime.textContent = momentText(t);
        tTime.dataset.at = isoTime(t);
      },
      seeked(state, ms) {
        page2.writeURL();
        if (!replay2) tNote.textContent = state.note || (tr.playing ? "" : "the live state goes on underneath");
        page2.seeked(ms);
      },
      applied() {
        page2.applied();
      },
      // A step (→, ←) moves the moment shown without a seek: the URL follows it, so that a
      // link shared then opens that moment.
      stepped() {
        page2.writeURL();
      },
      playing: (on) => {
        page2.writeURL();
        if (!replay2 && !on && tr.active) tNote.textContent = "paused · the live state goes on underneath";
        else if (!replay2 && on) tNote.textContent = `playing at ${tr.speed}×`;
        this.updateControls();
      },
      error(m) {
        page2.toast(`Time travel: ${m}`);
        page2.writeURL();
      }
    });
    this.travel = tr;
    const tl = new Timeline(
      /** @type {HTMLCanvasElement} */
      $("timeline-canvas"),
      $("tl-tooltip"),
      {
        seek: (t, debounce) => tr.seek(t, { debounce }),
        select: (c) => this.selectCascade(c),
        changed: () => {
          this.updateTimelineTitle();
          this.historyView?.setWindow(tl.from, tl.to, this.windowTitle(), this.historyTabShown());
          if (this.historyTabShown()) this.historyView?.render();
          for (const b of document.querySelectorAll("#timeline [data-range]")) {
            const ms = RANGES.find(([k]) => k === /** @type {HTMLElement} */
            b.dataset.range)?.[1];
            b.setAttribute("aria-pressed", String(tl.followNow && ms === tl.range));
          }
        },
        error: (m) => $("tl-title").textContent = `The timeline could not be read: ${m}`,
        count: (c) => this.cascadeCount(c)
      }
    );
    this.timeline = tl;
    let cascadeSeen = -Infinity;
    setInterval(() => {
      if (replay2 || tr.active || document.hidden || !tl.followNow) return;
      if (page2.liveCascades.active.size) cascadeSeen = Date.now();
      if (Date.now() - cascadeSeen < 3e3) tl.load(0);
    }, 1e3);
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
        tr.seek(t - 1e-3).then(() => page2.select(ref.uid, true, true));
      }
    });
    for (const b of document.querySelectorAll("#timeline [data-range]")) {
      b.addEventListener("click", () => {
        const ms = RANGES.find(([k]) => k === /** @type {HTMLElement} */
        b.dataset.range)?.[1] ?? 36e5;
        if (replay2) tl.setWindow(...this.replayWindow);
        else tl.setRange(ms);
      });
    }
    $("tl-play").addEventListener("click", () => this.togglePlay());
    $("tl-step").addEventListener("click", () => tr.active ? tr.step() : tr.seek(tl.recordedNewest()));
    $("tl-back").addEventListener("click", () => tr.active ? tr.stepBack() : tr.seek(tl.recordedNewest()));
    $("tl-speed").addEventListener("change", () => this.setSpeed(Number(
      /** @type {HTMLSelectElement} */
      $("tl-speed").value
    )));
    $("tl-live").addEventListener("click", () => tr.active ? this.backToLive() : tl.setRange(tl.range));
    $("back-to-live").addEventListener("click", () => this.backToLive());
    $("back-to-live").hidden = replay2;
    page2.tabs.onShow((tab) => {
      if (tab === "history") this.historyView.setWindow(this.timeline.from, this.timeline.to, this.windowTitle(), true);
    });
    if (replay2) tl.followNow = false;
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
    const live2 = c.end === null && !this.page.replay && !this.travel.active ? this.page.liveCascades.of(c.root.uid) : null;
    if (live2) return countText(live2);
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
      this.page.toast(`Replay: ${/** @type {any} */
      e.message || e}`);
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
    document.body.dataset.travel = tr.active ? tr.playing ? "playing" : "paused" : "";
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
    $("tl-speed").value = String(s);
  }
  togglePlay() {
    const tr = this.travel, tl = this.timeline;
    if (tr.playing) return tr.pause();
    if (tr.active) {
      const c2 = this.selectedCascade;
      const inside = c2 && tr.at >= c2.start - 2e3 && tr.at <= (c2.end ?? Infinity);
      tr.play({ until: inside && c2 ? (c2.end ?? tl.recordedNewest()) + 1500 : null });
      return;
    }
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
    let cascadesText = d?.cascadesCapped ? `more than ${n.toLocaleString("en-US")} cascades (the newest drawn)` : `${n} cascade${n === 1 ? "" : "s"}`;
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
      const from = parseTime(rec.oldest || first.events[0]?.time), to = parseTime(rec.newest) || from + 6e4;
      tl.recording = rec;
      tl.followNow = false;
      const pad = Math.max(500, (to - from) * 0.02);
      this.replayWindow[0] = from - pad;
      this.replayWindow[1] = to + pad;
      tl.setWindow(...this.replayWindow);
      $("travel-tag").textContent = "Replay of a recording";
      $("travel-note").textContent = rangeText(from, to);
      $("travel-note").dataset.range = `${isoTime(from)}/${isoTime(to)}`;
      if (Number.isFinite(at)) {
        await this.travel.seek(at);
        if (this.travel.active) {
          if (sel) this.page.select(sel, true, true);
          return;
        }
      }
      const d = await timeline(from, to + 1, 100).catch(() => null);
      const c = d?.cascades.sort((a, b) => (b.objects ?? 0) - (a.objects ?? 0) || a.start - b.start)[0];
      if (c) await this.selectCascade(c, false);
      else await this.travel.seek(from);
      if (sel) this.page.select(sel, true, true);
    } catch (e) {
      this.page.toast(`The recording could not be read: ${/** @type {any} */
      e.message || e}`);
    }
  }
};

// src/timetravel.js
function newTimeTravel(page2, v) {
  function refreshViews() {
    v.queuesPanel.lastActionsKey = "";
    v.queuesPanel.render(true);
    page2.cascades.changed = true;
    v.cascadeStrip.render();
    v.objectPanel.show(page2.view.sel);
    v.filters.refresh();
    if (page2.view.q) v.search.run();
    updateEmpty(page2);
  }
  function showStore(s, c) {
    page2.store = s;
    page2.cascades = c;
    page2.renderer.store = s;
    page2.renderer.cascades = c;
    v.objectPanel.store = s;
    v.queuesPanel.store = s;
    v.cascadeStrip.cascades = c;
    s.touched.clear();
    s.dirtyNamespaces.add("*");
    v.relayout(performance.now());
    refreshViews();
  }
  return new TravelUI({
    replay: page2.replay,
    live: page2.live,
    liveCascades: page2.liveCascades,
    showStore,
    seeked(ms) {
      v.seeked(ms);
      firstContent(page2);
      v.relayout(performance.now());
      refreshViews();
      v.applied();
    },
    applied: v.applied,
    showConn: v.showConn,
    select: (uid, center, keepTab) => v.view.select(uid, center, keepTab),
    writeURL: () => v.view.writeURL(),
    toast: page2.toast,
    tabs: v.tabs
  });
}

// src/testhooks.js
function trace(page2, uids, current) {
  const { renderer: renderer2, layout: layout2 } = page2;
  renderer2.recordDrawn();
  const lastEngine = {};
  const lastT = {};
  const lastDrawn = {};
  const lastPlaced = {};
  const t = {
    uids,
    engineLog: (
      /** @type {any[]} */
      []
    ),
    drawnLog: (
      /** @type {any[]} */
      []
    ),
    placedLog: (
      /** @type {any[]} */
      []
    ),
    frames: (
      /** @type {number[]} */
      []
    ),
    engine() {
      const now = performance.now();
      for (const u of uids) {
        const n = page2.store.nodes.get(u);
        const st = n ? stateOf(page2.store, n) : "removed";
        const g = page2.store.ghosts.get(u);
        if (!n && g?.deletingSince !== void 0 && lastEngine[u] === "normal") {
          const was = stateOf(page2.store, g.node);
          t.engineLog.push({ uid: u, state: was, t: g.deletingSince });
          lastEngine[u] = was;
        }
        const shown = n ? void 0 : page2.store.shownDeleting.get(u)?.state;
        if (shown !== void 0 && g && lastEngine[u] !== shown && lastEngine[u] !== "removed") {
          t.engineLog.push({ uid: u, state: shown, t: Math.max(g.at, lastT[u] ?? -Infinity) });
          lastEngine[u] = shown;
        }
        const began = n ? page2.store.deleting.get(u) : void 0;
        if (lastEngine[u] !== st) {
          t.engineLog.push({ uid: u, state: st, t: began !== void 0 && began > (lastT[u] ?? -Infinity) ? began : now });
          lastT[u] = now;
        }
        lastEngine[u] = st;
      }
    }
  };
  const drawn = () => {
    if (current() !== t) return;
    t.frames.push(performance.now());
    for (const u of uids) {
      const d = renderer2.drawnState?.get(u);
      const l = lastDrawn[u];
      if (d && (!l || l.state !== d.state || l.x !== d.x || l.y !== d.y)) {
        t.drawnLog.push({ uid: u, state: d.state, x: d.x, y: d.y, t: d.at });
        lastDrawn[u] = d;
      }
      const b = layout2.box(u), p = lastPlaced[u];
      if (b && (!p || p.x !== b.x || p.y !== b.y)) {
        t.placedLog.push({ uid: u, state: "", x: b.x, y: b.y, t: performance.now() });
        lastPlaced[u] = b;
      }
    }
    requestAnimationFrame(drawn);
  };
  requestAnimationFrame(drawn);
  return t;
}
function testHooks(page2, parts) {
  const { renderer: renderer2, layout: layout2, live: live2, view: view2, perf } = page2;
  const { stuckView: stuckView2, tabs: tabs2 } = parts;
  let tracer = null;
  const current = () => tracer;
  const api = {
    ready: false,
    perf,
    /** The uids drawn now (after filters and focus; removed ones fading out excluded). */
    drawnUIDs: () => [...layout2.items.values()].filter((it) => page2.store.nodes.has(it.uid)).map((it) => it.uid),
    /** Starts recording what the canvas draws (see Renderer.drawnState). */
    recordDrawn: () => renderer2.recordDrawn(),
    /** What the canvas last drew for uid since recordDrawn: {state, x, y, at}. @param {string} uid */
    drawn: (uid) => renderer2.drawnState?.get(uid) || null,
    /** How the canvas last drew dependent's reference to owner since recordDrawn: {cycle, back, x, y} (x, y: the middle of its curve, in world units). @param {string} dependent @param {string} owner */
    edge: (dependent, owner) => renderer2.drawnEdges?.get(cycleKey(dependent, owner)) ?? null,
    /** The caption the canvas last drew under uid's box since recordDrawn (a running cascade's "waiting on … · 2.5 s so far"). @param {string} uid */
    caption: (uid) => renderer2.drawnCaptions?.get(uid) ?? null,
    /** What the canvas last drew as namespace ns's box title, and under it, since recordDrawn: {text, caption, at}. @param {string} ns */
    nsDrawn: (ns) => renderer2.drawnTitles?.get(ns) ?? null,
    /** Every change of a namespace box's title as drawn since recordDrawn, frame by frame: [{ns, text, caption, inLayout, t}] (text "": no longer drawn). @param {string} ns */
    titleLog: (ns) => renderer2.titleLog.filter((e) => e.ns === ns),
    /** The deletion of namespace ns the page follows: {gone, total, baseline, end, waitingOn}, or null. @param {string} ns */
    nsDeletion: (ns) => {
      const c = page2.cascades.ofNamespace(ns);
      return c ? { gone: c.gone, total: c.total, baseline: c.baseline, end: c.end, waitingOn: c.waitingOn } : null;
    },
    /** Summary first (detail.js): {mode, asked, answered, detailMs, objects, settled}. */
    detail: () => {
      const d = page2.detail;
      return { mode: d.mode, asked: d.asked, answered: d.answered, detailMs: d.detailMs, objects: d.objects, settled: d.settled() };
    },
    /** The namespace boxes laid out now: {ns: {summary: objects counted or null, items, x, y, w, h}}. */
    groups: () => Object.fromEntries([...layout2.groups.values()].map((g) => [g.ns, { summary: g.summary ? g.summary.objects : null, items: g.items.length, x: g.x, y: g.y, w: g.w, h: g.h }])),
    stuckView: stuckView2,
    tabs: tabs2,
    cascades: page2.liveCascades,
    /** Starts tracing uids' states: the stream's and the canvas's (see trace). @param {string[]} uids */
    trace: (uids) => {
      tracer = trace(page2, uids, current);
      tracer.engine();
    },
    /** The trace so far: {engine: [{uid, state, t}], drawn: [{uid, state, x, y, t}], placed: [{uid, x, y, t}], frames: [t]}. */
    traceLog: () => {
      const t = tracer;
      return { engine: t?.engineLog || [], drawn: t?.drawnLog || [], placed: t?.placedLog || [], frames: t?.frames || [] };
    },
    /** @param {string} uid */
    select: (uid) => parts.select(uid),
    /** Opens the stream again from a fresh snapshot, as when the server no longer holds the
     * events the page missed; resolves once the snapshot is applied. */
    resnapshot: () => {
      const before = live2.snapshots;
      parts.stream.hadSnapshot = false;
      parts.stream.ws?.close(4e3, "a fresh snapshot, asked by a test");
      return new Promise((done) => {
        const wait = () => live2.snapshots > before ? done(true) : setTimeout(wait, 10);
        wait();
      });
    },
    /** The objects selected together (shift-click), in the order they were. */
    selected: () => [...parts.selection.uids],
    /**
     * Where uid's box is on the page (CSS px, the middle of the box), for a test to click it
     * as a user would; null when it is not laid out or not wholly on the canvas.
     * @param {string} uid
     */
    screenOf: (uid) => {
      const it = layout2.items.get(uid);
      if (!it || it.block && renderer2.collapsed(it.block)) return null;
      const r = page2.canvas.getBoundingClientRect(), { cam } = renderer2, b = layout2.box(uid);
      if (!b) return null;
      const x0 = r.left + b.x * cam.k + cam.x, y0 = r.top + b.y * cam.k + cam.y;
      const x1 = r.left + (b.x + b.w) * cam.k + cam.x, y1 = r.top + (b.y + b.h) * cam.k + cam.y;
      if (x0 < r.left || y0 < r.top || x1 > r.right || y1 > r.bottom) return null;
      return { x: (x0 + x1) / 2, y: (y0 + y1) / 2 };
    },
    view: view2,
    /**
     * The state of each object of namespace ns in the store shown (or, which = "live", the
     * live one), as the canvas would draw it: {uid: state}.
     * @param {string} ns @param {string} [which]
     */
    nsStates: (ns, which) => {
      const s = which === "live" ? live2 : page2.store;
      const out = {};
      for (const u of s.byNamespace.get(ns) || []) out[u] = stateOf(
        s,
        /** @type {any} */
        s.nodes.get(u)
      );
      return out;
    },
    /** The store shown: the live one, or time travel's. */
    get store() {
      return page2.store;
    },
    live: live2,
    renderer: renderer2,
    /** The keyboard shortcuts the page binds, as the help lists them: [[label, help]]. */
    shortcuts: () => parts.shortcuts.listed(),
    /** Time travel (with --history): {active, at, playing, speed, lastSeekMs, store}. */
    travel: () => page2.travelUI?.travel ?? null,
    timeline: () => page2.travelUI?.timeline ?? null,
    /** Seeks, the time each took from the ask to the state applied (ms). */
    seeks: (
      /** @type {number[]} */
      []
    ),
    /** Frames drawn while playing: [performance.now()], for fps. */
    playFrames: (
      /** @type {number[]} */
      []
    )
  };
  window.gcscope = api;
  return { api, engineChanged: () => tracer?.engine() };
}

// src/sidepanel.js
var KEY = "gcscope.sideHidden";
function wireSidePanel() {
  const set = (hidden) => {
    document.body.classList.toggle("side-hidden", hidden);
    try {
      localStorage.setItem(KEY, hidden ? "1" : "");
    } catch {
    }
  };
  let stored = "";
  try {
    stored = localStorage.getItem(KEY) || "";
  } catch {
  }
  if (stored) document.body.classList.add("side-hidden");
  document.getElementById("side-hide")?.addEventListener("click", () => set(true));
  document.getElementById("side-show")?.addEventListener("click", () => set(false));
}

// src/main.js
var live = new Store();
var liveCascades = new Cascades(live);
var layout = new Layout();
var canvas = (
  /** @type {HTMLCanvasElement} */
  $("graph")
);
var renderer = new Renderer(canvas, live, layout);
renderer.cascades = liveCascades;
var view = newView();
var detail = new Detail({ view, renderer, layout }, (frame) => stream.send(frame));
renderer.countsNote = (ns) => detail.loading(ns) ? "loading its objects…" : renderer.cam.k < DETAIL_K ? "zoom in to load its objects" : "";
var page = newPage({ live, liveCascades, layout, canvas, renderer, view, detail });
var { replay } = page;
var show = (uid) => pageView.select(uid, true);
var legend = () => renderLegend(renderer);
var tabs = new Tabs();
var objectPanel = new ObjectPanel($("object-body"), $("object-placeholder"), page.store, {
  readOnly: page.readOnly,
  travelAt: () => page.travelUI?.travel.active ? page.travelUI.travel.at : null,
  replay: page.hasHistory ? (uid) => page.travelUI?.replayLastCascade(uid) : void 0,
  // Offered only when the recording holds a cascade the object took part in.
  hasCascade: page.hasHistory ? async (uid) => !!await page.travelUI?.lastCascadeOf(uid) : void 0,
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
  }
});
var stuckView = new StuckView($("stuck-panel"), document.getElementById("stuck-count"), {
  select: show,
  known: (uid) => live.nodes.has(uid)
});
tabs.onShow((tab) => stuckView.setShown(tab === "stuck"));
var discoveryBanner = new DiscoveryBanner($("discovery-banner"));
var cascadeStrip = new CascadeStrip($("cascades"), page.cascades, show);
var health = $("collector-health") ? new CollectorHealth($("collector-health"), show) : null;
var queuesPanel = new QueuesPanel($("queues"), $("actions"), $("sync-state"), page.store, show);
var dialog = new DeleteDialog(live, {
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
  }
});
var selection = new Selection(page, { openSet: (uids) => dialog.openSet(uids) });
var theme = wireTheme({
  readColors() {
    renderer.readColors();
    page.travelUI?.timeline.readColors();
  },
  writeURL: () => pageView.writeURL()
});
var filters = new Filters(page, () => {
  pageView.changed();
  frames.relayout(performance.now());
  renderer.fit(layout.bounds);
});
var frames = newFrames(page, {
  cascadeStrip,
  objectPanel,
  health,
  discoveryBanner,
  stuckView,
  queuesPanel,
  selection,
  filters,
  glance: new Glance($("glance"), liveCascades, live, {
    // what needs attention, while nothing is selected
    select: show,
    showStuck: () => tabs.show("stuck"),
    stuck: () => ({ count: stuckView.counted, threshold: stuckView.threshold })
  }),
  drew(now) {
    if (page.travelUI?.travel.playing && hooks.api.playFrames.length < 1e5) hooks.api.playFrames.push(now);
  },
  firstDrawn: () => hooks.api.ready = true
});
var relayout = (now) => frames.relayout(now);
var pageView = new PageView(page, { tabs, objectPanel, setTheme: theme.setTheme, syncFilters: () => filters.sync(), relayout });
var search = new Search(page, {
  select: (uid, center) => pageView.select(uid, center),
  writeURL: () => pageView.writeURL(),
  selectAll: { count: () => selection.matchCount(), run: () => selection.selectMatching() }
});
wirePointer(page, { selection, view: pageView, relayout });
wireSidePanel();
var exportMenu = wireExportMenu(page);
function liveApplied(f) {
  const shown = page.store === live;
  if (f.type === "summary") {
    if (detail.mode === "summary") firstContent(page);
    if (shown) filters.fill();
  } else if (f.type === "snapshot") {
    if (detail.mode === "full" && f.reason === "subscribe") firstContent(page);
    if (!shown) return;
    page.layoutDue = true;
    filters.fill();
    if (view.sel) objectPanel.show(view.sel);
    if (view.q) search.run();
  } else if (f.type === "deltas" && shown) hooks.engineChanged();
}
var connDot = new ConnDot({ replay, backToLive: () => page.travelUI?.backToLive(), retry: () => stream.retry() });
var stream = connect(page, { applied: liveApplied, onState: (state, words) => connDot.set(state, words) });
var clusters = new ClusterPicker();
var slow = (
  /** @type {HTMLInputElement|null} */
  document.getElementById("slow-motion")
);
slow?.addEventListener("change", async () => {
  try {
    const res = await post("/api/v1/slow-motion", { enabled: slow.checked });
    slow.checked = res.enabled;
    page.toast(res.enabled ? `Slow motion on: the engine waits ${res.actionDelay} before each write.` : "Slow motion off: the engine writes at full speed.");
  } catch (e) {
    slow.checked = !slow.checked;
    page.toast(`Slow motion: ${/** @type {any} */
    e.message || e}`);
  }
});
new ScenarioPlayer({ select: show, has: (uid) => page.store.nodes.has(uid), toast: (text) => page.toast(text) });
var helpDialog = (
  /** @type {HTMLDialogElement} */
  $("help-dialog")
);
var shortcuts = new Shortcuts(shortcutTable({
  replay,
  selected: () => view.sel,
  focus: (uid) => pageView.setFocus(uid),
  del: (uid) => dialog.open(uid),
  // read-only: a preview
  delSelected() {
    if (!selection.size) return false;
    selection.openDialog();
    return true;
  },
  escape() {
    if (!exportMenu.hidden) exportMenu.hidden = true;
    else if (selection.clear()) return true;
    else if (page.travelUI?.travel.active && !replay) return false;
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
  travelUI: () => page.travelUI
}), page.hasHistory, clusters.present);
shortcuts.listen();
search.input.addEventListener("keydown", (ev) => shortcuts.handle(ev, "search"));
shortcuts.renderHelp($("help-keys"));
$("help-button").addEventListener("click", () => helpDialog.showModal());
var hooks = testHooks(page, { stuckView, tabs, shortcuts, selection, select: show, stream });
if (page.hasHistory) {
  page.travelUI = newTimeTravel(page, {
    objectPanel,
    queuesPanel,
    cascadeStrip,
    tabs,
    filters,
    search,
    view: pageView,
    relayout,
    showConn: () => connDot.show(),
    seeked: (ms) => hooks.api.seeks.push(ms),
    applied: () => hooks.engineChanged()
  });
}
frames.start();
pageView.readURL();
search.input.value = view.q;
renderer.selected = view.sel;
pageView.updateFocusChip();
legend();
updateEmpty(page);
clusters.follow();
if (replay) page.travelUI?.startReplay(parseTime(page.atURL), view.sel);
else if (!clusters.waiting) {
  stream.open();
  const at = parseTime(page.atURL);
  if (page.travelUI && Number.isFinite(at)) page.travelUI.travel.seek(at).then(() => {
    if (view.sel) pageView.select(view.sel, true, true);
  });
}
if (view.q) search.run();
