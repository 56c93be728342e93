// @ts-check
// Ownership cycles. The layout draws ownership top-down, which a cycle cannot be: one of
// its edges runs back up. The renderer draws every edge that lies on a cycle in a colour
// of its own, and the one that runs back up around the side, so a cycle reads as one.

/**
 * The owner references that lie on an ownership cycle among the given objects: those whose
 * owner and dependent are in the same strongly connected component of the owner graph, or
 * that name the object itself. Iterative (Tarjan), O(objects + references): a chain of
 * 100,000 owners does not overflow the stack.
 * @param {Map<string, string[]>} owners each object's owners' uids (owners not in the map are ignored)
 * @returns {Set<string>} cycleKey(dependent, owner) of each reference on a cycle
 */
export function cycleEdges(owners) {
  /** @type {Map<string, number>} */ const index = new Map();
  /** @type {Map<string, number>} */ const low = new Map();
  /** @type {Map<string, number>} */ const component = new Map();
  /** @type {string[]} */ const stack = [];
  const onStack = new Set();
  let next = 0, components = 0;
  const out = (/** @type {string} */ u) => (owners.get(u) || []).filter((o) => owners.has(o));
  for (const root of owners.keys()) {
    if (index.has(root)) continue;
    /** @type {{u: string, edges: string[], i: number}[]} */
    const walk = [];
    const enter = (/** @type {string} */ u) => {
      index.set(u, next);
      low.set(u, next++);
      stack.push(u);
      onStack.add(u);
      walk.push({ u, edges: out(u), i: 0 });
    };
    enter(root);
    while (walk.length) {
      const top = walk[walk.length - 1];
      if (top.i < top.edges.length) {
        const o = top.edges[top.i++];
        if (!index.has(o)) enter(o);
        else if (onStack.has(o)) low.set(top.u, Math.min(/** @type {number} */ (low.get(top.u)), /** @type {number} */ (index.get(o))));
        continue;
      }
      walk.pop();
      if (walk.length) {
        const up = walk[walk.length - 1].u;
        low.set(up, Math.min(/** @type {number} */ (low.get(up)), /** @type {number} */ (low.get(top.u))));
      }
      if (low.get(top.u) === index.get(top.u)) {
        let v;
        do {
          v = /** @type {string} */ (stack.pop());
          onStack.delete(v);
          component.set(v, components);
        } while (v !== top.u);
        components++;
      }
    }
  }
  const edges = new Set();
  for (const [u, os] of owners) {
    for (const o of os) if (owners.has(o) && (o === u || component.get(o) === component.get(u))) edges.add(cycleKey(u, o));
  }
  return edges;
}

/** @param {string} dependent @param {string} owner */
export function cycleKey(dependent, owner) {
  return `${dependent} ${owner}`;
}
