// @ts-check
// The forest layout. Positions come only from stable keys (namespace, kind, name, uid):
// each object sits under its controller owner (else its first owner), siblings in key
// order; objects that take part in no ownership ("loners": no owner, no dependent) are
// summarized per kind after the trees, one box per kind until expanded. Namespaces are
// boxes: those with ownership first, then the rest, in name order, cluster-scoped last.
// So an update moves nothing but the subtree it touches, and the same graph always looks
// the same. O(n log n) for the sorts, and only namespaces that changed are laid out again.

import { cycleEdges } from "./cycles.js";

/** @typedef {import("./store.js").NodeState} NodeState */
/**
 * @typedef {{uid: string, node: NodeState, ghost: boolean, group: Group, x: number, y: number,
 *   parent: string|null, block: Block|null}} Item  x, y: top-left, relative to the group
 * @typedef {{group: Group, parent: string, x: number, y: number, w: number, h: number, uids: string[], loner?: string}} Block
 *   a large set of leaf siblings, drawn as one count node when too small to read; or, with
 *   loner (their kind), the objects of one kind that take part in no ownership, drawn as
 *   one count node until expanded (parent is then its key in the expanded set)
 * @typedef {{ns: string, title: string, x: number, y: number, w: number, h: number, items: Item[], blocks: Block[],
 *   owned: number, cycles: Set<string>, summary?: NamespaceCount, total?: number}} Group  owned: how many of its
 *   objects take part in ownership; cycles: the owner references among them that lie on an ownership cycle
 *   (cycles.js); summary: summary first (detail.js), a namespace the page holds no object of, drawn as a box with
 *   its counts; total: the objects it has, when the page holds some of them only
 * @typedef {import("./detail.js").NamespaceCount} NamespaceCount
 * @typedef {{counts: Map<string, NamespaceCount>, holds: (ns: string) => boolean}} Counted  summary first: the
 *   namespaces counted, and whether the page holds each one's objects
 * @typedef {{loner: (n: NodeState) => boolean, expanded: Set<string>, status: (ns: string) => string}} LayoutOptions
 * @typedef {{node: NodeState, ghost: boolean, key: string}} Member an object of a box, with its sort key
 * @typedef {{w: number, h: number, inner: string[], leaves: string[], cw: number}} Extent a subtree's size: its
 *   owners (inner) and leaves, and the width of its children (cw)
 *   status: what the box of namespace ns says after its title besides its count (a deletion's
 *   progress, at its widest), so that the box is made wide enough for it too
 */

export const NODE_W = 180;
export const NODE_H = 40;
const GAP_X = 16;
const GAP_Y = 60; // between a parent and its children
const LEAF_GAP_Y = 12; // between rows of a leaf grid
export const LEAF_COLS = 8;
export const GROUP_PAD = 24;
/** How far an edge back up a cycle bulges out of its subtree (render.js), and the room a box with one keeps either side for it. */
export const CYCLE_BULGE = 56;
const CYCLE_ROOM = Math.ceil(CYCLE_BULGE * 0.75) + 8; // a cubic with both controls out by b reaches 3/4 b
export const GROUP_TITLE = 44;
const GROUP_ROW = 10 * (NODE_W + GAP_X); // roots wrap into shelves this wide
export const GROUP_GAP = 80; // between boxes (titles.js puts a low box's title in it)
/** A kind's loners are summarized from this many on; fewer are drawn one by one. */
export const LONER_MIN = 4;
/** Height of the caption above an expanded set of loners (a click on it collapses them). */
export const LONER_CAPTION = 28;
/** The title's font, in world units: the layout makes each box at least as wide as its title. */
export const TITLE_FONT = 20;
const MIN_WORLD_ROW = 9000; // namespaces wrap into shelves at least this wide

