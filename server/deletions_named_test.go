package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/deletions"
	"github.com/gcscope/gcscope/server/edge"
)

// TestDeleteASetNamedAsItsToolNamesIt: POST /api/v1/deletions takes a set as kubectl
// delete -l and -f name it: the selector's matches predicted together, the manifest's
// documents resolved (one not found, said) and deleted; a Helm release is predicted only
// (helm uninstall runs its hooks), and one that does not exist is a 400 saying so.
func TestDeleteASetNamedAsItsToolNamesIt(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{Deletions: e.deletions(t)})
	c := newClient(t, ts)
	c.session()
	ns := e.namespace(t)
	ctx := context.Background()
	for _, name := range []string{"web-a", "web-b", "db"} {
		e.configMap(t, ns, name, nil)
		app := strings.TrimSuffix(strings.TrimSuffix(name, "-a"), "-b")
		if _, err := e.client.CoreV1().ConfigMaps(ns).Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"`+app+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}, edge.CSRFHeader: {c.csrf}}
	post := func(body any) (int, deletions.DeleteSetResponse, string) { t.Helper(); return postSet(c, h, body) }

	code, r, raw := post(map[string]any{"selector": map[string]any{"types": []string{"configmaps"}, "labelSelector": "app=web", "namespace": ns},
		"propagationPolicy": "Background", "dryRun": true})
	if code != http.StatusOK || r.Set == nil || r.Set.Describe != "kubectl delete configmaps -l app=web -n "+ns || !slices.Equal(deletedNames(r), []string{"web-a", "web-b"}) {
		t.Fatalf("selector app=web: %d %s; want web-a and web-b predicted together", code, raw)
	}

	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\n"
	code, r, raw = post(map[string]any{"manifest": map[string]any{"text": manifest, "namespace": ns}, "propagationPolicy": "Background", "dryRun": false})
	if code != http.StatusOK || len(r.Outcomes) != 1 || r.Outcomes[0].Object.Name != "db" || r.Set == nil ||
		len(r.Set.Missing) != 1 || !strings.Contains(r.Set.Missing[0].Reason, "not found (the manifest, document 2)") {
		t.Fatalf("manifest of db and gone: %d %s; want db deleted, gone said not found", code, raw)
	}
	testkit.Eventually(t, "db deleted", func() bool {
		_, err := e.client.CoreV1().ConfigMaps(ns).Get(ctx, "db", metav1.GetOptions{})
		return err != nil
	})
	if !strings.Contains(audit.String(), `"name":"db"`) {
		t.Errorf("no audit line for the delete of db:\n%s", audit.String())
	}

	for _, tc := range []struct {
		body any
		code int
		want string
	}{
		{map[string]any{"helmRelease": map[string]any{"name": "shop", "namespace": ns}, "propagationPolicy": "Background", "dryRun": false}, 400, "helm uninstall"},
		{map[string]any{"helmRelease": map[string]any{"name": "shop", "namespace": ns}, "propagationPolicy": "Background", "dryRun": true}, 400, "release not found"},
		{map[string]any{"uids": []string{"x"}, "manifest": map[string]any{"text": manifest}, "propagationPolicy": "Background", "dryRun": true}, 400, "name the set one way"},
		{map[string]any{"selector": map[string]any{"types": []string{"configmaps"}, "labelSelector": "app in ("}, "propagationPolicy": "Background", "dryRun": true}, 400, "labelSelector"},
		{map[string]any{"selector": map[string]any{"types": []string{"widgets"}, "labelSelector": "app=web", "namespace": ns}, "propagationPolicy": "Background", "dryRun": true}, 400, `doesn't have a resource type`},
		{map[string]any{"manifest": map[string]any{"text": "kind: [\n"}, "propagationPolicy": "Background", "dryRun": true}, 400, "the manifest, document 1"},
	} {
		if code, _, raw := post(tc.body); code != tc.code || !strings.Contains(raw, tc.want) {
			t.Errorf("%v: %d %s, want %d saying %q", tc.body, code, raw, tc.code, tc.want)
		}
	}
}

// TestASetIsReadAsItsUser: a user who may list ConfigMaps in one namespace only names a
// set by selector in the other: the cluster refuses the read as them (403), and nothing
// of the other namespace is predicted.
func TestASetIsReadAsItsUser(t *testing.T) {
	w := newRBACWorld(t)
	ts := w.serve(t)
	c := newClient(t, ts)
	w.e.configMap(t, w.nsB, "bobs", nil)
	as := http.Header{"Authorization": {"Bearer " + w.tokens["alice"]}}
	cs := c.sessionAs(as)
	as.Set("Origin", ts.URL)
	as.Set(edge.CSRFHeader, cs.CSRFToken)
	as.Set("Content-Type", "application/json")
	body := map[string]any{"selector": map[string]any{"types": []string{"configmaps"}, "labelSelector": "x!=y", "namespace": w.nsB}, "propagationPolicy": "Background", "dryRun": true}
	code, raw := c.do(http.MethodPost, "/api/v1/deletions", body, as)
	if code != http.StatusForbidden || strings.Contains(string(raw), "bobs") {
		t.Fatalf("alice naming configmaps of %s: %d %s; want 403 from the cluster, naming nothing there", w.nsB, code, raw)
	}
	body["selector"].(map[string]any)["namespace"] = w.nsA
	if code, raw := c.do(http.MethodPost, "/api/v1/deletions", body, as); code != http.StatusOK && code != http.StatusNotFound {
		t.Fatalf("alice naming configmaps of her own %s: %d %s", w.nsA, code, raw)
	}
}
