// @ts-check
// What an object's drawing says about it: one state (the most pressing), plus markers.
// The legend is built from the same table, so the two cannot disagree.

/** Finalizers the collector itself manages; any other one is another controller's hold. */
export const GC_FINALIZERS = ["foregroundDeletion", "orphan"];

/** @typedef {import("./store.js").NodeState} NodeState */
/** @typedef {import("./store.js").Store} Store */

/** @typedef {"normal"|"deleting"|"foreground"|"waiting"|"held"|"virtual"|"removed"} State */

/** In the order the legend shows them. `color` names a CSS custom property. */
export const STATES = /** @type {const} */ ([
  { id: "normal", label: "normal", color: "--node-border", help: "observed, not being deleted" },
  { id: "deleting", label: "being deleted", color: "--st-deleting", help: "has a deletionTimestamp" },
  { id: "foreground", label: "deleting dependents", color: "--st-foreground", help: "foreground deletion in progress" },
  { id: "waiting", label: "waiting on blocking dependents", color: "--st-waiting", help: "foreground deletion waits for dependents with blockOwnerDeletion" },
  { id: "held", label: "held by finalizers", color: "--st-held", help: "being deleted, but another controller's finalizer keeps it" },
  { id: "virtual", label: "virtual / missing owner", color: "--st-virtual", help: "named as an owner, never observed" },
  { id: "removed", label: "removed", color: "--st-removed", help: "just deleted; fades out" },
]);

/** Markers drawn on top of the state. */
export const MARKERS = /** @type {const} */ ([
  { id: "invalid", label: "invalid owner reference", color: "--st-invalid", help: "owner in another namespace, or a namespaced owner of a cluster-scoped object" },
  { id: "queued", label: "in a work queue", color: "--st-queued", help: "queued or being worked on" },
  { id: "backoff", label: "in backoff", color: "--st-backoff", help: "a retry is scheduled" },
  { id: "orphaned", label: "orphaned (owner reference removed)", color: "--st-orphaned",
    help: "the garbage collector removed its reference to an owner (an Orphan delete, or an absent or deleting owner): its panel says which, by whom and when, until dismissed or a day old" },
]);

/** Whether the object carries orphan marks (the engine's node.orphaned). @param {{orphaned?: any[]}|undefined|null} n */
export function isOrphaned(n) {
  return !!n?.orphaned?.length;
}

export const EDGES = /** @type {const} */ ([
  { id: "controller", label: "controller reference", dash: false, strong: false },
  { id: "plain", label: "other owner reference", dash: true, strong: false },
  { id: "block", label: "blockOwnerDeletion", dash: false, strong: true },
  { id: "cycle", label: "on an ownership cycle", dash: false, strong: false,
    help: "The reference that closes the cycle runs back up around the outside, its arrowhead at the dependent" },
]);

/** @param {NodeState} n the finalizers of other controllers that hold n */
export function holdingFinalizers(n) {
  return (n.finalizers || []).filter((f) => !GC_FINALIZERS.includes(f));
}

/**
 * @param {Store} store
 * @param {NodeState} n
 * @returns {State}
 */
export function stateOf(store, n) {
  if (n.virtual) return "virtual";
  // The engine's mark is one-way (as upstream's); the finalizer says whether it still waits.
  if (n.deletingDependents && (n.finalizers || []).includes("foregroundDeletion")) return blockingDependents(store, n.uid).length ? "waiting" : "foreground";
  if (n.beingDeleted) return holdingFinalizers(n).length ? "held" : "deleting";
  return "normal";
}

/** Dependents that name uid with blockOwnerDeletion. @param {Store} store @param {string} uid */
export function blockingDependents(store, uid) {
  /** @type {NodeState[]} */
  const out = [];
  for (const d of store.dependents.get(uid) || []) {
    const n = store.nodes.get(d);
    if (n && (n.owners || []).some((o) => o.uid === uid && o.blockOwnerDeletion)) out.push(n);
  }
  return out;
}

/**
 * Why a reference from n to owner is invalid, or "" when it is not (as the collector
 * judges: a namespaced owner must share the dependent's namespace, and a cluster-scoped
 * object cannot have a namespaced owner).
 * @param {NodeState} n @param {NodeState|undefined} owner
 */
export function invalidReason(n, owner) {
  if (!owner || owner.virtual || !owner.namespace) return "";
  if (!n.namespace) return `a cluster-scoped object cannot be owned by namespaced ${owner.kind} ${owner.namespace}/${owner.name}`;
  if (owner.namespace !== n.namespace) return `owner ${owner.kind} ${owner.name} is in namespace ${owner.namespace}, not ${n.namespace}`;
  return "";
}

/** @param {Store} store @param {NodeState} n */
export function hasInvalidOwner(store, n) {
  return (n.owners || []).some((o) => invalidReason(n, store.nodes.get(o.uid)) !== "");
}

/** A stable colour per kind, for the stripe on each box. @param {string} kind */
export function kindHue(kind) {
  let h = 0;
  for (let i = 0; i < kind.length; i++) h = (h * 31 + kind.charCodeAt(i)) >>> 0;
  return h % 360;
}

/** What a delete preview rings each object with, and says of it. */
export const PREVIEW = /** @type {const} */ ({
  target: { label: "to delete", color: "--pv-deleted" },
  deleted: { label: "goes", color: "--pv-deleted" },
  orphaned: { label: "orphaned", color: "--pv-orphaned" },
  kept: { label: "kept (another owner, or an invalid reference)", color: "--pv-kept" },
  waiting: { label: "waits on finalizer", color: "--pv-waiting" },
});
