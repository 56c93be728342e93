package history

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// fast are recorder options for tests: small blocks written at once, checkpoints often.
var fast = RecorderOptions{BlockEvents: 256, FlushInterval: 5 * time.Millisecond, CheckpointEvents: 2000, RetryInterval: 20 * time.Millisecond}

func openStore(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// record runs a Recorder of e into s until the returned stop is called (or the test ends).
func record(t testing.TB, s *Store, e Engine, o RecorderOptions) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewRecorder(s, e, o).Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("recorder: %v", err)
		}
	}
	t.Cleanup(stop)
	// Started: seeded from a snapshot (recording), or paused.
	testkit.EventuallyWithin(t, 30*time.Second, "the recorder starts", func() bool { return s.Status().State != StateStopped })
	return stop
}

// waitRecorded waits until s has recorded every event of the feed up to seq.
func waitRecorded(t testing.TB, s *Store, seq uint64) {
	t.Helper()
	if testkit.Poll(context.Background(), 30*time.Second, func() bool { st := s.Status(); return st.State == StateRecording && st.Seq >= seq }) != nil {
		t.Fatalf("not recorded up to %d within 30 s: %+v", seq, s.Status())
	}
}

func waitState(t testing.TB, s *Store, state string) Status {
	t.Helper()
	var st Status
	if testkit.Poll(context.Background(), 30*time.Second, func() bool { st = s.Status(); return st.State == state }) != nil {
		t.Fatalf("never %s within 30 s: %+v", state, st)
	}
	return st
}

func allPages(t testing.TB, s *Store, q Query) []Record {
	t.Helper()
	var out []Record
	for range 100000 {
		p, err := s.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Events...)
		if p.Next == 0 {
			return out
		}
		q.Cursor = p.Next
	}
	t.Fatal("paging does not end")
	return nil
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameState compares a state rebuilt from the recording with a snapshot taken live, in
// their wire form (times compare by value there).
func sameState(t testing.TB, what string, got gc.Snapshot, want gc.Snapshot) {
	t.Helper()
	g, w := jsonOf(t, got), jsonOf(t, want)
	if g == w {
		return
	}
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			lo := max(0, i-300)
			t.Fatalf("%s: rebuilt state differs from the live snapshot at byte %d:\n got  …%s…\n want …%s…", what, i, g[lo:min(len(g), i+300)], w[lo:min(len(w), i+300)])
		}
	}
	t.Fatalf("%s: rebuilt state differs in length: %d bytes, want %d", what, len(g), len(w))
}

func TestRecordRestartQueryReturnsSameDecisions(t *testing.T) {
	dir := t.TempDir()
	e := newSynth(1<<16, 1)
	s := openStore(t, Options{Dir: dir})
	stop := record(t, s, e, fast)
	for range 3 {
		e.grow(30)
	}
	for e.cascade() {
	}
	waitRecorded(t, s, e.feed.LastSeq())
	deletes := Query{Verbs: []string{"delete"}, Types: []string{"action"}}
	before := allPages(t, s, deletes)
	if len(before) < 90 {
		t.Fatalf("recorded %d delete decisions, want at least the 90 made", len(before))
	}
	for _, r := range before {
		if r.Action == nil || r.Action.Verb != gc.VerbDelete || r.Session != 1 || r.Object == nil || r.Object.UID != r.Action.Object.UID {
			t.Fatalf("a delete decision came back as %s", jsonOf(t, r))
		}
	}
	stop()
	if st := s.Status(); st.State != StateStopped {
		t.Fatalf("after the recorder stopped, the status is %+v", st)
	}
	s.Close()

	// A new gcscope on the same directory: a new engine, whose sequence numbers start again.
	s2 := openStore(t, Options{Dir: dir})
	after := allPages(t, s2, deletes)
	if got, want := jsonOf(t, after), jsonOf(t, before); got != want {
		t.Fatalf("after reopening, the delete decisions differ:\n got %s\nwant %s", got, want)
	}
	e2 := newSynth(1<<16, 2)
	record(t, s2, e2, fast)
	e2.grow(4)
	e2.cascade()
	waitRecorded(t, s2, e2.feed.LastSeq())
	if st := s2.Status(); st.Session != 2 {
		t.Fatalf("the second run records as session %d, want 2", st.Session)
	}
	all := allPages(t, s2, Query{Verbs: []string{"delete"}, Types: []string{"action"}})
	if len(all) != len(before)+4 {
		t.Fatalf("both sessions hold %d delete decisions, want %d", len(all), len(before)+4)
	}
	for i, r := range all {
		if i > 0 && r.Pos <= all[i-1].Pos {
			t.Fatalf("positions do not grow across sessions: %d after %d", r.Pos, all[i-1].Pos)
		}
	}
	if last := all[len(all)-1]; last.Session != 2 || last.Seq > e2.feed.LastSeq() {
		t.Fatalf("the last delete is %s, want one of session 2", jsonOf(t, last))
	}
	// Session 1's states are still there, by seq.
	st, err := s2.StateAtSeq(context.Background(), 1, before[0].Seq)
	if err != nil || st.Session != 1 || st.Seq != before[0].Seq {
		t.Fatalf("state of session 1 at %d: %+v, %v", before[0].Seq, st.Session, err)
	}
}

