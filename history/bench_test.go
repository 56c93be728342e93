package history

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The recording's figures (docs/history.md): how fast it records, what it costs the
// engine, how fast it rebuilds any moment of a long recording, and its size. Each prints
// its ratio against a baseline measured in the same run (or against the target).
//
//	go test -run '^$' -bench . -benchtime 1x ./history/

// drainEngine serves a feed already holding every event, with the state before them: a
// Recorder started on it records as fast as it can.
type drainEngine struct {
	feed *gc.Feed
	snap gc.Snapshot
}

func (d *drainEngine) Feed() *gc.Feed        { return d.feed }
func (d *drainEngine) Snapshot() gc.Snapshot { return d.snap }

// synthEvents are n synthetic events of a graph of about size nodes, oldest first.
func synthEvents(tb testing.TB, n, size int) []gc.Event {
	tb.Helper()
	e := newSynth(n+1<<16, 42)
	e.churn(size, n)
	evs, err := e.feed.Since(0, n)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// BenchmarkRecordThroughput: a synthetic feed of 300,000 events recorded as fast as the
// Recorder goes (target: at least 50,000 events/s). Baseline: encoding the same events to
// JSON alone, the least any recorder does.
func BenchmarkRecordThroughput(b *testing.B) {
	const n = 300000
	evs := synthEvents(b, n, 2000)
	start := time.Now()
	for i := range evs {
		if _, err := json.Marshal(&evs[i]); err != nil {
			b.Fatal(err)
		}
	}
	encodeRate := float64(n) / time.Since(start).Seconds()

	var total time.Duration
	var size int64
	for range b.N {
		feed := gc.NewFeed(n)
		feed.Publish(evs...)
		s := openStore(b, Options{})
		start := time.Now()
		stop := record(b, s, &drainEngine{feed: feed, snap: gc.Snapshot{Mode: gc.ModeActive}}, RecorderOptions{})
		waitRecorded(b, s, feed.LastSeq())
		total += time.Since(start)
		stop()
		size, _ = s.used(context.Background())
		s.Close()
	}
	rate := float64(n*b.N) / total.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(rate/50000, "x-target")
	b.ReportMetric(rate/encodeRate, "x-json-only")
	b.ReportMetric(float64(size)/n*1e6/(1<<20), "MiB/M-events")
	b.Logf("recorded %d events at %.0f events/s (%.2f× the 50,000 target); JSON encoding alone: %.0f events/s (recording: %.2f× of it); %.1f MiB per million events",
		n, rate, rate/50000, encodeRate, rate/encodeRate, float64(size)/n*1e6/(1<<20))
}

// BenchmarkOverload: a synthetic engine publishing 200,000 events as fast as it can (far
// faster than any real engine: its events cost it no API call), with the recording on and
// off in turn (three pairs). The ratio of its times is what a recorder that cannot keep
// up costs a producer sharing its 2 cores; the recorder falls behind, records gaps, and
// starts again from a snapshot at most once a second. (A real engine's cascade, recorded
// and not: enginetest's BenchmarkCascadeRecording.)
func BenchmarkOverload(b *testing.B) {
	const n = 200000
	produce := func(recording bool) (time.Duration, float64) {
		e := newSynth(1<<16, 7)
		e.churn(2000, 0) // the graph first, not timed
		var s *Store
		stop := func() {}
		if recording {
			s = openStore(b, Options{})
			stop = record(b, s, e, RecorderOptions{})
		}
		from := e.feed.LastSeq()
		start := time.Now()
		e.churn(2000, n)
		took := time.Since(start)
		missed := 0.0
		if recording {
			waitRecorded(b, s, e.feed.LastSeq())
			stop()
			var recorded int64
			s.r.QueryRow(`SELECT COALESCE(SUM(count), 0) FROM blocks`).Scan(&recorded)
			missed = 1 - float64(recorded)/float64(e.feed.LastSeq()-from)
			s.Close()
		}
		return took, missed
	}
	var ratios []float64
	var missed float64
	for range b.N {
		for range 3 {
			off, _ := produce(false)
			on, m := produce(true)
			ratios = append(ratios, on.Seconds()/off.Seconds())
			missed = max(missed, m)
		}
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(median, "x-recording-off")
	b.ReportMetric(missed*100, "%-missed")
	b.Logf("the engine publishing %d events takes %.3f× as long with recording on as off (median of %d pairs: %.3f); at most %.2f%% of the events went unrecorded (gaps)",
		n, median, len(ratios), ratios, missed*100)
}

// BenchmarkSeek: a recording of 1,000,000 events of a 10,000-node graph, and the state
// rebuilt at 50 random moments of it (target: each within 1 s). Also its size.
func BenchmarkSeek(b *testing.B) {
	const n, size = 1000000, 10000
	e := newSynth(1<<16, 9)
	e.churn(size, 0)
	s := openStore(b, Options{})
	stop := record(b, s, e, RecorderOptions{})
	for s.Status().Events+int64(e.feed.LastSeq()-s.Status().Seq) < n {
		e.churn(size, 4000)
		testkit.EventuallyEvery(b, time.Millisecond, "the recorder within the ring (no gaps)", func() bool { return e.feed.LastSeq()-s.Status().Seq <= 40000 })
	}
	waitRecorded(b, s, e.feed.LastSeq())
	stop()
	st := s.Status()
	var cps int
	s.r.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&cps)
	gaps, _ := s.Gaps(context.Background(), time.Time{}, time.Time{}, 10)
	if len(gaps) > 0 {
		b.Fatalf("the fixture has gaps: %+v", gaps)
	}
	first, last := st.Oldest, st.Newest
	rng := rand.New(rand.NewPCG(1, 2))
	var worst, sum time.Duration
	seeks := 0
	b.ResetTimer()
	for range b.N {
		for range 50 {
			at := first.Add(time.Duration(rng.Int64N(int64(last.Sub(first)))))
			start := time.Now()
			state, err := s.StateAt(context.Background(), at)
			took := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if len(state.Nodes) < size/2 {
				b.Fatalf("the state at %v holds %d nodes", at, len(state.Nodes))
			}
			worst, sum, seeks = max(worst, took), sum+took, seeks+1
		}
	}
	b.StopTimer()
	mean := sum / time.Duration(seeks)
	b.ReportMetric(float64(worst.Milliseconds()), "ms-worst")
	b.ReportMetric(float64(mean.Milliseconds()), "ms-mean")
	b.ReportMetric(worst.Seconds()/1, "x-target")
	b.ReportMetric(float64(st.Bytes)/float64(st.Events)*1e6/(1<<20), "MiB/M-events")
	b.Logf("%d events (%d checkpoints, %s): %d seeks, mean %s, worst %s (%.2f× the 1 s target); %.1f MiB per million events",
		st.Events, cps, bytesText(st.Bytes), seeks, mean.Round(time.Millisecond), worst.Round(time.Millisecond), worst.Seconds(), float64(st.Bytes)/float64(st.Events)*1e6/(1<<20))
}

// BenchmarkTimeline: the timeline of a whole 1,000,000-event recording (2,000-node graph)
// in 120 and in 2,000 buckets, 20 times each (a page asks every few seconds; target: each
// within 250 ms). Baseline: the newest page of 100 events, what /api/v1/history answers.
func BenchmarkTimeline(b *testing.B) {
	const n, size = 1000000, 2000
	e := newSynth(1<<16, 10)
	e.churn(size, 0)
	s := openStore(b, Options{})
	stop := record(b, s, e, RecorderOptions{})
	for s.Status().Events+int64(e.feed.LastSeq()-s.Status().Seq) < n {
		e.churn(size, 4000)
		testkit.EventuallyEvery(b, time.Millisecond, "the recorder within the ring (no gaps)", func() bool { return e.feed.LastSeq()-s.Status().Seq <= 40000 })
	}
	waitRecorded(b, s, e.feed.LastSeq())
	stop()
	st := s.Status()
	ctx := context.Background()
	timeIt := func(f func() error) (mean, worst time.Duration) {
		for range 20 {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			mean, worst = mean+took/20, max(worst, took)
		}
		return mean, worst
	}
	b.ResetTimer()
	for range b.N {
		page, _ := timeIt(func() error { _, err := s.Query(ctx, Query{Newest: true}); return err })
		var cascades int
		figures := map[int][2]time.Duration{}
		for _, buckets := range []int{120, 2000} {
			mean, worst := timeIt(func() error {
				tl, err := s.Timeline(ctx, TimelineQuery{From: st.Oldest, To: st.Newest.Add(time.Nanosecond), Buckets: buckets})
				sum := 0
				for _, bk := range tl.Buckets {
					sum += bk.Events
				}
				if err == nil && int64(sum) != st.Events {
					b.Fatalf("the buckets hold %d events of %d", sum, st.Events)
				}
				cascades = len(tl.Cascades)
				return err
			})
			figures[buckets] = [2]time.Duration{mean, worst}
		}
		b.ReportMetric(float64(figures[120][0].Microseconds())/1000, "ms-mean-120")
		b.ReportMetric(float64(figures[2000][0].Microseconds())/1000, "ms-mean-2000")
		b.ReportMetric(figures[2000][1].Seconds()/0.25, "x-target")
		b.ReportMetric(figures[120][0].Seconds()/page.Seconds(), "x-history-page")
		b.Logf("%d events over %s, %d cascades listed (of the newest): 120 buckets mean %s worst %s; 2,000 buckets mean %s worst %s (%.2f× the 250 ms target); a page of /history: %s",
			st.Events, st.Newest.Sub(st.Oldest).Round(time.Millisecond), cascades, figures[120][0].Round(time.Microsecond), figures[120][1].Round(time.Microsecond),
			figures[2000][0].Round(time.Microsecond), figures[2000][1].Round(time.Microsecond), figures[2000][1].Seconds()/0.25, page.Round(time.Microsecond))
	}
}

// BenchmarkExportImport: a 300,000-event recording (2,000-node graph) exported whole and
// imported into a fresh store (what gcscope replay does first). Baseline: recording the
// same events (BenchmarkRecordThroughput's path), in the same run.
func BenchmarkExportImport(b *testing.B) {
	const n = 300000
	evs := synthEvents(b, n, 2000)
	feed := gc.NewFeed(n)
	s := openStore(b, Options{})
	stop := record(b, s, &drainEngine{feed: feed, snap: gc.Snapshot{Mode: gc.ModeActive}}, RecorderOptions{})
	start := time.Now() // published after the recording started: their times follow its first checkpoint
	feed.Publish(evs...)
	waitRecorded(b, s, feed.LastSeq())
	recordRate := float64(n) / time.Since(start).Seconds()
	stop()
	st := s.Status()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		var file countingWriter
		start := time.Now()
		end, err := s.Export(ctx, &file, ExportOptions{From: st.Oldest, To: st.Newest.Add(time.Nanosecond)})
		if err != nil {
			b.Fatal(err)
		}
		exportTook := time.Since(start)
		pr, pw := io.Pipe()
		go func() {
			_, err := s.Export(ctx, pw, ExportOptions{From: st.Oldest, To: st.Newest.Add(time.Nanosecond)})
			pw.CloseWithError(err)
		}()
		into := openStore(b, Options{})
		start = time.Now()
		sum, err := Import(ctx, into, pr)
		if err != nil {
			b.Fatal(err)
		}
		importTook := time.Since(start) // includes a second export feeding it through a pipe
		if sum.Events != end.Events {
			b.Fatalf("imported %d of %d events", sum.Events, end.Events)
		}
		b.ReportMetric(float64(end.Events)/exportTook.Seconds(), "export-events/s")
		b.ReportMetric(float64(sum.Events)/importTook.Seconds(), "import-events/s")
		b.ReportMetric(float64(file.n)/float64(end.Events)*1e6/(1<<20), "file-MiB/M-events")
		b.Logf("%d events: export %s (%.0f events/s, %.1f MiB, %.1f MiB per million), export piped into an import %s (%.0f events/s, %.2f× recording's %.0f events/s), %d cascades",
			end.Events, exportTook.Round(time.Millisecond), float64(end.Events)/exportTook.Seconds(), float64(file.n)/(1<<20), float64(file.n)/float64(end.Events)*1e6/(1<<20),
			importTook.Round(time.Millisecond), float64(sum.Events)/importTook.Seconds(), float64(sum.Events)/importTook.Seconds()/recordRate, recordRate, sum.Cascades)
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
