package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUISeveralClustersUnderSingleSignOn: one gcscope serving three contexts with
// --auth=kubernetes and single sign-on, the user signed in once through a real OpenID
// provider. East's and west's apiservers trust the provider, north's does not. Each cluster
// reviews the ID token itself and its RBAC decides: in east the user may read and delete
// ConfigMaps of namespace team, in west only read those of namespace shared. So the user
// sees, in each cluster, exactly what that cluster allows (and no other cluster's objects),
// deletes in east as themselves (the audit line names user and cluster), is refused the
// delete in west, and north says in the picker that it does not accept the credential (not
// a 500, not another cluster's view).
func TestUISeveralClustersUnderSingleSignOn(t *testing.T) {
	parallelUI(t)
	addr := freeAddr(t)
	idp, oidc := startOpenIDProvider(t, addr, "gcscope-clusters", "clusters-secret")
	issuer := idp.URL
	dir := t.TempDir()

	// East and west trust the provider (their embedded apiservers are given its issuer);
	// north does not.
	_, eastConfig := startEmbeddedAt(t, freeAddr(t), append([]string{"--demo=false", "--history=false"}, oidc...)...)
	_, westConfig := startEmbeddedAt(t, freeAddr(t), append([]string{"--demo=false", "--history=false"}, oidc...)...)
	_, northConfig := startEmbeddedAt(t, freeAddr(t), "--demo=false", "--history=false")
	scene := newSSOScene(t, clientFor(t, eastConfig), clientFor(t, westConfig))

	kubeconfig := filepath.Join(dir, "kubeconfig")
	mergeKubeconfigs(t, kubeconfig, map[string]string{"east": eastConfig, "west": westConfig, "north": northConfig}, "gone", "https://"+freeAddr(t))
	auditLog := filepath.Join(dir, "audit.log")
	p := startProcess(t, dir, nil, binary, append([]string{"--listen", addr, "--kubeconfig", kubeconfig,
		"--context", "east", "--context", "west", "--context", "north", "--start-contexts", "all",
		"--data-dir", filepath.Join(dir, "data"), "--log-level", "warn", "--audit-log", auditLog,
		"--oidc-display-name", "Example"}, oidc...)...)
	p.waitReady(t, addr)
	t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
	base := "http://" + addr

	page := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 800, TrustCertificate: idp.Certificate().Raw, OneProcess: true})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-sso-clusters-failed"}
	signInOnce(t, d, base, issuer)
	waitLocation(t, page.Ctx, base+"/?cluster=east") // the default cluster's page
	d.run(t, "the page", uiReady)

	scene.check(t, func(method, path string) pageAnswer { return pageFetch(t, page.Ctx, method, path) })
	browsertest.Screenshot(t, page.Ctx, "ui-sso-clusters-picker")

	// The audit names the user and the cluster of each.
	if found := auditedDeletes(t, auditLog, "oidc:id1"); found["east"] != "ok" || found["west"] != "denied" {
		t.Errorf("the audit's deletes by oidc:id1, by cluster: %v; want east ok and west denied", found)
	}
	// 403: the refusals asked for; the provider's site has no favicon.
	page.NoErrorsExcept(t, func(m string) bool { return strings.Contains(m, "403") || strings.Contains(m, issuer+"/favicon.ico") })
	page.Close()
}

// signInOnce signs the provider's test user in at gcscope's base, from its login page
// through the provider's form at issuer.
func signInOnce(t *testing.T, d uiDriver, base, issuer string) {
	t.Helper()
	host, _, _ := strings.Cut(strings.TrimPrefix(issuer, "https://"), ":")
	d.run(t, "sign in once", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#sso")), click("#sso"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "test-user@"+host),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "verysecure"),
		chromedp.Submit(chromedp.CSS(`input[name="password"]`)))
}

// ssoScene is what the tests of several clusters under single sign-on set up: in east the
// provider's user (oidc:id1) may read and delete team's ConfigMaps, in west only read
// shared's; each cluster also holds a ConfigMap the user may not list; north (the tests'
// third cluster) does not accept the user's credential.
type ssoScene struct {
	east, west                                 kubernetes.Interface
	eastMine, eastOther, westShared, westOther *corev1.ConfigMap
}

func newSSOScene(t *testing.T, east, west kubernetes.Interface) ssoScene {
	t.Helper()
	grant(t, east, "team", "oidc:id1", []string{"get", "list", "watch", "delete"})
	grant(t, west, "shared", "oidc:id1", []string{"get", "list", "watch"})
	return ssoScene{east: east, west: west,
		eastMine: createConfigMap(t, east, "team", "mine"), eastOther: createConfigMap(t, east, "default", "not-yours"),
		westShared: createConfigMap(t, west, "shared", "readable"), westOther: createConfigMap(t, west, "default", "not-yours")}
}