func TestStateAtEqualsLiveSnapshots(t *testing.T) {
	e := newSynth(1<<16, 3)
	s := openStore(t, Options{})
	o := fast
	o.CheckpointEvents = 300
	record(t, s, e, o)
	type moment struct {
		snap gc.Snapshot
		at   time.Time
	}
	var moments []moment
	e.grow(10)
	e.grow(12)
	for i := range 12 {
		if i%2 == 0 {
			e.grow(20 + i)
		} else {
			e.cascade()
		}
		snap := e.Snapshot()
		evs, err := e.feed.Since(snap.Seq-1, 1)
		if err != nil {
			t.Fatal(err)
		}
		moments = append(moments, moment{snap, evs[0].Time})
	}
	waitRecorded(t, s, e.feed.LastSeq())
	var cps int
	s.r.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&cps)
	if cps < 3 {
		t.Fatalf("%d checkpoints: the test wants several, so that states are rebuilt across them", cps)
	}
	for i, m := range moments {
		st, err := s.StateAtSeq(context.Background(), 1, m.snap.Seq)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, "by seq", st.Snapshot, m.snap)
		st, err = s.StateAt(context.Background(), m.at)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, "by time", st.Snapshot, m.snap)
		if i > 0 && len(m.snap.Nodes) == len(moments[i-1].snap.Nodes) {
			t.Fatalf("moments %d and %d hold as many nodes: the test wants the graph to change between them", i-1, i)
		}
	}
	if _, err := s.StateAt(context.Background(), moments[0].at.Add(-time.Hour)); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("a moment before the recording: %v, want ErrNotRecorded", err)
	}
	if _, err := s.StateAtSeq(context.Background(), 1, e.feed.LastSeq()+10); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("a seq after the recording: %v, want ErrNotRecorded", err)
	}
}

func TestFallingBehindRecordsAGapAndStartsAgain(t *testing.T) {
	e := newSynth(128, 4) // a small ring: falling behind takes one large publish
	s := openStore(t, Options{})
	record(t, s, e, fast)
	e.grow(3)
	waitRecorded(t, s, e.feed.LastSeq())
	before := e.Snapshot()

	// 1,000 events in one step: the recorder cannot read between them, and the ring
	// keeps 128.
	var burst []gc.Event
	for i := range 1000 {
		obj := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "burst", Name: fmt.Sprintf("cm-%d", i), UID: types.UID(fmt.Sprintf("burst-%d", i))}
		burst = append(burst, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbKeep, Object: obj, Reason: "burst"}})
	}
	e.publish(burst...)
	e.grow(2)
	after := e.Snapshot()
	waitRecorded(t, s, e.feed.LastSeq())

	gaps, err := s.Gaps(context.Background(), time.Time{}, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || gaps[0].AfterSeq != before.Seq || gaps[0].ResumeSeq <= before.Seq+1000-128 || !strings.Contains(gaps[0].Reason, "fell behind") {
		t.Fatalf("gaps %s, want one after %d that says the recorder fell behind", jsonOf(t, gaps), before.Seq)
	}
	if got := testutil.ToFloat64(s.metrics.missed.WithLabelValues("behind")); got < 1000-128 {
		t.Fatalf("gcscope_history_events_missed_total{reason=behind} = %v, want at least %d", got, 1000-128)
	}
	if _, err := s.StateAtSeq(context.Background(), 1, before.Seq+500); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("a seq in the gap: %v, want ErrNotRecorded", err)
	}
	st, err := s.StateAtSeq(context.Background(), 1, after.Seq)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after the gap", st.Snapshot, after)
	st, err = s.StateAtSeq(context.Background(), 1, before.Seq)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "before the gap", st.Snapshot, before)
}

