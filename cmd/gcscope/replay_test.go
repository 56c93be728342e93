package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
)

// exportFile writes an export of a small background cascade (as GET
// /api/v1/history/export writes one) and returns its path and its plain lines.
func exportFile(t *testing.T) (string, []string) {
	t.Helper()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	owner := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "owner", UID: "u-owner"}
	child := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "child", UID: "u-child"}
	childNode := gc.NodeState{ObjectRef: child, Observed: true, Owners: []gc.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"}}}
	snap := gc.Snapshot{Seq: 10, Mode: gc.ModeActive, Nodes: []gc.NodeState{{ObjectRef: child, Observed: true, Owners: childNode.Owners}, {ObjectRef: owner, Observed: true}},
		Queues: []gc.QueueState{{Name: gc.GraphChanges}, {Name: gc.AttemptToDelete}, {Name: gc.AttemptToOrphan}}}
	lines := []any{
		// A version with a terminal escape sequence: printed, it must come out inert.
		history.ExportHeader{Schema: history.ExportSchema, Version: "test\x1b]0;pwned\x07\x1b[2J", From: t0, To: t0.Add(time.Minute), ExportedAt: t0.Add(time.Hour)},
		map[string]any{"checkpoint": snap, "checkpointSession": 1, "at": t0},
		history.Record{Pos: 11, Session: 1, Event: gc.Event{Seq: 11, Time: t0.Add(time.Second), Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: owner, Observed: true}}},
		history.Record{Pos: 12, Session: 1, Event: gc.Event{Seq: 12, Time: t0.Add(2 * time.Second), Type: gc.ActionTaken,
			Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: child, Policy: "Background", Reason: "all its owners are gone"}}},
		history.Record{Pos: 13, Session: 1, Event: gc.Event{Seq: 13, Time: t0.Add(3 * time.Second), Type: gc.NodeRemoved, Node: &childNode}},
		map[string]any{"end": history.ExportEnd{Events: 3, Checkpoints: 1}},
	}
	var plain []string
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, string(b)+"\n")
	}
	return writeGzip(t, strings.Join(plain, "")), plain
}

func writeGzip(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	path := filepath.Join(t.TempDir(), "export.jsonl.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestReplayServesTheRecordingReadOnly(t *testing.T) {
	file, _ := exportFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedWriter
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"replay", "--listen", "127.0.0.1:0", "--read-only", file}, func(string) string { return "" }, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replay: %v", err)
		}
	}()
	serving := regexp.MustCompile(`serving the replay \(read-only, no cluster, no engine\) on (http://[0-9.:]+)`)
	var base string
	if err := testkit.Poll(context.Background(), 20*time.Second, func() bool {
		if m := serving.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}); err != nil {
		t.Fatalf("not serving within 20 s:\n%s\n%s", stdout.String(), stderr.String())
	}
	if want := "2026-05-01T10:00:01Z to 2026-05-01T10:00:03Z, 3 events, 1 cascade, 0 gaps"; !strings.Contains(stdout.String(), want) {
		t.Errorf("the start does not say what the file covers (%q):\n%s", want, stdout.String())
	}
	if strings.ContainsAny(stdout.String(), "\x1b\x07") || !strings.Contains(stdout.String(), "exported by gcscope test?]0;pwned??[2J") {
		t.Errorf("the file's version is printed with its control characters, or not at all: %q", stdout.String())
	}
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"policy":"Background"}`))
		req.Header.Set("Origin", base)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/api/v1/history?order=oldest")
	if code != http.StatusOK || !strings.Contains(body, `"verb":"delete"`) || strings.Count(body, `"seq":`) != 3 {
		t.Fatalf("/api/v1/history: %d %s", code, body)
	}
	if code, body = get("GET", "/api/v1/history/state?at=2026-05-01T10:00:01.5Z"); code != http.StatusOK || !strings.Contains(body, `"name":"child"`) || strings.Contains(body, `"namespace":"shop","name":"owner"`) {
		t.Fatalf("the state between the owner's and the child's removal: %d %s", code, body)
	}
	if code, body = get("GET", "/api/v1/history/timeline?buckets=3"); code != http.StatusOK || !strings.Contains(body, `"policy":"Background"`) {
		t.Fatalf("the timeline: %d %s", code, body)
	}
	for _, path := range []string{"/api/v1/stream", "/api/v1/graph", "/api/v1/queues", "/api/v1/objects/u-child"} {
		if code, body := get("GET", path); code != http.StatusServiceUnavailable || !strings.Contains(body, "this is a replay of a recording: there is no live engine") {
			t.Errorf("%s: %d %s, want a 503 saying it is a replay", path, code, body)
		}
	}
	for _, path := range []string{"/api/v1/objects/u-child/delete", "/api/v1/slow-motion"} {
		if code, body := get("POST", path); code < 400 {
			t.Errorf("POST %s: %d %s, want it refused", path, code, body)
		}
	}
	if code, body = get("GET", "/"); code != http.StatusOK || !strings.Contains(body, `data-replay="true"`) || !strings.Contains(body, `data-read-only="true"`) {
		t.Fatalf("the page is not told it is a read-only replay: %d", code)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/history", nil)
	req.Host = "evil.example.com"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusMisdirectedRequest && resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a foreign Host header: %v %v, want it refused", resp.Status, err)
	}
}

func TestReplayRefusesBadFiles(t *testing.T) {
	_, lines := exportFile(t)
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"missing":        {filepath.Join(t.TempDir(), "nope.jsonl.gz"), "no such file"},
		"another schema": {writeGzip(t, strings.Replace(strings.Join(lines, ""), history.ExportSchema, "gcscope-history/2", 1)), `schema is "gcscope-history/2"`},
		"truncated":      {writeGzip(t, strings.Join(lines[:4], "")), "cut short"},
		"corrupt":        {writeGzip(t, strings.Join(lines[:2], "")+"{\"seq\":\x01\n"), "corrupt"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"replay", "--listen", "127.0.0.1:0", c.path}, func(string) string { return "" }, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(stdout.String(), "serving") {
			t.Errorf("%s: %v, want one line saying %q and nothing served", name, err, c.want)
		}
	}
	for args, want := range map[string]string{
		"":                        "takes one FILE",
		"a b":                     "takes one FILE",
		"--listen 0.0.0.0:8080 f": "not a loopback address",
		"--tls-cert-file=x f":     "go together",
		"f --listen 0.0.0.0:8080": "not a loopback address",
		"f --listen":              "flag needs an argument",
	} {
		_, err := parseReplayFlags(strings.Fields(args), io.Discard)
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), want) || !errorsAs(err, &ue) {
			t.Errorf("replay %s: %v, want a usage error saying %q", args, err, want)
		}
	}
	// Flags after FILE, as after it.
	for _, args := range []string{"--listen 127.0.0.1:9999 f.jsonl.gz", "f.jsonl.gz --listen 127.0.0.1:9999"} {
		c, err := parseReplayFlags(strings.Fields(args), io.Discard)
		if err != nil || c.file != "f.jsonl.gz" || c.listen != "127.0.0.1:9999" {
			t.Errorf("replay %s: %+v %v, want f.jsonl.gz on 127.0.0.1:9999", args, c, err)
		}
	}
}

func errorsAs(err error, target *usageError) bool {
	ue, ok := err.(usageError)
	*target = ue
	return ok
}
