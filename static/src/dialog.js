// @ts-check
// The delete dialog, for one object or for the objects the user selected together (a set):
// choose a propagation policy, see what it would do (the server's dry-run prediction,
// listed by prediction.js and drawn on the graph), confirm, and see the apiserver's answer.
//
// One object: confirmed by typing the name when more than 20 objects would go, the
// namespace/name when a disk would be destroyed with its claim (said first, as a warning);
// one already being deleted is said to be, with what holds it. A set (POST
// /api/v1/deletions): always confirmed by typing "delete N objects", N the objects the
// union deletes, as cloud consoles ask a fixed phrase before a bulk delete; after the
// delete, each target's outcome. With --read-only the dialog is a preview: the prediction,
// and no way to confirm.

import { h, $, describe, hms } from "./dom.js";
import { deleteObject, deleteSet, explain } from "./api.js";
import { blockerSummaryText } from "./panel.js";
import { holdingFinalizers } from "./states.js";
import { predictionNodes, previewMarks, outcomeNodes, errorText, targetsOf } from "./prediction.js";

/** Above this many objects to delete, the user types the name to confirm. */
export const TYPED_CONFIRM_OVER = 20;

/** The phrase typed to confirm the delete of a set that deletes n objects. @param {number} n */
export const setPhrase = (n) => `delete ${n} object${n === 1 ? "" : "s"}`;

/** @typedef {import("./render.js").PreviewKind} PreviewKind */

/**
 * What the dialog hands back to the page.
 * @typedef {object} DialogHooks
 * @property {(m: Map<string, PreviewKind>) => void} preview draws a prediction on the graph (empty: none)
 * @property {(uid: string, policy: string, target: import("./store.js").NodeState|undefined) => void} done one object's delete was accepted
 * @property {(outcomes: any[], policy: string) => void} [setDone] a set's deletes were sent: each one's outcome
 * @property {(uid: string) => void} select
 */

export class DeleteDialog {
  /** @param {import("./store.js").Store} store @param {DialogHooks} hooks */
  constructor(store, hooks) {
    this.store = store;
    this.hooks = hooks;
    this.dialog = /** @type {HTMLDialogElement|null} */ (document.getElementById("delete-dialog"));
    /** @type {string|null} the object, for one */ this.uid = null;
    /** @type {string[]|null} the objects selected, for a set */ this.set = null;
    /** a set's deletes were sent: the dialog shows how each went */ this.sent = false;
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
      // Said where the confirm would be, and why there is none.
      const menu = /** @type {HTMLElement} */ (this.dialog.querySelector("menu"));
      menu.prepend(h("button.danger", { type: "button", id: "delete-set-refused", disabled: true, "aria-describedby": "delete-read-only",
        title: "gcscope runs read-only (--read-only): it refuses deletes" }, `Delete ${k} (read-only)`));
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
    const input = /** @type {HTMLInputElement|null} */ (document.getElementById("delete-confirm-input"));
    if (input) input.value = "";
    $("delete-error").hidden = true;
    document.getElementById("delete-set-refused")?.remove();
    const fieldset = /** @type {HTMLFieldSetElement|null} */ (document.querySelector("#delete-form fieldset"));
    if (fieldset) fieldset.disabled = false;
    const btn = document.getElementById("delete-confirm");
    if (btn) btn.hidden = false;
    $("delete-cancel").textContent = this.readOnly ? "Close" : "Cancel";
  }

