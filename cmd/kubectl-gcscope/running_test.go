package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/testkit"
)

// Commands that keep running: watch redraws and stops, the dashboard serves, progress
// is drawn at its cadence, an interrupt exits 130.

// TestWatchRedrawsOnChange runs tree --watch: a new dependent is drawn in a second tree,
// and deleting the root ends the watch by itself with exit 0.
func TestWatchRedrawsOnChange(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fixtures{ctx: ctx, cs: e.client}
	watched := f.deployment("watched")
	if f.err != nil {
		t.Fatal(f.err)
	}
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"tree", "deploy/watched", "--watch"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "Deployment/watched", 1)

	f.configMap("watched-config", ownerOf(watched, "apps/v1", "Deployment", true))
	if f.err != nil {
		t.Fatal(f.err)
	}
	waitOutput(t, &out, "└─ConfigMap/watched-config", 1)
	if n := strings.Count(out.String(), "NAMESPACE"); n != 2 {
		t.Errorf("%d trees drawn, want 2 (the first, then one with the new dependent):\n%s", n, out.String())
	}
	if err := e.client.AppsV1().Deployments(ns).Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-ctx.Done():
		t.Fatal("the watch did not end when its root was deleted")
	}
	if !strings.HasSuffix(out.String(), "\ndeployments.apps \"watched\": deleted\n") {
		t.Errorf("the watch does not end by saying the root is deleted:\n%s", out.String())
	}
}

// TestWatchStopsOnCancel: Ctrl-C (the context) ends a watch with exit 0.
func TestWatchStopsOnCancel(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"tree", "deploy/web", "--watch"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "Deployment/web", 1)
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after cancel, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not stop within 10 s of its context's end")
	}
}

// waitOutput waits until out contains s at least n times.
func waitOutput(t *testing.T, out *syncBuffer, s string, n int) {
	t.Helper()
	if testkit.Poll(context.Background(), time.Minute, func() bool { return strings.Count(out.String(), s) >= n }) != nil {
		t.Fatalf("no %q in the output after a minute:\n%s", s, out.String())
	}
}

