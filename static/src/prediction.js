// @ts-check
// What a delete would do, in words: the pieces the delete dialog shows for one object and
// for a set (the server's dry-run answer of POST /objects/{uid}/delete or /deletions),
// always in the same order — the data lost first, what is deleted (step by step when the
// deletions come in steps), what comes back, the storage of the other claims, what is left
// behind, what is orphaned, kept or held by finalizers — and the marks it draws on the graph.

import { h, describe } from "./dom.js";
import { counted } from "./panel.js";

/** @typedef {import("./render.js").PreviewKind} PreviewKind */

/** A section lists this many rows at once; "Show the other N" adds the rest (one scroll: the dialog's). */
export const ROWS_SHOWN = 200;

/**
 * What the prediction's order needs of the graph: an object's dependents and owners
 * (uids), and its kind and name (siblings go in kind, then name order).
 * @typedef {{dependents: (uid: string) => Iterable<string>, owners: (uid: string) => string[], node: (uid: string) => {kind: string, name: string}|undefined}} Tree
 */

/**
 * The objects of a prediction in the order of the ownership tree, depth first: each owner
 * followed by its dependents (siblings by kind and name), from the targets; then the objects
 * listed that no target reaches (a namespace's content), each tree from its topmost object.
 * For each: its rank, and the owner through which it was reached (its parent in the tree).
 * @param {any[]} targets ObjectRefs @param {any[]} listed ObjectRefs @param {Tree|undefined} tree
 * @returns {Map<string, {rank: number, parent: string|null}>}
 */
