package static

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// concernsProbe: a ReplicaSet deleted in the foreground, selected, waits for its Pod p1
// (blockOwnerDeletion), which waits in turn for a ConfigMap it owns (the explanation names
// it as p1's blocker); p2 does not block. After the engine's explanation has come, each
// change the stream brings is asked about: does it concern the selected object's panel?
const concernsProbe = `(async () => {
  const rs = { apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "web", name: "web-7d9", uid: "rs",
    beingDeleted: true, deletingDependents: true, finalizers: ["foregroundDeletion"], deletionTimestamp: new Date().toISOString() };
  const owner = { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7d9", uid: "rs" };
  const pod = (name, block) => ({ apiVersion: "v1", kind: "Pod", namespace: "web", name, uid: name,
    owners: [{ ...owner, controller: true, blockOwnerDeletion: block }] });
  const cm = { apiVersion: "v1", kind: "ConfigMap", namespace: "web", name: "p1-data", uid: "cm",
    owners: [{ apiVersion: "v1", kind: "Pod", name: "p1", uid: "p1", blockOwnerDeletion: true }] };
  const other = { apiVersion: "v1", kind: "ConfigMap", namespace: "web", name: "unrelated", uid: "other" };
  const ref = (o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.namespace, name: o.name, uid: o.uid });
  const answer = { object: { ...ref(rs), beingDeleted: true, deletingDependents: true, finalizers: ["foregroundDeletion"] },
    blockers: [{ object: ref(pod("p1")), beingDeleted: true, deletingDependents: true, blockers: [{ object: ref(cm) }] }] };
  let asked = 0;
  window.fetch = async () => { asked++; return new Response(JSON.stringify(answer), { headers: { "Content-Type": "application/json" } }); };
  const { Store } = await import("/store.js");
  const { ObjectPanel } = await import("/panel.js");
  const body = document.createElement("div"), placeholder = document.createElement("div");
  document.body.replaceChildren(placeholder, body);
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [rs, pod("p1", true), pod("p2", false), cm, other] });
  const panel = new ObjectPanel(body, placeholder, s, { select() {}, focus() {}, del() {}, readOnly: false });
  panel.show("rs");
  for (let i = 0; i < 100 && !panel.explanation; i++) await new Promise((r) => setTimeout(r, 10));
  if (!panel.explanation) return { error: "the explanation never came (asked " + asked + " times)" };
  panel.render();
  const dimmed = () => document.getElementById("explain")?.hasAttribute("data-outdated") ?? null;
  const dimmedBefore = dimmed();
  let seq = 1;
  const after = (ev) => { s.touched.clear(); s.applyEvents([{ seq: ++seq, ...ev }]); return panel.concerns(s.touched); };
  return {
    unrelated: after({ type: "nodeUpdated", node: { ...other, finalizers: ["example.com/x"] } }),
    grandBlocker: after({ type: "nodeUpdated", node: { ...cm, finalizers: ["example.com/x"] } }),
    nonBlockingDependentGone: after({ type: "nodeRemoved", node: pod("p2", false) }),
    blockingDependentGone: after({ type: "nodeRemoved", node: pod("p1", true) }),
    dimmedBefore, dimmedAfter: (panel.render(), dimmed()),
    itself: after({ type: "nodeUpdated", node: { ...rs, finalizers: [] } }),
  };
})()`

// TestThePanelHearsOfItsBlockers: the panel's "Why is it here?" is asked again when the
// selected object, one of its dependents or a blocker its explanation names changes, and
// shown as history meanwhile when a blocker it names is gone. The
// store touches an owner when its dependents change, but not their own blockers: an owner
// deleted in the foreground went on naming its grandchild, gone, for up to a second (the
// slow-motion cascade's screenshots, step 3), until the panel's once-a-second poll.
func TestThePanelHearsOfItsBlockers(t *testing.T) {
	page, ctx := modulePage(t)
	type concerns struct {
		Error                                                                            string
		Unrelated, GrandBlocker, NonBlockingDependentGone, BlockingDependentGone, Itself bool
		DimmedBefore, DimmedAfter                                                        *bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[concerns](concernsProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "" {
		t.Fatal(got.Error)
	}
	for what, want := range map[string][2]bool{
		"an unrelated ConfigMap changed":          {got.Unrelated, false},
		"a blocker named two levels down changed": {got.GrandBlocker, true},
		"a dependent that does not block went":    {got.NonBlockingDependentGone, true},
		"the blocking dependent went":             {got.BlockingDependentGone, true},
		"the selected object itself changed":      {got.Itself, true},
	} {
		if g, w := want[0], want[1]; g != w {
			t.Errorf("%s: concerns the panel = %v, want %v", what, g, w)
		}
	}
	// Until the engine answers again, the explanation that names the gone blocker is shown
	// as history (dimmed, "asking the engine again"), as when the object itself changed.
	if got.DimmedBefore == nil || *got.DimmedBefore {
		t.Errorf("the explanation as it came: outdated = %s, want false", shown(got.DimmedBefore))
	}
	if got.DimmedAfter == nil || !*got.DimmedAfter {
		t.Errorf("the explanation after the blocker it names went: outdated = %s, want true", shown(got.DimmedAfter))
	}
	page.NoErrors(t)
}

// shown is what a page's answer said: a bool, or that there was nothing to ask (no explanation drawn).
func shown(b *bool) string {
	if b == nil {
		return "none (no explanation drawn)"
	}
	return strconv.FormatBool(*b)
}
