// @ts-check
// Small DOM helpers: building elements without innerHTML, so names from the cluster are
// always text, never markup.

/** The handlers h() gave each element, by event type: patchChildren swaps them. @type {WeakMap<Element, Record<string, EventListener>>} */
const handlers = new WeakMap();

/**
 * @param {string} tag tag name, optionally with .classes
 * @param {Record<string, any>|null} [attrs]
 * @param {...(Node|string|null|undefined|false)} children
 */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
      handlers.set(el, { ...handlers.get(el), [k.slice(2)]: v });
    }
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") {
      // Through the CSSOM: the page's Content-Security-Policy forbids style attributes.
      for (const decl of String(v).split(";")) {
        const i = decl.indexOf(":");
        if (i > 0) el.style.setProperty(decl.slice(0, i).trim(), decl.slice(i + 1).trim());
      }
    }
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/**
 * Sets parent's children to children, changing the page as little as it must: a child
 * equal in kind to the fresh one at its place (same tag, id, data-uid and data-owner) is
 * updated in place (its attributes, its handlers from h(), its text), not replaced. A
 * click is a press and a release on the same node, and Chromium drops it when the node
 * pressed is removed between the two, even to be put back: a panel that rebuilt itself
 * while its object changed lost the clicks on its buttons. A child already in the page
 * (a list kept across renders) is put in place as it is.
 * @param {Node} parent @param {(Node|string)[]} children
 */
export function patchChildren(parent, children) {
  let i = 0;
  for (const c of children) {
    const n = typeof c === "string" ? document.createTextNode(c) : c;
    const cur = parent.childNodes[i++];
    if (!cur) parent.appendChild(n);
    else if (cur === n) continue;
    else if (!n.isConnected && cur.nodeType === Node.TEXT_NODE && n.nodeType === Node.TEXT_NODE) {
      if (cur.nodeValue !== n.nodeValue) cur.nodeValue = n.nodeValue;
    } else if (!n.isConnected && cur instanceof Element && n instanceof Element && sameKind(cur, n)) morph(cur, n);
    else parent.replaceChild(n, cur);
  }
  while (parent.childNodes.length > i) parent.lastChild?.remove();
}

/** @param {Element} a @param {Element} b */
function sameKind(a, b) {
  return a.tagName === b.tagName && a.id === b.id && a.getAttribute("data-uid") === b.getAttribute("data-uid") &&
    a.getAttribute("data-owner") === b.getAttribute("data-owner");
}

/** Makes el what fresh is (attributes, h() handlers, children); fresh is emptied. @param {Element} el @param {Element} fresh */
function morph(el, fresh) {
  for (const { name } of [...el.attributes]) if (!fresh.hasAttribute(name)) el.removeAttribute(name);
  for (const { name, value } of fresh.attributes) {
    if (el.getAttribute(name) === value) continue;
    // Through the CSSOM, as h() sets it: the Content-Security-Policy refuses style attributes.
    if (name === "style") /** @type {HTMLElement} */ (el).style.cssText = /** @type {HTMLElement} */ (fresh).style.cssText;
    else el.setAttribute(name, value);
  }
  const had = handlers.get(el) || {}, has = handlers.get(fresh) || {};
  for (const type of new Set([...Object.keys(had), ...Object.keys(has)])) {
    if (had[type] === has[type]) continue;
    if (had[type]) el.removeEventListener(type, had[type]);
    if (has[type]) el.addEventListener(type, has[type]);
  }
  handlers.set(el, has);
  patchChildren(el, [...fresh.childNodes]);
}

/** @param {string} id */
export function $(id) {
  return /** @type {HTMLElement} */ (document.getElementById(id));
}

/** @param {{kind: string, namespace?: string, name: string}} o */
export function describe(o) {
  return `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`;
}

/** @param {number} ns a duration in nanoseconds */
export function duration(ns) {
  const ms = ns / 1e6;
  if (ms < 1) return `${Math.round(ns / 1e3)} µs`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** @param {number} t epoch ms */
export function clock(t) {
  const d = new Date(t);
  return hms(t) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

/** The local time of t to the second, 24-hour, as everything on the page says it: "17:16:36". @param {number|string} t */
export function hms(t) {
  return new Date(t).toTimeString().slice(0, 8);
}
