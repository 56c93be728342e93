package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIShadowAgainstUpstream runs gcscope as `make run ARGS="--embedded-collector=upstream"`
// does: kube-controller-manager's own collector collects on the embedded cluster and the
// engine watches it in shadow mode. A Foreground delete of a demo Deployment (kubectl's,
// outside the page) is carried out by that collector; the page's collector-health strip
// counts gcscope's decisions confirmed, none diverged, as /api/v1/shadow does.
func TestUIShadowAgainstUpstream(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--embedded-collector=upstream", "--shadow-overdue=2m")
	kube := clientFor(t, kubeconfig)
	var session struct {
		Mode string `json:"mode"`
	}
	mustGetJSON(t, base+"/api/v1/session", &session)
	if session.Mode != "shadow" {
		t.Fatalf("mode %q with the upstream collector, want shadow", session.Mode)
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-shadow-failed"}
	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady,
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS("#collector-health")))

	type shadowReport struct {
		Counts struct {
			Confirmed int `json:"confirmed"`
			Pending   int `json:"pending"`
			Diverged  int `json:"diverged"`
		} `json:"counts"`
		Lag struct {
			Count int `json:"count"`
		} `json:"lag"`
	}
	var before shadowReport
	mustGetJSON(t, base+"/api/v1/shadow", &before)
	policy := metav1.DeletePropagationForeground
	ctx := context.Background()
	if err := kube.AppsV1().Deployments("demo-web").Delete(ctx, "frontend", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 90*time.Second, "kube-controller-manager's collector to finish the foreground deletion of frontend", func() bool {
		_, err := kube.AppsV1().Deployments("demo-web").Get(ctx, "frontend", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// The collector deleted the two ReplicaSets in the foreground, then their nine Pods,
	// then removed three foregroundDeletion finalizers: 14 decisions, which gcscope's engine
	// makes too, unless the cluster's collector acted before its worker looked (then it
	// has nothing to decide): most of them, since it decides from its graph without a GET.
	count := func(key string) string {
		return `(+document.querySelector('#collector-health [data-count="` + key + `"] b')?.textContent.replace(/\D/g, "") || 0)`
	}
	d.run(t, "the strip counts the cascade's decisions confirmed", chromedp.Poll[chromedp.Void](
		count("confirmed")+` >= `+strconv.Itoa(before.Counts.Confirmed+7)+` && `+count("pending")+` === 0`,
		chromedp.WithPollingTimeout(30*time.Second)))
	var strip struct {
		State     string `json:"state"`
		Confirmed int    `json:"confirmed"`
		Diverged  int    `json:"diverged"`
		Text      string `json:"text"`
	}
	d.eval(t, `({ state: document.querySelector("#collector-health").dataset.state, confirmed: `+count("confirmed")+`,
		diverged: `+count("diverged")+`, text: document.querySelector("#collector-health").textContent })`, &strip)
	browsertest.Screenshot(t, page.Ctx, "ui-shadow-health")
	var report shadowReport
	mustGetJSON(t, base+"/api/v1/shadow", &report)
	t.Logf("strip: %s", strip.Text)
	if strip.State != "ok" || strip.Diverged != 0 || report.Counts.Diverged != 0 {
		t.Errorf("strip state %q, %d diverged (API: %d): %s", strip.State, strip.Diverged, report.Counts.Diverged, strip.Text)
	}
	if report.Counts.Confirmed < strip.Confirmed || report.Lag.Count != report.Counts.Confirmed {
		t.Errorf("API: %d confirmed over %d lags; the strip showed %d", report.Counts.Confirmed, report.Lag.Count, strip.Confirmed)
	}
	if !strings.Contains(strip.Text, "lag p50") {
		t.Errorf("the strip does not show the lag: %s", strip.Text)
	}
}
