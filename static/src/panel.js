// @ts-check
// The object panel: who the selected object is, its owners and dependents, finalizers,
// the engine's flags and queue positions, and the engine's own explanation in words,
// with a link to every object it names; for a deletion the collector does not own alone,
// what the explanation's deletion report adds (deletion.js): a namespace's deletion, and who
// added each finalizer that holds the object.
//
// It stays cheap while a cascade changes the object many times a second: it redraws at
// most every RENDER_EVERY_MS, asks the engine again at a fixed interval (never waiting
// for the changes to stop, so the explanation is at most about a second old), and lists
// dependents and blockers in virtualized lists.

import { errorText } from "./actionresult.js";
import { h, clock, patchChildren } from "./dom.js";
import { explain, dismissOrphanMarks } from "./api.js";
import { stateOf, STATES, holdingFinalizers, invalidReason, blockingDependents } from "./states.js";
import { VirtualList } from "./vlist.js";
import { namespaceView, originView, riskLine, age } from "./deletion.js";

/** What each cause of an orphan mark says (docs/api.md, GET /api/v1/objects/{uid}). */
export const ORPHAN_CAUSES = /** @type {Record<string, string>} */ ({
  orphanDelete: "its owner was deleted with propagationPolicy Orphan: the collector removed the reference and kept the object",
  ownerAbsent: "the owner it named is gone (a dangling reference): the collector removed the reference, another owner keeps the object",
  ownerDeletingDependents: "its owner is being deleted in the foreground while another owner keeps the object: the collector removed only that reference",
});

/** "3m 12s ago", "just now". @param {number} t epoch ms */
export function agoText(t) {
  const s = (Date.now() - t) / 1000;
  return s < 1 ? "just now" : `${age(s)} ago`;
}

/** Writes again every relative time under root ("30s ago", then "31s ago"). @param {ParentNode} root */
export function retickAgo(root) {
  for (const el of root.querySelectorAll("[data-ago]")) {
    const text = agoText(Number(/** @type {HTMLElement} */ (el).dataset.ago));
    if (el.textContent !== text) el.textContent = text;
  }
}

/** @typedef {import("./store.js").Store} Store */

/** While the object changes, the engine is asked again at most this often. */
export const EXPLAIN_EVERY_MS = 500;
/** While the object is being deleted or queued, it is asked again this often even when
 * nothing touched it in the store (a blocker's own blocker may have changed). */
const EXPLAIN_POLL_MS = 1000;
/** The panel redraws at most this often while the object changes under it. */
const RENDER_EVERY_MS = 250;

/** @param {number} n */
export const fmt = (n) => n.toLocaleString("en-US");
/** "1 blocking dependent", "1,560 blocking dependents". @param {number} n @param {string} noun */
export const counted = (n, noun) => `${fmt(n)} ${noun}${n === 1 ? "" : "s"}`;

/**
 * The counts of a foreground deletion's blockers, in words: "1,560 blocking dependents,
 * 20 in flight, 3 held by finalizer example.com/hold".
 * @param {any} ex an explanation
 */
export function blockerSummaryText(ex) {
  const s = ex.blockerSummary || { total: (ex.blockers || []).length + (ex.hiddenBlockers || 0) };
  const parts = [counted(s.total, "blocking dependent")];
  if (s.inFlight) parts.push(`${fmt(s.inFlight)} in flight`);
  if (s.held) parts.push(`${fmt(s.held)} held by finalizer${s.heldBy?.length === 1 ? "" : "s"} ${(s.heldBy || []).join(", ")}`);
  if (s.waiting) parts.push(`${fmt(s.waiting)} waiting for their own`);
  if (s.beingDeleted) parts.push(`${fmt(s.beingDeleted)} being deleted`);
  if (ex.hiddenBlockers) parts.push(`${fmt(ex.hiddenBlockers)} you may not see`);
  return parts.join(", ");
}

/**
 * The blocker tree as rows of a flat list, each with its depth.
 * @param {any[]} bs @param {number} hidden @param {number} depth @param {any[]} out
 * @returns {{b?: any, hidden?: number, depth: number}[]}
 */
