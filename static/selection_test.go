package static

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSelectAllMatchingStopsAtTheAPIsMost: 5,003 objects match the filter; the bar offers
// the first 5,000 (one delete names at most 5,000), selects them and says why not all.
func TestSelectAllMatchingStopsAtTheAPIsMost(t *testing.T) {
	page, ctx := modulePage(t)
	probe := `(async () => {
  const { Selection } = await import("/selection.js");
  document.body.replaceChildren(Object.assign(document.createElement("div"), { id: "graph-pane" }));
  const nodes = new Map(), items = new Map();
  for (let i = 0; i < 5003; i++) {
    const uid = "u" + i;
    nodes.set(uid, { uid, apiVersion: "v1", kind: "ConfigMap", namespace: "big", name: "cm-" + i });
    items.set(uid, { uid });
  }
  let toast = "";
  const page = { renderer: { multi: null, matches: new Set(), dirty: false }, store: { nodes, applied: 1 }, live: { nodes },
    layout: { items, version: 0 }, view: { ns: ["big"], kind: [], q: "", focus: null, sel: null },
    toast: (t) => (toast = t), readOnly: false, replay: false, travelUI: null };
  const s = new Selection(page, { openSet() {} });
  s.render();
  const offered = document.getElementById("select-matching").textContent;
  s.selectMatching();
  return { offered, selected: s.size, toast, count: document.getElementById("selection-count").textContent,
    drawnAsMulti: page.renderer.multi === s.uids };
})()`
	type result struct {
		Offered, Toast, Count string
		Selected              int
		DrawnAsMulti          bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[result](probe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Offered != "Select the first 5,000 of 5,003 matching" {
		t.Errorf("the bar offers %q", got.Offered)
	}
	if got.Selected != 5000 || got.Count != "5,000 selected" || !got.DrawnAsMulti {
		t.Errorf("selected %d (%q, drawn %v), want 5,000 drawn as selected together", got.Selected, got.Count, got.DrawnAsMulti)
	}
	if !strings.Contains(got.Toast, "Selected 5,000, not all 5,003") || !strings.Contains(got.Toast, "at most 5,000") {
		t.Errorf("toast %q: want it to say 5,000 of 5,003, and why", got.Toast)
	}
	page.NoErrors(t)
}

// TestTheSetDialogReadOnly: with --read-only (the dialog has no confirm button), the set's
// dialog predicts, says why nothing can be deleted, and shows its Delete disabled, with the
// reason; opened again for one object, that button is gone.
func TestTheSetDialogReadOnly(t *testing.T) {
	page, ctx := modulePage(t)
	probe := `(async () => {
  const cm = (name) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "team", name, uid: name });
  let asked = null;
  window.fetch = async (url, init) => {
    asked = { url: String(url), body: JSON.parse(init.body) };
    const targets = asked.body.uids ? asked.body.uids.map(cm) : [cm("a")];
    const answer = { dryRun: true, result: "predicted", prediction: { target: targets[0], targets: asked.body.uids ? targets : undefined,
      policy: asked.body.propagationPolicy, deleted: targets.map((o) => ({ object: o, reason: "the target" })) } };
    return new Response(JSON.stringify(answer), { headers: { "Content-Type": "application/json" } });
  };
  // The dialog as web/app.templ renders it with --read-only: no typed box, no confirm.
  document.body.innerHTML = '<dialog id="delete-dialog"><form method="dialog" id="delete-form"><h2 id="delete-title">Delete</h2>' +
    '<fieldset class="policies"><legend>Propagation policy</legend><label><input type="radio" name="policy" value="Background" checked> <b>Background</b></label></fieldset>' +
    '<div id="delete-preview" class="preview"></div><p id="delete-error" class="error" hidden></p>' +
    '<menu><button type="button" id="delete-cancel">Close</button></menu></form></dialog>';
  const { Store } = await import("/store.js");
  const { DeleteDialog } = await import("/dialog.js");
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [cm("a"), cm("b")] });
  const d = new DeleteDialog(s, { preview() {}, done() {}, select() {} });
  d.openSet(["a", "b"]);
  while (!document.getElementById("delete-summary")) await new Promise((r) => setTimeout(r, 10));
  const b = document.getElementById("delete-set-refused");
  const out = { url: asked.url, dryRun: asked.body.dryRun, title: document.getElementById("delete-title").textContent,
    summary: document.getElementById("delete-summary").textContent, note: document.getElementById("delete-read-only")?.textContent || "",
    disabled: !!b?.disabled, reason: b?.title || "" };
  d.close();
  d.open("a");
  out.gone = !document.getElementById("delete-set-refused");
  return out;
})()`
	type result struct {
		URL, Title, Summary, Note, Reason string
		DryRun, Disabled, Gone            bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[result](probe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "/api/v1/deletions" || !got.DryRun {
		t.Errorf("asked %s (dry run %v), want a dry run of /api/v1/deletions", got.URL, got.DryRun)
	}
	if got.Title != "What would deleting these 2 objects do?" || !strings.HasPrefix(got.Summary, "Background: 2 objects would be deleted") {
		t.Errorf("title %q, summary %q", got.Title, got.Summary)
	}
	if !strings.Contains(got.Note, "read-only") || !got.Disabled || !strings.Contains(got.Reason, "--read-only") {
		t.Errorf("read-only: note %q, Delete disabled %v with reason %q; want all three", got.Note, got.Disabled, got.Reason)
	}
	if !got.Gone {
		t.Error("the set's disabled Delete stays when the dialog opens for one object")
	}
	page.NoErrors(t)
}
