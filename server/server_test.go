package server

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestReadyzFollowsReadiness(t *testing.T) {
	var waiting error = errors.New("creating demo workloads")
	h := New(Options{Ready: func() error { return waiting }})

	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "creating demo workloads") {
		t.Errorf("not ready: got %d %q, want 503 naming what it waits for", code, body)
	}
	if code, _ := get(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("healthz while starting: %d, want 200", code)
	}
	waiting = nil
	if code, body := get(t, h, "/readyz"); code != http.StatusOK || body != "ok" {
		t.Errorf("ready: got %d %q", code, body)
	}
}

func TestUnknownPathIs404(t *testing.T) {
	if code, _ := get(t, New(Options{}), "/nope"); code != http.StatusNotFound {
		t.Errorf("got %d, want 404", code)
	}
}
