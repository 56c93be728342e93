// @ts-check
// Cascades: the deletions of owners with dependents, followed from the stream. A cascade
// starts when an owner is seen being deleted in the foreground (foregroundDeletion), with
// orphaning (orphan), or removed while it still had dependents (background); it ends once
// the owner is gone and every member is gone or stays (kept, or orphaned). A namespace's
// deletion is one too: it starts when the Namespace is seen being deleted, holds the
// namespace's content (which the namespace controller deletes, not the collector) and ends
// once the Namespace is gone. Progress is counted from the store, so it is exactly what the
// graph draws.
//
// How a cascade is counted — the one definition, which every place that counts one uses
// (the strip, the owner's box, the object panel, the glance, the history's timeline and
// list, time travel, replays; the history's own is history.Cascade.Count, the same in Go;
// docs/ui.md says it in words):
//   - Its members are the object deleted (the owner: counted) and every object the delete
//     takes along: its dependents through valid ownerReferences, transitively (an Orphan
//     delete: its direct dependents), as they are when the cascade is seen, plus any that
//     join while it runs; and the objects that name a member through an invalid reference
//     (the collector keeps them). A Namespace's members are the Namespace and its content.
//   - A member stays when the delete leaves it: orphaned (its reference into the cascade
//     removed: an Orphan delete, or another owner keeps it) or kept (its only reference
//     into the cascade is invalid). That is an outcome, counted apart, not work pending.
//   - gone: the members no longer in the graph. of: the members that do not stay.
//   - Said "N of M gone", then "· K kept" (an Orphan delete: "· K orphaned"): tally()
//     counts, countWords() says it.

import { h, describe, patchChildren } from "./dom.js";
import { blockingDependents, holdingFinalizers, invalidReason } from "./states.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./store.js").NodeState} NodeState */
/**
 * @typedef {{owner: string, ref: {kind: string, namespace?: string, name: string}, policy: "Foreground"|"Background"|"Orphan"|"Namespace",
 *   start: number, end: number|null, members: Set<string>, gone: number, orphaned: number, total: number, ownerGone: boolean,
 *   waitingOn: string, eta: number|null, nested: boolean, progressedAt: number, namespaces: Set<string>,
 *   estimated: boolean, baseline: boolean, explained: string}} Cascade
 *   start and end: epoch ms on the clock of the moment shown (Cascades.now: the wall clock live, the recorded
 *   moment in time travel); eta in ms; nested: its owner is a member of another cascade (the strip lists only
 *   the outermost); progressedAt: when its counts last changed (performance.now(): the layout's hold is
 *   wall time); namespaces: where its objects are; estimated: its start is the page's (or the
 *   deletionTimestamp's, to the second), not yet the recording's; baseline: the page knows how many
 *   objects it began with (false only for a namespace deletion the page found under way: its
 *   members gone before are not known, so it says how many are left, not how many went);
 *   explained: what the engine last said holds a namespace deletion (its explanation's next step);
 *   total: every member, the owner included (members holds the others); gone: those no longer in the
 *   graph; orphaned: those that stay (kept, or orphaned): see tally
 */

/** Finished cascades stay listed this long. */
const KEEP_MS = 120_000;
/** At most this many finished cascades are kept. */
const KEEP_FINISHED = 20;
/** A deletionTimestamp's precision (RFC 3339, whole seconds). */
const TIMESTAMP_MS = 1000;

/** A Namespace object (whose deletion is the namespace controller's, not the collector's). @param {{apiVersion?: string, kind: string}} n */
function isNamespaceObject(n) {
  return n.kind === "Namespace" && n.apiVersion === "v1";
}

