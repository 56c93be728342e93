// @ts-check
// What the explanation's `deletion` report says (package deletion, docs/api.md), drawn for
// the object panel, the stuck view and the discovery banner: a namespace's deletion as the
// namespace controller reports it (its finalizers, conditions, content left and what holds
// it), who added a finalizer and whether that controller looks alive, and the APIServices
// that make discovery fail. Objects are links through the page's own select.

import { h, clock } from "./dom.js";

/**
 * @typedef {{apiVersion: string, kind: string, namespace?: string, name: string, uid: string}} ObjectRef
 * @typedef {{state: "alive"|"down"|"none"|"unknown", says: string, evidence?: {object: ObjectRef, detail: string}[]}} Liveness
 * @typedef {{finalizer: string, object: ObjectRef, manager?: string, operation?: string, subresource?: string, time?: string,
 *   unknown?: string, controller: Liveness, risk: string}} FinalizerOrigin
 * @typedef {{name: string, groupVersion: string, available: string, reason?: string, message?: string, since?: string,
 *   service?: string, serviceExists: boolean, readyEndpoints: number, problem?: string, next?: string, hidden?: boolean}} APIServiceReport
 * @typedef {{error: string, since: string}} GroupFailure
 * @typedef {(o: ObjectRef) => Node} Linker makes a link that selects the object
 */

/** What each liveness state is called. */
const LIVENESS = /** @type {Record<string, string>} */ ({
  alive: "controller alive", down: "controller down", none: "no controller found", unknown: "controller: cannot tell",
});

