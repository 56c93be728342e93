// @ts-check
// The client's copy of the engine's state: the graph (nodes and their ownerReferences),
// the three work queues and the latest worker actions, kept current by the stream's
// snapshot and deltas (docs/stream.md). It knows nothing of drawing; views ask it what
// changed since they last looked.

import { stateOf } from "./states.js";

// The event and payload typedefs are generated from the Go types (events.gen.js).
/**
 * @typedef {import("./events.gen.js").OwnerRef} OwnerRef
 * @typedef {import("./events.gen.js").ObjectRef} ObjectRef
 * @typedef {import("./events.gen.js").NodeState} NodeState
 * @typedef {import("./events.gen.js").Event} Event
 * @typedef {import("./events.gen.js").Edge} Edge
 * @typedef {import("./events.gen.js").SyncState} SyncState
 * @typedef {import("./events.gen.js").Action} GcAction
 * @typedef {import("./events.gen.js").QueueEvent} QueueEvent
 * @typedef {import("./events.gen.js").QueueCounts} QueueCounts
 * @typedef {import("./frames.gen.js").SnapshotFrame} SnapshotFrame
 * @typedef {import("./frames.gen.js").QueueState} QueueState
 * @typedef {QueueEvent & {passed?: number}} QueueTransition a queue event; op "passed" (the stream's alone,
 *   docs/stream.md) counts graphChanges items that came and went within a frame
 * @typedef {{object: ObjectRef, change?: string, queued?: boolean, inFlight?: boolean, queuedItems: number, inFlightItems: number,
 *   backoffUntil?: number|null, retries?: number, since: number}} QueueItem
 * @typedef {GcAction & {time?: number}} Action a worker's action; time: when it came (epoch ms), none in a snapshot
 * @typedef {{name: string, depth: number, inFlight: number, adds: number, retries: number, items: Map<string, QueueItem>,
 *   history: number[], maxHistory: number}} Queue
 */

export const QUEUE_NAMES = ["graphChanges", "attemptToDelete", "attemptToOrphan"];


/** How long a removed object stays drawn (red, fading) before it goes. */
export const GHOST_MS = 1600;
/** How long a new object is highlighted. */
export const BORN_MS = 1200;
/**
 * An object's deletion is shown at least this long, its removal after: a Pod no kubelet
 * runs is removed a millisecond after its deletion began, in the same frame, and would go
 * from normal to removed unseen. While held, the canvas draws it being deleted and its
 * cascade counts it not yet gone (Store.shownDeleting), so a box and its count agree in every frame.
 */
export const DELETION_SEEN_MS = 250;

const MAX_ACTIONS = 200;
/** Queue depth samples kept: one a second, five minutes. */
const HISTORY = 300;

export class Store {
  constructor() {
    /** @type {Map<string, NodeState>} */ this.nodes = new Map();
    /** uids of the nodes in each namespace ("": cluster-scoped), so that a namespace can be
     * laid out again without a walk over every node. @type {Map<string, Set<string>>} */
    this.byNamespace = new Map();
    /** dependents of each uid (owners that are not nodes included), from the nodes' owners.
     * @type {Map<string, Set<string>>} */ this.dependents = new Map();
    /** removed nodes still drawn while they fade (removed: by a nodeRemoved event, not
     * missing from a snapshot). deletingSince: when the page saw its deletion begin, if it did.
     * @type {Map<string, {node: NodeState, at: number, removed?: boolean, deletingSince?: number}>} */
    this.ghosts = new Map();
    /** removed objects still shown being deleted (DELETION_SEEN_MS): until when, the state
     * they were in when removed, and their owners (the removal of one ends the hold: a
     * foreground cascade's next step, whose order stays the stream's).
     * @type {Map<string, {until: number, state: string, owners: string[]}>} */
    this.shownDeleting = new Map();
    /** @type {Map<string, number>} */ this.born = new Map();
    /** @type {Map<string, Queue>} */ this.queues = new Map();
    /** newest first. @type {Action[]} */ this.actions = [];
    /** @type {{resources: string[], unsynced?: string[], failing?: Record<string,string>, discovery?: string,
     *   discoveryFailures?: Record<string, {error: string, since: string}>}} */
    this.sync = { resources: [] };
    /** The sync state changed (the discovery banner looks again). */
    this.syncChanged = false;
    /** the objects being deleted (the stuck count reads them, not every node): when the page
     * saw each deletion begin (performance.now(); -Infinity: before the page looked).
     * @type {Map<string, number>} */
    this.deleting = new Map();
    this.mode = "";
    this.seq = 0;
    /** The moment the store holds (epoch ms) when it is not the live state (time travel), else null. @type {number|null} */
    this.clock = null;
    this.applied = 0;
    // What changed since the views last took it (frame.js reads and clears these).
    /** how many snapshots were applied (a test waits for one) */
    this.snapshots = 0;
    /** namespaces whose layout must be redone; "*" means all. @type {Set<string>} */
    this.dirtyNamespaces = new Set();
    /** uids whose drawing changed. @type {Set<string>} */ this.touched = new Set();
    /** when each namespace last had a removal still fading (see expire). @type {Map<string, number>} */
    this.removedAt = new Map();
    this.queuesChanged = false;
    /** A shadow-mode decision was made or settled (the collector-health strip asks again). */
    this.shadowChanged = false;
    /** Event types applyEvents has no case for (a newer server's): it skips them. @type {Set<string>} */
    this.unknownTypes = new Set();
    this.resetQueues([]);
  }

