package server

import (
	"net/http"
	"testing"

	"github.com/gcscope/gcscope/server/edge"
)

// TestEveryRefusedWriteIsAudited: a write refused where no handler writes its audit line (a
// query string, a method the route does not take) still leaves one line, with the status
// it was refused with, and a refusal a handler audits is not written twice. A trial found
// `.../delete?dryRun=false` refused 400 with no line.
func TestEveryRefusedWriteIsAudited(t *testing.T) {
	e := env(t)
	ts, audit := e.serve(t, Options{})
	c := newClient(t, ts)
	cm := e.configMap(t, e.namespace(t), "target", nil)
	c.session()
	h := http.Header{edge.CSRFHeader: {c.csrf}}
	path := "/api/v1/objects/" + string(cm.UID) + "/delete"
	body := `{"propagationPolicy":"Background","dryRun":true}`
	for _, tc := range []struct {
		method, query, path string
		status              int
		result              string
	}{
		{"POST", "?dryRun=false", path, http.StatusBadRequest, "denied"},
		{"PUT", "", path, http.StatusMethodNotAllowed, "denied"},
		{"POST", "", "/api/v1/objects/no-such-uid/delete", http.StatusNotFound, "denied"},
		{"POST", "", path, http.StatusOK, "ok"}, // the dry run itself
	} {
		before := len(auditEntries(t, audit.String()))
		code, out := c.do(tc.method, tc.path+tc.query, body, h)
		if code != tc.status {
			t.Fatalf("%s %s%s: %d %s, want %d", tc.method, tc.path, tc.query, code, out, tc.status)
		}
		entries := auditEntries(t, audit.String())
		if n := len(entries) - before; n != 1 {
			t.Errorf("%s %s%s → %d: %d audit lines, want 1: %+v", tc.method, tc.path, tc.query, code, n, entries[before:])
			continue
		}
		if got := entries[len(entries)-1]; got.Action != "delete" || got.Status != tc.status || got.Result != tc.result || got.Path != tc.path || got.User != "local" {
			t.Errorf("%s %s%s → %d: audit line %+v, want action delete, status %d, result %s", tc.method, tc.path, tc.query, code, got, tc.status, tc.result)
		}
	}
}
