// @ts-check
// The delete dialog: choose a propagation policy, see what it would do (the server's
// dry-run prediction, listed here and drawn on the graph), confirm — by typing the name
// when more than 20 objects would go — and see the apiserver's answer.

import { h, $, describe } from "./dom.js";
import { deleteObject } from "./api.js";

/** @param {...(Node|null)} nodes the nodes that are not null */
const present = (...nodes) => /** @type {Node[]} */ (nodes.filter((n) => n !== null));

/** Above this many objects to delete, the user types the name to confirm. */
export const TYPED_CONFIRM_OVER = 20;

/** @typedef {import("./render.js").PreviewKind} PreviewKind */

export class DeleteDialog {
  /**
   * @param {import("./store.js").Store} store
   * @param {{preview: (m: Map<string, PreviewKind>) => void, done: (uid: string, policy: string) => void, select: (uid: string) => void}} hooks
   */
  constructor(store, hooks) {
    this.store = store;
    this.hooks = hooks;
    this.dialog = /** @type {HTMLDialogElement|null} */ (document.getElementById("delete-dialog"));
    /** @type {string|null} */ this.uid = null;
    this.seq = 0;
    /** @type {any} */ this.prediction = null;
    if (!this.dialog) return; // read-only: there is no dialog
    const form = /** @type {HTMLFormElement} */ ($("delete-form"));
    form.addEventListener("change", (ev) => {
      if (/** @type {HTMLInputElement} */ (ev.target).name === "policy") this.predict();
    });
    $("delete-confirm-input").addEventListener("input", () => this.updateConfirm());
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
    $("delete-title").textContent = `Delete ${describe(n)}`;
    /** @type {HTMLInputElement} */ ($("delete-confirm-input")).value = "";
    $("delete-error").hidden = true;
    this.dialog.showModal();
    this.predict();
  }

  close() {
    this.dialog?.close();
  }

  cleanup() {
    this.uid = null;
    this.prediction = null;
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
      this.prediction = res.prediction;
      this.showPrediction(res.prediction, res.hidden || 0);
    } catch (e) {
      if (seq !== this.seq) return;
      this.showError(e);
      $("delete-preview").replaceChildren();
    }
    this.updateConfirm();
  }

  /** @param {any} p @param {number} hidden objects affected that this user may not see */
  showPrediction(p, hidden) {
    /** @type {Map<string, PreviewKind>} */
    const m = new Map();
    for (const d of p.deleted || []) m.set(d.object.uid, "deleted");
    for (const d of p.orphaned || []) m.set(d.object.uid, "orphaned");
    for (const d of p.kept || []) m.set(d.object.uid, "kept");
    for (const d of p.waiting || []) m.set(d.object.uid, "waiting");
    m.set(p.target.uid, "target");
    this.hooks.preview(m);

    const section = (/** @type {string} */ cls, /** @type {string} */ title, /** @type {any[]} */ list) => list?.length
      ? h(`details.pv.${cls}`, { open: list.length <= 12 }, h("summary", null, `${title} (${list.length})`),
        h("ul", null, ...list.slice(0, 300).map((d) => h("li", null,
          h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); this.hooks.select(d.object.uid); } }, describe(d.object)),
          d.finalizers?.length ? h("span.muted", null, ` held by ${d.finalizers.join(", ")}`) : null,
          d.reason ? h("div.muted", null, d.reason) : null))))
      : null;
    const n = (p.deleted || []).length;
    // The target first, then owners before dependents as the server lists them.
    const deleted = [...(p.deleted || [])].sort((a, b) => Number(b.object.uid === p.target.uid) - Number(a.object.uid === p.target.uid));
    $("delete-preview").replaceChildren(...present(
      h("p.summary", { id: "delete-summary" }, `${p.policy}: ${n} object${n === 1 ? "" : "s"} will be deleted`,
        p.orphaned?.length ? `, ${p.orphaned.length} orphaned` : "", p.kept?.length ? `, ${p.kept.length} kept by another owner` : "",
        p.waiting?.length ? `, ${p.waiting.length} will wait on finalizers` : "", "."),
      hidden ? h("p.warn", { id: "delete-hidden" }, `It also affects ${hidden} object${hidden === 1 ? "" : "s"} you may not see: the cluster's collector acts on them all the same.`) : null,
      section("deleted", "Deleted", deleted),
      section("orphaned", "Orphaned (stay, reference removed)", p.orphaned),
      section("kept", "Kept: another owner holds them", p.kept),
      section("waiting", "Will wait on other controllers' finalizers", p.waiting),
      p.targetWaitsFor?.length ? section("waiting", "The target will wait for", p.targetWaitsFor) : null,
      h("p.muted", null, "Drawn on the graph behind this dialog.")));
  }

  updateConfirm() {
    const btn = /** @type {HTMLButtonElement} */ ($("delete-confirm"));
    const typed = $("delete-typed");
    const n = this.uid ? this.store.nodes.get(this.uid) : null;
    const many = (this.prediction?.deleted?.length || 0) > TYPED_CONFIRM_OVER;
    typed.hidden = !many;
    if (n) $("delete-typed-name").textContent = n.name;
    const ok = !!this.prediction && (!many || /** @type {HTMLInputElement} */ ($("delete-confirm-input")).value === n?.name);
    btn.disabled = !ok;
    btn.textContent = this.prediction ? `Delete (${this.policy})` : "Delete";
  }

  async confirm() {
    const uid = this.uid;
    if (!uid || !this.prediction) return;
    const policy = this.policy;
    const btn = /** @type {HTMLButtonElement} */ ($("delete-confirm"));
    btn.disabled = true;
    btn.textContent = "Deleting…";
    $("delete-error").hidden = true;
    try {
      await deleteObject(uid, policy, false);
      this.close();
      this.hooks.done(uid, policy);
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