  /**
   * @param {SnapshotFrame} frame
   * @param {boolean} [fade] objects missing from it fade out as removals do; false when the
   *   page asked for other objects (summary first: detail.js), those it no longer holds are not gone
   */
  applySnapshot(frame, fade = true) {
    const now = performance.now();
    const incoming = new Map();
    for (const n of frame.nodes || []) incoming.set(n.uid, n);
    // Objects that vanished while we were away fade out like any removal.
    if (fade) {
      for (const [uid, n] of this.nodes) if (!incoming.has(uid)) this.ghosts.set(uid, { node: n, at: now });
    } else {
      // Only the namespaces whose objects changed are laid out again (one in the middle of
      // a cascade waits for it to settle, frame.js), and a deletion keeps when the page saw it begin.
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
    this.deleting = new Map();
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
      // A resumed stream may repeat what the store holds already (a ?since= older than its
      // seq): an event is applied once, in order, or not at all.
      if (e.seq <= this.seq) continue;
      this.applied++;
      // An event carries its type's payload (events.gen.js's PAYLOAD_OF): the casts say which.
      switch (e.type) {
        case "nodeAdded":
        case "nodeUpdated":
          this.upsert(/** @type {NodeState} */ (e.node), now);
          break;
        case "nodeRemoved":
          this.remove(/** @type {NodeState} */ (e.node).uid, now);
          break;
        case "edgeAdded":
        case "edgeRemoved":
          this.patchEdge(e.type === "edgeAdded", /** @type {Edge} */ (e.edge));
          break;
        case "queue":
          this.applyQueueEvent(/** @type {QueueTransition} */ (e.queue), Date.parse(e.time) || Date.now());
          break;
        case "action":
          this.addAction({ .../** @type {GcAction} */ (e.action), time: Date.parse(e.time) || Date.now() });
          break;
        case "sync":
          this.sync = /** @type {SyncState} */ (e.sync);
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
      // Its owners and dependents may sit in other namespaces (invalid references).
      for (const o of n.owners || []) {
        const owner = this.nodes.get(o.uid);
        if (owner) this.markNamespace(owner.namespace);
      }
    }
  }

  /** @param {string} uid @param {number} now */
  remove(uid, now) {
    const n = this.nodes.get(uid);
    if (!n) return; // a removal of an object the client never had (docs/stream.md: ignore)
    const shown = stateOf(this, n); // as it stood, before its links go
    this.unlink(n);
    this.index(n, false);
    const deletingSince = this.deleting.get(uid);
    this.deleting.delete(uid);
    this.nodes.delete(uid);
    this.born.delete(uid);
    this.ghosts.set(uid, { node: n, at: now, removed: true, deletingSince });
    this.touched.add(uid);
    for (const [u, h] of this.shownDeleting) if (h.owners.includes(uid)) this.release(u);
    const owners = (n.owners || []).map((o) => o.uid);
    // Not when an owner went since its deletion began: it would be shown after that owner.
    const ownerGone = owners.some((o) => (this.ghosts.get(o)?.at ?? -Infinity) >= /** @type {number} */ (deletingSince));
    if (deletingSince !== undefined && now < deletingSince + DELETION_SEEN_MS && !ownerGone) {
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
    if (added === has) return; // the node events already carry it
    this.unlink(n);
    const owner = this.nodes.get(e.owner);
    n.owners = added
      ? [...owners, { uid: e.owner, kind: owner?.kind || "", name: owner?.name || "", apiVersion: owner?.apiVersion || "",
          controller: e.controller, blockOwnerDeletion: e.blockOwnerDeletion }]
      : owners.filter((o) => o.uid !== e.owner);
    this.link(n);
    this.markNamespace(n.namespace);
  }

  /** @param {NodeState} n */
  link(n) {
    for (const o of n.owners || []) {
      let s = this.dependents.get(o.uid);
      if (!s) this.dependents.set(o.uid, (s = new Set()));
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
      if (!s) this.byNamespace.set(ns, (s = new Set()));
      s.add(n.uid);
    } else if (s) {
      s.delete(n.uid);
      if (s.size === 0) this.byNamespace.delete(ns);
    }
  }

  /** @param {string|undefined} ns */
  markNamespace(ns) {
    this.dirtyNamespaces.add(ns || ""); // a cluster-scoped object has no namespace on the wire
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
    /** @type {Map<string, number>} */
    const lastRemoval = new Map();
    for (const g of this.ghosts.values()) {
      const ns = g.node.namespace || "";
      lastRemoval.set(ns, Math.max(lastRemoval.get(ns) ?? 0, g.at));
    }
    for (const [uid, g] of this.ghosts) {
      if (now - /** @type {number} */ (lastRemoval.get(g.node.namespace || "")) > GHOST_MS) {
        this.ghosts.delete(uid);
        this.markNamespace(g.node.namespace);
        gone = true;
      }
    }
    for (const [uid, t] of this.born) if (now - t > BORN_MS) this.born.delete(uid);
    for (const [uid, h] of this.shownDeleting) if (now >= h.until || !this.ghosts.has(uid)) this.release(uid);
    this.removedAt = lastRemoval;
    return gone;
  }

  /** @param {QueueState[]} queues the snapshot's queue states */
  resetQueues(queues) {
    const old = this.queues;
    this.queues = new Map();
    for (const name of QUEUE_NAMES) {
      const q = /** @type {Partial<QueueState>} */ (queues.find((x) => x.name === name) || {});
      /** @type {Map<string, QueueItem>} */
      const items = new Map();
      for (const it of q.items || []) {
        // An object can have several items in a queue (graphChanges: one per change).
        const queuedItems = it.queuedItems ?? (it.queued ? 1 : 0), inFlightItems = it.inFlightItems ?? (it.inFlight ? 1 : 0);
        items.set(it.object.uid, { object: it.object, change: it.change, queued: queuedItems > 0, inFlight: inFlightItems > 0,
          queuedItems, inFlightItems, backoffUntil: it.backoffUntil ? Date.parse(it.backoffUntil) : null, retries: it.retries || 0,
          since: Date.parse(it.since) || Date.now() });
      }
      this.queues.set(name, { name, depth: q.depth || 0, inFlight: q.inFlight || 0, adds: q.adds || 0, retries: q.retries || 0, items,
        history: old.get(name)?.history || [], maxHistory: HISTORY });
    }
    if (queues.length) {
      this.actions = [];
      for (const q of queues) for (const a of q.recent || []) this.actions.push({ ...a, time: undefined });
      this.actions.reverse();
    }
  }

  /** The engine's queue mirror (gc/feed.go), applied to one transition. @param {QueueTransition} e @param {number} now */
  applyQueueEvent(e, now) {
    const q = this.queues.get(e.queue);
    if (!q) return;
    if (e.op === "passed") {
      // graphChanges items added, taken and done within one frame, counted (docs/stream.md).
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
    // Items are counted per object: graphChanges holds one per change, several of one
    // object at a time. A merged add found the same item waiting: the queue did not grow.
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
    /** @type {{queue: string, item: QueueItem}[]} */
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
    const seen = new Set();
    const stack = [...uids].filter((u) => this.nodes.has(u)); // unknown uids contribute nothing
    while (stack.length) {
      const u = /** @type {string} */ (stack.pop());
      if (seen.has(u)) continue;
      seen.add(u);
      const n = this.nodes.get(u);
      for (const o of n?.owners || []) if (!seen.has(o.uid)) stack.push(o.uid);
      for (const d of this.dependents.get(u) || []) if (!seen.has(d)) stack.push(d);
    }
    return seen;
  }
}

/** @param {NodeState} a @param {NodeState} b */
function sameOwners(a, b) {
  const x = a.owners || [], y = b.owners || [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    if (x[i].uid !== y[i].uid || !!x[i].controller !== !!y[i].controller) return false;
  }
  return true;
}
