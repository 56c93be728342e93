// @ts-check
// Calls to the JSON API (docs/api.md). Writes carry the CSRF token of the page.

/** An API error with the server's status, code and message. */
export class APIError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** @param {Response} r */
async function decode(r) {
  const text = await r.text();
  /** @type {any} */
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!r.ok) throw new APIError(r.status, body?.error || String(r.status), body?.message || text || r.statusText);
  return body;
}

/**
 * The path of an API route for the cluster the page shows: with several clusters,
 * /api/v1/X is /api/v1/clusters/NAME/X (the list of clusters itself excepted).
 * @param {string} path
 */
export function apiPath(path) {
  const c = document.body.dataset.cluster;
  if (!c || !path.startsWith("/api/v1/") || /^\/api\/v1\/clusters(\/|\?|$)/.test(path)) return path;
  return `/api/v1/clusters/${encodeURIComponent(c)}/${path.slice("/api/v1/".length)}`;
}

/** @param {string} path */
export async function get(path) {
  return decode(await fetch(apiPath(path), { headers: { Accept: "application/json" }, credentials: "same-origin" }));
}

/**
 * A write with the page's CSRF token. A token gcscope no longer knows (it restarted: its
 * key is new) is fetched again from the session, once, and the write retried.
 * @param {string} path @param {any} body
 */
export async function post(path, body) {
  const send = () => fetch(apiPath(path), {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": document.body.dataset.csrfToken || "" },
    body: JSON.stringify(body),
  });
  try {
    return await decode(await send());
  } catch (e) {
    if (!(e instanceof APIError) || e.status !== 403 || e.code !== "csrf") throw e;
    const s = await get("/api/v1/session");
    if (!s?.csrfToken || s.csrfToken === document.body.dataset.csrfToken) throw e;
    // Only for the user the page was loaded for: this browser may have signed in as
    // someone else since (another tab), and the write was decided on this page's view.
    const me = document.getElementById("signed-in-as")?.textContent;
    if (me !== undefined && s.user?.name !== me) {
      throw new APIError(403, "csrf", `this browser is now signed in as ${s.user?.name || "nobody"}, not ${me}: reload the page`);
    }
    document.body.dataset.csrfToken = s.csrfToken;
    return decode(await send());
  }
}

/** @param {string} uid */
export const explain = (uid) => get(`/api/v1/objects/${encodeURIComponent(uid)}/explain`);

/** @param {string} uid @param {string} policy @param {boolean} dryRun */
export const deleteObject = (uid, policy, dryRun) =>
  post(`/api/v1/objects/${encodeURIComponent(uid)}/delete`, { propagationPolicy: policy, dryRun });

/** The most objects one set delete names (the server's wire.MaxSetObjects). */
export const MAX_SET = 5000;

/** Several objects deleted together (POST /api/v1/deletions). @param {string[]} uids @param {string} policy @param {boolean} dryRun */
export const deleteSet = (uids, policy, dryRun) => post("/api/v1/deletions", { uids, propagationPolicy: policy, dryRun });

/** Forgets the object's orphan marks (gcscope's memory only; allowed read-only). @param {string} uid */
export const dismissOrphanMarks = (uid) => post(`/api/v1/objects/${encodeURIComponent(uid)}/orphan-marks/dismiss`, {});