func TestSizeCapPausesRecordingNotTheEngine(t *testing.T) {
	e := newSynth(1<<16, 5)
	e.churn(300, 0)
	s := openStore(t, Options{MaxSize: 256 << 10})
	o := fast
	o.RetryInterval = time.Hour // stay paused: the test looks at the paused state
	o.CheckpointEvents = 1 << 30
	record(t, s, e, o)
	waitRecorded(t, s, e.feed.LastSeq())

	// The engine goes on publishing; the recording fills the cap and pauses.
	deadline := time.Now().Add(60 * time.Second)
	for s.Status().State != StatePaused {
		if time.Now().After(deadline) {
			t.Fatalf("never paused: %+v", s.Status())
		}
		start := time.Now()
		e.churn(300, 2000)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("publishing 2,000 events took %s: the engine waited for the recording", took)
		}
	}
	st := s.Status()
	if !strings.Contains(st.Message, "size cap") || !strings.Contains(st.Message, "--history-max-size") || !strings.Contains(st.Message, "engine is not affected") {
		t.Fatalf("paused with %q, want the size cap named, what to do, and that the engine runs on", st.Message)
	}
	if got := testutil.ToFloat64(s.metrics.paused); got != 1 {
		t.Fatalf("gcscope_history_recording_paused = %v, want 1", got)
	}
	if testutil.ToFloat64(s.metrics.writeErrors) < 1 {
		t.Fatal("gcscope_history_write_errors_total did not count the failed write")
	}
	// Paused: the feed is not read, and publishing never waits.
	seq := e.feed.LastSeq()
	start := time.Now()
	e.churn(300, 20000)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("publishing 20,000 events while paused took %s", took)
	}
	if got := s.Status(); got.State != StatePaused || got.Seq > seq {
		t.Fatalf("while paused the recorder went on: %+v (the feed was at %d)", got, seq)
	}
	// What was recorded is still there.
	if p, err := s.Query(context.Background(), Query{Limit: 10}); err != nil || len(p.Events) != 10 {
		t.Fatalf("querying a paused recording: %d events, %v", len(p.Events), err)
	}
	if used, _ := s.used(context.Background()); used > 256<<10 {
		t.Fatalf("the database holds %d bytes, over its cap of %d", used, 256<<10)
	}
}

func TestPausedRecordingResumesWithAGap(t *testing.T) {
	e := newSynth(1<<16, 6)
	e.churn(300, 0)
	s := openStore(t, Options{MaxSize: 256 << 10})
	o := fast
	o.CheckpointEvents = 1 << 30
	record(t, s, e, o)
	waitRecorded(t, s, e.feed.LastSeq())
	deadline := time.Now().Add(60 * time.Second)
	paused := false
	for {
		e.churn(300, 500)
		st := s.Status()
		paused = paused || st.State == StatePaused
		if paused && st.State == StateRecording {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("did not pause and resume within 60 s: %+v", st)
		}
	}
	gaps, err := s.Gaps(context.Background(), time.Time{}, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) == 0 || !strings.Contains(gaps[len(gaps)-1].Reason, "recording paused: the history database is at its size cap") {
		t.Fatalf("gaps %s, want the last one to say the recording was paused at the size cap", jsonOf(t, gaps))
	}
	if testutil.ToFloat64(s.metrics.paused) != 0 {
		t.Fatal("gcscope_history_recording_paused stayed 1 after the recording resumed")
	}
	waitRecorded(t, s, e.feed.LastSeq())
	snap := e.Snapshot()
	st, err := s.StateAtSeq(context.Background(), s.Status().Session, snap.Seq)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after resuming", st.Snapshot, snap)
}

