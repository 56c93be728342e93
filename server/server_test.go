package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/web"
)

// localRequest is a GET of path as a browser on this machine sends it (httptest's
// example.com is not a host gcscope answers to).
func localRequest(path string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8080"
	return req
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest(path))
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

func TestIndexPageAndStaticAssets(t *testing.T) {
	h := New(Options{Version: "v9"})
	rec := httptest.NewRecorder()
	req := localRequest("/")
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{"<!doctype html>", `data-csrf-token="`, assetURL("app.js"), assetURL("app.css"), `id="graph"`, `id="queues"`, `id="delete-dialog"`, "v9"} {
		if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Read-only: the dialog previews (a dry run) and has nothing to confirm a delete with.
	if _, ro := get(t, New(Options{ReadOnly: true}), "/"); !strings.Contains(ro, `id="delete-dialog"`) || strings.Contains(ro, `id="delete-confirm"`) || !strings.Contains(ro, "read-only") {
		t.Error("the read-only page does not preview deletes, offers to confirm one, or does not say it is read-only")
	}
	if c := rec.Result().Cookies(); len(c) != 1 || c[0].Name != edge.CSRFCookie || !strings.Contains(body, `data-csrf-token="`+h.edge.CSRFTokenFor(c[0].Value, req)+`"`) {
		t.Errorf("the page's CSRF token is not the one issued for its cookie: %v", c)
	}
	// Shadow mode says that deletes from the page are real.
	var page strings.Builder
	web.App(web.Page{Mode: "shadow", Asset: assetURL}).Render(context.Background(), &page)
	if !strings.Contains(page.String(), `id="shadow-banner"`) || !strings.Contains(page.String(), "Deletes you make here are real") {
		t.Error("the shadow-mode page has no banner saying deletes are real")
	}
	page.Reset()
	web.App(web.Page{Mode: "shadow", ReadOnly: true, Asset: assetURL}).Render(context.Background(), &page)
	if strings.Contains(page.String(), `id="shadow-banner"`) {
		t.Error("the read-only shadow page says deletes are real")
	}

	for _, tc := range []struct {
		path, ctype string
		status      int
		immutable   bool
	}{
		{assetURL("app.js"), "javascript", 200, true},
		{"/static/src/main.js", "", 404, false},
		{"/static/app.css", "text/css", 200, false},
		{"/static/", "", 404, false},
		{"/static/nope.js", "", 404, false},
		{"/static/embed.go", "", 404, false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest(tc.path))
		if rec.Code != tc.status || !strings.Contains(rec.Header().Get("Content-Type"), tc.ctype) {
			t.Errorf("GET %s: %d %q", tc.path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if got := strings.Contains(rec.Header().Get("Cache-Control"), "immutable"); got != tc.immutable {
			t.Errorf("GET %s: Cache-Control %q", tc.path, rec.Header().Get("Cache-Control"))
		}
	}
}
