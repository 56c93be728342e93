package server

// The scenario player's routes: absent unless gcscope gives the server a player (only on
// its embedded cluster), and, where present, writes like any other: same-origin with the
// CSRF token, refused read-only, audited.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gcscope/gcscope/scenario"
	"github.com/gcscope/gcscope/server/demo"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/registry"
)

// fakePlayer records what it was asked to do.
type fakePlayer struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakePlayer) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakePlayer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakePlayer) Scenarios() []scenario.Info {
	return []scenario.Info{{ID: "dangling", Title: "Dangling owner reference", Description: "…", Steps: []string{"a", "b", "c"}}}
}

func (f *fakePlayer) Runs() []scenario.Run {
	return []scenario.Run{{ID: "play-dangling-1", Scenario: "dangling"}}
}

func (f *fakePlayer) Status(id string) (scenario.Run, bool) {
	return scenario.Run{ID: id, Scenario: "dangling", State: scenario.RunRunning}, id == "play-dangling-1"
}

func (f *fakePlayer) Play(_ context.Context, id string) (scenario.Run, error) {
	f.record("play " + id)
	if id != "dangling" {
		return scenario.Run{}, scenario.ErrUnknownScenario
	}
	return scenario.Run{ID: "play-dangling-1", Scenario: id, State: scenario.RunRunning}, nil
}

func (f *fakePlayer) Release(_ context.Context, run string) (scenario.Run, error) {
	f.record("release " + run)
	switch run {
	case "play-dangling-1":
		return scenario.Run{ID: run}, scenario.ErrNothingHeld
	case "play-foreground-held-1":
		return scenario.Run{ID: run, State: scenario.RunRunning}, nil
	}
	return scenario.Run{}, scenario.ErrUnknownRun
}

func (f *fakePlayer) Cleanup(_ context.Context, run string) (scenario.Cleaned, error) {
	f.record("cleanup " + run)
	return scenario.Cleaned{Namespaces: []string{"play-dangling-1"}}, nil
}

// serveScenarios serves a server without an engine, with player (or none), and returns a
// browser-like client holding a session.
func serveScenarios(t *testing.T, player registry.ScenarioPlayer, readOnly bool) (*client, *lockedBuffer) {
	t.Helper()
	audit := &lockedBuffer{}
	o := Options{ReadOnly: readOnly, Audit: audit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if player != nil {
		o.Scenarios = player
	}
	ts := httptest.NewServer(New(o))
	t.Cleanup(ts.Close)
	c := newClient(t, ts)
	c.session()
	return c, audit
}

// write posts to path as the page does: same origin, with the CSRF token (unless token is
// false).
func (c *client) write(path, body string, token bool) (int, string) {
	c.t.Helper()
	h := http.Header{"Origin": {c.base}, "Content-Type": {"application/json"}}
	if token {
		h.Set(edge.CSRFHeader, c.csrf)
	}
	code, out := c.do(http.MethodPost, path, body, h)
	return code, string(out)
}

func TestScenarioRoutesExistOnlyWithAPlayer(t *testing.T) {
	c, audit := serveScenarios(t, nil, false)
	for _, path := range []string{"/api/v1/scenarios", "/api/v1/scenarios/", "/api/v1/scenarios/runs/play-dangling-1"} {
		if code, body := c.do(http.MethodGet, path, nil, nil); code != http.StatusNotFound {
			t.Errorf("GET %s without a player: %d %s; want 404", path, code, body)
		}
	}
	for _, path := range []string{"/api/v1/scenarios/dangling/play", "/api/v1/scenarios/runs/play-dangling-1/release",
		"/api/v1/scenarios/runs/play-dangling-1/cleanup", "/api/v1/scenarios/cleanup"} {
		if code, body := c.write(path, `{}`, true); code != http.StatusNotFound {
			t.Errorf("POST %s without a player: %d %s; want 404", path, code, body)
		}
	}
	if _, page := c.do(http.MethodGet, "/", nil, nil); strings.Contains(string(page), `id="play-button"`) {
		t.Error("the page offers the Play menu without a player")
	}
	if strings.Contains(audit.String(), "scenario") {
		t.Errorf("audit of routes that do not exist: %s", audit)
	}

	player := &fakePlayer{}
	c, _ = serveScenarios(t, player, false)
	if _, page := c.do(http.MethodGet, "/", nil, nil); !strings.Contains(string(page), `id="play-button"`) {
		t.Error("the page has no Play menu with a player")
	}
	var list demo.ScenariosResponse
	if code := c.getJSON("/api/v1/scenarios", &list); code != http.StatusOK || len(list.Scenarios) != 1 || len(list.Runs) != 1 {
		t.Errorf("GET /api/v1/scenarios: %d %+v", code, list)
	}
	var run scenario.Run
	if code := c.getJSON("/api/v1/scenarios/runs/play-dangling-1", &run); code != http.StatusOK || run.ID != "play-dangling-1" {
		t.Errorf("GET a run: %d %+v", code, run)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/scenarios/runs/play-nope-1", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET an unknown run: %d, want 404", code)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/scenarios?x=1", nil, nil); code != http.StatusBadRequest {
		t.Errorf("GET with a query: %d, want 400", code)
	}

	ro, _ := serveScenarios(t, player, true)
	if _, page := ro.do(http.MethodGet, "/", nil, nil); strings.Contains(string(page), `id="play-button"`) {
		t.Error("the read-only page offers the Play menu")
	}
}

