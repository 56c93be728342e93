// @ts-check
// Several clusters in one gcscope (docs/ui.md): the picker in the bar goes to another
// cluster's page (its URL names the cluster; the server remembers the last one), its
// options say where each cluster's engine is, and a page whose cluster has no engine yet
// waits for it, saying why, then loads.

import { get } from "./api.js";

/** How often the picker's states are refreshed, and a waiting page asks again. */
const POLL_MS = 2000;

/**
 * @typedef {{name: string, server?: string, state: string, reason?: string, default?: boolean}} ClusterStatus
 */

/** The page's cluster picker, when gcscope serves several. */
export class ClusterPicker {
  constructor() {
    /** @type {HTMLSelectElement|null} */
    this.select = /** @type {HTMLSelectElement|null} */ (document.getElementById("cluster-picker"));
    this.cluster = document.body.dataset.cluster || "";
    this.banner = document.getElementById("cluster-banner");
    // Nothing of the page's panels is this cluster's yet: they are hidden until it is.
    if (this.banner) document.body.classList.add("cluster-waiting");
    /** @type {ClusterStatus[]} */ this.clusters = [];
    this.select?.addEventListener("change", () => this.go(/** @type {HTMLSelectElement} */ (this.select).value));
  }

  /** Whether the page has a picker (several clusters). */
  get present() {
    return this.select !== null;
  }

  /** Whether the page's cluster has no engine yet: the page waits, and opens no stream. */
  get waiting() {
    return this.banner !== null;
  }

  /** Goes to name's page. @param {string} name */
  go(name) {
    if (name === this.cluster) return;
    const p = new URLSearchParams({ cluster: name });
    const theme = new URLSearchParams(location.search).get("theme");
    if (theme) p.set("theme", theme);
    location.assign(`/?${p}`);
  }

  /** Opens the picker (the c key). */
  open() {
    const s = this.select;
    if (!s) return;
    s.focus();
    try {
      s.showPicker();
    } catch {
      // Not every browser opens a select from script: focused, the arrows work.
    }
  }

  /** Follows the clusters' states: the picker's words, and the waiting page's banner. */
  follow() {
    if (!this.present) return;
    const poll = async () => {
      try {
        const r = /** @type {{clusters: ClusterStatus[]}} */ (await get("/api/v1/clusters"));
        this.update(r.clusters);
      } catch {
        // The server is away: the stream's state says so; ask again.
      }
      setTimeout(poll, POLL_MS);
    };
    poll();
  }

  /** @param {ClusterStatus[]} clusters */
  update(clusters) {
    this.clusters = clusters;
    for (const c of clusters) {
      const o = [...(this.select?.options || [])].find((o) => o.value === c.name);
      if (!o) continue;
      o.textContent = label(c);
      o.dataset.state = c.state;
      o.title = [c.server, c.reason].filter(Boolean).join(" — ");
    }
    // A waiting page whose cluster moved on (its engine is there, or it failed) is
    // served again, as it now is.
    const mine = clusters.find((c) => c.name === this.cluster);
    if (this.banner && mine && mine.state !== document.body.dataset.clusterState) location.reload();
    // The page is rendered with the hub's state of a remote, not the user's: that it
    // refuses this user is only known here, and said instead of an endless "connecting".
    else if (!this.banner && mine) this.showRefused(mine.state === "refused" ? mine : null);
  }

  /**
   * Says above the graph that the page's cluster does not accept the user's credential, or
   * takes it back (c null) once it does.
   * @param {ClusterStatus|null} c
   */
  showRefused(c) {
    let el = document.getElementById("cluster-refused");
    if (!c) {
      if (el) el.hidden = true;
      return;
    }
    if (!el) {
      el = document.createElement("div");
      el.id = "cluster-refused";
      el.className = "banner cluster-banner";
      el.dataset.state = "refused";
      el.setAttribute("role", "alert");
      const next = document.getElementById("discovery-banner"); // where the page's banners are
      if (next) next.before(el);
      else document.body.prepend(el);
    }
    const name = document.createElement("b");
    name.textContent = c.name;
    el.replaceChildren("The cluster ", name, ` does not accept your credential: ${refusalWhy(c.reason)}. ` +
      "You are still signed in here: the other clusters of the picker are yours to open, and this page tries again.");
    el.hidden = false;
  }
}

/**
 * Why a cluster refuses the user's credential, without the words the page says itself
 * (the hub's reasons start "does not accept your credential: " or
 * `cluster "NAME" no longer accepts your credential: `).
 * @param {string|undefined} reason
 */
export function refusalWhy(reason) {
  const why = (reason || "").replace(/^(?:cluster "(?:[^"\\]|\\.)*" )?(?:does not accept|no longer accepts) your credential:\s*/, "");
  return why || "no reason given";
}

/** How the picker names a cluster: with its state unless it is ready. @param {ClusterStatus} c */
export function label(c) {
  switch (c.state) {
    case "ready":
      return c.reason ? `${c.name} (unhealthy)` : c.name;
    case "idle":
      return `${c.name} (not started)`;
    default:
      return `${c.name} (${c.state})`;
  }
}