/** Workload kinds first, so that a namespace reads top-left from its controllers. */
const KIND_RANK = ["Namespace", "Node", "CustomResourceDefinition", "Deployment", "StatefulSet", "DaemonSet", "CronJob",
  "Job", "ReplicaSet", "ReplicationController", "ControllerRevision", "Pod", "PersistentVolumeClaim", "Service",
  "EndpointSlice", "Endpoints", "ConfigMap", "Secret", "ServiceAccount"];

/** @param {NodeState} n */
export function sortKey(n) {
  const r = KIND_RANK.indexOf(n.kind);
  return String(r < 0 ? 99 : r).padStart(2, "0") + n.kind + "\u0000" + n.name + "\u0000" + n.uid;
}

export class Layout {
  constructor() {
    /** @type {Map<string, Group>} */ this.groups = new Map();
    /** @type {Map<string, Item>} */ this.items = new Map();
    /** @type {{x: number, y: number, w: number, h: number}} */ this.bounds = { x: 0, y: 0, w: 0, h: 0 };
    /** Summary first: boxes in name order alone (whether one has ownership is not known before its objects). */
    this.byName = false;
    /** Bumped when a box moves, changes size or is shaded or not (summary first): what is drawn of the boxes is kept until then. */
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
  update(store, keep, dirty, expanded = new Set(), status = () => "", counted = null, keepNamespace = () => true) {
    const all = dirty.has("*");
    this.byName = !!counted;
    /** @type {Map<string, {node: NodeState, ghost: boolean}[]>} */
    const members = new Map();
    const add = (/** @type {NodeState} */ n, /** @type {boolean} */ ghost) => {
      const ns = n.namespace || "";
      if (!all && !dirty.has(ns)) return;
      if (!keep(n)) return;
      let m = members.get(ns);
      if (!m) members.set(ns, (m = []));
      m.push({ node: n, ghost });
    };
    if (all) for (const n of store.nodes.values()) add(n, false);
    else {
      // Only the dirty namespaces' members: under churn a cluster of 150k objects is laid
      // out a few namespaces at a time.
      for (const ns of dirty) for (const u of store.byNamespace.get(ns) || []) add(/** @type {NodeState} */ (store.nodes.get(u)), false);
    }
    for (const g of store.ghosts.values()) if (!store.nodes.has(g.node.uid)) add(g.node, true);

    const redo = all ? new Set([...this.groups.keys(), ...members.keys(), ...(counted?.counts.keys() || [])]) : new Set(dirty);
    for (const ns of redo) {
      const old = this.groups.get(ns);
      if (old) for (const it of old.items) if (this.items.get(it.uid) === it) this.items.delete(it.uid);
      const m = members.get(ns);
      const count = counted?.counts.get(ns);
      if (!m || m.length === 0) {
        if (count && keepNamespace(ns)) this.groups.set(ns, summaryGroup(ns, count, status));
        else this.groups.delete(ns);
        continue;
      }
      const g = layoutGroup(ns, m, { loner: (n) => isLoner(store, n), expanded, status });
      // Some of a namespace's objects only (a selected object's component): its box says of how many.
      if (count && !counted?.holds(ns)) g.total = count.objects;
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
    const rank = (/** @type {string} */ ns) => (ns === "" ? 2 : this.byName || (this.groups.get(ns)?.owned ?? true) ? 0 : 1);
    return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
  }

  /** Places the namespace boxes in shelves, in compare's order. */
  pack() {
    const names = [...this.groups.keys()].sort((a, b) => this.compare(a, b));
    // Shelves about as wide as a screen's shape wants, from the total area, rounded up
    // to a power of two so that they change width only when the cluster doubles.
    let area = 0, widest = 0;
    for (const g of this.groups.values()) {
      area += (g.w + GROUP_GAP) * (g.h + GROUP_GAP);
      widest = Math.max(widest, g.w);
    }
    const row = Math.max(widest, MIN_WORLD_ROW, 2 ** Math.ceil(Math.log2(Math.sqrt(area * 1.8) || 1)));
    let x = 0, y = 0, shelf = 0, maxW = 0, key = 0;
    for (const ns of names) {
      const g = /** @type {Group} */ (this.groups.get(ns));
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
      key = (Math.imul(key, 31) + Math.round(g.x * 7 + g.y * 13 + g.w * 17 + g.h * 19) + (g.summary ? 1 : 0)) | 0;
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
}

/**
 * An object that takes part in no ownership: no owner and no dependent. Its state shows in
 * its set's bar; it stays in the set while deleted, so that nothing moves.
 * @param {import("./store.js").Store} store @param {NodeState} n
 */
export function isLoner(store, n) {
  return !n.owners?.length && !store.dependents.has(n.uid) && !n.virtual;
}

/** The expanded-set key of a namespace's loners of one kind. @param {string} ns @param {string} kind */
export function lonerKey(ns, kind) {
  return `loners\u0000${ns}\u0000${kind}`;
}

/**
 * @param {string} ns
 * @param {{node: NodeState, ghost: boolean}[]} members
 * @param {LayoutOptions} opts
 * @returns {Group}
 */
function layoutGroup(ns, members, opts) {
  /** @type {Group} */
  const g = { ns, title: ns || "cluster-scoped", x: 0, y: 0, w: 0, h: 0, items: [], blocks: [], owned: 0, cycles: new Set() };
  /** @type {Map<string, Member>} */
  const byUID = new Map();
  /** loners by kind, set apart from the trees. @type {Map<string, Member[]>} */
  const loners = new Map();
  for (const m of members) {
    const e = { ...m, key: sortKey(m.node) };
    if (opts.loner(m.node)) {
      let l = loners.get(m.node.kind);
      if (!l) loners.set(m.node.kind, (l = []));
      l.push(e);
    } else byUID.set(m.node.uid, e);
  }
  // Few of a kind are drawn one by one, as roots.
  for (const [kind, l] of loners) {
    if (l.length >= LONER_MIN) continue;
    for (const e of l) byUID.set(e.node.uid, e);
    loners.delete(kind);
  }
  for (const e of byUID.values()) if (e.node.owners?.length || !opts.loner(e.node)) g.owned++;
  g.cycles = cycleEdges(new Map([...byUID].map(([uid, e]) => [uid, (e.node.owners || []).map((o) => o.uid)])));

  // Each object's place: under its controller owner, else its first owner (in key
  // order), when that owner is in the same box.
  /** @type {Map<string, string|null>} */
  const parent = new Map();
  for (const [uid, m] of byUID) {
    let p = null;
    const owners = (m.node.owners || []).filter((o) => o.uid !== uid && byUID.has(o.uid));
    const ctl = owners.find((o) => o.controller);
    if (ctl) p = ctl.uid;
    else if (owners.length) {
      p = owners.reduce((a, b) => (/** @type {Member} */ (byUID.get(a.uid)).key <= /** @type {Member} */ (byUID.get(b.uid)).key ? a : b)).uid;
    }
    parent.set(uid, p);
  }
  breakCycles(parent, byUID);

  /** @type {Map<string, string[]>} */
  const children = new Map();
  /** @type {string[]} */
  const roots = [];
  for (const [uid, p] of parent) {
    if (p === null) roots.push(uid);
    else {
      let c = children.get(p);
      if (!c) children.set(p, (c = []));
      c.push(uid);
    }
  }
  const byKey = (/** @type {string} */ a, /** @type {string} */ b) => {
    const x = /** @type {Member} */ (byUID.get(a)).key, y = /** @type {Member} */ (byUID.get(b)).key;
    return x < y ? -1 : x > y ? 1 : 0;
  };
  roots.sort(byKey);
  for (const c of children.values()) c.sort(byKey);

  /** @type {Map<string, Extent>} */
  const size = new Map();
  const measure = (/** @type {string} */ u) => {
    const kids = children.get(u) || [];
    /** @type {string[]} */
    const inner = [];
    /** @type {string[]} */
    const leaves = [];
    for (const k of kids) (children.has(k) ? inner : leaves).push(k);
    let cw = 0, ch = 0;
    for (const k of inner) {
      const s = measure(k);
      cw += s.w + GAP_X;
      ch = Math.max(ch, s.h);
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
  const place = (/** @type {string} */ u, /** @type {number} */ x, /** @type {number} */ y, /** @type {Block|null} */ block) => {
    const s = /** @type {Extent} */ (size.get(u));
    const m = /** @type {Member} */ (byUID.get(u));
    g.items.push({ uid: u, node: m.node, ghost: m.ghost, group: g, x: x + (s.w - NODE_W) / 2, y, parent: parent.get(u) || null, block });
    let cx = x + (s.w - s.cw) / 2;
    const cy = y + NODE_H + GAP_Y;
    for (const k of s.inner) {
      place(k, cx, cy, null);
      cx += /** @type {Extent} */ (size.get(k)).w + GAP_X;
    }
    if (s.leaves.length) {
      const cols = Math.min(s.leaves.length, LEAF_COLS), rows = Math.ceil(s.leaves.length / LEAF_COLS);
      /** @type {Block|null} */
      let b = null;
      if (s.leaves.length > LEAF_COLS) {
        b = { group: g, parent: u, x: cx, y: cy, w: cols * NODE_W + (cols - 1) * GAP_X, h: rows * NODE_H + (rows - 1) * LEAF_GAP_Y, uids: s.leaves };
        g.blocks.push(b);
      }
      s.leaves.forEach((k, i) => {
        const lm = /** @type {Member} */ (byUID.get(k));
        g.items.push({ uid: k, node: lm.node, ghost: lm.ghost, group: g, parent: u, block: b,
          x: cx + (i % LEAF_COLS) * (NODE_W + GAP_X), y: cy + Math.floor(i / LEAF_COLS) * (NODE_H + LEAF_GAP_Y) });
      });
    }
  };

  // Roots in shelves, then the loners' sets: one count box per kind, or its grid under a
  // caption when expanded.
  let x = 0, y = 0, shelf = 0, w = 0;
  const slot = (/** @type {number} */ sw, /** @type {number} */ sh) => {
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
  // A tree with an object on a cycle keeps room either side for the edge back up.
  const onCycle = new Set([...g.cycles].map((k) => k.slice(0, k.indexOf(" "))));
  const cycleIn = (/** @type {string} */ u) => /** @type {boolean} */ (onCycle.has(u) || children.get(u)?.some(cycleIn));
  for (const r of roots) {
    const s = measure(r);
    const room = onCycle.size && cycleIn(r) ? CYCLE_ROOM : 0;
    const at = slot(s.w + 2 * room, s.h);
    place(r, at.x + room, at.y, null);
  }
  const kinds = [...loners.keys()].sort((a, b) => (sortKey(/** @type {any} */ ({ kind: a, name: "", uid: "" })) < sortKey(/** @type {any} */ ({ kind: b, name: "", uid: "" })) ? -1 : 1));
  for (const kind of kinds) {
    const l = /** @type {Member[]} */ (loners.get(kind));
    l.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const key = lonerKey(ns, kind);
    const open = opts.expanded.has(key);
    const cols = Math.min(l.length, LEAF_COLS), rows = Math.ceil(l.length / LEAF_COLS);
    const gw = cols * NODE_W + (cols - 1) * GAP_X, gh = rows * NODE_H + (rows - 1) * LEAF_GAP_Y;
    const at = open ? slot(gw, LONER_CAPTION + gh) : slot(NODE_W, NODE_H);
    /** @type {Block} */
    const b = { group: g, parent: key, loner: kind, uids: l.map((e) => e.node.uid), x: at.x, y: at.y, w: open ? gw : NODE_W, h: open ? LONER_CAPTION + gh : NODE_H };
    g.blocks.push(b);
    l.forEach((e, i) => {
      // Collapsed, every member sits on the count box (for hit tests and centring on it).
      const ix = open ? at.x + (i % LEAF_COLS) * (NODE_W + GAP_X) : at.x;
      const iy = open ? at.y + LONER_CAPTION + Math.floor(i / LEAF_COLS) * (NODE_H + LEAF_GAP_Y) : at.y;
      g.items.push({ uid: e.node.uid, node: e.node, ghost: e.ghost, group: g, parent: null, block: b, x: ix, y: iy });
    });
  }
  g.w = Math.max(w, 2 * NODE_W, titleWidth(g.title + opts.status(ns), g.items.length)) + 2 * GROUP_PAD;
  g.h = GROUP_TITLE + y + shelf + GROUP_PAD;
  return g;
}

/**
 * A namespace the page holds no object of (summary first): a box about the size its
 * objects would take, so that the cluster's shape shows, with its counts.
 * @param {string} ns @param {NamespaceCount} count @param {(ns: string) => string} status
 * @returns {Group}
 */
function summaryGroup(ns, count, status) {
  // Its area follows its objects, in steps of about a fifth, so that a few objects more
  // or less (the counts change every second on a busy cluster) move no box.
  const n = Math.ceil(2 ** (Math.ceil(Math.log2(Math.max(1, count.objects)) * 4) / 4));
  const cols = Math.max(2, Math.ceil(Math.sqrt(n))), rows = Math.ceil(n / cols);
  const title = ns || "cluster-scoped";
  const w = Math.max(cols * (NODE_W + GAP_X) - GAP_X, titleWidth(title + status(ns), count.objects));
  return { ns, title, x: 0, y: 0, w: w + 2 * GROUP_PAD, h: GROUP_TITLE + rows * (NODE_H + LEAF_GAP_Y) - LEAF_GAP_Y + GROUP_PAD,
    items: [], blocks: [], owned: 0, cycles: new Set(), summary: count, total: count.objects };
}

/** What a namespace's title says of its objects: how many; of how many, when the page holds some only. @param {Group} g */
export function groupCount(g) {
  const n = g.summary ? 0 : g.items.length;
  if (g.total === undefined || g.total === n) return String(n);
  return n ? `${n} of ${g.total}` : String(g.total);
}

/** @type {OffscreenCanvasRenderingContext2D|null|undefined} */
let measureCtx;

/** How wide a box's title is drawn, in world units (see Renderer.drawTitles). @param {string} title @param {number} count */
export function titleWidth(title, count) {
  const text = `${title}  ·  ${count}`;
  if (measureCtx === undefined) measureCtx = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(1, 1).getContext("2d") : null;
  if (!measureCtx) return text.length * TITLE_FONT * 0.62;
  measureCtx.font = `600 ${TITLE_FONT}px system-ui, sans-serif`;
  return measureCtx.measureText(text).width + 16;
}

/**
 * Ownership can be circular (a three-object circle is legal); a circle's member with the
 * lowest key becomes a root so that every object is placed exactly once.
 * @param {Map<string, string|null>} parent
 * @param {Map<string, {key: string}>} byUID
 */
function breakCycles(parent, byUID) {
  /** @type {Map<string, number>} 1: on the current walk, 2: done */
  const state = new Map();
  for (const start of parent.keys()) {
    if (state.get(start) === 2) continue;
    /** @type {string[]} */
    const path = [];
    let u = /** @type {string|null} */ (start);
    while (u !== null && !state.has(u)) {
      state.set(u, 1);
      path.push(u);
      u = parent.get(u) ?? null;
    }
    if (u !== null && state.get(u) === 1) {
      const circle = path.slice(path.indexOf(u));
      const low = circle.reduce((a, b) => (/** @type {Member} */ (byUID.get(a)).key <= /** @type {Member} */ (byUID.get(b)).key ? a : b));
      parent.set(low, null);
    }
    for (const p of path) state.set(p, 2);
  }
}