/** "3m 12s", "2h 5m", "4d 3h" (a deletion is stuck for minutes to days). @param {number} s seconds */
export function age(s) {
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr}h ${m % 60}m`;
  return `${Math.floor(hr / 24)}d ${hr % 24}h`;
}

/** "10:02:03 (3m 12s ago)"; with the date when it is not today. @param {string} iso */
export function since(iso) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const d = new Date(t);
  const day = d.toDateString() === new Date().toDateString() ? "" : `${d.toLocaleDateString("en-GB", { day: "numeric", month: "short" })} `;
  return `${day}${clock(t).slice(0, 8)} (${age((Date.now() - t) / 1000)} ago)`;
}

/**
 * since(iso) as a node that keeps its "ago" true: retick() writes it again.
 * @param {string} iso
 */
export function sinceNode(iso) {
  return h("span.since", { "data-since": iso }, since(iso));
}

/** Writes again every sinceNode under root (its "… ago"). @param {ParentNode} root */
export function retick(root) {
  for (const el of root.querySelectorAll("[data-since]")) {
    const text = since(/** @type {HTMLElement} */ (el).dataset.since || "");
    if (el.textContent !== text) el.textContent = text;
  }
}

/**
 * Who added a finalizer (the field manager of its managedFields entry, the operation and
 * when), whether that controller looks alive and on what evidence, and what removing the
 * finalizer by hand would risk.
 * @param {FinalizerOrigin} o @param {Linker} link @param {{risk?: boolean}} [opts] risk: false leaves the risk line out (said elsewhere)
 */
export function originView(o, link, opts = {}) {
  const c = o.controller || { state: "unknown", says: "" };
  const added = o.manager
    ? h("p.added", null, h("code.hold", null, o.finalizer), " added by ", h("b.manager", null, o.manager),
      o.operation || o.subresource || o.time
        ? h("span.muted", null, ` (${[o.operation, o.subresource ? `subresource ${o.subresource}` : "", o.time ? `at ${since(o.time)}` : ""].filter(Boolean).join(", ")})`) : null)
    : h("p.added", null, h("code.hold", null, o.finalizer), h("span.muted", null, `: who added it is not known${o.unknown ? ` — ${o.unknown}` : ""}`));
  return h("div.origin", { "data-finalizer": o.finalizer, "data-manager": o.manager || "", "data-liveness": c.state },
    added,
    h("p.liveness", null, h(`span.live.${c.state}`, { title: "Whether the controller that should remove it looks alive, as gcscope found it" }, LIVENESS[c.state] || c.state),
      c.says ? ` ${c.says}` : ""),
    c.evidence?.length ? h("ul.evidence", null, ...c.evidence.map((e) => h("li", null, link(e.object), h("span.muted", null, ` — ${e.detail}`)))) : null,
    opts.risk === false || !o.risk ? null : riskLine(o.risk));
}

/** What removing a finalizer by hand would risk, in one line. @param {string} risk */
export function riskLine(risk) {
  return h("p.risk", null, h("b", null, "Risk if removed by hand: "), risk);
}

/**
 * An aggregated API that is not available: its condition, the Service it points to,
 * whether that exists and has ready endpoints, what is wrong and what would fix it.
 * @param {APIServiceReport} a
 */
export function apiServiceView(a) {
  const svc = a.service
    ? h("span", null, " · Service ", h("code", null, a.service), a.serviceExists ? ` exists, ${a.readyEndpoints} ready endpoint${a.readyEndpoints === 1 ? "" : "s"}` : " does not exist")
    : a.hidden ? h("span.muted", null, " · you may not read it") : null;
  return h("div.apiservice", { "data-name": a.name, "data-available": a.available },
    h("p", null, "APIService ", h("b", null, a.name), h("span.muted", null, ` (${a.groupVersion})`), " · Available: ",
      h(a.available === "True" ? "span" : "b.bad", null, a.available || "Unknown"), a.reason ? ` (${a.reason})` : "",
      a.since ? h("span.muted", null, " since ", sinceNode(a.since)) : null, svc),
    a.message ? h("p.muted", null, a.message) : null,
    a.problem ? h("p.problem", null, h("b", null, "Problem: "), a.problem) : null,
    a.next ? h("p.next", null, h("b", null, "Next: "), a.next) : null);
}

/**
 * The group versions discovery cannot read, since when and why.
 * @param {Record<string, GroupFailure>} failures
 */
export function failureList(failures) {
  const gvs = Object.keys(failures).sort();
  return h("ul.failures", null, ...gvs.map((gv) => h("li", { "data-gv": gv }, h("code", null, gv),
    " since ", sinceNode(failures[gv].since), ": ", h("span.muted", null, failures[gv].error))));
}

/**
 * A namespace's deletion as the namespace controller reports it: Terminating since when,
 * its spec finalizers, its conditions (the True ones emphasised), the content left by kind,
 * the objects finalizers hold (each a link) and who added those finalizers, the API
 * discovery failures and the APIServices at fault.
 * @param {any} ns the report's namespace (deletion.NamespaceReport) @param {Linker} link
 */
export function namespaceView(ns, link) {
  const c = ns.content || { total: 0, byKind: [] };
  const deleting = !!ns.deletionTimestamp;
  const rows = [];
  rows.push(h("p.ns-phase", { id: "ns-phase" }, h("b", { class: deleting ? "terminating" : "" }, ns.phase || (deleting ? "Terminating" : "Active")),
    deleting ? ` since ${since(ns.deletionTimestamp)}` : ""));
  const fins = (/** @type {string} */ label, /** @type {string[]|undefined} */ list, /** @type {string} */ id) => list?.length
    ? h("p", { id }, `${label}: `, ...list.map((f) => h(f === "kubernetes" ? "code" : "code.hold", { title: f === "kubernetes" ? "the namespace controller's: removed once the content is gone" : "" }, f))) : null;
  rows.push(fins("spec.finalizers", ns.finalizers, "ns-finalizers"), fins("metadata.finalizers", ns.metadataFinalizers, "ns-meta-finalizers"));
  if (ns.conditions?.length) {
    rows.push(h("ul.conditions", { id: "ns-conditions" }, ...ns.conditions.map((/** @type {any} */ cd) => h("li", { "data-type": cd.type, "data-status": cd.status, class: cd.status === "True" ? "true" : "" },
      h("b", null, cd.type), ` ${cd.status}`, cd.reason ? ` (${cd.reason})` : "", cd.message ? h("div.muted", null, cd.message) : null))));
  }
  const left = c.total + (c.hidden || 0);
  rows.push(h("p", { id: "ns-content" }, h("b", null, deleting ? `Content left: ${left}` : `Content: ${left}`), left === 1 ? " object" : " objects",
    c.hidden ? h("span.muted", null, ` (${c.hidden} you may not see)`) : ""));
  if (c.byKind?.length) {
    rows.push(h("table.bykind", { id: "ns-bykind" }, h("thead", null, h("tr", null, h("th", null, "kind"), h("th", null, "left"), h("th", null, "being deleted"), h("th", null, "held"))),
      h("tbody", null, ...c.byKind.map((/** @type {any} */ k) => h("tr", { "data-kind": k.kind },
        h("td", { title: k.apiVersion }, k.kind), h("td", null, String(k.count)), h("td", null, k.beingDeleted ? String(k.beingDeleted) : "—"),
        h("td", { class: k.held ? "held" : "" }, k.held ? String(k.held) : "—"))))));
  }
  if (c.holders?.length) {
    rows.push(h("div.holders", { id: "ns-holders" }, h("b", null, "Held by finalizers"),
      h("ul.refs", null, ...c.holders.map((/** @type {any} */ hd) => h("li", { "data-uid": hd.object.uid }, link(hd.object), " ",
        ...(hd.finalizers || []).map((/** @type {string} */ f) => h("code.hold", null, f)),
        hd.beingDeleted ? h("span.muted", null, hd.since ? ` being deleted since ${since(hd.since)}` : " being deleted") : h("span.muted", null, " (not being deleted yet)")))),
      c.moreHolders ? h("p.muted", null, `and ${c.moreHolders} more`) : null));
  }
  if (c.origins?.length) rows.push(h("div.origins", { id: "ns-origins" }, ...c.origins.map((/** @type {FinalizerOrigin} */ o) => originView(o, link))));
  if (ns.discoveryFailures && Object.keys(ns.discoveryFailures).length) {
    rows.push(h("div.discovery", { id: "ns-discovery" }, h("b", null, "API discovery fails"), failureList(ns.discoveryFailures)));
  }
  if (ns.apiServices?.length) rows.push(h("div.apiservices", { id: "ns-apiservices" }, ...ns.apiServices.map(apiServiceView)));
  return h("div.ns-deletion", { id: "ns-deletion", "data-phase": ns.phase || "" }, h("h4", null, deleting ? "Namespace deletion" : "Namespace"), ...rows);
}
