package static

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// dirtyProbe: cluster-scoped objects (no namespace on the wire: omitempty) added, given an
// owner, removed (and faded out), and let go by a summary-first snapshot, and the namespaces each
// step marks for layout.
const dirtyProbe = `(async () => {
  const { Store } = await import("/store.js");
  const role = (name, extra) => ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name, uid: "uid-" + name, ...extra });
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [role("a"), role("b"), { apiVersion: "v1", kind: "ConfigMap", namespace: "team", name: "c", uid: "uid-c" }] });
  const marked = (f) => { s.dirtyNamespaces.clear(); f(); return [...s.dirtyNamespaces].sort(); };
  return {
    added: marked(() => s.applyEvents([{ seq: 2, type: "nodeAdded", node: role("d") }])),
    // Given an owner: its place in the layout changes.
    updated: marked(() => s.applyEvents([{ seq: 3, type: "nodeUpdated", node: role("d", { owners: [{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "a", uid: "uid-a" }] }) }])),
    // A removed object fades where it stood; its box is laid out again once it has gone.
    removed: marked(() => { s.applyEvents([{ seq: 4, type: "nodeRemoved", node: role("d") }]); s.expire(performance.now() + 60000); }),
    letGo: marked(() => s.applySnapshot({ seq: 5, nodes: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "team", name: "c", uid: "uid-c" }] }, false)),
  };
})()`

// TestClusterScopedChangesMarkTheirBox: a change to a cluster-scoped object marks the
// cluster-scoped box ("") for layout, as any object's marks its namespace. The store took
// an absent namespace for an unknown one and marked nothing: a page zoomed out (summary
// first: it lets go of every object) kept drawing the cluster-scoped box from 189 objects
// it no longer held (TestUISummaryFirst, twice under load).
func TestClusterScopedChangesMarkTheirBox(t *testing.T) {
	page, ctx := modulePage(t)
	type marks struct{ Added, Updated, Removed, LetGo []string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[marks](dirtyProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for step, m := range map[string][]string{"added": got.Added, "given an owner": got.Updated, "removed": got.Removed, "let go by a snapshot": got.LetGo} {
		if !slices.Contains(m, "") {
			t.Errorf("a cluster-scoped object %s: namespaces marked %q; want the cluster-scoped box (\"\") among them", step, m)
		}
	}
	page.NoErrors(t)
}