export class Cascades {
  /**
   * @param {Store} store
   * @param {() => number} [clock] the moment shown, epoch ms: now (live), or the recorded
   *   moment (time travel: frozen while paused, the playback clock while playing)
   */
  constructor(store, clock = Date.now) {
    this.store = store;
    /** The moment shown, epoch ms: what elapsed times are measured to. */
    this.now = clock;
    /**
     * The recording's cascade of owner uid under way at moment t (time travel: the
     * timeline's recorded cascades), if it knows: when it began, and how many objects it
     * concerned in all (a cascade seen from its middle had members gone from the moment).
     * @type {((uid: string, t: number) => {start: number, objects?: number}|undefined)|null}
     */
    this.recorded = null;
    /** by owner uid. @type {Map<string, Cascade>} */ this.active = new Map();
    /** Namespaces seen not being deleted: a deletion of one of them is seen from its start. @type {Set<string>} */
    this.seenAlive = new Set();
    /** newest first. @type {Cascade[]} */ this.finished = [];
    this.changed = false;
    /** performance.now() of the last observe(): what was removed since is this look's. */
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
        // Removed with dependents still naming it: the collector deletes them in the background.
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
    // Begun before the page saw it (a page opened on a stuck deletion, a moment of time
    // travel in the middle of one): from the owner's deletionTimestamp, when that says so
    // beyond its precision of a second; in time travel, from the recording's cascades once
    // known (refineStart), to the millisecond.
    const deleted = Date.parse(n.deletionTimestamp || "");
    const underWay = deleted < t - TIMESTAMP_MS;
    const start = underWay ? deleted : t;
    /** @type {Cascade} */
    const c = { owner: uid, ref: { kind: n.kind, namespace: n.namespace, name: n.name }, policy, start, end: null,
      members, gone: 0, orphaned: 0, total: members.size + 1, ownerGone: false, waitingOn: "", eta: null, nested: false,
      progressedAt: now, namespaces: new Set([n.namespace || ""]), estimated: true,
      // A namespace's members that went before the page saw its deletion are not known:
      // only one the page saw alive, or whose deletion began just now, has a baseline.
      baseline: !ns || !underWay || this.seenAlive.has(uid), explained: "" };
    if (ns) {
      c.namespaces.add(n.name);
      // Its box says so after its title: laid out again (once it holds still) to be wide enough.
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
      if (!c.nested) for (const o of this.active.values()) if (o !== c && o.members.has(c.owner)) c.nested = true;
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
    while (this.finished.length > KEEP_FINISHED || (this.finished.length && t - /** @type {number} */ (this.finished[this.finished.length - 1].end) > KEEP_MS)) {
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
    if (s === undefined || !Number.isFinite(s) || s > t) return;
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
        if (c.members.has(d)) continue; // new members while it runs
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
    // Seen from its middle (time travel): the recording's members the moment does not show
    // went before it, deleted (or, in an Orphan cascade, let go of).
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
    // Held by another controller's finalizer, the cascade goes on when that controller
    // (or a person) lets go: no rate of its own predicts when.
    c.eta = !held && gone > 0 && left > 0 ? (elapsed / gone) * left : null;
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
    c.eta = c.baseline && !held && gone > 0 && left > 0 ? ((t - c.start) / gone) * left : null;
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
    return (n.owners || []).some((o) => (o.uid === c.owner || (c.policy !== "Orphan" && c.members.has(o.uid))) &&
      !invalidReason(n, store.nodes.get(o.uid) || store.ghosts.get(o.uid)?.node));
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
    /** @type {Map<string, number>} */
    const kinds = new Map();
    for (const n of below) kinds.set(n.kind, (kinds.get(n.kind) || 0) + 1);
    const what = [...kinds].map(([k, n]) => `${n} ${k}${n === 1 ? "" : "s"}`).join(", ");
    const more = blockers.length > 1 ? ` and ${blockers.length - 1} more` : "";
    return `${b.kind} ${b.name}${what ? ` (${what})` : ""}${more}`;
  }

  /** Dependents of uid that still exist, through valid references. @param {string} uid */
  liveDependents(uid) {
    const { store } = this;
    const owner = store.nodes.get(uid) || store.ghosts.get(uid)?.node;
    return [...(store.dependents.get(uid) || [])].filter((d) => {
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
    /** @type {Set<string>} */
    const seen = new Set();
    const stack = [uid];
    while (stack.length) {
      const u = /** @type {string} */ (stack.pop());
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
}

/**
 * One line of progress: "8 of 11 gone · waiting on ReplicaSet x (3 Pods) · ~2 s left".
 * @param {Cascade} c @param {number} now the moment shown (Cascades.now())
 */
export function progressText(c, now) {
  const parts = [countText(c)];
  if (c.end !== null) {
    parts.push(`done in ${secs(c.end - c.start)}`);
    return parts.join(" · ");
  }
  parts.push(cascadeCaption(c, now));
  return parts.join(" · ");
}

/**
 * What a running cascade waits on and how long it has left, as its owner's box shows it under the count.
 * @param {Cascade} c @param {number} now the moment shown (Cascades.now())
 */
export function cascadeCaption(c, now) {
  const parts = [];
  // A namespace's hold is said whole ("held by finalizer …"), or is the engine's next step.
  if (c.waitingOn) parts.push(c.policy === "Namespace" ? c.waitingOn : `waiting on ${c.waitingOn}`);
  parts.push(c.eta !== null ? `~${secs(c.eta)} left` : `${secs(now - c.start)} so far`);
  return parts.join(" · ");
}

/**
 * @typedef {{gone: number, of: number, kept: number}} Tally a cascade's count (see the
 *   definition at the top of this file): of its members that do not stay, how many are
 *   gone; how many stay (kept, or orphaned)
 */

/**
 * A cascade's count, as every place says it (the strip, the owner's box, the panel, the
 * glance): the owner is one of its members, so "6 of 6 gone" for a Deployment, its
 * ReplicaSet and 4 Pods. @param {Cascade} c @returns {Tally}
 */
export function tally(c) {
  return { gone: c.gone, of: c.total - c.orphaned, kept: c.orphaned };
}

/**
 * A recorded cascade's count (the history's timeline and list): the same definition, from
 * what the recording says of it (history.Cascade.Count on the server's side).
 * @param {{objects?: number, deleted?: number, kept?: number}} rc @returns {Tally|null} null: the recording does not say
 */
export function recordedTally(rc) {
  if (rc.objects === undefined || rc.deleted === undefined) return null;
  const kept = rc.kept || 0;
  return { gone: rc.deleted, of: rc.objects - kept, kept };
}

/**
 * A count in words: "5 of 6 gone", then "· 1 kept" (an Orphan delete: "· 3 orphaned").
 * @param {Tally} t @param {string} policy
 */
export function countWords(t, policy) {
  const kept = t.kept ? ` · ${t.kept} ${policy === "Orphan" ? "orphaned" : "kept"}` : "";
  return `${t.gone} of ${t.of} gone${kept}`;
}

/**
 * Its count in words (countWords); a namespace deletion found under way, whose members
 * gone before are not known, "5 left".
 * @param {Cascade} c
 */
export function countText(c) {
  const t = tally(c);
  // No baseline: how many there were is not known, only what is left (and, once over, what went since).
  if (!c.baseline) return c.end === null ? `${t.of - t.gone} left` : `${t.gone} gone`;
  return countWords(t, c.policy);
}

/** How far a cascade is, 0 to 1 (0 while it has no baseline: how far is not known). @param {Cascade} c */
export function progress(c) {
  if (c.end !== null) return 1;
  if (!c.baseline) return 0;
  return (c.gone + c.orphaned) / Math.max(1, c.total);
}

/**
 * What a namespace's box says after its title while it is deleted: "  ·  Terminating  ·  3 of
 * 6 gone" (and once it is gone, "deleted"); widest: at its widest, for the layout to make room.
 * @param {Cascade} c @param {boolean} [widest]
 */
export function namespaceStatus(c, widest = false) {
  if (widest) return `  ·  Terminating  ·  ${c.total} of ${c.total} gone`; // (a namespace's members never stay)
  return `  ·  ${c.end === null ? "Terminating" : "deleted"}  ·  ${countText(c)}`;
}

/** "Foreground", or "namespace deletion". @param {Cascade} c */
function policyText(c) {
  return c.policy === "Namespace" ? "namespace deletion" : c.policy;
}

/**
 * The strip over the graph: cascades running and recently finished, newest first, each a
 * button that selects its owner.
 */
export class CascadeStrip {
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
      return h("button.cascade", {
        type: "button", "data-owner": c.owner, "data-state": running ? "running" : "done", "data-policy": c.policy,
        title: c.policy === "Namespace" ? `Deletion of namespace ${c.ref.name} (the namespace controller deletes its content, then the namespace): ${progressText(c, now)}`
          : `${c.policy} deletion of ${describe(c.ref)}: ${progressText(c, now)}`,
        onclick: () => this.select(c.owner),
      }, h("span.policy", null, policyText(c)), h("b", null, `${c.ref.kind} ${c.ref.name}`), bar,
      h("span.muted", null, `${countText(c)} · ${secs(running ? now - c.start : /** @type {number} */ (c.end) - c.start)}`));
    }));
  }
}

/** @param {number} ms as "2.5 s" (cascades are watched in seconds); a seek back under a cascade of the moment left reads 0 until the new state is in */
function secs(ms) {
  ms = Math.max(0, ms);
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
