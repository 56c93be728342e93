package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// TestExportImportRoundTrip: a window of a recording (with a gap in it) exported and
// imported into a fresh store holds the same events, and rebuilds the same state at any
// moment of it, as the original.
func TestExportImportRoundTrip(t *testing.T) {
	e := newSynth(4096, 31)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	e.churn(200, 3000)
	waitRecorded(t, s, e.feed.LastSeq())
	var burst []gc.Event // more than the ring: a gap
	for range 6000 {
		burst = append(burst, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbKeep, Object: e.trees[0].owner, Reason: "burst"}})
	}
	e.publish(burst...)
	waitRecorded(t, s, e.feed.LastSeq()) // started again, after a second
	e.churn(200, 3000)
	waitRecorded(t, s, e.feed.LastSeq())
	ctx := context.Background()
	all := allPages(t, s, Query{Limit: MaxLimit})
	from, to := all[len(all)/5].Time, all[len(all)*9/10].Time
	if gaps, _ := s.Gaps(ctx, from, to, 10); len(gaps) != 1 {
		allGaps, _ := s.Gaps(ctx, time.Time{}, time.Time{}, 10)
		t.Fatalf("the window %s–%s holds %d gaps; the test wants one: %s (%d events)", from, to, len(gaps), jsonOf(t, allGaps), len(all))
	}

	var file bytes.Buffer
	end, err := s.Export(ctx, &file, ExportOptions{From: from, To: to, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	want := allPages(t, s, Query{From: from, To: to, Limit: MaxLimit})
	if end.Events != len(want) || end.Gaps != 1 || end.Checkpoints != 2 {
		t.Fatalf("exported %+v; the window holds %d events and a gap (two checkpoints)", end, len(want))
	}
	imported := openStore(t, Options{})
	sum, err := Import(ctx, imported, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Events != len(want) || sum.Gaps != 1 || sum.Header.Schema != ExportSchema || sum.Cascades == 0 {
		t.Fatalf("imported %+v", sum)
	}
	got := allPages(t, imported, Query{Limit: MaxLimit})
	if len(got) != len(want) {
		t.Fatalf("imported %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if g, w := jsonOf(t, got[i].Event), jsonOf(t, want[i].Event); g != w {
			t.Fatalf("event %d differs:\n got %s\nwant %s", i, g, w)
		}
	}
	gaps, _ := imported.Gaps(ctx, time.Time{}, time.Time{}, 10)
	if len(gaps) != 1 {
		t.Fatalf("imported gaps: %s", jsonOf(t, gaps))
	}
	for _, at := range []time.Time{want[len(want)/4].Time, want[len(want)/2].Time, want[len(want)-1].Time, gaps[0].End.Add(time.Nanosecond)} {
		a, err := s.StateAt(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		b, err := imported.StateAt(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, "the imported state at "+at.String(), b.Snapshot, a.Snapshot)
	}
}

func TestImportRefusesWhatItCannotRead(t *testing.T) {
	defer func(was int) { maxExportLine = was }(maxExportLine)
	maxExportLine = 64 << 10
	e := newSynth(1<<16, 32)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	e.churn(100, 1500)
	waitRecorded(t, s, e.feed.LastSeq())
	all := allPages(t, s, Query{Limit: MaxLimit})
	var file bytes.Buffer
	if _, err := s.Export(context.Background(), &file, ExportOptions{From: all[0].Time, To: all[len(all)-1].Time}); err != nil {
		t.Fatal(err)
	}
	plain := gunzip(t, file.Bytes())
	lines := strings.SplitAfter(plain, "\n")
	regzip := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"not gzip":           {[]byte(plain), "not gzip-compressed"},
		"cut in the gzip":    {file.Bytes()[:file.Len()/2], "cut short"},
		"cut at a line":      {regzip(strings.Join(lines[:len(lines)/2], "")), "cut short"},
		"without its end":    {regzip(strings.Join(lines[:len(lines)-2], "")), "cut short"},
		"another schema":     {regzip(strings.Replace(plain, ExportSchema, "gcscope-history/9", 1)), `schema is "gcscope-history/9"`},
		"not an export":      {regzip(`{"hello":"world"}` + "\n"), `schema is ""`},
		"a corrupt line":     {regzip(strings.Join(lines[:3], "") + "{\"seq\":12,\"ty\x00\n" + strings.Join(lines[3:], "")), "corrupt"},
		"counts that differ": {regzip(strings.Join(lines[:3], "") + strings.Join(lines[4:], "")), "end line counts"},
		"empty":              {nil, "the file is empty"},
		"an event twice":     {regzip(strings.Join(lines[:4], "") + lines[3] + strings.Join(lines[4:], "")), "does not follow"},
		"an event in 2300":   {regzip(strings.Join(lines[:3], "") + regexp.MustCompile(`"time":"[^"]*"`).ReplaceAllString(lines[3], `"time":"2300-01-01T00:00:00Z"`) + strings.Join(lines[4:], "")), "outside the times a recording can hold"},
		// A line with no end (a few bytes of gzip for gigabytes of it): refused at the bound.
		"a line too long": {regzip(lines[0] + `{"checkpoint":"` + strings.Repeat("a", 1<<20)), "longer than 0 MiB"},
		// Blank lines, each short, that the decoder would keep (512 MiB of them took a
		// replay to 1.66 GB): refused at the bound of a blank run, mid-file too.
		"blank lines":           {regzip(lines[0] + strings.Repeat("\n", 2*maxBlankRun) + strings.Join(lines[1:], "")), "blank space"},
		"blank lines in a line": {regzip(lines[0] + `{"seq":` + strings.Repeat(" \n", maxBlankRun) + strings.Join(lines[1:], "")), "blank space"},
		// Lines that each parse, a gzip bomb of them: refused once the file has grown more
		// than maxExpansion-fold, before it is all read.
		"a bomb of short lines": {regzip(lines[0] + strings.Repeat(`{"gap":{}}`+"\n", 4<<20) + strings.Join(lines[1:], "")), "expands more than 100-fold"},
	} {
		_, err := Import(context.Background(), openStore(t, Options{}), bytes.NewReader(c.data))
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", name, err, c.want)
		}
		// Refused as soon as the bound is passed, not at the end of the file.
		if m := regexp.MustCompile(`\((\d+) MiB from`).FindStringSubmatch(fmt.Sprint(err)); m != nil {
			if mib, _ := strconv.Atoi(m[1]); mib > 2*expansionSlack>>20 {
				t.Errorf("%s: refused after %d MiB, want by %d", name, mib, 2*expansionSlack>>20)
			}
		}
	}
}

func gunzip(t *testing.T, data []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportKeepsWhyCascadesWereCut: a replayed recording says of its cascades what the
// recording said: one cut by a restart inside the window ended as gcscope stopped (not
// "the export starts after it did", which a trial saw), and the deletion still under way
// opens again in the next session.
func TestImportKeepsWhyCascadesWereCut(t *testing.T) {
	e := newSynth(1<<16, 33)
	s := openStore(t, Options{Dir: t.TempDir()})
	o := quick()
	stop := record(t, s, e, o)
	tr := e.grow(2)
	owner := e.waitForDependents(tr.owner)
	waitRecorded(t, s, e.feed.LastSeq())
	stop()
	record(t, s, e, o)
	for _, d := range tr.deps {
		e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background", Reason: "its owner is deleting in the foreground"})
		e.remove(d, []types.UID{tr.owner.UID})
	}
	e.finishForeground(owner)
	waitRecorded(t, s, e.feed.LastSeq())
	ctx := context.Background()
	all := allPages(t, s, Query{Limit: MaxLimit})
	var file bytes.Buffer
	if _, err := s.Export(ctx, &file, ExportOptions{From: all[0].Time, To: all[len(all)-1].Time.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	imported := openStore(t, Options{})
	if _, err := Import(ctx, imported, bytes.NewReader(file.Bytes())); err != nil {
		t.Fatal(err)
	}
	cs, err := imported.Cascades(ctx, CascadeQuery{UID: string(tr.owner.UID)})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(cs, func(a, b Cascade) int { return int(a.ID - b.ID) })
	if len(cs) != 2 || cs[0].Note != "gcscope stopped before it ended" || cs[1].Note != underWay || cs[1].End == nil || cs[1].Deleted != 3 {
		t.Fatalf("the replayed cascades of the owner: %s; want the first cut by the stop, the second under way when the next session began, finished", jsonOf(t, cs))
	}
}
