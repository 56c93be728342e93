// @ts-check
// What became of a worker's action, in the words every list of actions uses (the queue
// panel's latest actions, the history view, the object panel). A 409 Conflict is not a
// failure: another writer (a controller, the apiserver) changed the object between the
// collector's read and its write, and the collector reads it again and retries, as
// upstream's does.

/** @typedef {"ok"|"shadow"|"kept"|"retried"|"error"} ActionResult */

/** Said of a conflict, on hover and in its row. */
export const RETRIED_WHY = "409 Conflict: another writer changed the object first; the collector reads it again and retries (harmless)";

/** @param {{error?: string, errorReason?: string, shadow?: boolean, verb?: string}} a @returns {ActionResult} */
export function actionResult(a) {
  if (a.error) return a.errorReason === "Conflict" ? "retried" : "error";
  if (a.shadow) return "shadow";
  return a.verb === "keep" ? "kept" : "ok";
}

/** The action's error in words: a conflict says it is retried. @param {{error?: string, errorReason?: string}} a */
export function errorText(a) {
  if (!a.error) return "";
  return a.errorReason === "Conflict" ? `conflict, retried: ${a.error}` : `error: ${a.error}`;
}