// check asks, as the signed-in page (fetch), what each cluster shows the user and does for
// them: the picker (east and west ready, north refused, saying why), the name each cluster
// gives the user, each graph (what its RBAC lets the user list, and nothing of another
// cluster), north's refusal (a 403 saying why, not a 500 nor another cluster's view), and
// the user's deletes (east's done, west's refused).
func (s ssoScene) check(t *testing.T, fetch func(method, path string) pageAnswer) {
	t.Helper()
	var picker struct {
		Clusters []struct{ Name, State, Reason string }
	}
	var last pageAnswer
	if err := testkit.Poll(context.Background(), 90*time.Second, func() bool {
		last = fetch("GET", "/api/v1/clusters")
		if last.Status != http.StatusOK || json.Unmarshal(last.Body, &picker) != nil || len(picker.Clusters) != 3 {
			return false
		}
		for _, c := range picker.Clusters {
			if want := map[bool]string{true: "refused", false: "ready"}[c.Name == "north"]; c.State != want {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("east and west ready, north refusing the user: not within 90 s; the picker said %d %s", last.Status, last.Body)
	}
	for _, c := range picker.Clusters {
		if c.Name == "north" && !strings.Contains(c.Reason, "does not accept your credential") {
			t.Errorf("north is refused for %q; want that it does not accept your credential", c.Reason)
		}
	}
	for _, name := range []string{"east", "west"} {
		var who struct{ User struct{ Name string } }
		a := fetch("GET", "/api/v1/clusters/"+name+"/session")
		if json.Unmarshal(a.Body, &who); a.Status != http.StatusOK || who.User.Name != "oidc:id1" {
			t.Errorf("%s's session: %d %s; want the user oidc:id1", name, a.Status, a.Body)
		}
	}
	graph := func(name string) string {
		a := fetch("GET", "/api/v1/clusters/"+name+"/graph?limit=100000")
		if a.Status != http.StatusOK {
			t.Fatalf("%s's graph: %d %s", name, a.Status, a.Body)
		}
		return string(a.Body)
	}
	testkit.EventuallyWithin(t, 30*time.Second, "east's graph has team's ConfigMap", func() bool { return strings.Contains(graph("east"), string(s.eastMine.UID)) })
	testkit.EventuallyWithin(t, 30*time.Second, "west's graph has shared's ConfigMap", func() bool { return strings.Contains(graph("west"), string(s.westShared.UID)) })
	east, west := graph("east"), graph("west")
	for _, hidden := range []string{string(s.eastOther.UID), string(s.westOther.UID)} {
		if strings.Contains(east+west, hidden) {
			t.Errorf("a graph holds %s, which RBAC does not let the user list", hidden)
		}
	}
	if strings.Contains(east, string(s.westShared.UID)) || strings.Contains(west, string(s.eastMine.UID)) {
		t.Error("a cluster's graph holds another cluster's object")
	}
	if a := fetch("GET", "/api/v1/clusters/north/graph"); a.Status != http.StatusForbidden || !strings.Contains(string(a.Body), "does not accept your credential") {
		t.Errorf("north's graph: %d %s; want 403 saying north does not accept your credential", a.Status, a.Body)
	}

	if a := fetch("POST", "/api/v1/clusters/east/objects/"+string(s.eastMine.UID)+"/delete"); a.Status != http.StatusOK {
		t.Errorf("the delete of east's team/mine: %d %s", a.Status, a.Body)
	}
	testkit.EventuallyWithin(t, 30*time.Second, "east's team/mine deleted", func() bool {
		_, err := s.east.CoreV1().ConfigMaps("team").Get(context.Background(), "mine", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if a := fetch("POST", "/api/v1/clusters/west/objects/"+string(s.westShared.UID)+"/delete"); a.Status != http.StatusForbidden {
		t.Errorf("the delete of west's shared/readable: %d %s; want 403 (west lets the user read it only)", a.Status, a.Body)
	}
	if _, err := s.west.CoreV1().ConfigMaps("shared").Get(context.Background(), "readable", metav1.GetOptions{}); err != nil {
		t.Errorf("west's shared/readable: %v", err)
	}
}

// auditedDeletes is the result of the last delete by user in each cluster, as the audit
// log at path says.
func auditedDeletes(t *testing.T, path, user string) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, l := range auditLines(t, path) {
		if l.Action == "delete" && l.User == user {
			found[l.Cluster] = l.Result
		}
	}
	return found
}

// pageAnswer is a request's answer as a page read it.
type pageAnswer struct {
	Status int
	Body   json.RawMessage
}

// pageFetch runs a same-origin request in a signed-in tab (a POST with the session's CSRF
// token and a Background delete's body): its status and JSON body.
func pageFetch(t *testing.T, tab context.Context, method, path string) pageAnswer {
	t.Helper()
	var a pageAnswer
	c, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Evaluate[chromedp.Void](`(async () => {
		const s = await (await fetch("/api/v1/session")).json();
		const init = { method: `+jsQuoted(method)+`, headers: { "Content-Type": "application/json", "X-CSRF-Token": s.csrfToken } };
		if (init.method === "POST") init.body = JSON.stringify({ propagationPolicy: "Background", dryRun: false });
		const r = await fetch(`+jsQuoted(path)+`, init);
		window.__answer = { status: r.status, body: await r.json().catch(() => null) };
	})()`, chromedp.EvalAwaitPromise))
	if err == nil {
		a, err = chromedp.Run(c, chromedp.Evaluate[pageAnswer](`window.__answer`))
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

// grant lets user verbs on ConfigMaps in namespace ns (made if missing).
func grant(t *testing.T, kube kubernetes.Interface, ns, user string, verbs []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type auditLine struct {
	User, Cluster, Action, Result string
	Status                        int
}

// auditLines reads the audit log's JSON lines.
func auditLines(t *testing.T, path string) []auditLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l auditLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}
