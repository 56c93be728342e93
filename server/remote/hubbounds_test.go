package remote_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/stream"
)

// TestAReadOnlyHubMakesNoWrite: a hub started with --read-only refuses, itself and audited,
// a delete and a set delete on its remotes whatever the remote allows (the remote gets no
// request); a dry run (the dialog's prediction) and the dismissal of orphan marks (the
// remote gcscope's own memory) pass, as on a read-only gcscope of one cluster.
func TestAReadOnlyHubMakesNoWrite(t *testing.T) {
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if sessionHandler(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	})
	set, err := remote.NewSet([]remote.Config{{Name: "r", URL: rem.URL}}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := set.Lookup("r")
	var audits auditRecords
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.Serve(w, r, remote.Call{Path: strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1"), User: "alice",
			Credential: remote.Credential{Token: "alice-token"}, ReadOnly: true,
			CSRFToken: func() string { return "hub-csrf-token" }, Audit: audits.add})
	}))
	t.Cleanup(hub.Close)

	for _, c := range []struct {
		path, body string
		refused    bool
	}{
		{"/api/v1/objects/u1/delete", `{"propagationPolicy":"Background","dryRun":false}`, true},
		{"/api/v1/objects/u1/delete", `{"propagationPolicy":"Background"}`, true},
		{"/api/v1/deletions", `{"uids":["u1"],"propagationPolicy":"Foreground","dryRun":false}`, true},
		{"/api/v1/slow-motion", `{"enabled":true}`, true},
		{"/api/v1/objects/u1/delete", `{"propagationPolicy":"Background","dryRun":true}`, false},
		{"/api/v1/objects/u1/orphan-marks/dismiss", ``, false},
	} {
		before := len(rem.requests())
		resp, body, err := do(t, http.MethodPost, hub.URL+c.path, http.Header{"Content-Type": {"application/json"}}, c.body)
		if err != nil {
			t.Fatalf("POST %s %s: %v", c.path, c.body, err)
		}
		reached := len(rem.requests()) > before
		if c.refused {
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"read_only"`) || reached {
				t.Errorf("POST %s %s on a read-only hub: %d %s, the remote asked: %v; want 403 read_only and no request", c.path, c.body, resp.StatusCode, body, reached)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || rem.last(c.path) == nil {
			t.Errorf("POST %s %s on a read-only hub: %d %s; want it passed to the remote", c.path, c.body, resp.StatusCode, body)
		}
	}
	refusals := 0
	for _, a := range audits.get() {
		if a.Status == http.StatusForbidden {
			refusals++
		}
	}
	if refusals != 4 {
		t.Errorf("the hub audited %d refusals of 4: %+v", refusals, audits.get())
	}
}

// TestARelayedStreamTakesAHubSeat: a stream through the hub counts against the hub's own
// bounds of streams (--max-streams-per-user), as a local one does: with the user's seats
// taken the hub refuses it (503) and the remote is not asked; with a seat free it is relayed,
// and the seat is given back when it ends.
func TestARelayedStreamTakesAHubSeat(t *testing.T) {
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.Write(r.Context(), websocket.MessageText, []byte(`{"type":"snapshot"}`))
		c.Close(websocket.StatusNormalClosure, "")
	})
	set, err := remote.NewSet([]remote.Config{{Name: "r", URL: rem.URL}}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := set.Lookup("r")
	seats := stream.NewSeats(10, 1)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.Serve(w, r, remote.Call{Path: "/stream", User: "alice", Seats: seats})
	}))
	t.Cleanup(hub.Close)
	dial := func() (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(hub.URL, "http")+"/api/v1/stream", nil)
	}

	if why := seats.Take("alice"); why != "" {
		t.Fatal(why)
	}
	if _, resp, err := dial(); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || len(rem.requests()) != 0 {
		t.Errorf("a stream with the user's seats taken: %v %v, the remote asked %d times; want 503 and no request", err, resp, len(rem.requests()))
	}
	seats.Give("alice")
	c, _, err := dial()
	if err != nil {
		t.Fatalf("a stream with a seat free: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatalf("its first frame: %v", err)
	}
	c.CloseNow()
	testkit.Eventually(t, "the relayed stream's seat given back", func() bool {
		if seats.Take("alice") != "" {
			return false
		}
		seats.Give("alice")
		return true
	})
}