function flatten(bs, hidden, depth, out) {
  for (const b of bs) {
    out.push({ b, depth });
    if (b.blockers?.length || b.hidden) flatten(b.blockers || [], b.hidden || 0, depth + 1, out);
  }
  if (hidden) out.push({ hidden, depth });
  return out;
}

export class ObjectPanel {
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
    /** @type {string|null} */ this.uid = null;
    /** @type {any} */ this.explanation = null;
    this.explainError = "";
    /** when the explanation shown was received (epoch ms) */ this.explainedAt = 0;
    this.seq = 0;
    this.asking = false;
    this.askAgain = false;
    this.lastAsk = -Infinity;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.askTimer = undefined;
    this.lastRender = -Infinity;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.renderTimer = undefined;
    /** names the explanation's words may link, built once per explanation. @type {Map<string, any>|null} */
    this.names = null;
    /** the uids of the blockers an explanation names (blockerUids). @type {{ex: any, uids: Set<string>}|null} */
    this.namedBlockers = null;
    /** @type {VirtualList<any>} */
    this.depsList = new VirtualList({ id: "dependents-list", className: "refs", render: (d) => this.depRow(d) });
    /** @type {VirtualList<{b?: any, hidden?: number, depth: number}>} */
    this.blockerList = new VirtualList({ id: "blockers-list", className: "refs", render: (r) => this.blockerRow(r) });
    /** @type {Set<string>} */ this.blocking = new Set();
    /** the object as last seen in the store: once gone (its fading over), what became of it is still told */
    /** @type {{uid: string, node: any}|null} */ this.last = null;
    /**
     * Whether the recording holds a cascade the object took part in, as the server last said
     * (asked again when the object's deletion state changes, and every few seconds while it
     * is being deleted and has none yet).
     * @type {{uid: string, key: string, has: boolean|null, at: number}|null}
     */
    this.cascadeKnown = null;
    /** the object whose orphan marks are being dismissed @type {string|null} */ this.dismissing = null;
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
    /** @type {Set<string>} */
    const uids = new Set();
    const visit = (/** @type {any[]|undefined} */ bs) => bs?.forEach((b) => { if (b.object?.uid) uids.add(b.object.uid); visit(b.blockers); });
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
    const n = uid ? this.store.nodes.get(uid) : undefined;
    if (!uid || !n || document.hidden) return;
    if (!this.explanation || n.beingDeleted || n.deletingDependents || this.store.queueStatus(uid).length) this.scheduleAsk();
  }

  /** Asks the engine at once, or as soon as EXPLAIN_EVERY_MS have passed since the last time. */
  scheduleAsk() {
    if (!this.uid || this.askTimer !== undefined) return;
    if (this.asking) {
      this.askAgain = true;
      return;
    }
    const wait = Math.max(0, this.lastAsk + EXPLAIN_EVERY_MS - performance.now());
    this.askTimer = setTimeout(() => {
      this.askTimer = undefined;
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
    if (this.actions.travelAt?.() != null) return; // a recorded moment: the engine explains only the live state
    if (!this.store.nodes.has(uid)) {
      // Gone (or never seen): the engine has nothing to explain; don't ask for a 404.
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
        const err = /** @type {any} */ (e);
        if (err.status === 404) this.explanation = null;
        // Otherwise the last explanation stays, marked as not refreshed.
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
    if (this.renderTimer !== undefined) return;
    const wait = Math.max(0, this.lastRender + RENDER_EVERY_MS - performance.now());
    this.renderTimer = setTimeout(() => {
      this.renderTimer = undefined;
      this.render();
    }, wait);
  }

  /** A link that selects an object of the graph. @param {{uid: string, kind: string, name: string, namespace?: string}} o */
  link(o) {
    const known = this.store.nodes.has(o.uid);
    return h("a", { href: `?sel=${encodeURIComponent(o.uid)}`, class: known ? "obj" : "obj missing", "data-uid": o.uid,
      onclick: (/** @type {Event} */ ev) => {
        ev.preventDefault();
        this.actions.select(o.uid);
      } }, `${o.kind} ${o.name}`);
  }

  /** @param {any} d a dependent */
  depRow(d) {
    // Its reference to this object is invalid (cross-namespace, or a cluster-scoped object
    // naming a namespaced owner): tagged as the owners list says it.
    const bad = this.uid ? invalidReason(d, this.store.nodes.get(this.uid)) : "";
    return h("span", null, this.link(d), this.blocking.has(d.uid) ? h("span.tag.block", null, "blocks") : null,
      bad ? h("span.tag.invalid", { title: `invalid reference: ${bad}` }, "invalid reference") : null,
      d.beingDeleted ? h("span.tag", null, "being deleted") : null);
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
    const key = n ? (n.beingDeleted ? "deleting" : "present") : "gone";
    const k = this.cascadeKnown;
    const stale = !k || k.uid !== uid || k.key !== key || (k.has === false && key !== "present" && performance.now() - k.at > 3000);
    if (stale && !(k?.uid === uid && k.has === null)) {
      const mine = { uid, key, has: /** @type {boolean|null} */ (null), at: performance.now() };
      this.cascadeKnown = mine;
      ask(uid).then((has) => { mine.has = has; }, () => { mine.has = false; }).finally(() => {
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
    // The collector's own finalizers (foregroundDeletion, orphan) are never another's hold.
    const held = holdingFinalizers(b);
    return h("span", pad, this.link(b.object),
      held.length ? h("span", null, " held by ", ...held.map((f) => h("code.hold", null, f))) : null,
      b.cycle ? h("span.tag", null, "already above: a cycle")
        : b.deletingDependents ? h("span.tag", null, "waits for its own")
          : b.inFlight ? h("span.tag.flight", null, "in flight")
            : b.beingDeleted && !held.length ? h("span.tag", null, "being deleted") : null);
  }

  /** The deletion this object owns, as it goes: a bar and "8 of 11 gone · waiting on …". @param {string} uid */
  cascadeProgress(uid) {
    const c = this.actions.cascade?.(uid);
    if (!c) return null;
    return h("div.cascade-progress", { id: "cascade-progress", "data-state": c.running ? "running" : "done" },
      h("span.meter", null, h("span", { style: `width: ${Math.round(c.progress * 100)}%` })), h("span", null, c.text));
  }

  render() {
    clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
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
    // Removed: the engine holds no flags of it any more; the last ones it had are on hover.
    if (!n) flags.splice(0, flags.length, h("span.flag.removed", { id: "object-removed-flag",
      title: flags.length ? `last seen with: ${flags.map((f) => f.textContent).join(", ")}` : "" }, "removed"));

    const owners = (node.owners || []).map((/** @type {any} */ o) => {
      const ownerNode = store.nodes.get(o.uid);
      const status = this.explanation?.owners?.find((/** @type {any} */ x) => x.uid === o.uid);
      const bad = invalidReason(node, ownerNode);
      return h("li", null, this.link(o),
        o.controller ? h("span.tag", { title: "controller: true" }, "controller") : null,
        o.blockOwnerDeletion ? h("span.tag.block", { title: "blockOwnerDeletion: true" }, "blocks") : null,
        status ? h(`span.tag.owner-${status.state}`, { title: status.reason }, status.state) : null,
        bad ? h("div.warn", null, "invalid reference: " + bad) : status?.reason ? h("div.muted", null, status.reason) : null);
    });
    const deps = /** @type {import("./store.js").NodeState[]} */ ([...(store.dependents.get(uid) || [])].map((d) => store.nodes.get(d)).filter((d) => !!d));
    // Plain comparisons: localeCompare over 2,000 names costs a frame.
    deps.sort((a, b) => a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    this.blocking = new Set(n ? blockingDependents(store, uid).map((x) => x.uid) : []);
    const holds = holdingFinalizers(node);
    const qs = store.queueStatus(uid).map(({ queue, item }) => {
      const what = item.inFlight ? "a worker has it" : item.queued ? "queued" : item.backoffUntil ? `in backoff until ${clock(item.backoffUntil)}` : "known";
      return h("li", null, h("b", null, queue), `: ${what}${item.retries ? `, ${item.retries} retries` : ""}`);
    });

    // A removed object's last explanation is history: it is not shown as if current; in time
    // travel, neither is the live one.
    const travelAt = this.actions.travelAt?.() ?? null;
    const ex = n && travelAt === null ? this.explanation : null;
    // The stream is ahead of the explanation (asked at most twice a second): when the object
    // it explains has changed since, or a blocker it names is gone, it is shown dimmed, as
    // history, until the next answer.
    const outdated = !!(ex && n && (!!ex.object.beingDeleted !== !!n.beingDeleted || !!ex.object.deletingDependents !== !!n.deletingDependents ||
      (ex.object.finalizers || []).join() !== (n.finalizers || []).join() || (ex.object.owners || []).length !== (n.owners || []).length ||
      [...this.blockerUids()].some((u) => store.ghosts.get(u)?.removed)));
    /** @type {(Node|string|null)[]} */
    const why = [];
    if (ex) {
      // A namespace being deleted waits for the namespace controller: its report's next
      // step is the one that counts (the server already says it so; an older one may not).
      const nsr = ex.deletion?.namespace;
      const terminating = !!nsr?.deletionTimestamp;
      why.push(h("p.next", { id: "next-step" }, h("b", null, "Next step: "), this.linkify(`${terminating && nsr.next ? nsr.next : ex.next}.`)));
      const words = [...(ex.words || [])];
      for (const w of [...(terminating ? nsr.words || [] : []), ...(ex.deletion?.discovery || [])]) if (!words.includes(w)) words.push(w);
      for (const w of words) {
        // The holds below say the same, with the command that releases each.
        if (ex.holds?.length && w.startsWith("held by finalizer ")) continue;
        why.push(h("p.word", null, this.linkify(w)));
      }
      if (ex.deletion?.error) why.push(h("p.warn", null, `More on its deletion could not be read: ${ex.deletion.error}`));
      if (nsr) why.push(namespaceView(nsr, (o) => this.link(o)));
      why.push(...this.holds(ex, node));
      if (ex.blockers?.length || ex.hiddenBlockers) {
        this.blockerList.set(flatten(ex.blockers || [], ex.hiddenBlockers || 0, 0, []));
        why.push(h("div.blockers", null, h("b", null, "Blocking dependents"),
          h("p.summary", { id: "blocker-summary" }, blockerSummaryText(ex)), this.blockerList.el));
      }
      if (ex.lastAction) {
        const a = ex.lastAction;
        why.push(h("p.muted", null, `Last worker action: ${a.queue} ${a.verb}${a.policy ? " " + a.policy : ""}${a.error ? " — " + errorText(a) : ""}${a.reason ? " — " + a.reason : ""}`));
      }
      why.push(h("p.muted.asof", { id: "explained-at", "data-at": String(this.explainedAt) },
        this.explainError ? `As of ${clock(this.explainedAt)}; asking again failed: ${this.explainError}`
          : outdated ? `As of ${clock(this.explainedAt)}: the object or what it waits for has changed since; asking the engine again…` : `As of ${clock(this.explainedAt)}.`));
    } else if (travelAt !== null) {
      why.push(h("p.muted", { id: "travel-explain" }, document.body.dataset.replay === "true"
        ? `As recorded at ${clock(travelAt)}. A replay has no engine to explain it: its decisions are in the History tab.`
        : `As recorded at ${clock(travelAt)} (time travel). The engine explains only the live state: back to live (Esc) to ask it.`));
    } else why.push(h("p.muted", null, !n ? "Deleted: it is gone from the engine's graph."
      : this.explainError ? `Explain: ${this.explainError}` : "asking the engine…"));

    const canDelete = n && !n.virtual && travelAt === null;
    const replay = this.replayable(uid, n);
    // Whether the recording was asked (tests wait on it): yes, no, or asking.
    const ck = this.cascadeKnown;
    const replayKnown = !this.actions.hasCascade ? null : ck?.uid === uid && ck.has !== null ? (ck.has ? "yes" : "no") : "asking";
    const readOnly = this.actions.readOnly;
    this.depsList.set(deps);
    // In place (patchChildren): a press on Delete survives a render between it and its release.
    patchChildren(this.body, present(
      h("div.obj-head", null,
        h("div.kind", null, `${node.kind} · ${node.apiVersion || ""}`),
        h("h2", { id: "object-name" }, node.name),
        h("div.muted", null, node.namespace ? `namespace ${node.namespace}` : "cluster-scoped"),
        h("div.state", { "data-state": st }, h("span.swatch", { style: `background: var(${stDef?.color || "--node-border"})` }), stDef?.label || st),
        this.cascadeProgress(uid)),
      h("div.actions-row", { "data-replay": replayKnown },
        h("button", { type: "button", id: "focus-button", title: "Focus on its owners and dependents (f)", onclick: () => this.actions.focus(uid) }, "Focus"),
        canDelete ? h(readOnly ? "button" : "button.danger", { type: "button", id: "delete-button",
          title: readOnly ? "See what a delete would do (read-only: gcscope refuses deletes)" : "Delete with a propagation policy (Delete)",
          onclick: () => this.actions.del(uid) }, readOnly ? "Preview delete…" : "Delete…") : null,
        replay ? h("button", { type: "button", id: "replay-button", title: "Play the last recorded deletion this object took part in",
          onclick: () => this.actions.replay?.(uid) }, "▶ Replay its last cascade") : null),
      h("section", { id: "explain", "data-explain": "", "data-outdated": outdated ? "" : null }, h("h3", null, n || travelAt !== null ? "Why is it here?" : "What became of it"), ...why),
      h("dl.facts", null,
        h("dt", null, "uid"), h("dd", null, h("code", null, uid)),
        h("dt", null, "flags"), h("dd", null, ...(flags.length ? flags : ["—"])),
        h("dt", null, "finalizers"), h("dd", { id: "object-finalizers" }, ...(node.finalizers?.length
          ? node.finalizers.map((/** @type {string} */ f) => h(holds.includes(f) ? "code.hold" : "code", null, f)) : ["—"])),
        node.deletionTimestamp ? h("dt", null, "deleted at") : null, node.deletionTimestamp ? h("dd", null, node.deletionTimestamp) : null,
        h("dt", null, "queues"), h("dd", null, qs.length ? h("ul", null, ...qs) : "—")),
      this.orphanMarks(uid, node, travelAt),
      h("h3", null, `Owners (${fmt(owners.length)})`), owners.length ? h("ul.refs", null, ...owners)
        : h("p.muted", null, node.orphaned?.length ? "none left (orphaned: see above)" : "none: a root"),
      h("h3", { id: "dependents-head" }, `Dependents (${fmt(deps.length)})`),
      deps.length ? this.depsList.el : h("p.muted", null, "none"),
      ex?.hiddenDependents ? h("p.muted", null, `and ${fmt(ex.hiddenDependents)} you may not see`) : null,
    ));
    // Back in the page: the lists scroll to where the user left them.
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
    /** @type {any[]} */
    const marks = node.orphaned || [];
    if (!marks.length) return null;
    const live = travelAt === null && document.body.dataset.replay !== "true" && this.store.nodes.has(uid);
    const dismissing = this.dismissing === uid;
    const rows = marks.map((m, i) => {
      const t = Date.parse(m.at);
      const o = m.owner;
      const who = m.ownerHidden || !o ? h("i", null, "an owner you may not see")
        : this.store.nodes.has(o.uid) ? this.link(o) : h("span.obj.gone", { title: `uid ${o.uid}: no longer in the graph` }, `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`);
      return h("div.orphan-mark", { "data-cause": m.cause, "data-index": String(i) },
        h("div.orphan-head", null, "Orphaned from ", who, m.controller ? h("span.tag", { title: "the removed reference had controller: true" }, "controller reference") : null),
        h("div", null, "by ", m.by || "the garbage collector", ", ",
          Number.isFinite(t) ? h("span.ago", { "data-ago": String(t), title: new Date(t).toLocaleString() + ` (${m.at})` }, agoText(t)) : m.at || "at a moment not known"),
        h("div.muted", { title: ORPHAN_CAUSES[m.cause] || m.cause }, m.reason || ORPHAN_CAUSES[m.cause] || m.cause));
    });
    return h("section.orphan-marks", { id: "orphan-marks" },
      h("h3", null, marks.length === 1 ? "Orphaned" : `Orphaned (${fmt(marks.length)} references removed)`),
      ...rows,
      live ? h("div.dismiss-row", null,
        h("button", { type: "button", id: "dismiss-orphan", disabled: dismissing ? "" : null,
          title: "Forget these marks (gcscope's memory only: nothing is written to the cluster; for every user of this gcscope)",
          onclick: () => this.dismiss(uid) }, dismissing ? "Dismissing…" : "Dismiss"),
        h("span.muted", null, "kept a day unless dismissed"),
        this.dismissError ? h("span.error", null, this.dismissError) : null) : null);
  }

  /** Dismisses the object's orphan marks; the mark goes when the stream sends the node again. @param {string} uid */
  async dismiss(uid) {
    this.dismissing = uid;
    this.dismissError = "";
    this.render();
    try {
      await dismissOrphanMarks(uid);
    } catch (e) {
      this.dismissError = `Dismiss failed: ${/** @type {any} */ (e).message || e}`;
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
    /** @type {{finalizer: string, owner?: string, release?: string}[]} */
    const holds = ex.holds?.length ? ex.holds : (ex.heldBy || []).map((/** @type {string} */ f) => ({ finalizer: f }));
    /** @type {import("./deletion.js").FinalizerOrigin[]} */
    const origins = ex.deletion?.origins || [];
    return holds.map((hold, i) => {
      const origin = origins.find((o) => o.finalizer === hold.finalizer);
      const fin = h("code.hold", null, hold.finalizer);
      const copy = h("button.copy", { type: "button", title: "Copy the command (gcscope never runs it)", onclick: (/** @type {Event} */ ev) => {
        // The button in the page, which a later render may have kept instead of this one.
        const b = /** @type {HTMLElement} */ (ev.currentTarget);
        // No clipboard outside a secure context (plain http on another host): say so.
        if (!navigator.clipboard) b.textContent = "Select and copy it";
        else navigator.clipboard.writeText(hold.release || "").then(() => (b.textContent = "Copied"), () => (b.textContent = "Select and copy it"));
      } }, "Copy");
      return h("div.hold", { id: `hold-${i}`, "data-finalizer": hold.finalizer },
        h("p.held", { id: i === 0 ? "held-by" : undefined }, node.beingDeleted
          ? h("span", null, h("b", null, "Held by finalizer "), fin, ": it is deleted, but stays until the controller that owns the finalizer removes it.")
          : h("span", null, "Carries finalizer ", fin, ": once deleted, it will stay until that finalizer is removed.")),
        hold.owner ? h("p.muted", null, `Who removes it: ${hold.owner}.`) : null,
        // Who added it (managedFields) and whether that controller looks alive; its risk
        // goes beside the command that would release it.
        origin ? originView(origin, (o) => this.link(o), { risk: !(node.beingDeleted && hold.release) }) : null,
        node.beingDeleted && hold.release ? h("div.release", null,
          h("p.muted", null, "To release it by hand — gcscope shows this and never runs it; removing a finalizer skips that controller's clean-up. The test op makes the patch fail, instead of removing another finalizer, if the list changed:"),
          h("pre", { class: "release-cmd" }, h("code", null, hold.release)), copy,
          origin?.risk ? riskLine(origin.risk) : null) : null);
    });
  }

  /** Names the explanation's words may link: "kind name" → the object. */
  linkNames() {
    if (this.names) return this.names;
    /** @type {Map<string, any>} */
    const names = new Map();
    const add = (/** @type {any} */ o) => {
      names.set(`${o.kind.toLowerCase()} ${o.name.toLowerCase()}`, o);
      // The deletion report's words name objects as "Kind namespace/name".
      if (o.namespace) names.set(`${o.kind.toLowerCase()} ${o.namespace.toLowerCase()}/${o.name.toLowerCase()}`, o);
    };
    const n = this.uid ? this.store.nodes.get(this.uid) : undefined;
    const ex = this.explanation;
    const visit = (/** @type {any[]} */ bs) => bs?.forEach((b) => { add(b.object); visit(b.blockers); });
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
    const parts = text.split(/(\s+)/); // words, and the spaces between them
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
}

/**
 * The children given, without the nulls of conditional ones (patchChildren, unlike h(),
 * takes nodes and strings only).
 * @param {(Node|string|null)[]} children
 */
function present(...children) {
  return /** @type {(Node|string)[]} */ (children.filter((c) => c != null));
}