export function treeOrder(targets, listed, tree) {
  /** @type {Map<string, any>} */
  const refs = new Map();
  for (const o of [...listed, ...targets]) refs.set(o.uid, o);
  const info = (/** @type {string} */ u) => tree?.node(u) || refs.get(u);
  const byKindName = (/** @type {string} */ a, /** @type {string} */ b) => {
    const x = info(a), y = info(b);
    const ka = x ? `${x.kind}\u0000${x.name}` : "\uffff" + a, kb = y ? `${y.kind}\u0000${y.name}` : "\uffff" + b;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  /** @type {Map<string, {rank: number, parent: string|null}>} */
  const order = new Map();
  // Depth first without recursion: a long chain of owners must not overflow the stack.
  const visit = (/** @type {string} */ root) => {
    /** @type {[string, string|null][]} */
    const stack = [[root, null]];
    while (stack.length) {
      const [u, parent] = /** @type {[string, string|null]} */ (stack.pop());
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
  for (const u of rest) visit(u); // owned in a circle
  return order;
}

/** @param {...(Node|null)} nodes the nodes that are not null */
export const present = (...nodes) => /** @type {Node[]} */ (nodes.filter((n) => n !== null));

/** What each step of a namespace's deletion is (deletion.PredictNamespace's steps). */
const STEPS = /** @type {Record<number, string>} */ ({
  1: "its Pods, first",
  2: "the rest of its content, once the Pods are gone",
  3: "the namespace itself, once it is empty",
  4: "its own dependents (cluster-scoped), by the collector",
});

/**
 * A step of a foreground deletion (gc.PredictDelete's steps: the objects nothing waits on
 * go first, the target last). @param {number} step @param {number} last
 */
function stepTitle(step, last) {
  if (!step) return "in no particular order";
  return step === 1 ? "first: what nothing waits on" : step === last ? "last, once those before it are gone" : "then, once those before it are gone";
}

/** The targets of a prediction: a set's (targets), or the one (target). @param {any} p @returns {any[]} */
export const targetsOf = (p) => (p.targets?.length ? p.targets : [p.target]);

/** How the graph marks what a prediction does to each object. @param {any} p @returns {Map<string, PreviewKind>} */
export function previewMarks(p) {
  /** @type {Map<string, PreviewKind>} */
  const m = new Map();
  for (const d of p.deleted || []) m.set(d.object.uid, "deleted");
  for (const d of p.orphaned || []) m.set(d.object.uid, "orphaned");
  for (const d of p.kept || []) m.set(d.object.uid, "kept");
  for (const d of p.waiting || []) m.set(d.object.uid, "waiting");
  for (const t of targetsOf(p)) m.set(t.uid, "target");
  return m;
}

/**
 * The preview's content for a dry-run answer.
 * @param {any} res the server's answer: prediction, hidden, refusal (one object) or
 *   refusals (a set), volumes, leftBehind, unread, recreated, missing (a set)
 * @param {{readOnly: boolean, set: boolean, select: (uid: string) => void, tree?: Tree}} o set: the
 *   answer is about several objects the user selected; tree: the graph, for the order of the lists
 * @returns {Node[]}
 */
export function predictionNodes(res, o) {
  const p = res.prediction;
  const volumes = /** @type {any[]} */ (res.volumes || []), leftBehind = /** @type {any[]} */ (res.leftBehind || []);
  const recreated = /** @type {any[]} */ (res.recreated || []), hidden = res.hidden || 0, unread = res.unread || "";
  const would = o.readOnly ? "would" : "will";
  const link = (/** @type {any} */ obj) => h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); o.select(obj.uid); } }, describe(obj));

  const order = treeOrder(targetsOf(p), [...(p.deleted || []), ...(p.orphaned || []), ...(p.kept || []), ...(p.waiting || [])].map((d) => d.object), o.tree);
  const rankOf = (/** @type {any} */ d) => order.get(d.object.uid)?.rank ?? Infinity;
  /** @param {any} d @param {number} depth @param {string} [said] the reason said above it (its section's or its group's), not on its row */
  const row = (d, depth, said) => {
    const reason = d.reason && d.reason !== said ? d.reason : "";
    return h("li", { title: d.reason || undefined, "data-uid": d.object.uid, "data-depth": depth ? String(depth) : undefined, style: depth ? `padding-left: ${depth * 16}px` : undefined },
      link(d.object),
      d.finalizers?.length ? h("span.muted", null, ` held by ${d.finalizers.join(", ")}`) : null,
      reason ? h("span.muted.why", null, ` — ${reason}`) : null);
  };
  /**
   * A section's rows in the order of the tree, grouped by owner: an object whose owner is
   * listed above it in the section is indented under it; those of one owner that is not
   * (a step's Pods, whose ReplicaSet goes in a later step) come together under a caption
   * naming that owner. A reason all the rows share is said once, under the title; one the
   * indentation or the caption already says is not repeated on the row.
   * @param {any[]} list @param {string} all the reason every row has, said under the title ("" for none)
   * @returns {Node[]}
   */
  const rows = (list, all) => {
    const sorted = [...list].sort((a, b) => rankOf(a) - rankOf(b));
    /** @type {Map<string, number>} depth in the section, of each object listed */
    const depth = new Map();
    /** @type {Node[]} */
    const out = [];
    for (let i = 0; i < sorted.length; i++) {
      const d = sorted[i];
      const parent = order.get(d.object.uid)?.parent ?? null;
      if (parent && depth.has(parent)) {
        const pd = /** @type {number} */ (depth.get(parent));
        depth.set(d.object.uid, pd + 1);
        const owner = o.tree?.node(parent);
        out.push(row(d, pd + 1, all || (owner ? `its owners go: ${owner.kind} ${owner.name}` : "")));
        continue;
      }
      // A run of objects of one owner not listed here: under a caption that names it.
      let j = i + 1;
      while (j < sorted.length && parent && (order.get(sorted[j].object.uid)?.parent ?? null) === parent) j++;
      const owner = parent ? o.tree?.node(parent) : undefined;
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
  // One scroll, the dialog's: a section is a plain list; past ROWS_SHOWN rows, the rest on demand.
  const section = (/** @type {string} */ cls, /** @type {string} */ title, /** @type {any[]} */ list) => {
    if (!list?.length) return null;
    const all = list.length > 1 ? mostCommon(list.map((d) => d.reason || ""), true) : "";
    const items = rows(list, all);
    const ul = h("ul", null, ...items.slice(0, ROWS_SHOWN));
    const more = items.length > ROWS_SHOWN ? h("button.more", { type: "button", onclick: (/** @type {Event} */ ev) => {
      ul.append(...items.slice(ROWS_SHOWN));
      /** @type {HTMLElement} */ (ev.currentTarget).remove();
    } }, `Show the other ${fmtN(items.length - ROWS_SHOWN)}`) : null;
    return h(`details.pv.${cls}`, { open: true }, h("summary", null, `${title} (${fmtN(list.length)})`),
      all ? h("p.muted.step-why", null, all) : null, ul, more);
  };
  const n = (p.deleted || []).length;
  const targets = new Set(targetsOf(p).map((t) => t.uid));
  // In step order when the deletions have steps (stable: the server's order within a
  // step); otherwise the targets first, then owners before dependents as the server lists them.
  const stepped = (p.deleted || []).some((/** @type {any} */ d) => d.step);
  const deleted = stepped ? [...p.deleted].sort((a, b) => (a.step || 99) - (b.step || 99))
    : [...(p.deleted || [])].sort((a, b) => Number(targets.has(b.object.uid)) - Number(targets.has(a.object.uid)));
  /** @type {Map<number, any[]>} */
  const steps = new Map();
  if (stepped) {
    for (const d of deleted) {
      let l = steps.get(d.step || 0);
      if (!l) steps.set(d.step || 0, (l = []));
      l.push(d);
    }
  }
  const isNamespace = !o.set && p.target.kind === "Namespace" && p.target.apiVersion === "v1";
  // Data first: the disks a delete destroys are what cannot be undone.
  const lost = volumes.filter((v) => v.verdict === "data-loss");
  const storage = volumes.filter((v) => v.verdict !== "data-loss" && v.verdict !== "kept");
  const said = new Set([...(p.orphaned || []), ...(p.kept || [])].map((d) => d.object.uid));
  const behind = leftBehind.filter((l) => !said.has(l.object.uid));
  const volumeRow = (/** @type {any} */ v) => h("li", null, link(v.claim), h("div", null, v.says));
  // A set: the objects selected, and what goes with them.
  const chosen = o.set && !stepped ? deleted.filter((d) => targets.has(d.object.uid)).map((d) => (d.reason === "the target" ? { ...d, reason: "" } : d)) : [];
  const withThem = o.set && !stepped ? deleted.filter((d) => !targets.has(d.object.uid)) : [];
  const missing = /** @type {string[]} */ (res.missing || []);
  const refusals = /** @type {any[]} */ (res.refusals || []);
  const fmt = (/** @type {number} */ x) => x.toLocaleString("en-US");
  return present(
    lost.length ? h("div.data-loss", { id: "delete-data-loss", role: "alert" },
      h("p", null, h("b", null, `Data loss: ${counted(lost.length, "volume")} ${would} be destroyed`),
        ` with ${lost.length === 1 ? "its claim" : "their claims"}. The storage provider deletes the disk; nothing brings the data back.`),
      h("ul", null, ...lost.map(volumeRow))) : null,
    h("p.summary", { id: "delete-summary" }, `${p.policy}: ${counted(n, "object")} ${would} be deleted`,
      o.set ? ` (the ${fmt(targets.size)} selected${n > targets.size ? ` and ${fmt(n - targets.size)} with them` : ""})` : "",
      p.orphaned?.length ? `, ${fmt(p.orphaned.length)} orphaned` : "", p.kept?.length ? `, ${fmt(p.kept.length)} kept` : "",
      p.waiting?.length ? `, ${fmt(p.waiting.length)} ${would} wait on finalizers` : "", "."),
    o.readOnly ? h("p.note", { id: "delete-read-only" }, "A dry run: gcscope runs read-only (--read-only) and refuses deletes. This is what the collector would do.") : null,
    res.refusal ? h("p.warn", { id: "delete-refusal" }, `The cluster refused a dry run of this delete, made as you: ${res.refusal}`) : null,
    refusals.length ? h("div.warn", { id: "delete-refusal" }, h("p", null, `The cluster refused a dry run of ${refusals.length === 1 ? "one of these deletes" : `${fmt(refusals.length)} of these deletes`}, made as you:`),
      h("ul", null, ...refusals.map((r) => h("li", null, link(r.object), h("span.muted", null, ` — ${r.error}`))))) : null,
    hidden ? h("p.warn", { id: "delete-hidden" }, `It also affects ${hidden} object${hidden === 1 ? "" : "s"} you may not see: the cluster's collector acts on them all the same.`) : null,
    missing.length ? h("p.warn", { id: "delete-missing" }, `${missing.length === 1 ? "One of the objects selected is" : `${fmt(missing.length)} of the objects selected are`} no longer in the graph (deleted meanwhile, or not yours to see): left out.`) : null,
    p.order ? h("p.order", { id: "delete-order" }, h("b", null, "In this order: "), p.order, ".") : null,
    ...(stepped ? [...steps].map(([step, list], i) => {
      const el = section("deleted", `${i + 1}. ${(isNamespace && STEPS[step]) || stepTitle(step, Math.max(...steps.keys()))}`, list);
      if (el) el.dataset.step = String(step);
      return el;
    })
      : o.set ? [section("deleted", "Selected, deleted", chosen), section("deleted", "Deleted with them", withThem)]
        : [section("deleted", "Deleted", deleted)]),
    recreated.length ? h("details.pv.recreated", { id: "delete-recreated", open: true }, h("summary", null, `Comes back (${recreated.length}): ${recreated.length === 1 ? "its controller stays and replaces it" : "their controllers stay and replace them"}`),
      h("ul", null, ...recreated.map((r) => row({ object: r.object, reason: r.says }, 0)))) : null,
    storage.length ? h("details.pv.storage", { id: "delete-storage", open: true }, h("summary", null, `Storage of the other claims it deletes (${storage.length})`),
      h("ul", null, ...storage.map(volumeRow))) : null,
    behind.length ? h("details.pv.left-behind", { id: "delete-left-behind", open: true }, h("summary", null, `Left behind (${behind.length})`),
      h("ul", null, ...behind.map((l) => row({ object: l.object, reason: l.reason }, 0)))) : null,
    unread ? h("p.warn", { id: "delete-unread" }, `Storage not read: ${unread}`) : null,
    section("orphaned", "Orphaned (stay, reference removed)", p.orphaned),
    section("kept", "Kept: another owner holds them, or their reference is invalid", p.kept),
    section("waiting", "Will wait on other controllers' finalizers", p.waiting),
    p.targetWaitsFor?.length ? section("waiting", o.set ? "The selected will wait for" : "The target will wait for", p.targetWaitsFor) : null,
    h("p.muted", null, "Drawn on the graph behind this dialog."));
}

/**
 * How each target's delete went (a set's real delete: outcomes), refusals first.
 * @param {any[]} outcomes [{object, result} or {object, error}]
 * @param {string} policy
 * @param {(uid: string) => void} select
 */
export function outcomeNodes(outcomes, policy, select) {
  const failed = outcomes.filter((x) => x.error), started = outcomes.length - failed.length;
  const item = (/** @type {any} */ x) => h("li", { "data-uid": x.object.uid, "data-outcome": x.error ? "error" : "started" },
    h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); select(x.object.uid); } }, describe(x.object)),
    x.error ? h("span.error", null, ` — refused: ${x.error}${/not found/i.test(x.error) ? " (already gone: another target's cascade may have taken it)" : ""}`)
      : h("span.muted", null, ` — ${x.result || "deletion started"}`));
  return present(
    h("p.summary", { id: "delete-outcome-summary" }, `${policy}: ${counted(started, "deletion")} started`,
      failed.length ? `, ${failed.length.toLocaleString("en-US")} refused` : "", ` of ${outcomes.length.toLocaleString("en-US")}.`),
    h("details.pv.outcomes", { id: "delete-outcomes", open: true }, h("summary", null, `Each delete (${outcomes.length.toLocaleString("en-US")})`),
      h("ul", null, ...[...outcomes].sort((a, b) => Number(!!b.error) - Number(!!a.error)).map(item))),
    h("p.muted", null, "The collector goes on from here: the graph behind this dialog follows the cascades as the stream reports them."));
}

/** The words for a refused request. @param {any} e */
export function errorText(e) {
  if (!e.status) return `Request failed: ${e.message || e}`;
  const status = `${e.status}${e.code ? " " + e.code : ""}: `;
  const hint = e.status === 409 ? " The object changed (or was recreated) since; look again and retry."
    : e.status === 403 && e.code === "csrf" ? " Reload the page to get a fresh session." : "";
  return `Refused — ${status}${e.message || e}.${hint}`.replace(/\.\./g, ".");
}

/** "1,234" @param {number} n */
const fmtN = (n) => n.toLocaleString("en-US");

/**
 * The value that comes most often ("" for none); with only, the value when every one is it
 * (else ""). @param {string[]} values @param {boolean} [only]
 */
function mostCommon(values, only = false) {
  if (only) return values.length && values.every((v) => v && v === values[0]) ? values[0] : "";
  /** @type {Map<string, number>} */
  const n = new Map();
  for (const v of values) if (v) n.set(v, (n.get(v) || 0) + 1);
  let best = "", most = 0;
  for (const [v, c] of n) if (c > most) [best, most] = [v, c];
  return best;
}
