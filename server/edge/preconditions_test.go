package edge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/security/securitytest"
)

// brokenAuthz cannot be asked anything.
type brokenAuthz struct{}

func (brokenAuthz) Allowed(context.Context, *security.User, *authorizationv1.ResourceAttributes, *authorizationv1.NonResourceAttributes) (bool, error) {
	return false, errors.New("the cluster is down")
}

// readThroughFailClosed serves a handler that filters one pod through vis and answers
// with a header and a body of its own, under failClosed.
func readThroughFailClosed(t *testing.T, authz security.Authorizer) *httptest.ResponseRecorder {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	vis := access.New(context.Background(), anonymous, authz, mapper)
	h := failClosed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		VisibilityFrom(r).Visible(gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "p", UID: "p"})
		w.Header().Set("X-Handler", "yes")
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"filtered": "an answer that lacks what could not be checked"})
	}))
	req := httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, withVisibility(req, vis))
	return rec
}

// TestFailClosedAnswers503WhenPermissionsCannotBeChecked: a read whose permission checks
// failed while it filtered answers 503 with the API's error, never the handler's
// (partial) answer or its headers.
func TestFailClosedAnswers503WhenPermissionsCannotBeChecked(t *testing.T) {
	rec := readThroughFailClosed(t, brokenAuthz{})
	var e httpapi.Error
	if rec.Code != http.StatusServiceUnavailable || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != httpapi.CodeUnavailable ||
		!strings.Contains(e.Message, "cannot check your permissions with the cluster: the cluster is down") {
		t.Fatalf("a read whose permissions could not be checked: %d %s; want 503 unavailable", rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Handler") != "" || strings.Contains(rec.Body.String(), "filtered") {
		t.Errorf("the handler's own answer leaked: headers %v, body %s", rec.Header(), rec.Body)
	}
}

// TestFailClosedPassesAnsweredReads: when every question was answered, the handler's
// answer goes out as it wrote it.
func TestFailClosedPassesAnsweredReads(t *testing.T) {
	rec := readThroughFailClosed(t, &securitytest.SwitchableAuthz{})
	if rec.Code != http.StatusOK || rec.Header().Get("X-Handler") != "yes" || !strings.Contains(rec.Body.String(), "filtered") {
		t.Fatalf("an answered read: %d %v %s; want the handler's 200", rec.Code, rec.Header(), rec.Body)
	}
}