  show() {
    this.showState();
    /** @type {HTMLDialogElement} */ (this.dialog).showModal();
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
      // The note keeps what the graph alone says.
    }
  }

  /** Says, above the policies, when the object (or some of a set) is already being deleted and what holds it. */
  showState() {
    const form = /** @type {HTMLElement} */ ($("delete-form"));
    let el = document.getElementById("delete-state");
    if (!el) {
      el = h("div.delete-state", { id: "delete-state", role: "note" });
      form.insertBefore(el, form.querySelector("fieldset"));
    }
    if (this.set) {
      const deleting = this.set.filter((u) => this.store.nodes.get(u)?.beingDeleted).length;
      el.hidden = !deleting;
      if (deleting) {
        el.replaceChildren(h("p", null, h("b", null, `${deleting === this.set.length ? "All" : deleting.toLocaleString("en-US")} of them already being deleted: `),
          "deleting them again only sets the collector's own finalizers to match the policy (foregroundDeletion for Foreground, orphan for Orphan, neither for Background); it removes no other controller's finalizer."));
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
    this.set = null;
    this.sent = false;
    this.prediction = null;
    this.volumes = [];
    this.explanation = null;
    this.seq++;
    document.getElementById("delete-set-refused")?.remove();
    this.hooks.preview(new Map());
  }

  async predict() {
    const uid = this.uid, set = this.set;
    if ((!uid && !set) || this.sent) return;
    const seq = ++this.seq, policy = this.policy;
    this.prediction = null;
    this.updateConfirm();
    $("delete-preview").replaceChildren(h("p.muted", null, `computing what ${policy} would do…`));
    try {
      const res = set ? await deleteSet(set, policy, true) : await deleteObject(/** @type {string} */ (uid), policy, true);
      if (seq !== this.seq) return;
      this.prediction = res.prediction; // a refusal warns: the apiserver decides the delete itself
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
    /** @type {import("./prediction.js").Tree} */
    const tree = {
      dependents: (uid) => store.dependents.get(uid) || [],
      owners: (uid) => (store.nodes.get(uid)?.owners || []).map((o) => o.uid),
      node: (uid) => store.nodes.get(uid),
    };
    $("delete-preview").replaceChildren(...predictionNodes(res, { readOnly: !!this.readOnly, set: !!this.set, select: this.hooks.select, tree }));
  }

  updateConfirm() {
    const btn = /** @type {HTMLButtonElement|null} */ (document.getElementById("delete-confirm"));
    const typed = document.getElementById("delete-typed");
    if (!btn || !typed) return; // read-only: nothing to confirm
    const deleted = this.prediction?.deleted?.length || 0;
    // A delete that destroys data asks for one more deliberate step, as cloud consoles do:
    // typing the object's namespace/name. So does one of many objects (its name), and a
    // set, always (the phrase names how many go).
    const dataLoss = !!this.prediction && this.volumes.some((v) => v.verdict === "data-loss");
    const many = deleted > TYPED_CONFIRM_OVER;
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    const ask = this.set ? !!this.prediction : many || dataLoss;
    typed.hidden = !ask || this.sent;
    typed.classList.toggle("data-loss", dataLoss);
    const want = this.set ? (this.prediction ? setPhrase(deleted) : "") : n ? (dataLoss && n.namespace ? `${n.namespace}/${n.name}` : n.name) : "";
    if (this.set || n) $("delete-typed-name").textContent = want;
    const ok = !!this.prediction && !this.sent && (!ask || /** @type {HTMLInputElement} */ ($("delete-confirm-input")).value.trim() === want);
    btn.disabled = !ok;
    btn.textContent = !this.prediction ? "Delete" : this.set ? `Delete ${this.set.length.toLocaleString("en-US")} (${this.policy})` : `Delete (${this.policy})`;
  }

  async confirm() {
    if (!this.prediction || this.readOnly || this.sent) return;
    if (this.set) return this.confirmSet(this.set);
    const uid = this.uid;
    if (!uid) return;
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

  /**
   * Deletes the set, each target with its UID precondition (the server's), and shows how
   * each went; the dialog stays open on that, its preview off the graph, so the stream's
   * states show behind it. @param {string[]} set
   */
  async confirmSet(set) {
    const policy = this.policy, opened = this.opened;
    const btn = /** @type {HTMLButtonElement} */ ($("delete-confirm"));
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
    if (opened !== this.opened) return; // closed meanwhile
    this.sent = true;
    this.hooks.preview(new Map());
    $("delete-title").textContent = `Deleted ${set.length.toLocaleString("en-US")} selected object${set.length === 1 ? "" : "s"} (${policy})`;
    $("delete-preview").replaceChildren(...outcomeNodes(outcomes, policy, this.hooks.select));
    /** @type {HTMLFieldSetElement} */ (document.querySelector("#delete-form fieldset")).disabled = true;
    btn.hidden = true;
    $("delete-typed").hidden = true;
    const close = $("delete-cancel");
    close.textContent = "Close";
    close.focus();
  }

  /** @param {any} e */
  showError(e) {
    const el = $("delete-error");
    el.textContent = errorText(e);
    el.hidden = false;
  }
}
