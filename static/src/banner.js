// @ts-check
// The banner at the top of the page while API discovery fails for some group version
// (the stream's sync state, discoveryFailures): which ones, since when and why, and the
// APIService at fault (GET /api/v1/health, asked again each time the failures change).
// While one fails, its resources are not watched and no namespace can finish deleting.
// The banner goes as soon as discovery recovers.

import { h } from "./dom.js";
import { get } from "./api.js";
import { failureList, apiServiceView, retick } from "./deletion.js";

/** The relative times ("30s ago") are written again this often while the banner shows: to the second. */
const TICK_MS = 1000;

export class DiscoveryBanner {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.el = el;
    /** @type {Record<string, import("./deletion.js").GroupFailure>} */
    this.failures = {};
    this.key = "";
    /** @type {any[]} */ this.apiServices = [];
    this.healthError = "";
    this.asked = 0;
    this.drawn = 0;
  }

  /**
   * The stream's sync state changed: shows the failures (and asks for the APIServices
   * behind them when they are new), or hides the banner when there are none.
   * @param {Record<string, import("./deletion.js").GroupFailure>|undefined} failures
   */
  update(failures) {
    const f = failures || {};
    const key = Object.keys(f).sort().map((gv) => `${gv}@${f[gv].since}`).join(",");
    if (key === this.key) return;
    this.key = key;
    this.failures = f;
    if (!key) {
      this.apiServices = [];
      this.el.hidden = true;
      this.el.replaceChildren();
      return;
    }
    this.render();
    this.askHealth(key);
  }

  /** @param {string} key the failures asked about */
  async askHealth(key) {
    const n = ++this.asked;
    try {
      const r = await get("/api/v1/health");
      if (n !== this.asked || key !== this.key) return;
      this.apiServices = r?.apiServices || [];
      this.healthError = "";
    } catch (e) {
      if (n !== this.asked) return;
      this.healthError = /** @type {any} */ (e).message || String(e);
    }
    this.render();
  }

  /** Writes the relative times again ("30s ago", then "31s ago"), each second. @param {number} now */
  tick(now) {
    if (this.el.hidden || now - this.drawn < TICK_MS) return;
    this.drawn = now;
    retick(this.el);
  }

  render() {
    this.drawn = performance.now();
    const gvs = Object.keys(this.failures);
    if (!gvs.length) return;
    // The APIServices of the failing group versions first; others that are not available after.
    const failing = this.apiServices.filter((a) => gvs.includes(a.groupVersion));
    const others = this.apiServices.filter((a) => !gvs.includes(a.groupVersion));
    this.el.hidden = false;
    this.el.replaceChildren(h("div.banner-body", null,
      h("p", null, h("b", null, `API discovery fails for ${gvs.length === 1 ? "1 group version" : `${gvs.length} group versions`}`),
        ": their resources are not watched (the collector cannot see what they own), and the namespace controller cannot finish deleting any namespace while one fails."),
      failureList(this.failures),
      ...[...failing, ...others].map(apiServiceView),
      this.healthError ? h("p.muted", null, `The APIServices could not be read: ${this.healthError}`) : null));
  }
}
