// @ts-check
// The canvas under the pointer: drag to pan, wheel to zoom (or pan sideways), a click
// selects (or opens a set of dependents, or folds a set of loners), a shift-, ctrl- or
// cmd-click adds the object (or a set drawn as one count) to the objects selected together
// or takes it out (selection.js), a double click focuses, and a tooltip says what is under
// the pointer; the zoom buttons.

import { $, describe } from "./dom.js";
import { STATES, stateOf } from "./states.js";
import { progressText } from "./cascades.js";
import { toggleLoners } from "./view.js";

/**
 * @param {import("./page.js").Page} page
 * @param {{selection: import("./selection.js").Selection, view: import("./view.js").PageView, relayout: (now: number) => void}} parts
 */
export function wirePointer(page, parts) {
  const { selection, view } = parts;
  const rd = page.renderer;
  const tooltip = $("tooltip");
  /** @type {{x: number, y: number, moved: boolean, id: number}|null} */
  let drag = null;

  page.canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    page.canvas.setPointerCapture(ev.pointerId);
  });
  page.canvas.addEventListener("pointermove", (ev) => {
    const r = page.canvas.getBoundingClientRect();
    if (drag) {
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (drag.moved || Math.abs(dx) + Math.abs(dy) > 3) {
        drag.moved = true;
        rd.pan(dx, dy);
        drag.x = ev.clientX;
        drag.y = ev.clientY;
        tooltip.hidden = true;
        return;
      }
    }
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    const uid = hit?.item?.uid || null;
    if (uid !== rd.hover) {
      rd.hover = uid;
      rd.dirty = true;
    }
    const nsDel = !hit?.item && !hit?.block && hit?.group?.ns ? page.cascades.ofNamespace(hit.group.ns) : null;
    if (nsDel) {
      // Over a namespace being deleted: how far it is and what holds it, in full.
      tooltip.textContent = `Namespace ${nsDel.ref.name}: ${nsDel.end === null ? "Terminating" : "deleted"}\n${progressText(nsDel, page.cascades.now())}` +
        (nsDel.baseline ? "" : "\n(the page found it under way: what went before is not known)") + "\nclick: its Namespace, and why it is still there";
      tooltip.style.left = `${ev.clientX - r.left + 14}px`;
      tooltip.style.top = `${ev.clientY - r.top + 14}px`;
      tooltip.hidden = false;
    } else if (hit?.item || hit?.block) {
      const b = hit.block;
      const text = hit.item ? tooltipText(hit.item) + (selection.has(hit.item.uid) ? "\nselected with others (shift-click: take it out)" : "\nshift-click: select it with others")
        : b?.loner ? (hit.caption ? "click to fold them back into one box" : `${b.uids.length} ${b.loner}s with no owner and no dependent: the collector has nothing to do with them — click to list them`)
        : `${b?.uids.length} dependents of ${describe(/** @type {any} */ (page.store.nodes.get(b?.parent || "") || { kind: "", name: "?" }))} — click to open`;
      tooltip.textContent = text;
      tooltip.style.left = `${ev.clientX - r.left + 14}px`;
      tooltip.style.top = `${ev.clientY - r.top + 14}px`;
      tooltip.hidden = false;
    } else tooltip.hidden = true;
    page.canvas.style.cursor = hit?.item || hit?.block || nsDel ? "pointer" : "grab";
  });
  page.canvas.addEventListener("pointerleave", () => {
    tooltip.hidden = true;
    rd.hover = null;
    rd.dirty = true;
  });
  page.canvas.addEventListener("pointerup", (ev) => {
    // Only a press that began on the canvas is a click on it (a menu closing under the
    // pointer is not).
    const press = drag;
    drag = null;
    if (!press || press.moved) return;
    const r = page.canvas.getBoundingClientRect();
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    if (ev.shiftKey || ev.ctrlKey || ev.metaKey) {
      // In or out of the objects selected together; nothing else moves.
      if (hit?.item) selection.toggle(hit.item.uid);
      else if (hit?.block) selection.toggleAll(hit.block.uids);
      return;
    }
    if (hit?.block?.loner) toggleLoners(page, parts.relayout, hit.block);
    else if (hit?.block) {
      rd.expanded.add(hit.block.parent);
      const b = hit.block;
      rd.fit({ x: b.group.x + b.x, y: b.group.y + b.y, w: b.w, h: b.h });
    } else if (hit?.item) view.select(hit.item.uid);
    else if (hit?.group?.summary) rd.fit(hit.group); // summary first: near enough, its objects load
    else if (hit?.group?.ns && page.cascades.ofNamespace(hit.group.ns)?.end === null) {
      // A namespace being deleted: its box stands for its Namespace (which is drawn apart, cluster-scoped).
      view.select(/** @type {any} */ (page.cascades.ofNamespace(hit.group.ns)).owner);
    } else view.select(null);
  });
  page.canvas.addEventListener("dblclick", (ev) => {
    if (ev.shiftKey || ev.ctrlKey || ev.metaKey) return; // two quick clicks of a selection
    const r = page.canvas.getBoundingClientRect();
    const hit = rd.hit(ev.clientX - r.left, ev.clientY - r.top);
    if (hit?.item) view.setFocus(hit.item.uid);
  });
  page.canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = page.canvas.getBoundingClientRect();
    if (ev.ctrlKey || Math.abs(ev.deltaY) >= Math.abs(ev.deltaX)) rd.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * (ev.ctrlKey ? 0.01 : 0.0015)));
    else rd.pan(-ev.deltaX, -ev.deltaY);
  }, { passive: false });

  /** @param {import("./layout.js").Item} it */
  function tooltipText(it) {
    const n = it.node, live = page.store.nodes.get(it.uid);
    const st = live ? stateOf(page.store, live) : "removed";
    const label = STATES.find((s) => s.id === st)?.label || st;
    return `${n.kind} ${n.name}${n.namespace ? "\nnamespace " + n.namespace : ""}\n${label}` +
      `${n.finalizers?.length ? "\nfinalizers: " + n.finalizers.join(", ") : ""}`;
  }

  new ResizeObserver(() => rd.resize()).observe(page.canvas);
  $("zoom-in").addEventListener("click", () => rd.zoomAt(rd.w / 2, rd.h / 2, 1.4));
  $("zoom-out").addEventListener("click", () => rd.zoomAt(rd.w / 2, rd.h / 2, 1 / 1.4));
  $("zoom-fit").addEventListener("click", () => rd.fit(page.layout.bounds));
}
