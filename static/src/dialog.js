// @ts-check
// The delete dialog: choose a propagation policy, see what it would do (the server's
// dry-run prediction, listed here and drawn on the graph), confirm — by typing the name
// when more than 20 objects would go, the namespace/name when a disk would be destroyed
// with its claim (said first, as a warning) — and see the apiserver's answer. An object already
// being deleted is said to be, with what holds it. A prediction whose deletions come in
// steps (a namespace: its Pods, then the rest of its content, then the namespace, then its
// own dependents) lists them step by step, with the order in words. With --read-only the
// dialog is a preview: the prediction, and no way to confirm.

import { h, $, describe, hms } from "./dom.js";
import { deleteObject, explain } from "./api.js";
import { blockerSummaryText, counted } from "./panel.js";
import { holdingFinalizers } from "./states.js";
import { VirtualList } from "./vlist.js";

/** @param {...(Node|null)} nodes the nodes that are not null */
const present = (...nodes) => /** @type {Node[]} */ (nodes.filter((n) => n !== null));

/** Above this many objects to delete, the user types the name to confirm. */
export const TYPED_CONFIRM_OVER = 20;

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

/** @typedef {import("./render.js").PreviewKind} PreviewKind */

export class DeleteDialog {
  /**
   * @param {import("./store.js").Store} store
   * @param {{preview: (m: Map<string, PreviewKind>) => void, done: (uid: string, policy: string, target: import("./store.js").NodeState|undefined) => void, select: (uid: string) => void}} hooks
   */
  constructor(store, hooks) {
    this.store = store;
    this.hooks = hooks;
    this.dialog = /** @type {HTMLDialogElement|null} */ (document.getElementById("delete-dialog"));
    /** @type {string|null} */ this.uid = null;
    this.seq = 0;
    /** @type {any} */ this.prediction = null;
    /** @type {any[]} the volumes of the claims the prediction deletes (deletion.VolumeFate) */ this.volumes = [];
    /** @type {any} */ this.explanation = null;
    /** counts the openings, so that a late answer about a former object is dropped */ this.opened = 0;
    if (!this.dialog) return;
    // Without a confirm button (--read-only), the dialog only previews.
    this.readOnly = !document.getElementById("delete-confirm");
    const form = /** @type {HTMLFormElement} */ ($("delete-form"));
    form.addEventListener("change", (ev) => {
      if (/** @type {HTMLInputElement} */ (ev.target).name === "policy") this.predict();
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
    const el = /** @type {HTMLInputElement|null} */ (document.querySelector('#delete-form input[name="policy"]:checked'));
    return el ? el.value : "Background";
  }

  /** @param {string} uid */
  open(uid) {
    const n = this.store.nodes.get(uid);
    if (!this.dialog || !n || n.virtual) return;
    this.uid = uid;
    this.opened++;
    $("delete-title").textContent = this.readOnly ? `What would deleting ${describe(n)} do?` : `Delete ${describe(n)}`;
    const input = /** @type {HTMLInputElement|null} */ (document.getElementById("delete-confirm-input"));
    if (input) input.value = "";
    $("delete-error").hidden = true;
    this.explanation = null;
    this.showState();
    this.dialog.showModal();
    this.predict();
    if (n.beingDeleted) this.askWhatHolds(uid);
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
      // The note keeps what the graph alone says.
    }
  }

  /** Says, above the policies, when the object is already being deleted and what holds it. */
  showState() {
    const form = /** @type {HTMLElement} */ ($("delete-form"));
    let el = document.getElementById("delete-state");
    if (!el) {
      el = h("div.delete-state", { id: "delete-state", role: "note" });
      form.insertBefore(el, form.querySelector("fieldset"));
    }
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    if (!n || !n.beingDeleted) {
      el.hidden = true;
      return;
    }
    const ex = this.explanation;
    const fins = n.finalizers || [];
    /** @type {string[]} */
    const parts = [];
    if (fins.includes("foregroundDeletion")) {
      const total = ex ? (ex.blockerSummary?.total ?? (ex.blockers || []).length + (ex.hiddenBlockers || 0)) : -1;
      parts.push(total < 0 ? "in the foreground: the collector deletes its blocking dependents before it"
        : total === 0 ? "in the foreground; no blocking dependent remains, so the collector removes foregroundDeletion next"
          : `in the foreground, waiting for ${blockerSummaryText(ex)}`);
    }
    if (fins.includes("orphan")) parts.push("orphaning: the collector takes this owner out of its dependents, then removes the orphan finalizer");
    /** @type {{finalizer: string, owner?: string}[]} */
    const holds = ex?.holds?.length ? ex.holds : holdingFinalizers(n).map((f) => ({ finalizer: f }));
    for (const hd of holds) parts.push(`held by finalizer ${hd.finalizer}${hd.owner ? ` (${hd.owner})` : ""}`);
    if (!parts.length) parts.push("nothing holds it any more: the apiserver removes it in a moment");
    const since = n.deletionTimestamp ? ` (since ${hms(n.deletionTimestamp)})` : "";
    el.replaceChildren(
      h("p", null, h("b", null, `Already being deleted${since}: `), `${parts.join("; ")}.`),
      h("p.muted", null, holds.length
        ? `Deleting it again does not remove ${holds.length === 1 ? "that finalizer" : "those finalizers"}: the apiserver only sets the collector's own to match the policy (foregroundDeletion for Foreground, orphan for Orphan, neither for Background). The object panel shows the command that would release a hold by hand.`
        : "Deleting it again only sets the collector's own finalizers to match the policy: foregroundDeletion for Foreground, orphan for Orphan, neither for Background (a foreground deletion then stops waiting)."));
    el.hidden = false;
  }

  close() {
    this.dialog?.close();
  }

  cleanup() {
    this.opened++;
    this.uid = null;
    this.prediction = null;
    this.volumes = [];
    this.explanation = null;
    this.seq++;
    this.hooks.preview(new Map());
  }

  async predict() {
    const uid = this.uid;
    if (!uid) return;
    const seq = ++this.seq, policy = this.policy;
    this.prediction = null;
    this.updateConfirm();
    $("delete-preview").replaceChildren(h("p.muted", null, `computing what ${policy} would do…`));
    try {
      const res = await deleteObject(uid, policy, true);
      if (seq !== this.seq) return;
      this.prediction = res.prediction; // a refusal warns: the apiserver decides the delete itself
      this.volumes = res.volumes || [];
      this.showPrediction(res.prediction, res.hidden || 0, res.refusal || "", this.volumes, res.leftBehind || [], res.unread || "", res.recreated || []);
    } catch (e) {
      if (seq !== this.seq) return;
      this.showError(e);
      $("delete-preview").replaceChildren();
    }
    this.updateConfirm();
  }

  /**
   * @param {any} p @param {number} hidden objects affected that this user may not see
   * @param {string} refusal what the cluster answered the delete, dry-run as the user ("" when it would take it)
   * @param {any[]} [volumes] what becomes of the storage of the claims it deletes, data loss first
   * @param {any[]} [leftBehind] what stays, and why
   * @param {string} [unread] what of the storage could not be read
   * @param {any[]} [recreated] what it deletes that comes back, and who brings it back
   */
  showPrediction(p, hidden, refusal, volumes = [], leftBehind = [], unread = "", recreated = []) {
    /** @type {Map<string, PreviewKind>} */
    const m = new Map();
    for (const d of p.deleted || []) m.set(d.object.uid, "deleted");
    for (const d of p.orphaned || []) m.set(d.object.uid, "orphaned");
    for (const d of p.kept || []) m.set(d.object.uid, "kept");
    for (const d of p.waiting || []) m.set(d.object.uid, "waiting");
    m.set(p.target.uid, "target");
    this.hooks.preview(m);

    /** @param {any} d @param {boolean} oneLine @param {string} [common] the reason its section says once, not on each row */
    const row = (d, oneLine, common) => {
      const reason = d.reason && d.reason !== common ? d.reason : "";
      return h(oneLine ? "span" : "li", { title: d.reason || undefined },
        h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.hooks.select(d.object.uid); } }, describe(d.object)),
        d.finalizers?.length ? h("span.muted", null, ` held by ${d.finalizers.join(", ")}`) : null,
        reason ? h(oneLine ? "span.muted" : "div.muted", null, oneLine ? ` — ${reason}` : reason) : null);
    };
    // Long lists (a cascade of 2,000) are virtualized, one line per object. A step's
    // objects mostly go for one reason: said once, under its title.
    const section = (/** @type {string} */ cls, /** @type {string} */ title, /** @type {any[]} */ list, /** @type {boolean} */ once = false) => {
      if (!list?.length) return null;
      const common = once ? mostCommon(list.map((d) => d.reason || "")) : "";
      let body;
      if (list.length > 50) {
        const v = new VirtualList({ render: (/** @type {any} */ d) => row(d, true, common), maxRows: 14 });
        v.set(list);
        body = v.el;
      } else body = h("ul", null, ...list.map((d) => row(d, false, common)));
      return h(`details.pv.${cls}`, { open: list.length <= 12 }, h("summary", null, `${title} (${list.length.toLocaleString("en-US")})`),
        common ? h("p.muted.step-why", null, common) : null, body);
    };
    const n = (p.deleted || []).length;
    // In step order when the deletions have steps (stable: the server's order within a
    // step); otherwise the target first, then owners before dependents as the server lists them.
    const stepped = (p.deleted || []).some((/** @type {any} */ d) => d.step);
    const deleted = stepped ? [...p.deleted].sort((a, b) => (a.step || 99) - (b.step || 99))
      : [...(p.deleted || [])].sort((a, b) => Number(b.object.uid === p.target.uid) - Number(a.object.uid === p.target.uid));
    /** @type {Map<number, any[]>} */
    const steps = new Map();
    if (stepped) {
      for (const d of deleted) {
        let l = steps.get(d.step || 0);
        if (!l) steps.set(d.step || 0, (l = []));
        l.push(d);
      }
    }
    const isNamespace = p.target.kind === "Namespace" && p.target.apiVersion === "v1";
    // Data first: the disks a delete destroys are what cannot be undone.
    const lost = volumes.filter((v) => v.verdict === "data-loss");
    const storage = volumes.filter((v) => v.verdict !== "data-loss" && v.verdict !== "kept");
    const said = new Set([...(p.orphaned || []), ...(p.kept || [])].map((d) => d.object.uid));
    const behind = leftBehind.filter((l) => !said.has(l.object.uid));
    const volumeRow = (/** @type {any} */ v) => h("li", null,
      h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.hooks.select(v.claim.uid); } }, describe(v.claim)),
      h("div", null, v.says));
    $("delete-preview").replaceChildren(...present(
      lost.length ? h("div.data-loss", { id: "delete-data-loss", role: "alert" },
        h("p", null, h("b", null, `Data loss: ${counted(lost.length, "volume")} ${this.readOnly ? "would be" : "will be"} destroyed`),
          ` with ${lost.length === 1 ? "its claim" : "their claims"}. The storage provider deletes the disk; nothing brings the data back.`),
        h("ul", null, ...lost.map(volumeRow))) : null,
      h("p.summary", { id: "delete-summary" }, `${p.policy}: ${counted(n, "object")} ${this.readOnly ? "would" : "will"} be deleted`,
        p.orphaned?.length ? `, ${p.orphaned.length.toLocaleString("en-US")} orphaned` : "", p.kept?.length ? `, ${p.kept.length.toLocaleString("en-US")} kept` : "",
        p.waiting?.length ? `, ${p.waiting.length.toLocaleString("en-US")} ${this.readOnly ? "would" : "will"} wait on finalizers` : "", "."),
      this.readOnly ? h("p.note", { id: "delete-read-only" }, "A dry run: gcscope runs read-only (--read-only) and refuses deletes. This is what the collector would do.") : null,
      refusal ? h("p.warn", { id: "delete-refusal" }, `The cluster refused a dry run of this delete, made as you: ${refusal}`) : null,
      hidden ? h("p.warn", { id: "delete-hidden" }, `It also affects ${hidden} object${hidden === 1 ? "" : "s"} you may not see: the cluster's collector acts on them all the same.`) : null,
      p.order ? h("p.order", { id: "delete-order" }, h("b", null, "In this order: "), p.order, ".") : null,
      ...(stepped ? [...steps].map(([step, list], i) => {
        const el = section("deleted", `${i + 1}. ${(isNamespace && STEPS[step]) || stepTitle(step, Math.max(...steps.keys()))}`, list, true);
        if (el) el.dataset.step = String(step);
        return el;
      })
        : [section("deleted", "Deleted", deleted)]),
      recreated.length ? h("details.pv.recreated", { id: "delete-recreated", open: true }, h("summary", null, `Comes back (${recreated.length}): its controller stays and replaces it`),
        h("ul", null, ...recreated.map((/** @type {any} */ r) => row({ object: r.object, reason: r.says }, false)))) : null,
      storage.length ? h("details.pv.storage", { id: "delete-storage", open: true }, h("summary", null, `Storage of the other claims it deletes (${storage.length})`),
        h("ul", null, ...storage.map(volumeRow))) : null,
      behind.length ? h("details.pv.left-behind", { id: "delete-left-behind", open: true }, h("summary", null, `Left behind (${behind.length})`),
        h("ul", null, ...behind.map((/** @type {any} */ l) => row({ object: l.object, reason: l.reason }, false)))) : null,
      unread ? h("p.warn", { id: "delete-unread" }, `Storage not read: ${unread}`) : null,
      section("orphaned", "Orphaned (stay, reference removed)", p.orphaned),
      section("kept", "Kept: another owner holds them, or their reference is invalid", p.kept),
      section("waiting", "Will wait on other controllers' finalizers", p.waiting),
      p.targetWaitsFor?.length ? section("waiting", "The target will wait for", p.targetWaitsFor) : null,
      h("p.muted", null, "Drawn on the graph behind this dialog.")));
  }

  updateConfirm() {
    const btn = /** @type {HTMLButtonElement|null} */ (document.getElementById("delete-confirm"));
    const typed = document.getElementById("delete-typed");
    if (!btn || !typed) return; // read-only: nothing to confirm
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    // A delete that destroys data asks for one more deliberate step, as cloud consoles do:
    // typing the object's namespace/name. So does one of many objects (its name).
    const dataLoss = !!this.prediction && this.volumes.some((v) => v.verdict === "data-loss");
    const many = (this.prediction?.deleted?.length || 0) > TYPED_CONFIRM_OVER;
    typed.hidden = !many && !dataLoss;
    typed.classList.toggle("data-loss", dataLoss);
    const want = n ? (dataLoss && n.namespace ? `${n.namespace}/${n.name}` : n.name) : "";
    if (n) $("delete-typed-name").textContent = want;
    const ok = !!this.prediction && ((!many && !dataLoss) || /** @type {HTMLInputElement} */ ($("delete-confirm-input")).value === want);
    btn.disabled = !ok;
    btn.textContent = this.prediction ? `Delete (${this.policy})` : "Delete";
  }

  async confirm() {
    const uid = this.uid;
    if (!uid || !this.prediction || this.readOnly) return;
    const policy = this.policy;
    // Named as it was when asked: a Pod no kubelet runs is gone before the answer.
    const target = this.store.nodes.get(uid);
    const btn = /** @type {HTMLButtonElement} */ ($("delete-confirm"));
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

  /** @param {any} e */
  showError(e) {
    const el = $("delete-error");
    const status = e.status ? `${e.status}${e.code ? " " + e.code : ""}: ` : "";
    const hint = e.status === 409 ? " The object changed (or was recreated) since; look again and retry."
      : e.status === 403 && e.code === "csrf" ? " Reload the page to get a fresh session." : "";
    el.textContent = `Refused — ${status}${e.message || e}.${hint}`.replace(/\.\./g, ".");
    if (!e.status) el.textContent = `Request failed: ${e.message || e}`;
    el.hidden = false;
  }
}

/** The value that comes most often ("" for none). @param {string[]} values */
function mostCommon(values) {
  /** @type {Map<string, number>} */
  const n = new Map();
  for (const v of values) if (v) n.set(v, (n.get(v) || 0) + 1);
  let best = "", most = 0;
  for (const [v, c] of n) if (c > most) [best, most] = [v, c];
  return best;
}