func TestCapTooSmallForOneCheckpointStaysPaused(t *testing.T) {
	e := newSynth(1<<16, 7)
	e.churn(3000, 0)
	s := openStore(t, Options{MaxSize: 96 << 10})
	record(t, s, e, fast)
	st := waitState(t, s, StatePaused)
	if !strings.Contains(st.Message, "size cap") {
		t.Fatalf("paused with %q, want the size cap named", st.Message)
	}
	testkit.Consistently(t, "paused with nothing recorded, through several retries, with a cap smaller than one checkpoint", 100*time.Millisecond, func() bool {
		st := s.Status()
		return st.State == StatePaused && st.Events == 0
	})
}

func TestAgeRetentionDropsOldSegments(t *testing.T) {
	var clock struct{ now time.Time }
	clock.now = time.Now()
	now := func() time.Time { return clock.now }
	e := newSynth(1<<16, 8)
	s := openStore(t, Options{MaxAge: time.Hour, Now: now})
	o := fast
	o.MaintenanceInterval = time.Hour // maintain is called by hand below
	r := NewRecorder(s, e, o)
	ctx := context.Background()
	w, err := newWriter(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	r.w, r.session = w, 1
	r.seed(ctx)
	var firstSeq uint64
	for i := range 6 {
		e.churn(200, 3000)
		evs, _ := e.feed.Since(r.last, 0)
		for j := range evs {
			evs[j].Time = clock.now.Add(time.Duration(j)) // the feed's own clock is real
		}
		for len(evs) > 0 {
			n := min(len(evs), o.BlockEvents)
			r.pending = append(r.pending[:0], evs[:n]...)
			r.last = evs[n-1].Seq
			r.flush(ctx)
			evs = evs[n:]
		}
		if i == 0 {
			firstSeq = r.recordedSeq
		}
		clock.now = clock.now.Add(30 * time.Minute) // three segments an hour and a half apart
	}
	before := s.Status()
	r.maintain(ctx)
	after := s.Status()
	if after.Events >= before.Events || !after.Oldest.After(before.Oldest) {
		t.Fatalf("age retention kept everything: before %+v, after %+v", before, after)
	}
	if _, err := s.StateAtSeq(ctx, 1, firstSeq); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("a dropped moment: %v, want ErrNotRecorded", err)
	}
	var oldest int64
	s.r.QueryRow(`SELECT MIN(first_time) FROM blocks`).Scan(&oldest)
	if cutoff := clock.now.Add(-time.Hour); oldest < after.Oldest.UnixNano() {
		t.Fatalf("events older than the oldest checkpoint remain (%v, cutoff %v)", time.Unix(0, oldest), cutoff)
	}
	var orphans int
	s.r.QueryRow(`SELECT COUNT(*) FROM objects WHERE NOT EXISTS (SELECT 1 FROM block_objects WHERE object = objects.id)`).Scan(&orphans)
	if orphans != 0 {
		t.Fatalf("%d objects nothing refers to were kept", orphans)
	}
}

// faultyConn is a SQLite connection whose transactions fail while fail is set: a failing
// disk, as the Recorder sees one.
type faultyConn struct {
	fullConn
	fail *atomic.Bool
}

type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
}

func (c faultyConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	if c.fail.Load() {
		return nil, errors.New("disk I/O error (injected)")
	}
	tx, err := c.fullConn.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return faultyTx{tx}, nil
}

// faultyTx fails its commit while commitsFail: a disk that fills up under a write.
type faultyTx struct{ driver.Tx }

func (t faultyTx) Commit() error {
	if commitsFail.Load() {
		t.Tx.Rollback()
		return errors.New("database or disk is full (injected)")
	}
	return t.Tx.Commit()
}

type faultyDriver struct {
	driver.Driver
	fail *atomic.Bool
}

