package static

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestTheDialogWarnsOfDataLossFirst: a prediction whose claim takes its disk with it shows
// the data loss above everything else, with the volume in words, lists the volumes of the
// other claims and what stays; Delete waits until namespace/name is typed, exactly. At 1600
// and 800 px wide, screenshots in test-artifacts/ (GCSCOPE_ARTIFACTS).
func TestTheDialogWarnsOfDataLossFirst(t *testing.T) {
	page, ctx := modulePage(t)
	setup := `(async () => {
  const sts = { apiVersion: "apps/v1", kind: "StatefulSet", namespace: "shop", name: "db", uid: "sts" };
  const claim = (name, uid) => ({ apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: "shop", name, uid });
  // The server's answer to the dry run: the prediction, and what it does to storage.
  const answer = { dryRun: true, result: "predicted",
    prediction: { target: sts, policy: "Background", deleted: [
      { object: sts, reason: "the target" }, { object: claim("data-db-0", "c0"), reason: "its owners go: StatefulSet db" },
      { object: claim("logs-db-0", "c1"), reason: "its owners go: StatefulSet db" }] },
    volumes: [
      { claim: claim("data-db-0", "c0"), volume: "pvc-3f1c", verdict: "data-loss", says: "data loss: once the claim is gone, the PV controller deletes PersistentVolume pvc-3f1c and the storage provider deletes the volume (10Gi, StorageClass standard, driver ebs.csi.aws.com, volume vol-0a1b2c)" },
      { claim: claim("logs-db-0", "c1"), volume: "pvc-77aa", verdict: "retained", says: "kept: PersistentVolume pvc-77aa (1Gi) stays, Released, with its data" }],
    leftBehind: [{ object: claim("cache-db-0", "c2"), reason: "StatefulSet db keeps its claims when deleted" }],
    recreated: [{ object: { apiVersion: "v1", kind: "Pod", namespace: "shop", name: "db-0", uid: "p0" }, by: sts, says: "StatefulSet db will create the Pod again, with the same name" }] };
  window.fetch = async (url) => String(url).endsWith("/delete")
    ? new Response(JSON.stringify(answer), { headers: { "Content-Type": "application/json" } })
    : new Promise(() => {});
  // The dialog as web/app.templ renders it.
  document.body.innerHTML = '<dialog id="delete-dialog"><form method="dialog" id="delete-form"><h2 id="delete-title">Delete</h2>' +
    '<fieldset class="policies"><legend>Propagation policy</legend><label><input type="radio" name="policy" value="Background" checked> <b>Background</b></label></fieldset>' +
    '<div id="delete-state" hidden></div><div id="delete-preview" class="preview"></div>' +
    '<label id="delete-typed" class="typed" hidden>Type <code id="delete-typed-name"></code> to confirm <input id="delete-confirm-input"></label>' +
    '<p id="delete-error" class="error" hidden></p><menu><button type="button" id="delete-cancel">Cancel</button>' +
    '<button type="submit" id="delete-confirm" class="danger" disabled>Delete</button></menu></form></dialog>';
  const { Store } = await import("/store.js");
  const { DeleteDialog } = await import("/dialog.js");
  const s = new Store();
  s.applySnapshot({ seq: 1, nodes: [sts, claim("data-db-0", "c0"), claim("logs-db-0", "c1")] });
  const d = new DeleteDialog(s, { preview() {}, done() {}, select() {} });
  d.open("sts");
  const preview = document.getElementById("delete-preview");
  while (!document.getElementById("delete-summary")) await new Promise((r) => setTimeout(r, 10));
  return { first: preview.firstElementChild?.id || "", warning: document.getElementById("delete-data-loss")?.textContent || "",
    storage: document.getElementById("delete-storage")?.textContent || "", back: document.getElementById("delete-recreated")?.textContent || "", behind: document.getElementById("delete-left-behind")?.textContent || "",
    typed: !document.getElementById("delete-typed").hidden, want: document.getElementById("delete-typed-name").textContent,
    disabled: document.getElementById("delete-confirm").disabled };
})()`
	type state struct {
		First, Warning, Storage, Back, Behind, Want string
		Typed, Disabled                             bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[state](setup, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.First != "delete-data-loss" {
		t.Errorf("the preview starts with #%s, want the data-loss warning", got.First)
	}
	for _, want := range []string{"Data loss: 1 volume will be destroyed", "shop/data-db-0", "pvc-3f1c", "10Gi", "ebs.csi.aws.com"} {
		if !strings.Contains(got.Warning, want) {
			t.Errorf("the warning %q does not say %q", got.Warning, want)
		}
	}
	if !strings.Contains(got.Storage, "pvc-77aa") || !strings.Contains(got.Behind, "cache-db-0") {
		t.Errorf("storage %q and left behind %q: want the retained volume and the claim that stays", got.Storage, got.Behind)
	}
	if !strings.Contains(got.Back, "will create the Pod again") {
		t.Errorf("comes back %q: want the controller's line", got.Back)
	}
	if !got.Typed || got.Want != "shop/db" || !got.Disabled {
		t.Errorf("confirm: typed shown %v asking %q, button disabled %v; want namespace/name asked and Delete disabled", got.Typed, got.Want, got.Disabled)
	}
	typeAndCheck := func(text string) bool {
		js := `(() => { const i = document.getElementById("delete-confirm-input"); i.value = ` + strconv.Quote(text) + `; i.dispatchEvent(new Event("input")); return document.getElementById("delete-confirm").disabled; })()`
		disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatal(err)
		}
		return disabled
	}
	if !typeAndCheck("db") {
		t.Error("Delete enabled with the name alone typed; want namespace/name")
	}
	if typeAndCheck("shop/db") {
		t.Error("Delete still disabled with shop/db typed")
	}
	for _, w := range []int64{1600, 800} {
		if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(w, 700)); err != nil {
			t.Fatal(err)
		}
		browsertest.Screenshot(t, ctx, "ui-delete-data-loss-"+strconv.FormatInt(w, 10))
	}
	page.NoErrors(t)
}