// TestUIServesDashboard starts the dashboard: it listens on 127.0.0.1, prints its URL,
// serves the page and becomes ready, and stops with exit 0 when its context ends.
func TestUIServesDashboard(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"ui", "--open=false"}, e.getenv, &out, &errs) }()
	waitOutput(t, &out, "http://127.0.0.1:", 1)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(out.String())
	if url == "" {
		t.Fatalf("no URL printed:\n%s", out.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	var code int
	var body string
	if testkit.Poll(context.Background(), 30*time.Second, func() bool { code, body = get("readyz"); return code == http.StatusOK }) != nil {
		t.Fatalf("/readyz still %d after 30 s: %s", code, body)
	}
	if code, body := get(""); code != http.StatusOK || !strings.Contains(body, "gcscope") {
		t.Errorf("/: %d, page without gcscope in it", code)
	}
	if !strings.Contains(out.String(), "engine in shadow mode") {
		t.Errorf("the dashboard does not say its engine runs in shadow mode:\n%s", out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop within 10 s of its context's end")
	}
}

// TestUIServesSeveralContexts starts the dashboard over two contexts: the default one's
// engine starts at once and becomes ready; the other (offline), opened through its route,
// fails with why and holds nothing; the page goes to the default cluster's URL.
func TestUIServesSeveralContexts(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ui", "--open=false", "--context", "plugin", "--context", "offline"}, e.getenv, &out, &errs)
	}()
	waitOutput(t, &out, "http://127.0.0.1:", 1)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(out.String())
	if !strings.Contains(out.String(), "contexts plugin, offline (plugin is the default") {
		t.Errorf("the dashboard does not say which contexts it serves:\n%s", out.String())
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string, http.Header) {
		resp, err := noRedirect.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header
	}
	if testkit.Poll(context.Background(), 30*time.Second, func() bool { code, _, _ := get("readyz"); return code == http.StatusOK }) != nil {
		t.Fatal("/readyz: the default context's engine did not become ready")
	}
	if code, body, _ := get("api/v1/clusters/offline/graph"); code != http.StatusServiceUnavailable || !strings.Contains(body, "cluster_not_ready") {
		t.Errorf("offline's graph: %d %s; want 503 cluster_not_ready", code, body)
	}
	var body string
	if testkit.Poll(context.Background(), 30*time.Second, func() bool {
		_, body, _ = get("api/v1/clusters")
		return strings.Contains(body, `"name":"offline","server":"https://127.0.0.1:1","state":"failed"`)
	}) != nil {
		t.Fatalf("offline did not fail: %s", body)
	}
	if !strings.Contains(body, "cannot reach https://127.0.0.1:1") || !strings.Contains(body, `{"name":"plugin"`) {
		t.Errorf("the clusters: %s; want offline failed with why, and plugin", body)
	}
	if code, body, _ := get("api/v1/clusters/plugin/queues"); code != http.StatusOK {
		t.Errorf("plugin's queues with offline failed: %d %s", code, body)
	}
	if code, _, h := get(""); code != http.StatusSeeOther || h.Get("Location") != "/?cluster=plugin" {
		t.Errorf("/: %d to %q; want 303 to the default cluster's page", code, h.Get("Location"))
	}
	if code, page, _ := get("?cluster=plugin"); code != http.StatusOK || !strings.Contains(page, `id="cluster-picker"`) {
		t.Errorf("plugin's page: %d, with no cluster picker", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop within 10 s of its context's end")
	}
}

// TestProgressCadence: on a pipe, progress starts only once a sync is slow (2 s) and
// then prints a line every 5 s at most, closed by a summary; on a terminal one line is
// rewritten in place and cleared at the end.
func TestProgressCadence(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }

	var pipe bytes.Buffer
	p := newProgress(&pipe, false, clock)
	for _, at := range []time.Duration{0, time.Second, 2500 * time.Millisecond, 4 * time.Second, 7600 * time.Millisecond} {
		now = start.Add(at)
		p.syncing(37, 12, int(at/time.Millisecond)*5)
	}
	p.finish(37, 12000, 8*time.Second)
	want := "syncing 37 resources (12 listed)… 12,500 objects\n" +
		"syncing 37 resources (12 listed)… 38,000 objects\n" +
		"synced 37 resources: 12,000 objects in 8s\n"
	if pipe.String() != want {
		t.Errorf("on a pipe:\n%q\nwant\n%q", pipe.String(), want)
	}

	var tty bytes.Buffer
	now = start
	p = newProgress(&tty, true, clock)
	p.syncing(37, 0, 0) // too early to show
	now = start.Add(time.Second)
	p.syncing(37, 36, 1200)
	now = start.Add(2 * time.Second)
	p.settling(1200, 3)
	p.finish(37, 1200, 2*time.Second)
	want = "\r\x1b[Ksyncing 37 resources (36 listed)… 1,200 objects" +
		"\r\x1b[Kchecking owners… 1,200 objects, 3 queued" + "\r\x1b[K"
	if tty.String() != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", tty.String(), want)
	}

	var quiet bytes.Buffer
	now = start
	p = newProgress(&quiet, false, clock)
	now = start.Add(time.Second)
	p.syncing(5, 5, 40)
	p.finish(5, 40, time.Second)
	if quiet.Len() != 0 {
		t.Errorf("a fast sync on a pipe printed %q, want nothing", quiet.String())
	}
}

// TestInterruptedExits130: Ctrl-C before the answer ends with "interrupted" and 130.
func TestInterruptedExits130(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs syncBuffer
	if code := run(ctx, []string{"why", "deploy/web"}, e.getenv, &out, &errs); code != exitInterrupted || errs.String() != "interrupted\n" || out.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130 and interrupted", code, out.String(), errs.String())
	}
}