func (d faultyDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return faultyConn{c.(fullConn), d.fail}, nil
}

var (
	diskFails, commitsFail atomic.Bool
	faultyOnce             sync.Once
)

// openFaultyStore opens a store whose disk fails while diskFails (every transaction) or
// commitsFail (their commits) is set.
func openFaultyStore(t *testing.T) *Store {
	faultyOnce.Do(func() {
		db, _ := sql.Open("sqlite", "")
		sql.Register("sqlite-faulty", faultyDriver{db.Driver(), &diskFails})
		db.Close()
	})
	return openStore(t, Options{Driver: "sqlite-faulty"})
}

func TestFailingDiskPausesRecordingAndResumes(t *testing.T) {
	e := newSynth(1<<16, 12)
	s := openFaultyStore(t)
	record(t, s, e, fast)
	e.grow(10)
	waitRecorded(t, s, e.feed.LastSeq())

	diskFails.Store(true)
	defer diskFails.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for s.Status().State != StatePaused {
		if time.Now().After(deadline) {
			t.Fatalf("never paused: %+v", s.Status())
		}
		e.grow(2)
	}
	st := s.Status()
	if !strings.Contains(st.Message, "writing the history database failed") || !strings.Contains(st.Message, "injected") {
		t.Fatalf("paused with %q, want the write error", st.Message)
	}
	if testutil.ToFloat64(s.metrics.paused) != 1 {
		t.Fatal("gcscope_history_recording_paused is not 1")
	}
	start := time.Now()
	e.churn(200, 5000) // the engine goes on
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("publishing while the disk fails took %s", took)
	}

	diskFails.Store(false)
	waitState(t, s, StateRecording)
	e.grow(3)
	waitRecorded(t, s, e.feed.LastSeq())
	gaps, err := s.Gaps(context.Background(), time.Time{}, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || !strings.Contains(gaps[0].Reason, "recording paused: writing the history database failed") {
		t.Fatalf("gaps %s, want one saying the writes failed", jsonOf(t, gaps))
	}
	snap := e.Snapshot()
	got, err := s.StateAtSeq(context.Background(), 1, snap.Seq)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after the disk came back", got.Snapshot, snap)
}

// TestAFailingDiskAsGcscopeStops: the events not yet written as gcscope stops meet a
// full disk (a transaction begins, its commit fails); the recorder returns (writing the
// session's end dereferenced the recording the pause had dropped, and panicked).
func TestAFailingDiskAsGcscopeStops(t *testing.T) {
	e := newSynth(1<<16, 34)
	s := openFaultyStore(t)
	slow := fast
	slow.FlushInterval, slow.BlockEvents = time.Hour, 1<<20 // what is read waits for the stop
	stop := record(t, s, e, slow)
	e.grow(10)
	commitsFail.Store(true)
	defer commitsFail.Store(false)
	stop()
	if st := s.Status(); st.State == StateRecording {
		t.Fatalf("after a stop whose last writes failed: %+v", st)
	}
}

