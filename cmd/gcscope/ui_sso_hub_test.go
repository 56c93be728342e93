package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIHubUnderSingleSignOn: a hub gcscope over the gcscopes of two clusters (--remote),
// the user signed in once through a real OpenID provider at the hub. The hub has no
// cluster: the remotes decide who the user is, each with its own apiserver's TokenReview,
// and each cluster's RBAC decides what they may do: in east read and delete ConfigMaps of
// namespace team, in west only read those of namespace shared. A third remote, north,
// signs in with a token file only, so it refuses the ID token. The user sees in each
// cluster what it allows, deletes in east as themselves (east's own audit names them),
// is refused in west (west's audit says so) and told north refuses them; west's gcscope
// taken down while the page streams it is reported, and when it is back the page is live
// again, with what changed meanwhile.
func TestUIHubUnderSingleSignOn(t *testing.T) {
	parallelUI(t)
	addr := freeAddr(t) // the hub's
	idp, oidc := startOpenIDProvider(t, addr, "gcscope-hub", "hub-secret")
	issuer := idp.URL
	dir := t.TempDir()

	// East's gcscope is the embedded one of its control plane; west's runs beside its
	// control plane, so that it can be taken down and started again alone. Both clusters'
	// apiservers trust the provider, and both gcscopes review users with them.
	eastAddr, westAddr, northAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	eastAudit, westAudit, hubAudit := filepath.Join(dir, "east-audit.log"), filepath.Join(dir, "west-audit.log"), filepath.Join(dir, "hub-audit.log")
	_, eastConfig := startEmbeddedAt(t, eastAddr, append([]string{"--demo=false", "--history=false", "--audit-log", eastAudit}, oidc...)...)
	_, westConfig := startEmbeddedAt(t, freeAddr(t), append([]string{"--demo=false", "--history=false"}, oidc...)...)
	scene := newSSOScene(t, clientFor(t, eastConfig), clientFor(t, westConfig))

	westArgs := []string{"--listen", westAddr, "--kubeconfig", westConfig, "--auth=kubernetes", "--history=false",
		"--data-dir", filepath.Join(dir, "west-data"), "--audit-log", westAudit, "--log-level", "warn"}
	westGcscope := startProcess(t, dir, nil, binary, westArgs...)
	tokens := filepath.Join(dir, "north-tokens")
	if err := os.WriteFile(tokens, []byte("north-only-token-0123456789 ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	north := startProcess(t, dir, nil, binary, "--listen", northAddr, "--kubeconfig", eastConfig, "--auth-token-file", tokens,
		"--history=false", "--data-dir", filepath.Join(dir, "north-data"), "--log-level", "warn")
	hub := startProcess(t, dir, nil, binary, append([]string{"--listen", addr,
		"--remote", "east=http://" + eastAddr, "--remote", "west=http://" + westAddr + ",forward=id-token", "--remote", "north=http://" + northAddr,
		"--audit-log", hubAudit, "--log-level", "warn", "--oidc-display-name", "Example"}, oidc...)...)
	westGcscope.waitReady(t, westAddr)
	north.waitReady(t, northAddr)
	hub.waitReady(t, addr)
	t.Cleanup(func() { hub.stop(t, syscall.SIGTERM); north.stop(t, syscall.SIGTERM) })
	base := "http://" + addr

	page := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 800, TrustCertificate: idp.Certificate().Raw, OneProcess: true})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-sso-hub-failed"}
	signInOnce(t, d, base, issuer)                   // at the hub
	waitLocation(t, page.Ctx, base+"/?cluster=east") // the first remote's page
	d.run(t, "the page", uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](`window.gcscope.store.nodes.has(`+jsQuoted(string(scene.eastMine.UID))+`)`, chromedp.WithPollingTimeout(30*time.Second)))
	fetchJSON := func(method, path string) pageAnswer { return pageFetch(t, page.Ctx, method, path) }
	scene.check(t, fetchJSON)
	d.run(t, "the picker says north refuses", chromedp.Poll[chromedp.Void](`document.querySelector('#cluster-picker option[value="north"]')?.dataset.state === "refused"`, chromedp.WithPollingTimeout(30*time.Second)))
	browsertest.Screenshot(t, page.Ctx, "ui-sso-hub-picker")
	// Each remote made the delete, or refused it, as the user, and its own audit says so,
	// as does the hub's.
	if got := auditedDeletes(t, eastAudit, "oidc:id1"); len(got) != 1 || !mapHasValue(got, "ok") {
		t.Errorf("east's own audit, deletes by oidc:id1: %v; want one done", got)
	}
	if got := auditedDeletes(t, westAudit, "oidc:id1"); len(got) != 1 || !mapHasValue(got, "denied") {
		t.Errorf("west's own audit, deletes by oidc:id1: %v; want one denied", got)
	}
	if got := auditedDeletes(t, hubAudit, "oidc:id1"); got["east"] != "ok" || got["west"] != "denied" {
		t.Errorf("the hub's audit, deletes by oidc:id1 by cluster: %v; want east ok and west denied", got)
	}

	// West's gcscope goes down while the page streams west: the page says so, the picker
	// lists west failed; started again, the page is live with what changed meanwhile.
	d.run(t, "west's page", chromedp.Navigate(base+"/?cluster=west"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](`window.gcscope.store.nodes.has(`+jsQuoted(string(scene.westShared.UID))+`)`, chromedp.WithPollingTimeout(30*time.Second)))
	if err := westGcscope.cmd.Process.Kill(); err != nil { // a crash: no goodbye to the hub
		t.Fatal(err)
	}
	<-westGcscope.exited
	d.run(t, "the page says west is away",
		chromedp.Poll[chromedp.Void](`(() => { const c = document.getElementById("conn"); return c.dataset.state !== "live" && c.title.includes('cluster "west"'); })()`, chromedp.WithPollingTimeout(30*time.Second)),
		// Over a blip's time, the graph is dimmed and the note names the cluster away, not
		// the connection to the hub (which stays up).
		chromedp.Poll[chromedp.Void](`(() => { const n = document.getElementById("offline-note"); return !!n && !n.hidden && n.textContent.includes('cluster "west"'); })()`, chromedp.WithPollingTimeout(30*time.Second)))
	testkit.EventuallyWithin(t, 30*time.Second, "west listed failed", func() bool {
		a := fetchJSON("GET", "/api/v1/clusters")
		return a.Status == http.StatusOK && strings.Contains(string(a.Body), `"name":"west"`) && strings.Contains(string(a.Body), `"name":"west","server":"http://`+westAddr+`","state":"failed"`)
	})
	browsertest.Screenshot(t, page.Ctx, "ui-sso-hub-west-down")
	meanwhile := createConfigMap(t, scene.west, "shared", "while-away")
	westGcscope = startProcess(t, dir, nil, binary, westArgs...)
	westGcscope.waitReady(t, westAddr)
	t.Cleanup(func() { westGcscope.stop(t, syscall.SIGTERM) })
	d.run(t, "the page is live again, with what changed meanwhile", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#offline-note`)),
		chromedp.Poll[chromedp.Void](`window.gcscope.store.nodes.has(`+jsQuoted(string(meanwhile.UID))+`)`, chromedp.WithPollingTimeout(60*time.Second)))
	browsertest.Screenshot(t, page.Ctx, "ui-sso-hub-west-back")

	// 403: the refusals asked for; the provider's site has no favicon; the stream's and the
	// picker's failures while west was down.
	page.NoErrorsExcept(t, func(m string) bool {
		return strings.Contains(m, "403") || strings.Contains(m, issuer+"/favicon.ico") || strings.Contains(m, "WebSocket") || strings.Contains(m, "503") || strings.Contains(m, "502")
	})
	page.Close()
}

func mapHasValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}