func TestScenarioWritesAreGuardedAndAudited(t *testing.T) {
	player := &fakePlayer{}
	c, audit := serveScenarios(t, player, false)

	// Refused before the player is asked anything.
	if code, body := c.write("/api/v1/scenarios/dangling/play", `{}`, false); code != http.StatusForbidden || !strings.Contains(body, `"csrf"`) {
		t.Errorf("play without the CSRF token: %d %s", code, body)
	}
	h := http.Header{"Origin": {"http://evil.example"}, edge.CSRFHeader: {c.csrf}}
	if code, body := c.do(http.MethodPost, "/api/v1/scenarios/cleanup", `{}`, h); code != http.StatusForbidden || !strings.Contains(string(body), "cross-origin") {
		t.Errorf("cleanup from another origin: %d %s", code, body)
	}
	if code, body := c.write("/api/v1/scenarios/dangling/play", `{"slow":true}`, true); code != http.StatusBadRequest || !strings.Contains(body, "takes no fields") {
		t.Errorf("play with a field: %d %s", code, body)
	}
	if code, _ := c.write("/api/v1/scenarios/dangling/play?now=1", `{}`, true); code != http.StatusBadRequest {
		t.Errorf("play with a query: %d, want 400", code)
	}
	if calls := player.Calls(); len(calls) != 0 {
		t.Fatalf("refused writes reached the player: %v", calls)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/v1/scenarios/dangling/play", ``, http.StatusAccepted, `"id":"play-dangling-1"`},
		{"/api/v1/scenarios/dangling/play", `{}`, http.StatusAccepted, `"state":"running"`},
		{"/api/v1/scenarios/nope/play", `{}`, http.StatusNotFound, "not_found"},
		{"/api/v1/scenarios/runs/play-foreground-held-1/release", `{}`, http.StatusOK, `"id":"play-foreground-held-1"`},
		{"/api/v1/scenarios/runs/play-dangling-1/release", `{}`, http.StatusConflict, "nothing in the run is held"},
		{"/api/v1/scenarios/runs/play-nope-1/release", `{}`, http.StatusNotFound, "no such run"},
		{"/api/v1/scenarios/runs/play-dangling-1/cleanup", `{}`, http.StatusOK, `"namespaces":["play-dangling-1"]`},
		{"/api/v1/scenarios/cleanup", ``, http.StatusOK, `"namespaces"`},
	} {
		if code, body := c.write(tc.path, tc.body, true); code != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s %q: %d %s; want %d with %s", tc.path, tc.body, code, body, tc.status, tc.want)
		}
	}
	want := []string{"play dangling", "play dangling", "play nope", "release play-foreground-held-1", "release play-dangling-1",
		"release play-nope-1", "cleanup play-dangling-1", "cleanup "}
	if calls := player.Calls(); !slices.Equal(calls, want) {
		t.Errorf("the player was asked %q, want %q", calls, want)
	}

	entries := auditEntries(t, audit.String())
	count := map[string]int{}
	for _, e := range entries {
		count[e.Action+" "+e.Result]++
		if e.Action == "scenarioPlay" && e.Result == "ok" && (e.Scenario != "dangling" || e.Run != "play-dangling-1" || e.Status != http.StatusAccepted) {
			t.Errorf("audit of a play: %+v", e)
		}
	}
	// Four plays denied: without the token, with a field, with a query (once refused with
	// no line), and of a scenario that does not exist.
	for key, n := range map[string]int{"scenarioPlay denied": 4, "scenarioPlay ok": 2, "scenarioRelease ok": 1, "scenarioRelease denied": 2,
		"scenarioCleanup ok": 2, "scenarioCleanup denied": 1} {
		if count[key] != n {
			t.Errorf("audit has %d %q lines, want %d:\n%s", count[key], key, n, audit)
		}
	}

	// Read-only: every player write is refused, and audited; the list is still readable.
	ro, roAudit := serveScenarios(t, player, true)
	before := len(player.Calls())
	for _, path := range []string{"/api/v1/scenarios/dangling/play", "/api/v1/scenarios/runs/play-foreground-held-1/release", "/api/v1/scenarios/cleanup"} {
		if code, body := ro.write(path, `{}`, true); code != http.StatusForbidden || !strings.Contains(body, "read_only") {
			t.Errorf("read-only POST %s: %d %s", path, code, body)
		}
	}
	if len(player.Calls()) != before {
		t.Errorf("read-only writes reached the player: %v", player.Calls()[before:])
	}
	if n := strings.Count(roAudit.String(), `"result":"denied"`); n != 3 {
		t.Errorf("read-only refusals audited %d times, want 3:\n%s", n, roAudit)
	}
	if code := ro.getJSON("/api/v1/scenarios", nil); code != http.StatusOK {
		t.Errorf("read-only list: %d", code)
	}
}
