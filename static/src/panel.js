// @ts-check
// The object panel: who the selected object is, its owners and dependents, finalizers,
// the engine's flags and queue positions, and the engine's own explanation in words,
// with a link to every object it names.

import { h, describe, clock } from "./dom.js";
import { explain } from "./api.js";
import { stateOf, STATES, holdingFinalizers, invalidReason, blockingDependents } from "./states.js";

/** @typedef {import("./store.js").Store} Store */

export class ObjectPanel {
  /**
   * @param {HTMLElement} body
   * @param {HTMLElement} placeholder
   * @param {Store} store
   * @param {{select: (uid: string) => void, focus: (uid: string) => void, del: (uid: string) => void, readOnly: boolean}} actions
   */
  constructor(body, placeholder, store, actions) {
    this.body = body;
    this.placeholder = placeholder;
    this.store = store;
    this.actions = actions;
    /** @type {string|null} */ this.uid = null;
    /** @type {any} */ this.explanation = null;
    this.explainError = "";
    this.explainSeq = 0;
    /** @type {ReturnType<typeof setTimeout>|undefined} */ this.timer = undefined;
  }

  /** @param {string|null} uid */
  show(uid) {
    if (uid !== this.uid) {
      this.explanation = null;
      this.explainError = "";
    }
    this.uid = uid;
    this.placeholder.hidden = !!uid;
    this.body.hidden = !uid;
    this.render();
    if (uid) this.refreshExplain(0);
  }

  /** Called when the store touched the object: redraw now, ask the engine again soon. */
  changed() {
    if (!this.uid) return;
    this.render();
    this.refreshExplain(400);
  }

