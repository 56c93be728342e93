package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHistoryFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || !c.history || c.historyMaxSize != 1<<30 || c.historyMaxAge != 7*24*time.Hour {
		t.Fatalf("by default: recording %v, %+v, %v; want it on, 1Gi and 7 days", c.history, c, err)
	}
	if c, err = parseFlags([]string{"--history-max-size=512Mi", "--history-max-age=0"}, io.Discard); err != nil || c.historyMaxSize != 512<<20 || c.historyMaxAge != 0 {
		t.Fatalf("--history-max-size=512Mi --history-max-age=0: %+v, %v", c, err)
	}
	if c, err = parseFlags([]string{"--history=false"}, io.Discard); err != nil || c.history {
		t.Fatalf("--history=false: recording %v, %v; want it off", c.history, err)
	}
	// The history of a real cluster is kept in --data-dir too.
	if c, err = parseFlags([]string{"--kubeconfig=/x", "--data-dir=/tmp/d"}, io.Discard); err != nil || c.dataDir != "/tmp/d" {
		t.Fatalf("--kubeconfig --data-dir: %+v, %v", c, err)
	}
	for args, want := range map[string]string{
		"--history=false --history-dir=/tmp/h":      "--history-dir applies to the history, which --history=false turns off",
		"--history=false --history-max-age=1h":      "--history-max-age applies to the history",
		"--history-max-size=10Ki":                   `--history-max-size "10Ki": want a size of at least 1Mi`,
		"--history-max-size=lots":                   `--history-max-size "lots"`,
		"--history-max-age=-1h":                     "--history-max-age -1h0m0s: want a positive duration",
		"--kubeconfig=/x --write-kubeconfig=/tmp/k": "--write-kubeconfig applies to the embedded cluster only",
	} {
		_, err := parseFlags(strings.Fields(args), io.Discard)
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		} else if !errors.As(err, &ue) {
			t.Errorf("%s: %T is not a usage error (exit code 2)", args, err)
		}
	}
}

// TestContextHistoryDirs: with several contexts, each records in a directory named for it
// (pathSegment, then caseSafe). A name without an upper-case letter keeps the directory
// it had (an earlier recording stays where it is), escapes included; one with an
// upper-case letter gets a suffix, so that names differing only in case never share a
// directory on a file system that ignores case (macOS's), nor does a suffixed name
// share one with a name that looks like its suffix.
func TestContextHistoryDirs(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"", ""}, // one cluster: the history directory itself
		{"prod", "prod"},
		{"kind-dev_2", "kind-dev_2"},
		{"arn:aws:eks:eu-west-1:123456789012:cluster/prod", "arn:aws:eks:eu-west-1:123456789012:cluster%2Fprod"}, // %2F: an escape, not a letter
		{"gke_my-project_europe-west1_prod", "gke_my-project_europe-west1_prod"},
		{"a/b", "a%2Fb"},
		{"../up", "..%2Fup"},
		{"..", "context-.."}, // (fleet.Contexts refuses . and ..: a URL cannot name them)
		{"café", "caf%C3%A9"},
		{"Prod", "Prod,5f56359e"},
		{"PROD", "PROD,e3c83459"},
		{"A/b", "A%2Fb,cab263ec"},
	} {
		if got := caseSafe(pathSegment(c.name)); got != c.want {
			t.Errorf("the directory of context %q: %q, want %q", c.name, got, c.want)
		}
	}
	// Pairs that a file system ignoring case would otherwise see as one directory.
	for _, pair := range [][2]string{
		{"Prod", "prod"}, {"Prod", "PROD"}, {"Prod", "pROD"}, {"A/b", "a/b"}, {"CAFÉ", "café"},
		{"Prod", "prod,5f56359e"}, // a lower-case name spelled like another's suffix
		{strings.Repeat("Long", 40), strings.Repeat("long", 40)},
	} {
		a, b := caseSafe(pathSegment(pair[0])), caseSafe(pathSegment(pair[1]))
		if strings.EqualFold(a, b) {
			t.Errorf("contexts %q and %q record in %q and %q: one directory where case is ignored", pair[0], pair[1], a, b)
		}
	}
}

// historyPage is the part of GET /api/v1/history the test reads.
type historyPage struct {
	Events []struct {
		Pos     int64  `json:"pos"`
		Session int64  `json:"session"`
		Seq     uint64 `json:"seq"`
		Action  *struct {
			Verb   string `json:"verb"`
			Reason string `json:"reason"`
			Object struct {
				Name string `json:"name"`
			} `json:"object"`
		} `json:"action"`
	} `json:"events"`
	Recording struct {
		State   string `json:"state"`
		Session int64  `json:"session"`
	} `json:"recording"`
}

// TestHistorySurvivesRestart: by default (no --history flag) with --data-dir, the
// collector's decisions recorded by one run are answered the same by the next.
func TestHistorySurvivesRestart(t *testing.T) {
	// Its own gcscope process, data dir and port: it runs beside the other process tests,
	// after the browser tests, which stay serial (they time what the page draws).
	t.Parallel()
	root := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, root, "home"), "TMPDIR=" + mkdir(t, root, "tmp")}
	dataDir, kubeconfig := filepath.Join(root, "data"), filepath.Join(root, "kubeconfig")
	args := func(addr string) []string {
		return []string{"--listen", addr, "--data-dir", dataDir, "--write-kubeconfig", kubeconfig, "--demo=false"}
	}
	deletes := func(addr string) historyPage {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/api/v1/history?type=action&verb=delete&name=dependent&namespace=default")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p historyPage
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
			t.Fatalf("GET /api/v1/history: %s", resp.Status)
		}
		return p
	}

	addr := freeAddr(t)
	p := startProcess(t, root, env, binary, args(addr)...)
	p.waitReady(t, addr)
	if want := "recording the engine's history in " + filepath.Join(dataDir, "history") + " (kept across restarts"; !strings.Contains(p.stdout(), want) {
		t.Errorf("stdout does not say where the history is kept (%q):\n%s", want, p.stdout())
	}
	cs := clientFor(t, kubeconfig)
	ctx := context.Background()
	owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var before historyPage
	if err := testkit.Poll(ctx, time.Minute, func() bool { before = deletes(addr); return len(before.Events) > 0 }); err != nil {
		t.Fatalf("the collector's delete of the dependent was not recorded within a minute:\n%s", p.stderrText())
	}
	if a := before.Events[0].Action; a == nil || a.Object.Name != "dependent" || a.Reason == "" || before.Recording.Session != 1 {
		t.Fatalf("the recorded delete: %+v", before)
	}
	p.stop(t, syscall.SIGTERM, addr, apiserverAddr(t, kubeconfig))

	addr = freeAddr(t)
	p = startProcess(t, root, env, binary, args(addr)...)
	p.waitReady(t, addr)
	// Ready is the engine's; the recorder starts once the engine has synced, and says so
	// once its first checkpoint is written (a loaded machine: after /readyz answers).
	var after historyPage
	testkit.Poll(ctx, time.Minute, func() bool { after = deletes(addr); return after.Recording.State != "stopped" })
	if len(after.Events) != 1 || after.Events[0].Pos != before.Events[0].Pos || after.Events[0].Seq != before.Events[0].Seq || after.Events[0].Session != 1 {
		t.Fatalf("after a restart the history answers %+v, want the same delete as before: %+v", after.Events, before.Events)
	}
	if after.Recording.State != "recording" || after.Recording.Session != 2 {
		t.Fatalf("after a restart the recording is %+v, want session 2 recording", after.Recording)
	}
	p.stop(t, syscall.SIGTERM, addr, apiserverAddr(t, kubeconfig))
}
