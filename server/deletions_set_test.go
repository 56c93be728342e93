package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/deletions"
	"github.com/gcscope/gcscope/server/edge"
)

// TestDeleteASet: two owners and a ConfigMap both own, named together, are predicted
// together (the shared one goes, as it would not with either alone), a uid the graph
// lacks is said missing; the real delete deletes each target with its own audit line,
// and the collector takes the shared one. The body is as strict as a single delete's.
func TestDeleteASet(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{Deletions: e.deletions(t)})
	c := newClient(t, ts)
	c.session()
	ns := e.namespace(t)
	a := e.configMap(t, ns, "a", nil)
	b := e.configMap(t, ns, "b", nil)
	shared := e.configMap(t, ns, "shared", nil, a, b)
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}, edge.CSRFHeader: {c.csrf}}
	post := func(body any) (int, deletions.DeleteSetResponse, string) { t.Helper(); return postSet(c, h, body) }

	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"uids": []string{string(a.UID)}, "propagationPolicy": "Background"}, "is required (true predicts, false deletes)"},
		{map[string]any{"uids": []string{}, "propagationPolicy": "Background", "dryRun": true}, "names no object"},
		{map[string]any{"uids": []string{string(a.UID), string(a.UID)}, "propagationPolicy": "Background", "dryRun": true}, "given twice"},
		{map[string]any{"uids": []string{string(a.UID)}, "propagationPolicy": "Background", "dryRun": true, "force": true}, "unknown field"},
		{map[string]any{"uids": []string{string(a.UID)}, "propagationPolicy": "Sideways", "dryRun": true}, "not one of the allowed values"},
	} {
		if code, _, raw := post(tc.body); code != http.StatusBadRequest || !strings.Contains(raw, tc.want) {
			t.Errorf("%v: %d %s, want 400 saying %q", tc.body, code, raw, tc.want)
		}
	}
	if code, _ := c.do(http.MethodPost, "/api/v1/deletions", map[string]any{"uids": []string{string(a.UID)}, "propagationPolicy": "Background", "dryRun": false},
		http.Header{"Origin": {"https://evil.example"}, "Content-Type": {"application/json"}, edge.CSRFHeader: {c.csrf}}); code != http.StatusForbidden {
		t.Errorf("a set delete from another site: %d, want 403", code)
	}

	code, r, raw := post(map[string]any{"uids": []string{string(a.UID), "no-such-uid", string(b.UID)}, "propagationPolicy": "Background", "dryRun": true})
	if code != http.StatusOK || !slices.Equal(deletedNames(r), []string{"a", "b", "shared"}) || !slices.Equal(r.Missing, []string{"no-such-uid"}) || len(r.Prediction.Targets) != 2 {
		t.Fatalf("dry run of a and b: %d %s; want a, b and shared deleted, no-such-uid missing, two targets", code, raw)
	}
	if n, _ := e.engine.Node(shared.UID); n.UID == "" {
		t.Fatal("a dry run deleted something")
	}
	code, r, raw = post(map[string]any{"uids": []string{string(a.UID), string(b.UID)}, "propagationPolicy": "Background", "dryRun": false})
	if code != http.StatusOK || len(r.Outcomes) != 2 || slices.ContainsFunc(r.Outcomes, func(o deletions.SetOutcome) bool { return o.Result != "deletion started" }) {
		t.Fatalf("delete of a and b: %d %s", code, raw)
	}
	testkit.Eventually(t, "a, b and shared gone", func() bool {
		return !slices.ContainsFunc([]types.UID{a.UID, b.UID, shared.UID}, func(u types.UID) bool { _, ok := e.engine.Node(u); return ok })
	})
	log := audit.String()
	for _, name := range []string{`"name":"a"`, `"name":"b"`} {
		if !strings.Contains(log, `"action":"delete","object":`) || !strings.Contains(log, name) {
			t.Errorf("the audit log names no delete of %s:\n%s", name, log)
		}
	}
	if !strings.Contains(log, `"action":"deleteSet"`) {
		t.Errorf("the audit log has no line for the set:\n%s", log)
	}
}

// postSet posts a set delete with h.
func postSet(c *client, h http.Header, body any) (int, deletions.DeleteSetResponse, string) {
	c.t.Helper()
	code, raw := c.do(http.MethodPost, "/api/v1/deletions", body, h)
	var r deletions.DeleteSetResponse
	json.Unmarshal(raw, &r)
	return code, r, string(raw)
}

// deletedNames are the names a set's prediction deletes, sorted.
func deletedNames(r deletions.DeleteSetResponse) []string {
	var out []string
	for _, d := range r.Prediction.Deleted {
		out = append(out, d.Object.Name)
	}
	slices.Sort(out)
	return out
}