// TestRecorderStepsAsideInABurst: from when the engine publishes faster than BurstRate
// until it publishes slower than calmRate (through a slower tail), while the recorder is
// less than half the ring behind, it reads nothing (the cascade keeps the cores); once the
// burst is over it records all of it, with no gap.
func TestRecorderStepsAsideInABurst(t *testing.T) {
	// Timing is the logic here: the recorder, the feed and the test share synctest's clock,
	// so the burst's pace is exact however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		e := newSynth(1<<16, 5)
		s := openStore(t, Options{})
		record(t, s, e, fast)
		e.grow(3)
		waitRecorded(t, s, e.feed.LastSeq())

		// 12,000 events over about 0.6 s: 20,000 a second, in steps of 200; then a tail, as a
		// cascade's, of 800 over about 0.4 s: 2,000 a second, slower than a burst begins at.
		var known, readDuring uint64
		for step := range 80 {
			n, pause := 200, 10*time.Millisecond
			if step >= 60 {
				n, pause = 40, 20*time.Millisecond
			}
			var evs []gc.Event
			for i := range n {
				obj := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "burst", Name: fmt.Sprintf("cm-%d-%d", step, i), UID: types.UID(fmt.Sprintf("burst-%d-%d", step, i))}
				evs = append(evs, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbKeep, Object: obj, Reason: "burst"}})
			}
			e.publish(evs...)
			time.Sleep(pause) // the burst's pace, on the bubble's clock (the recorder's windows are on it too)
			switch {          // from the 20th step (200 ms in), the burst is known
			case step == 20:
				known = s.Status().Seq
			case step > 20:
				readDuring = max(readDuring, s.Status().Seq-known)
			}
		}
		// A block being written as the burst became known may still land.
		if readDuring > 1024 {
			t.Errorf("the recorder recorded %d events during the burst and its tail; want it to step aside until the burst calms", readDuring)
		}
		waitRecorded(t, s, e.feed.LastSeq())
		if gaps, _ := s.Gaps(context.Background(), time.Time{}, time.Time{}, 10); len(gaps) != 0 {
			t.Fatalf("gaps after a burst within the ring: %s", jsonOf(t, gaps))
		}
		if got := len(allPages(t, s, Query{Namespaces: []string{"burst"}})); got != 12800 {
			t.Fatalf("%d events of the burst recorded, want 12800", got)
		}
	})
}

// TestStateAtAFutureMomentSaysSo: a moment yet to come answers the newest recorded state,
// and says so.
func TestStateAtAFutureMomentSaysSo(t *testing.T) {
	e := newSynth(1<<16, 7)
	s := openStore(t, Options{})
	record(t, s, e, fast)
	e.grow(2)
	waitRecorded(t, s, e.feed.LastSeq())
	st, err := s.StateAt(context.Background(), time.Now().Add(time.Hour))
	if err != nil || !strings.Contains(st.Note, "has not come yet") {
		t.Fatalf("the state an hour from now: note %q, %v; want it to say the moment has not come yet", st.Note, err)
	}
	sameState(t, "an hour from now", st.Snapshot, e.Snapshot())
	if st, err := s.StateAt(context.Background(), time.Now()); err != nil || st.Note != "" {
		t.Fatalf("the state now: note %q, %v; want none", st.Note, err)
	}
}

// TestASessionRunsUntilGcscopeStops: a quiet stretch before gcscope stopped was recorded
// (nothing happened), not "not recording" (a trial saw the note from the session's last
// event on); after the stop, until the next session, it was not recording.
func TestASessionRunsUntilGcscopeStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSynth(1<<16, 8)
		s := openStore(t, Options{Dir: t.TempDir()})
		stop := record(t, s, e, fast)
		e.grow(2)
		waitRecorded(t, s, e.feed.LastSeq())
		// Moments well inside a quiet stretch and a stop, on the bubble's clock.
		time.Sleep(300 * time.Millisecond)
		quiet := time.Now()
		time.Sleep(300 * time.Millisecond)
		stop()
		time.Sleep(300 * time.Millisecond)
		down := time.Now()
		time.Sleep(300 * time.Millisecond)
		e.grow(1) // a restarted engine's first events (the lists) come before the new session's checkpoint
		record(t, s, e, fast)
		ctx := context.Background()
		if st, err := s.StateAt(ctx, quiet); err != nil || st.Note != "" {
			t.Fatalf("a quiet moment while recording: note %q, %v; want none", st.Note, err)
		}
		if st, err := s.StateAt(ctx, down); err != nil || !strings.Contains(st.Note, "was not recording") {
			t.Fatalf("a moment gcscope was stopped: note %q, %v; want it to say gcscope was not recording", st.Note, err)
		}
	})
}

// TestGapCountersStartAtZero: each reason of the missed and gaps counters has its series
// before any gap, so that the first gap is seen as an increase.
func TestGapCountersStartAtZero(t *testing.T) {
	m := newMetrics()
	for _, name := range []string{"gcscope_history_events_missed_total", "gcscope_history_gaps_total"} {
		if n, err := testutil.GatherAndCount(m.registry, name); err != nil || n != len(gapReasons) {
			t.Errorf("%s: %d series (%v) before any gap, want one per reason %v", name, n, err, gapReasons)
		}
	}
}
