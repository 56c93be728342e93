package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUISignInAndOut: with authentication the page says who is signed in (and that the
// timeline's counts are the whole cluster's); a write whose
// CSRF token gcscope no longer knows (it restarted) fetches a fresh one and goes through
// (a trial's page said "live" and refused every delete after a restart); Sign out ends
// the session and goes to the form.
func TestUISignInAndOut(t *testing.T) {
	parallelUI(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	const token = "ui-sign-in-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+" dana\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startEmbedded(t, "--demo=false", "--history", "--auth-token-file", tokenFile)
	page := browsertest.Start(t, browsertest.Options{Width: 1400, Height: 900})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-signin-failed"}
	d.run(t, "sign in", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
	d.run(t, "the UI after signing in", chromedp.WaitVisible(chromedp.CSS("#graph")), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	var who string
	d.eval(t, `document.getElementById("signed-in-as")?.textContent || ""`, &who)
	if who != "dana" {
		t.Errorf("the header says %q is signed in, want dana", who)
	}
	// The timeline's counts are the whole cluster's, and say so to a signed-in user.
	d.run(t, "the timeline's title", chromedp.Poll[chromedp.Void](`document.getElementById("tl-title").textContent.includes(" events")`, chromedp.WithPollingTimeout(20*time.Second)))
	var title string
	d.eval(t, `document.getElementById("tl-title").textContent`, &title)
	if !strings.Contains(title, "events (whole cluster)") {
		t.Errorf("the timeline's title says %q: want its count said to be the whole cluster's", title)
	}
	var cookies string
	d.eval(t, `document.cookie`, &cookies)
	if strings.Contains(cookies, token) {
		t.Errorf("the page's script can read the token in its cookies: %q", cookies)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-signed-in")

	// A stale CSRF token, as after a restart (the server refuses it: TestCSRF…): the write
	// fetches a fresh one from the session and goes through.
	var stale bool
	d.eval(t, `(document.body.dataset.csrfToken = "stale", true)`, &stale)
	d.run(t, "slow motion on with a stale token", click("#slow-motion"))
	poll := func(what, expr string) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(10*time.Second)))
	}
	poll("the switch went through with a fresh token", `document.body.dataset.csrfToken !== "stale" && document.getElementById("slow-motion").checked &&
		document.getElementById("toast").textContent.includes("Slow motion on")`)

	d.run(t, "sign out", click("#sign-out"))
	d.run(t, "the form after signing out", chromedp.WaitVisible(chromedp.CSS("#token")))
	var at string
	d.eval(t, `location.pathname`, &at)
	if at != "/login" {
		t.Errorf("after signing out the browser is at %s, want /login", at)
	}
	d.run(t, "the UI again", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
}