  /** @param {number} delay */
  refreshExplain(delay) {
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      const uid = this.uid, seq = ++this.explainSeq;
      if (!uid) return;
      if (!this.store.nodes.has(uid)) {
        // Gone (or never seen): the engine has nothing to explain; don't ask for a 404.
        this.explanation = null;
        this.explainError = this.store.ghosts.has(uid) ? "deleted: gone from the engine's graph" : "not in the engine's graph";
        this.render();
        return;
      }
      try {
        const ex = await explain(uid);
        if (seq !== this.explainSeq || uid !== this.uid) return;
        this.explanation = ex;
        this.explainError = "";
      } catch (e) {
        if (seq !== this.explainSeq || uid !== this.uid) return;
        this.explanation = null;
        this.explainError = /** @type {any} */ (e).status === 404 ? "gone from the engine's graph" : String(/** @type {any} */ (e).message || e);
      }
      this.render();
    }, delay);
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

  render() {
    const uid = this.uid;
    if (!uid) return;
    const store = this.store;
    const n = store.nodes.get(uid);
    const ghost = store.ghosts.get(uid)?.node;
    const node = n || ghost || this.explanation?.object;
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
    const deps = [...(store.dependents.get(uid) || [])].map((d) => store.nodes.get(d)).filter(Boolean);
    const blocking = new Set(n ? blockingDependents(store, uid).map((x) => x.uid) : []);
    const holds = holdingFinalizers(node);
    const qs = store.queueStatus(uid).map(({ queue, item }) => {
      const what = item.inFlight ? "a worker has it" : item.queued ? "queued" : item.backoffUntil ? `in backoff until ${clock(item.backoffUntil)}` : "known";
      return h("li", null, h("b", null, queue), `: ${what}${item.retries ? `, ${item.retries} retries` : ""}`);
    });

    const ex = this.explanation;
    /** @type {(Node|string|null)[]} */
    const why = [];
    if (ex) {
      why.push(h("p.next", null, h("b", null, "Next step: "), `${ex.next}.`));
      for (const w of ex.words || []) why.push(h("p.word", null, linkify(w, this)));
      if (ex.heldBy?.length) {
        const fins = ex.heldBy.map((/** @type {string} */ f) => h("code.hold", null, f));
        why.push(h("p.held", { id: "held-by" }, node.beingDeleted
          ? h("span", null, h("b", null, "Held by finalizer "), ...fins, ": it is deleted, but stays until the controller that owns the finalizer removes it.")
          : h("span", null, "Carries finalizer ", ...fins, ": once deleted, it will stay until that finalizer is removed.")));
      }
      if (ex.blockers?.length || ex.hiddenBlockers) why.push(h("div.blockers", null, h("b", null, "Blocking dependents"), this.blockerTree(ex.blockers || [], ex.hiddenBlockers)));
      if (ex.lastAction) {
        const a = ex.lastAction;
        why.push(h("p.muted", null, `Last worker action: ${a.queue} ${a.verb}${a.policy ? " " + a.policy : ""}${a.error ? " — error: " + a.error : ""}${a.reason ? " — " + a.reason : ""}`));
      }
    } else why.push(h("p.muted", null, this.explainError ? `Explain: ${this.explainError}` : "asking the engine…"));

    const canDelete = !this.actions.readOnly && n && !n.virtual;
    this.body.replaceChildren(
      h("div.obj-head", null,
        h("div.kind", null, `${node.kind} · ${node.apiVersion || ""}`),
        h("h2", { id: "object-name" }, node.name),
        h("div.muted", null, node.namespace ? `namespace ${node.namespace}` : "cluster-scoped"),
        h("div.state", { "data-state": st }, h("span.swatch", { style: `background: var(${stDef?.color || "--node-border"})` }), stDef?.label || st)),
      h("div.actions-row", null,
        h("button", { type: "button", id: "focus-button", title: "Focus on its owners and dependents (f)", onclick: () => this.actions.focus(uid) }, "Focus"),
        canDelete ? h("button.danger", { type: "button", id: "delete-button", title: "Delete with a propagation policy (Delete)", onclick: () => this.actions.del(uid) }, "Delete…") : null),
      h("section", { id: "explain", "data-explain": "" }, h("h3", null, "Why is it here?"), ...why),
      h("dl.facts", null,
        h("dt", null, "uid"), h("dd", null, h("code", null, uid)),
        h("dt", null, "flags"), h("dd", null, ...(flags.length ? flags : ["—"])),
        h("dt", null, "finalizers"), h("dd", { id: "object-finalizers" }, ...(node.finalizers?.length
          ? node.finalizers.map((/** @type {string} */ f) => h(holds.includes(f) ? "code.hold" : "code", null, f)) : ["—"])),
        node.deletionTimestamp ? h("dt", null, "deleted at") : null, node.deletionTimestamp ? h("dd", null, node.deletionTimestamp) : null,
        h("dt", null, "queues"), h("dd", null, qs.length ? h("ul", null, ...qs) : "—")),
      h("h3", null, `Owners (${owners.length})`), owners.length ? h("ul.refs", null, ...owners) : h("p.muted", null, "none: a root"),
      h("h3", null, `Dependents (${deps.length})`),
      deps.length ? h("ul.refs", null, ...deps.slice(0, 200).map((d) => h("li", null, this.link(/** @type {any} */ (d)),
        blocking.has(/** @type {any} */ (d).uid) ? h("span.tag.block", null, "blocks") : null)),
        deps.length > 200 ? h("li.muted", null, `and ${deps.length - 200} more`) : null) : h("p.muted", null, "none"),
      ex?.hiddenDependents ? h("p.muted", null, `and ${ex.hiddenDependents} you may not see`) : null,
    );
  }

  /** @param {any[]} blockers @param {number} [hidden] blockers this user may not see */
  blockerTree(blockers, hidden) {
    return h("ul.refs", null, ...blockers.map((b) => h("li", null, this.link(b.object),
      b.finalizers?.length ? h("span", null, " held by ", ...b.finalizers.map((/** @type {string} */ f) => h("code.hold", null, f))) : null,
      b.cycle ? h("span.tag", null, "already above: a cycle") : b.deletingDependents ? h("span.tag", null, "waits for its own") : null,
      b.blockers?.length || b.hidden ? this.blockerTree(b.blockers || [], b.hidden) : null)),
      hidden ? h("li.muted", null, `and ${hidden} you may not see`) : null);
  }
}

/**
 * The engine's sentences name objects as "kind name"; those that are in the graph become
 * links.
 * @param {string} text @param {ObjectPanel} panel
 */
function linkify(text, panel) {
  const store = panel.store;
  /** @type {Map<string, any>} */
  const names = new Map();
  const add = (/** @type {any} */ n) => names.set(`${n.kind.toLowerCase()} ${n.name}`, n);
  const n = panel.uid ? store.nodes.get(panel.uid) : undefined;
  const ex = panel.explanation;
  const visit = (/** @type {any[]} */ bs) => bs?.forEach((b) => { add(b.object); visit(b.blockers); });
  if (n) {
    for (const o of n.owners || []) add(o);
    for (const d of store.dependents.get(n.uid) || []) { const dn = store.nodes.get(d); if (dn) add(dn); }
  }
  visit(ex?.blockers);
  for (const o of ex?.owners || []) add(o);
  for (const o of ex?.dependents || []) add(o);
  if (!names.size) return text;
  const keys = [...names.keys()].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp(`(${keys.join("|")})`, "gi");
  const out = h("span");
  let last = 0;
  for (const m of text.matchAll(re)) {
    const o = names.get(m[0].toLowerCase());
    out.append(text.slice(last, m.index));
    out.append(o ? panel.link(o) : m[0]);
    last = (m.index || 0) + m[0].length;
  }
  out.append(text.slice(last));
  return out;
}
