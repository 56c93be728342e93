package static

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// modulePage opens, in headless Chromium, a blank page (with app.css) whose origin serves
// the page's modules from src/ as main.js imports them, for a test to import and drive
// one. It returns the page and a context bounded to a minute.
func modulePage(t *testing.T) (*browsertest.Page, context.Context) {
	t.Helper()
	page := browsertest.Start(t, browsertest.Options{})
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("src")))
	mux.HandleFunc("/app.css", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "app.css") })
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`<!doctype html><link rel="icon" href="data:,"><link rel="stylesheet" href="/app.css"><title>modules</title>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(page.Ctx, 60*time.Second)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	return page, ctx
}
