package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/testkit"
)

// What TestUIHistory checks with: the recording's pieces, the page's traces, and a replay started in this process.

// liveMoment is what the page held live at one moment of a cascade: the stream's seq and
// the state of every object of the namespace, as the canvas draws it.
type liveMoment struct {
	Seq    uint64            `json:"seq"`
	States map[string]string `json:"states"`
}

// parseFloat is s as a number (NaN if it is not one).
func parseFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// exportHeader is the first line of an exported history.
func exportHeader(t *testing.T, data []byte) (h struct{ From, To time.Time }) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the export is not gzip: %v", err)
	}
	line, err := bufio.NewReader(zr).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &h) != nil {
		t.Fatalf("the export's header: %q, %v", line, err)
	}
	return h
}

// mustTime parses an RFC 3339 time (zero if it does not parse).
func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, _ := time.Parse(time.RFC3339Nano, s)
	return v
}

// sameMs: t is the moment iso (to the millisecond the page keeps).
func sameMs(t time.Time, iso string) bool {
	u, err := time.Parse(time.RFC3339Nano, iso)
	return err == nil && t.Sub(u).Abs() < time.Millisecond
}

// startReplay runs `gcscope replay --listen 127.0.0.1:0 FILE` in this process until the
// test ends, and returns its base URL.
func startReplay(t *testing.T, file string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedWriter
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"replay", "--listen", "127.0.0.1:0", file}, func(string) string { return "" }, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gcscope replay: %v", err)
		}
	})
	serving := regexp.MustCompile(`serving the replay \(read-only, no cluster, no engine\) on (http://[0-9.:]+)`)
	var base string
	if err := testkit.Poll(context.Background(), 20*time.Second, func() bool {
		if m := serving.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}); err != nil {
		t.Fatalf("gcscope replay %s: not serving within 20 s:\n%s\n%s", file, stdout.String(), stderr.String())
	}
	return base
}

// timelinePoint evaluates expr, [x, y] in the timeline canvas, and returns it in the page.
func timelinePoint(t *testing.T, d uiDriver, expr string) (float64, float64) {
	t.Helper()
	var p [2]float64
	d.eval(t, expr, &p)
	var r [2]float64
	d.eval(t, `(() => { const r = document.getElementById("timeline-canvas").getBoundingClientRect(); return [r.left, r.top]; })()`, &r)
	return r[0] + p[0], r[1] + p[1]
}

// assertRemovalOrder: objects the live page saw removed more than 100 ms apart are drawn
// removed in the same order when the recording is played.
func assertRemovalOrder(t *testing.T, live, played traceLog) {
	t.Helper()
	type rm struct {
		uid      string
		live, pl float64
	}
	var rs []rm
	for uid := range byUID(live.Engine) {
		l, ok := firstDrawnOf(live.Engine, uid, "removed")
		p, ok2 := firstDrawn(played, uid, "removed")
		if ok && ok2 {
			rs = append(rs, rm{uid, l, p})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].live < rs[j].live })
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			if rs[j].live-rs[i].live > 100 && rs[j].pl < rs[i].pl {
				t.Errorf("%s was removed %.0f ms before %s live, but drawn removed after it when played", rs[i].uid, rs[j].live-rs[i].live, rs[j].uid)
			}
		}
	}
}

func isDependent(leaf, mid string, leaves []*corev1.ConfigMap) bool {
	for _, l := range leaves {
		if string(l.UID) == leaf {
			return slices.ContainsFunc(l.OwnerReferences, func(r metav1.OwnerReference) bool { return string(r.UID) == mid })
		}
	}
	return false
}

func firstLeafRemoved(log traceLog, leaves []string) (float64, bool) {
	first, found := 0.0, false
	for _, l := range leaves {
		if at, ok := firstDrawn(log, l, "removed"); ok && (!found || at < first) {
			first, found = at, true
		}
	}
	return first, found
}

// cascadeSpan is the time from the owner's first state change after tracing began to its
// removal, as drawn.
func cascadeSpan(t *testing.T, log traceLog, owner string) float64 {
	t.Helper()
	start, ok := firstDrawnOf(log.Drawn, owner, "waiting", "foreground", "deleting")
	end, ok2 := firstDrawn(log, owner, "removed")
	if !ok || !ok2 {
		t.Fatalf("the owner's cascade was not drawn: %+v", byUID(log.Drawn)[owner])
	}
	return end - start
}

// longestGap is the longest time between two of frames (ms), 16.7 at 60 fps.
func longestGap(frames []float64) float64 {
	gap := 0.0
	for i := 1; i < len(frames); i++ {
		gap = max(gap, frames[i]-frames[i-1])
	}
	return gap
}

func fps(frames []float64) float64 {
	if len(frames) < 2 {
		return 0
	}
	return float64(len(frames)-1) / (frames[len(frames)-1] - frames[0]) * 1000
}

// recordedMoment is a moment the page held live, and when it began and ended in the recording.
type recordedMoment struct {
	m         liveMoment
	at, until time.Time
}

// longestMoment is, of the moments the page held live that match, the one that lasted
// longest in the recording (until the next change of namespace ns's graph); nil if none
// matches.
func longestMoment(t *testing.T, base, ns string, session int64, moments []liveMoment, match func(states map[string]string) bool) *recordedMoment {
	t.Helper()
	var best *recordedMoment
	for _, m := range moments {
		if !match(m.States) {
			continue
		}
		var at struct {
			Time string `json:"time"`
		}
		mustGetJSON(t, fmt.Sprintf("%s/api/v1/history/state?session=%d&seq=%d", base, session, m.Seq), &at)
		from, err := time.Parse(time.RFC3339Nano, at.Time)
		if err != nil {
			t.Fatal(err)
		}
		var next struct {
			Events []struct {
				Seq     uint64 `json:"seq"`
				Session int64  `json:"session"`
				Time    string `json:"time"`
			} `json:"events"`
		}
		mustGetJSON(t, base+"/api/v1/history?order=oldest&limit=50&namespace="+ns+"&type=nodeAdded&type=nodeUpdated&type=nodeRemoved&from="+url.QueryEscape(at.Time), &next)
		until := from.Add(time.Hour)
		for _, e := range next.Events {
			if e.Session == session && e.Seq > m.Seq {
				until, _ = time.Parse(time.RFC3339Nano, e.Time)
				break
			}
		}
		if best == nil || until.Sub(from) > best.until.Sub(best.at) {
			best = &recordedMoment{m: m, at: from, until: until}
		}
	}
	return best
}
