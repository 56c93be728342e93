package edge

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gcscope/gcscope/server/security"
)

// TestSessionAnswerNames: GET /session's fields keep the names the page reads (Go's
// decoder ignores case, so the server's own tests would not notice a renamed one).
func TestSessionAnswerNames(t *testing.T) {
	e := New(Options{Logger: slog.New(slog.DiscardHandler), ProcessKey: security.NewProcessKey(), Sessions: security.NewSessions()})
	rec := httptest.NewRecorder()
	e.HandleSession(rec, httptest.NewRequest("GET", "/api/v1/session", nil))
	for _, name := range []string{`"user":`, `"csrfToken":"`, `"readOnly":`, `"slowMotion":`, `"version":`} {
		if !strings.Contains(rec.Body.String(), name) {
			t.Errorf("GET /session: %s lacks %s", rec.Body, name)
		}
	}
}
