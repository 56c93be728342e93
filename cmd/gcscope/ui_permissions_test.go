package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// TestUIRevokedAccessIsNotACascadeDone: with --auth=kubernetes, a user whose access to a
// namespace is revoked while a cascade runs there sees its objects go from the page, not
// the cascade "done"; given back, the cascade is one entry again, still running (a trial
// saw "3 gone" after a revocation, then the cascade twice).
func TestUIRevokedAccessIsNotACascadeDone(t *testing.T) {
	parallelUI(t)
	base, kubeconfig := startEmbedded(t, "--demo=false", "--auth=kubernetes")
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const ns = "team-perm"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "dev"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}}
	bind := func() {
		t.Helper()
		if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind()
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "dev", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := createConfigMap(t, kube, ns, "owner")
	createConfigMap(t, kube, ns, "free", owner)
	held := createConfigMap(t, kube, ns, "held", owner)
	held.Finalizers = []string{"gcscope.test/hold"}
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	page := browsertest.Start(t, browsertest.Options{Width: 1400, Height: 900})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-permissions-failed"}
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	}
	d.run(t, "sign in", chromedp.Navigate(base+"/?ns="+ns), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), tok.Status.Token), chromedp.Submit(chromedp.CSS("#token")))
	d.run(t, "the UI", chromedp.WaitVisible(chromedp.CSS("#graph")), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	poll("the tree in the page", `window.gcscope.live.nodes.has("`+string(held.UID)+`")`, 30*time.Second)

	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	entries := `[...document.querySelectorAll('#cascades [data-owner="` + string(owner.UID) + `"]')]`
	poll("the cascade part done, held", entries+`.map((e) => e.dataset.state + " " + e.querySelector(".muted").textContent).join("|").startsWith("running 1 of 3 gone")`, 30*time.Second)

	if err := kube.RbacV1().RoleBindings(ns).Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the objects gone from the page", `!window.gcscope.live.nodes.has("`+string(held.UID)+`")`, 60*time.Second)
	d.run(t, "a moment", chromedp.Sleep(500*time.Millisecond))
	var after []string
	d.eval(t, entries+`.map((e) => e.dataset.state + " " + e.querySelector(".muted").textContent)`, &after)
	if len(after) != 0 {
		t.Errorf("with access revoked the strip shows the cascade %q: want nothing (its objects were not deleted, only hidden)", after)
	}

	binding.ResourceVersion = ""
	bind()
	poll("the objects back", `window.gcscope.live.nodes.has("`+string(held.UID)+`")`, 60*time.Second)
	poll("the cascade in the strip again", entries+`.length > 0`, 10*time.Second)
	d.run(t, "a moment", chromedp.Sleep(500*time.Millisecond))
	d.eval(t, entries+`.map((e) => e.dataset.state + " " + e.querySelector(".muted").textContent)`, &after)
	if len(after) != 1 || !strings.HasPrefix(after[0], "running ") {
		t.Errorf("with access given back the strip shows %q: want the cascade once, running", after)
	}
	browsertest.Screenshot(t, page.Ctx, "ui-permissions-restored")
}
