package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUIForegroundPredictionInSteps: the delete dialog's foreground prediction of the
// demo's Deployment api lists its deletions in the order they happen (the Pods, then the
// ReplicaSet, then the Deployment), and says why the demo's ClusterRole that names api
// as its owner stays: its reference is invalid, not "api still holds it".
func TestUIForegroundPredictionInSteps(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo")
	api, err := clientFor(t, kubeconfig).AppsV1().Deployments("demo-web").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-predict-failed"}
	d.run(t, "load api", chromedp.Navigate(base+"/?ns=demo-web&sel="+string(api.UID)), uiReady,
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	d.run(t, "open the dialog", click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		click(`#delete-form input[name="policy"][value="Foreground"]`),
		chromedp.Poll[chromedp.Void](`(document.querySelector("#delete-summary")?.textContent || "").startsWith("Foreground")`,
			chromedp.WithPollingTimeout(30*time.Second)))

	var steps [][2]string
	d.eval(t, `[...document.querySelectorAll("#delete-preview details.deleted[data-step]")].map((e) => [e.dataset.step, e.querySelector("summary").textContent + " | " + e.textContent])`, &steps)
	if len(steps) != 3 || steps[0][0] != "1" || !strings.Contains(steps[0][1], "Pod demo-web/api-") || strings.Contains(steps[0][1], "ReplicaSet demo-web/") ||
		steps[1][0] != "2" || !strings.Contains(steps[1][1], "ReplicaSet demo-web/api-") || strings.Contains(steps[1][1], "Pod demo-web/") ||
		steps[2][0] != "3" || !strings.Contains(steps[2][1], "Deployment demo-web/api") || !strings.HasPrefix(steps[2][1], "3. last") {
		t.Errorf("the dialog's steps (want the Pods, then the ReplicaSet, then api, last): %q", steps)
	}
	var order, kept string
	d.eval(t, `document.querySelector("#delete-order")?.textContent ?? ""`, &order)
	d.eval(t, `document.querySelector("#delete-preview details.kept")?.textContent ?? ""`, &kept)
	if !strings.Contains(order, "Deployment api last (step 3)") {
		t.Errorf("the dialog's order: %q", order)
	}
	if !strings.Contains(kept, "demo-invalid-owner") || !strings.Contains(kept, "is invalid") || strings.Contains(kept, "still holds it") {
		t.Errorf("the kept section (want demo-invalid-owner, kept for its invalid reference): %q", kept)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-predict-foreground")
}
