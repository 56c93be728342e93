package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUISingleSignOn signs a user in through a real OpenID provider (zitadel's, run in
// this test over TLS with a CA of its own) in headless Chromium: gcscope's login page,
// the provider's form, back to the graph. gcscope's embedded apiserver trusts the same
// issuer, so the user is "oidc:" and the provider's subject to RBAC, and RBAC decides:
// the user, allowed to read and delete ConfigMaps in namespace team only, sees team's
// and not other's, deletes one in team from the dialog, and is refused other's.
func TestUISingleSignOn(t *testing.T) {
	parallelUI(t)
	addr := freeAddr(t)
	idp, oidc := startOpenIDProvider(t, addr, "gcscope-e2e", "e2e-secret")
	issuer := idp.URL
	base, kubeconfig := startEmbeddedAt(t, addr, append([]string{"--demo=false", "--oidc-display-name", "Example"}, oidc...)...)
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	for _, ns := range []string{"team", "other"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine, theirs := createConfigMap(t, kube, "team", "mine"), createConfigMap(t, kube, "other", "theirs")
	// The provider's test user (subject id1) may read and delete ConfigMaps in team.
	if _, err := kube.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "delete"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "oidc-id1"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "oidc:id1"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 800, TrustCertificate: idp.Certificate().Raw, OneProcess: true})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-sso-failed"}
	d.run(t, "the login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#sso")))
	browsertest.Screenshot(t, page.Ctx, "ui-sso-login")
	host, _, _ := strings.Cut(strings.TrimPrefix(issuer, "https://"), ":")
	d.run(t, "sign in at the provider", click("#sso"), chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)))
	browsertest.Screenshot(t, page.Ctx, "ui-sso-provider")
	d.run(t, "the provider's form", chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "test-user@"+host),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "verysecure"))
	d.run(t, "submit it", chromedp.Submit(chromedp.CSS(`input[name="password"]`)))
	// The tab goes from the provider's site back to gcscope's, through the callback's page.
	waitLocation(t, page.Ctx, base+"/")
	d.run(t, "back to gcscope",
		uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](`window.gcscope.store.nodes.has(`+jsQuoted(string(mine.UID))+`)`, chromedp.WithPollingTimeout(30*time.Second)))
	await := func(expr string, out any) {
		t.Helper()
		c, cancel := context.WithTimeout(page.Ctx, 30*time.Second)
		defer cancel()
		raw, err := chromedp.Run(c, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
		if err == nil {
			err = json.Unmarshal(raw, out)
		}
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
	}
	var who struct {
		User struct{ Name string } `json:"user"`
	}
	await(`fetch("/api/v1/session").then((r) => r.json())`, &who)
	if who.User.Name != "oidc:id1" {
		t.Errorf("signed in as %q, want oidc:id1 (the apiserver's name for the provider's subject)", who.User.Name)
	}
	var seesTheirs bool
	d.eval(t, `window.gcscope.store.nodes.has(`+jsQuoted(string(theirs.UID))+`)`, &seesTheirs)
	if seesTheirs {
		t.Error("the user sees other's ConfigMap: RBAC gives it team's only")
	}
	browsertest.Screenshot(t, page.Ctx, "ui-sso-signed-in")

	// The user's deletes, as the page sends them: team's done, other's refused.
	del := func(uid string) (status int) {
		await(`(async () => { const s = await (await fetch("/api/v1/session")).json();
			const r = await fetch("/api/v1/objects/`+uid+`/delete", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": s.csrfToken }, body: JSON.stringify({ propagationPolicy: "Background", dryRun: false }) });
			return r.status; })()`, &status)
		return status
	}
	// team's from the dialog, as a user deletes.
	d.run(t, "select team/mine", chromedp.Evaluate[chromedp.Void](`window.gcscope.select(`+jsQuoted(string(mine.UID))+`)`))
	d.run(t, "delete it from the dialog", click("#delete-button"),
		chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		click(`#delete-form input[value="Background"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector("#delete-summary")?.textContent.startsWith("Background")`, chromedp.WithPollingTimeout(30*time.Second)),
		click("#delete-confirm"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	if testkit.Poll(ctx, 30*time.Second, func() bool {
		_, err := kube.CoreV1().ConfigMaps("team").Get(ctx, "mine", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) != nil {
		t.Error("the user's delete of team/mine did not happen")
	}
	if status := del(string(theirs.UID)); status != http.StatusForbidden && status != http.StatusNotFound {
		t.Errorf("the user's delete of other/theirs answered %d; want it refused (403, or 404: not visible to the user)", status)
	}
	if _, err := kube.CoreV1().ConfigMaps("other").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
		t.Errorf("other/theirs: %v", err)
	}
	page.NoErrorsExcept(t, func(m string) bool { return strings.Contains(m, "403") || strings.Contains(m, "404") })
	page.Close()
}

// startOpenIDProvider runs a real OpenID provider (zitadel's example, over TLS with a CA of
// its own) with one client, clientID, whose sign-ins return to gcscope at addr; flags are
// gcscope's for it (--auth=kubernetes, --oidc-*): given to an embedded cluster, its
// apiserver trusts the issuer too.
func startOpenIDProvider(t *testing.T, addr, clientID, secret string) (idp *httptest.Server, flags []string) {
	t.Helper()
	var provider http.Handler
	idp = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { provider.ServeHTTP(w, r) }))
	t.Cleanup(idp.Close)
	storage.RegisterClients(storage.WebClient(clientID, secret, "http://"+addr+"/login/sso/callback"))
	provider = exampleop.SetupServer(idp.URL, storage.NewStorage(storage.NewUserStore(idp.URL)), slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	dir := t.TempDir()
	ca, secretFile := filepath.Join(dir, "idp-ca.pem"), filepath.Join(dir, "secret")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return idp, []string{"--auth=kubernetes", "--oidc-issuer-url", idp.URL, "--oidc-client-id", clientID, "--oidc-client-secret-file", secretFile, "--oidc-ca-file", ca}
}
