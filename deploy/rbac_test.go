package deploy_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The chart's RBAC at work: what each rendered manifest's ServiceAccount token lets
// gcscope do, and not do, in shadow, writes and active mode.

// TestShadowModeWithTheChartsToken: the default manifests' ServiceAccount token is enough
// for gcscope to sync every monitor, answer its probes, show the graph to a signed-in user
// and record a shadow decision; and it is not enough to write anything.
func TestShadowModeWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope.yaml")
	installRBAC(t, m)
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "shadow-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch", "delete")

	// What the ServiceAccount itself may do, as the apiserver's RBAC says.
	cm := func(verb string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		cm("get"), cm("list"), cm("watch"),
		{Verb: "list", Group: "example.com", Resource: "widgets"}, // a CRD installed later: the monitors need it too
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("the ServiceAccount may not %s %s.%s: gcscope needs it", attr.Verb, attr.Resource, attr.Group)
		}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		cm("delete"), cm("patch"), cm("update"), cm("create"), cm("deletecollection"),
		{Verb: "delete", Group: "apps", Resource: "deployments", Namespace: ns},
		{Verb: "patch", Group: "example.com", Resource: "widgets"},
		{Verb: "create", Resource: "events", Namespace: ns},
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: ns},
		{Verb: "impersonate", Resource: "users"},
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: "alice"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	} {
		if can(t, sa, attr) {
			t.Errorf("the default chart's ServiceAccount may %s %s/%s.%s", attr.Verb, attr.Resource, attr.Subresource, attr.Group)
		}
	}
	// And the writes themselves, dry-run: the apiserver's RBAC refuses them (403).
	dry := []string{metav1.DryRunAll}
	err := sa.CoreV1().ConfigMaps(ns).Delete(ctx, "lonely", metav1.DeleteOptions{DryRun: dry})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount's dry-run delete: %v, want 403 Forbidden", err)
	}
	_, err = sa.CoreV1().ConfigMaps(ns).Patch(ctx, "shared", types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`), metav1.PatchOptions{DryRun: dry})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount's dry-run patch: %v, want 403 Forbidden", err)
	}

	p := startGcscope(t, m, saToken)
	if code, body := p.get(t, "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("/healthz (the liveness probe): %d %s", code, body)
	}
	p.waitReady(t, m)
	// The Service's name is answered (--allowed-hosts from the chart); another is not.
	if code, _ := p.get(t, "/healthz", "", "gcscope.gcscope.svc:443"); code != http.StatusOK {
		t.Errorf("/healthz with Host gcscope.gcscope.svc: %d, want 200", code)
	}
	if code, _ := p.get(t, "/healthz", "", "evil.example"); code != http.StatusMisdirectedRequest {
		t.Errorf("/healthz with Host evil.example: %d, want 421", code)
	}
	// --auth=kubernetes: no token, no graph.
	if code, _ := p.get(t, "/api/v1/graph", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/graph without a token: %d, want 401", code)
	}

	q := p.queues(t, alice)
	if q.Mode != "shadow" {
		t.Errorf("mode %q, want shadow", q.Mode)
	}
	if len(q.Sync.Unsynced) > 0 || len(q.Sync.Failing) > 0 || !slices.Contains(q.Sync.Resources, "v1/configmaps") || len(q.Sync.Resources) < 20 {
		t.Errorf("monitors with the chart's token: %d resources, unsynced %v, failing %v", len(q.Sync.Resources), q.Sync.Unsynced, q.Sync.Failing)
	}
	want := []string{"child", "lonely", "owner", "shared", "victim"}
	testkit.Eventually(t, "alice sees the ConfigMaps of "+ns+" in the graph", func() bool {
		return slices.Equal(p.graphNames(t, alice, ns), want)
	})
	// The dangling owner: the engine decides to delete lonely and to patch the ghost out of
	// shared, and in shadow mode only records it.
	testkit.Eventually(t, "a shadow delete of lonely and a shadow patch of shared", func() bool {
		q := p.queues(t, alice)
		del, ok1 := q.action("delete", ns, "lonely")
		patch, ok2 := q.action("patchRemoveRefs", ns, "shared")
		return ok1 && ok2 && del && patch
	})
	// The chart records the history: the shadow decisions are in alice's, with the reason.
	testkit.Eventually(t, "the shadow delete of lonely in the recorded history", func() bool {
		code, body := p.get(t, "/api/v1/history?type=action&verb=delete&namespace="+ns+"&name=lonely", alice, "")
		return code == http.StatusOK && strings.Contains(string(body), `"name":"lonely"`) && strings.Contains(string(body), `"reason":`)
	})
	t.Logf("gcscope's resident memory, synced on an almost empty cluster: %s", p.rss())
	live, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{})
	if err != nil || live.DeletionTimestamp != nil {
		t.Errorf("lonely after a shadow decision: %v %v: want it untouched", err, live)
	}
	if shared, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{}); err != nil || len(shared.OwnerReferences) != 2 {
		t.Errorf("shared after a shadow decision: %v, want both ownerReferences kept", err)
	}

	// A delete through gcscope's API: refused by gcscope itself (--read-only), before any
	// request reaches the cluster; a dry run still predicts.
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusForbidden || e.Error != "read_only" {
		t.Errorf("delete through gcscope: %d %+v, want 403 read_only", code, e)
	}
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, true); code != http.StatusOK {
		t.Errorf("dry-run delete through gcscope: %d %+v, want 200", code, e)
	}

	// Without --read-only, the same install still cannot delete: gcscope deletes as alice
	// by impersonation, which the ServiceAccount may not do: the apiserver's 403.
	p2 := startGcscope(t, m, saToken, "--read-only")
	p2.waitReady(t, m)
	testkit.Eventually(t, "the second gcscope's graph holds victim", func() bool {
		return slices.Contains(p2.graphNames(t, alice, ns), "victim")
	})
	code, e := p2.deleteAs(t, alice, objs["victim"].UID, false)
	if code != http.StatusForbidden || e.Error != "apiserver" || e.Reason != string(metav1.StatusReasonForbidden) || !strings.Contains(e.Message, "impersonate") {
		t.Errorf("delete through gcscope without --read-only: %d %+v, want the apiserver's 403 on impersonation", code, e)
	}
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("victim after the refused deletes: %v", err)
	}
}

// TestWritesWithTheChartsToken: with writes.enabled the ServiceAccount may impersonate, and
// still not delete by itself; a delete through gcscope is the signed-in user's, decided by
// that user's RBAC.
func TestWritesWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope-writes.yaml")
	installRBAC(t, m)
	t.Cleanup(func() { installRBAC(t, load(t, "gcscope.yaml")) })
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "writes-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch", "delete")
	bob := user(t, ns, "bob", "get", "list", "watch")

	for _, attr := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "users", Name: "someone"},
		{Verb: "impersonate", Resource: "groups", Name: "system:authenticated"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: "alice"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "authentication.kubernetes.io/credential-id"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("with writes enabled the ServiceAccount may not %s %s/%s", attr.Verb, attr.Resource, attr.Subresource)
		}
	}
	for _, verb := range []string{"delete", "patch", "update", "create"} {
		if can(t, sa, authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"}) {
			t.Errorf("with writes enabled the ServiceAccount itself may %s configmaps: only the users it impersonates should", verb)
		}
	}

	p := startGcscope(t, m, saToken)
	p.waitReady(t, m)
	testkit.Eventually(t, "victim in the graph", func() bool {
		return slices.Contains(p.graphNames(t, alice, ns), "victim")
	})
	// bob may not delete ConfigMaps: the apiserver says so to gcscope acting as bob.
	code, e := p.deleteAs(t, bob, objs["victim"].UID, false)
	if code != http.StatusForbidden || e.Error != "apiserver" || e.Reason != string(metav1.StatusReasonForbidden) || !strings.Contains(e.Message, "writes-test:bob") {
		t.Errorf("bob's delete through gcscope: %d %+v, want the apiserver's 403 for bob", code, e)
	}
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Fatalf("victim after bob's refused delete: %v", err)
	}
	// alice may, and does.
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusOK {
		t.Fatalf("alice's delete through gcscope: %d %+v, want 200", code, e)
	}
	testkit.Eventually(t, "victim deleted", func() bool {
		_, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "victim", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// The engine is still in shadow mode: the dangling owner's dependent stays.
	if _, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{}); err != nil {
		t.Errorf("lonely: %v, want it kept (shadow mode)", err)
	}
	if !strings.Contains(p.stderrString(), `"action":"delete"`) || !strings.Contains(p.stderrString(), `"impersonated":true`) {
		t.Errorf("no audit line of an impersonated delete on stderr:\n%s", p.stderrString())
	}
}

// TestActiveModeWithTheChartsToken: with gc.mode=active the ServiceAccount may delete and
// patch, and gcscope's engine collects with that token alone.
func TestActiveModeWithTheChartsToken(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope-active.yaml")
	installRBAC(t, m)
	t.Cleanup(func() { installRBAC(t, load(t, "gcscope.yaml")) })
	saToken := token(t, chartNamespace, chartSA)
	sa := kubernetes.NewForConfigOrDie(asToken(saToken))

	const ns = "active-test"
	objs := scene(t, ns)
	alice := user(t, ns, "alice", "get", "list", "watch")

	for _, attr := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "delete", Resource: "configmaps"},
		{Namespace: ns, Verb: "patch", Resource: "configmaps"},
		{Verb: "delete", Group: "example.com", Resource: "widgets"},
		{Namespace: ns, Verb: "create", Resource: "events"},
	} {
		if !can(t, sa, attr) {
			t.Errorf("in active mode the ServiceAccount may not %s %s.%s", attr.Verb, attr.Resource, attr.Group)
		}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "configmaps"},
		{Namespace: ns, Verb: "update", Resource: "configmaps"},
		{Verb: "impersonate", Resource: "users"},
	} {
		if can(t, sa, attr) {
			t.Errorf("in active mode the ServiceAccount may %s %s", attr.Verb, attr.Resource)
		}
	}
	if err := sa.CoreV1().ConfigMaps(ns).Delete(ctx, "victim", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the ServiceAccount's dry-run delete in active mode: %v", err)
	}

	p := startGcscope(t, m, saToken)
	p.waitReady(t, m)
	// The engine deletes lonely (its only owner is gone) and patches the ghost out of shared.
	testkit.Eventually(t, "lonely deleted by gcscope's engine", func() bool {
		_, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "lonely", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "the ghost reference patched out of shared", func() bool {
		s, err := admin(t).cs.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
		return err == nil && len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == objs["owner"].UID
	})
	q := p.queues(t, alice)
	if shadow, ok := q.action("delete", ns, "lonely"); !ok || shadow {
		t.Errorf("the engine's delete of lonely: found %v, shadow %v; want a real delete", ok, shadow)
	}
	// The UI stays read-only (writes are another switch).
	if code, e := p.deleteAs(t, alice, objs["victim"].UID, false); code != http.StatusForbidden || e.Error != "read_only" {
		t.Errorf("delete through gcscope: %d %+v, want 403 read_only", code, e)
	}
}
