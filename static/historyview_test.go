package static

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// rowsProbe draws the history view's rows of a plain cascade's decisions: a delete that
// met the ordinary 409 (retried by the collector) and one that failed.
const rowsProbe = `(async () => {
  const { HistoryView } = await import("/historyview.js");
  const v = new HistoryView(document.createElement("div"), { cascade: () => null });
  const obj = { apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "web", name: "web-7d9", uid: "u1" };
  const row = (action) => {
    const el = v.row({ time: "2026-11-26T10:00:00Z", action: { queue: "attemptToDelete", verb: "delete", object: obj, ...action } });
    return { result: el.dataset.result, shown: el.querySelector(".result").textContent, why: el.querySelector(".hwhy").textContent,
      whyClass: el.querySelector(".hwhy").className, title: el.title };
  };
  return {
    conflict: row({ error: "Operation cannot be fulfilled on replicasets.apps \"web-7d9\": the object has been modified", errorReason: "Conflict" }),
    failure: row({ error: "replicasets.apps \"web-7d9\" is forbidden", errorReason: "Forbidden" }),
  };
})()`

type drawnRow struct {
	Result, Shown, Why, WhyClass, Title string
}

// TestHistoryViewShowsARetriedConflictAsHarmless: the ordinary 409 of a cascade is drawn
// "retried", muted, saying the collector retries; a real failure stays a red "error".
func TestHistoryViewShowsARetriedConflictAsHarmless(t *testing.T) {
	page, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Conflict, Failure drawnRow }](rowsProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Conflict; c.Result != "retried" || c.Shown != "retried" || c.WhyClass != "hwhy muted" ||
		!contains(c.Why, "conflict, retried") || !contains(c.Title, "retries (harmless)") {
		t.Errorf("the 409 row: %+v, want it drawn retried, muted, saying the collector retries", c)
	}
	if f := got.Failure; f.Result != "error" || f.Shown != "error" || f.WhyClass != "hwhy error" || !contains(f.Why, "error: ") {
		t.Errorf("the failure row: %+v, want it drawn as an error", f)
	}
	page.NoErrors(t)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// keptProbe loads the history view's list three times, as its window following now does
// every five seconds: the same decisions; then one more, newest first; then the same,
// with the cascade of one of them now known to the timeline.
const keptProbe = `(async () => {
  const { HistoryView } = await import("/historyview.js");
  let known = null;
  const el = document.createElement("div");
  document.body.append(el);
  const v = new HistoryView(el, { cascade: (id) => (id === "7" ? known : null), cascadeOf: async () => null });
  const decision = (pos, name) => ({ pos, session: 1, time: "2026-11-26T10:00:00Z", cascade: 7,
    action: { queue: "attemptToDelete", verb: "delete", object: { apiVersion: "v1", kind: "ConfigMap", namespace: "a", name, uid: name } } });
  const load = (...rows) => { v.rows = rows.map(([pos, name]) => decision(pos, name)); v.render(); };
  const node = (uid) => el.querySelector('.hrow[data-uid="' + uid + '"]');
  load([2, "b"], [1, "a"]);
  const a = node("a"), b = node("b");
  load([2, "b"], [1, "a"]);
  const sameAfterReload = node("a") === a && node("b") === b;
  load([3, "c"], [2, "b"], [1, "a"]);
  const keptWhenOneCame = node("a") === a && node("b") === b && !!node("c");
  known = { id: 7, policy: "Foreground", root: { kind: "ConfigMap", name: "top" }, start: 0, end: null };
  load([3, "c"], [2, "b"], [1, "a"]);
  return { sameAfterReload, keptWhenOneCame, redrawnWhenItsCascadeIsKnown: node("a") !== a && node("a").querySelector(".cascade-link")?.textContent === "ConfigMap top" };
})()`

// TestAReloadedHistoryListKeepsItsRows: the list is reloaded every few seconds while its
// window follows now; a decision's row keeps its node (a click begun on it is not lost to a
// new node under the pointer), and is drawn anew only when what it shows changes.
func TestAReloadedHistoryListKeepsItsRows(t *testing.T) {
	page, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]bool](keptProbe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"sameAfterReload", "keptWhenOneCame", "redrawnWhenItsCascadeIsKnown"} {
		if !got[what] {
			t.Errorf("%s: false (all: %v)", what, got)
		}
	}
	page.NoErrors(t)
}
