// @ts-check
// Small DOM helpers: building elements without innerHTML, so names from the cluster are
// always text, never markup.

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
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
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
