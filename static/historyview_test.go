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
