package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// Engine is what the Recorder needs of the garbage-collector engine (*gc.GarbageCollector).
type Engine interface {
	Feed() *gc.Feed
	Snapshot() gc.Snapshot
}

// starter is an Engine that says when its workers start: once its informers have listed
// the cluster (or the sync timed out), so that its graph holds what there is (gc's Started).
type starter interface {
	Started() <-chan struct{}
}

// RecorderOptions tune the Recorder; zero values take the defaults.
type RecorderOptions struct {
	// BlockEvents is the most events in one block (one write); default 1024.
	BlockEvents int
	// FlushInterval is the longest an event waits to be written; default 1 s.
	FlushInterval time.Duration
	// CheckpointEvents is how many events at least separate two checkpoints; default
	// 20,000. With a large graph the spacing grows to twice its node count, so that
	// checkpoints never outweigh the events between them.
	CheckpointEvents int
	// CheckpointInterval writes a checkpoint after this long if anything was recorded
	// since the last, so that age retention can drop old segments; default 1 h (or a
	// quarter of the store's MaxAge, if less).
	CheckpointInterval time.Duration
	// RetryInterval is how often a paused recording tries again; default 10 s.
	RetryInterval time.Duration
	// MaintenanceInterval is how often age retention runs; default 1 min.
	MaintenanceInterval time.Duration
	// Version is gcscope's version, stored with each session.
	Version string
	// CascadeQuiet is how long a cascade with nothing left in the graph waits for more of
	// it before it ends; default DefaultCascadeQuiet (2 s).
	CascadeQuiet time.Duration
	// BurstRate is the engine's publish rate, in events a second, above which the
	// recorder steps aside (see burst below); default DefaultBurstRate. Negative: it
	// never does, and the store follows the engine within FlushInterval even in a burst.
	BurstRate float64
}

func (o *RecorderOptions) defaults(maxAge time.Duration) {
	if o.BlockEvents <= 0 {
		o.BlockEvents = 1024
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.CheckpointEvents <= 0 {
		o.CheckpointEvents = 20000
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Hour
		if maxAge > 0 {
			o.CheckpointInterval = min(o.CheckpointInterval, maxAge/4)
		}
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 10 * time.Second
	}
	if o.MaintenanceInterval <= 0 {
		o.MaintenanceInterval = time.Minute
	}
	if o.CascadeQuiet <= 0 {
		o.CascadeQuiet = DefaultCascadeQuiet
	}
	if o.BurstRate == 0 {
		o.BurstRate = DefaultBurstRate
	}
}

// Recorder follows an engine's feed into a Store. The engine never waits for it: it reads
// the feed as a stream client does, and writes from its own goroutine.
type Recorder struct {
	s    *Store
	e    Engine
	feed *gc.Feed
	o    RecorderOptions
	w    *writer

	session, started int64

	// rep is the engine's state as of the last event written; nil when the recording must
	// start again from a fresh snapshot (at the start, after a gap, while paused).
	rep *gc.Replica
	// casc tags the events with their cascades (cascade.go).
	casc *cascades
	// last is the seq of the last event read; recordedSeq and recordedTime those of the
	// last event (or checkpoint) written.
	last         uint64
	recordedSeq  uint64
	recordedTime time.Time

	pending      []gc.Event
	pendingSince time.Time
	blk          block
	enc          *json.Encoder // into blk's body

	sinceCheckpoint int
	checkpointAt    time.Time
	forceCheckpoint bool

	// seeded: the session has started (its first checkpoint is written).
	seeded bool
	// gap, when set, is the stretch not recorded, to write with the next seed.
	gap *Gap
	// missed is why events are being missed (gapBehind or gapPaused), for the metrics.
	missed string

	nextRetry, nextMaintenance time.Time

	// The feed's publish rate, measured every rateWindow, for stepping aside in a burst.
	rateAt   time.Time
	rateSeq  uint64
	rate     float64 // events a second in the last window
	bursting bool
	busyAt   time.Time // the end of the last window at or above calmRate
}

// A burst: the engine publishing faster than BurstRate in a rateWindow, until it has
// published slower than calmRate for calmFor (a cascade's tail, its last deletions and
// the owner's, is slower than its middle, and pauses: catching up then would take the
// cores from it). The window is short, so that a cascade is seen within its first few
// hundred events: until then the recorder reads and writes them, on the cascade's cores.
// While the burst lasts, and while the recorder is less than half the feed's ring behind,
// the recorder does not read: a cascade's CPU goes to the cascade (the apiserver, etcd
// and the engine may share the cores), and the recording catches up from the ring once
// the burst is over. Past half the ring it records at full speed (about 100,000 events a
// second, several times what a cascade publishes), so that it never falls out of the ring
// for a burst.
//
// A foreground deletion of a dozen dependents publishes about 100 events in its first
// 20 ms, near the default rate: when the recorder steps aside for it, the store shows
// the cascade only once it has calmed, all but done.
const (
	DefaultBurstRate = 5000 // events a second

	rateWindow = 20 * time.Millisecond
	calmRate   = 500
	calmFor    = 250 * time.Millisecond
	burstPause = 50 * time.Millisecond
)

// reseedAfterBehind is how long a recorder that fell behind waits before it starts again.
const reseedAfterBehind = time.Second

// NewRecorder records e's feed into s once Run runs.
func NewRecorder(s *Store, e Engine, o RecorderOptions) *Recorder {
	o.defaults(s.opts.MaxAge)
	r := newRecorder(s, e.Feed(), o)
	r.e = e
	return r
}

// newRecorder is a Recorder without an engine (Import writes with one).
func newRecorder(s *Store, feed *gc.Feed, o RecorderOptions) *Recorder {
	r := &Recorder{s: s, feed: feed, o: o}
	r.casc = newCascades(o.CascadeQuiet, 1) // Run continues the store's ids
	r.enc = json.NewEncoder(&r.blk)
	r.enc.SetEscapeHTML(false)
	return r
}

// Run records until ctx ends, then writes what it holds and returns. Write failures do
// not end it: they pause the recording (see Status) and it tries again. It returns an
// error only when the database cannot be read at all.
func (r *Recorder) Run(ctx context.Context) error {
	// Writes are not cut short by ctx: a block in flight is written whole.
	dbctx := context.WithoutCancel(ctx)
	w, err := newWriter(dbctx, r.s)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer w.close()
	r.w = w
	last, err := w.lastSession(dbctx)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	r.session, r.started = last+1, r.now().UnixNano()
	next, err := w.nextCascade(dbctx)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	r.casc.nextID = next
	r.nextMaintenance = r.now().Add(r.o.MaintenanceInterval)
	if e, ok := r.e.(starter); ok {
		// The first checkpoint is the graph once the engine has listed the cluster: seeded
		// sooner, it would be empty, and a deletion under way would arrive object by object
		// in the lists' order, a cascade for each (adopt sees it whole in the snapshot).
		// No decision is missed: the workers start at that moment.
		r.s.setStatus(Status{State: StateStopped, Message: "waiting for the engine's first sync"})
		select {
		case <-e.Started():
		case <-ctx.Done():
			r.s.setStatus(Status{State: StateStopped, Message: "gcscope stopped"})
			return nil
		}
	}
	r.s.log.Info("history: recording", "session", r.session, "db", r.s.path)

	if r.reseed(ctx, dbctx) {
		r.feed.Follow(ctx, r.last, gc.Follower{ // (it returns only once ctx ends)
			Max:    r.o.BlockEvents,
			Resync: func(ctx context.Context) (uint64, error) { return r.resync(ctx, dbctx) },
			Events: func(ctx context.Context, evs []gc.Event) error { return r.read(ctx, dbctx, evs) },
			Idle:   func(context.Context) (time.Duration, error) { return r.idle(dbctx) },
		})
	}
	if r.rep != nil {
		r.drain(dbctx)
	}
	if r.rep != nil { // (a failed write while draining pauses the recording: nothing more to write)
		if r.casc.due(r.now().Add(r.o.CascadeQuiet)) {
			r.endCascades(dbctx, r.now().Add(r.o.CascadeQuiet)) // those with nothing left end now
		}
		r.endSession(dbctx)
	}
	r.s.setStatus(Status{State: StateStopped, Message: "gcscope stopped", Session: r.session, Seq: r.recordedSeq})
	return nil
}

func (r *Recorder) now() time.Time { return r.s.opts.Now() }

// reseed starts the recording again from a fresh snapshot once nextRetry has come (at
// once at the start; RetryInterval after a failed write; reseedAfterBehind after the
// recorder fell behind). It reports false when ctx ends first.
func (r *Recorder) reseed(ctx, dbctx context.Context) bool {
	for r.rep == nil {
		if wait := r.nextRetry.Sub(r.now()); wait > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		r.seed(dbctx)
	}
	return true
}

// resync is the Follower's Resync: the recorder fell behind the feed's ring (what it
// missed is a gap), or a failed write paused it; either way it starts again from a fresh
// snapshot, and returns its seq.
func (r *Recorder) resync(ctx, dbctx context.Context) (uint64, error) {
	if r.rep != nil {
		// More than the feed's ring behind: what was missed is a gap.
		r.flush(dbctx)
		if r.rep != nil {
			r.startGap(gapBehind, "the recorder fell behind the engine's feed (events left its ring before they were written)")
			// Not at once: under a sustained flood, a fresh snapshot per ring's worth of
			// events would cost the engine more than the recording is worth.
			r.nextRetry = r.now().Add(reseedAfterBehind)
		}
	}
	if !r.reseed(ctx, dbctx) {
		return 0, ctx.Err()
	}
	return r.last, nil
}

// read is the Follower's Events: in a burst it first steps aside (see burst below); then
// it adds evs to the pending block, writing each block once it is full, and does the
// upkeep due. It asks for a resync (gc.ErrResync) when a failed write paused the
// recording; a batch it steps aside from as gcscope stops is left to drain.
func (r *Recorder) read(ctx, dbctx context.Context, evs []gc.Event) error {
	for r.stepAside() { // evs wait: nothing is written until the burst calms (or half the ring is gone)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.asideFor()):
		}
	}
	for len(evs) > 0 && r.rep != nil {
		if len(r.pending) == 0 {
			r.pendingSince = r.now()
		}
		n := min(len(evs), r.o.BlockEvents-len(r.pending))
		r.pending = append(r.pending, evs[:n]...)
		r.last = evs[n-1].Seq
		evs = evs[n:]
		if len(r.pending) >= r.o.BlockEvents {
			r.flush(dbctx)
		}
	}
	r.upkeep(dbctx)
	if r.rep == nil {
		return gc.ErrResync
	}
	return nil
}

// idle is the Follower's Idle: the upkeep due, then how long to wait for events before
// the next (a pending block's flush, ending a quiet cascade, age retention).
func (r *Recorder) idle(dbctx context.Context) (time.Duration, error) {
	r.upkeep(dbctx)
	if r.rep == nil {
		return 0, gc.ErrResync
	}
	deadline := r.nextMaintenance
	if len(r.pending) > 0 {
		deadline = minTime(deadline, r.pendingSince.Add(r.o.FlushInterval))
	}
	if len(r.pending) == 0 { // (only then can it wait: the open cascades are not walked per read)
		if t, ok := r.casc.nextDue(); ok {
			deadline = minTime(deadline, t)
		}
	}
	return max(deadline.Sub(r.now()), time.Millisecond), nil
}

// upkeep writes a block that has waited long enough, ends the cascades that are over and
// runs age retention when it is due.
func (r *Recorder) upkeep(dbctx context.Context) {
	now := r.now()
	if len(r.pending) >= r.o.BlockEvents || (len(r.pending) > 0 && !now.Before(r.pendingSince.Add(r.o.FlushInterval))) {
		r.flush(dbctx)
	}
	if len(r.pending) == 0 && r.rep != nil && r.casc.due(now) {
		r.endCascades(dbctx, now)
	}
	if !now.Before(r.nextMaintenance) {
		r.nextMaintenance = now.Add(r.o.MaintenanceInterval)
		r.maintain(dbctx)
	}
	r.s.metrics.lag.Set(float64(r.feed.LastSeq() - r.recordedSeq))
}

// drain records what the engine published and the recorder has not read yet (at most the
// ring: a burst it stepped aside for, or the last second), as gcscope stops.
func (r *Recorder) drain(ctx context.Context) {
	for r.rep != nil {
		evs, err := r.feed.Since(r.last, r.o.BlockEvents-len(r.pending))
		if err != nil || len(evs) == 0 {
			r.flush(ctx)
			return
		}
		r.pending = append(r.pending, evs...)
		r.last = evs[len(evs)-1].Seq
		if len(r.pending) >= r.o.BlockEvents {
			r.flush(ctx)
		}
	}
}

// stepAside reports whether the engine is in a burst the recorder should let pass.
func (r *Recorder) stepAside() bool {
	now, seq := time.Now(), r.feed.LastSeq()
	if elapsed := now.Sub(r.rateAt); elapsed >= rateWindow {
		r.rate = float64(seq-r.rateSeq) / elapsed.Seconds()
		if r.rate >= calmRate {
			r.busyAt = now
		}
		r.bursting = r.o.BurstRate >= 0 && r.rate > r.o.BurstRate || r.bursting && now.Sub(r.busyAt) < calmFor
		r.rateAt, r.rateSeq = now, seq
	}
	return r.bursting && seq-r.last < uint64(r.feed.Size()/2)
}

// asideFor is how long to leave the feed unread: burstPause, or less when the engine at
// its last rate would take the recorder past half the ring sooner (a flood of a million
// events a second fills it in 30 ms).
func (r *Recorder) asideFor() time.Duration {
	left := float64(r.feed.Size()/2) - float64(r.feed.LastSeq()-r.last)
	if r.rate <= 0 {
		return burstPause
	}
	return min(burstPause, max(time.Millisecond, time.Duration(left/r.rate/2*float64(time.Second))))
}

// seed starts (or restarts) the recording from a fresh snapshot: a checkpoint, and the
// gap before it, if any.
func (r *Recorder) seed(ctx context.Context) {
	t0 := r.now()
	snap := r.e.Snapshot()
	at := t0
	if snap.Seq > 0 {
		if evs, err := r.feed.Since(snap.Seq-1, 1); err == nil && len(evs) == 1 {
			at = evs[0].Time // the snapshot is the state just after this event
		}
	}
	reason := "start"
	note := "gcscope stopped before it ended"
	if r.gap != nil {
		reason = "after a gap: " + r.gap.Reason
		note = "not recorded to its end: " + r.gap.Reason
	}
	write := func() error {
		// The deletions under way open their cascades again, written with the checkpoint.
		r.casc.reset()
		r.casc.adopt(&snap, at, r.w.nextPos, r.session, underWay)
		return r.writeSeed(ctx, &snap, at, reason, note)
	}
	err := write()
	if isFull(err) && r.atCap() {
		// Retention could not make room under the size bound: the old recording goes, so
		// that the new one can start (the last segment is what a full database gives up
		// last). A full disk keeps it: dropping it would not be the user's bound.
		if derr := r.dropAll(ctx); derr == nil {
			r.s.settleWAL(ctx)
			err = write()
		}
	}
	if err != nil {
		r.pause(err)
		return
	}
	if r.gap != nil {
		missed := snap.Seq - r.gap.AfterSeq
		r.s.metrics.missed.WithLabelValues(r.missed).Add(float64(missed))
		r.s.metrics.gaps.WithLabelValues(r.missed).Inc()
		r.s.log.Warn("history: recording again after a gap", "session", r.session, "missedEvents", missed, "reason", r.gap.Reason)
	}
	r.rep, r.seeded = gc.NewReplica(&snap), true
	r.last, r.recordedSeq, r.recordedTime = snap.Seq, snap.Seq, at
	r.pending, r.gap = r.pending[:0], nil
	r.sinceCheckpoint, r.checkpointAt, r.forceCheckpoint = 0, r.now(), false
	r.s.setStatus(Status{State: StateRecording, Session: r.session, Seq: r.recordedSeq})
	r.afterWrite(ctx)
}

func (r *Recorder) writeSeed(ctx context.Context, snap *gc.Snapshot, at time.Time, reason, note string) error {
	tx, err := r.s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := r.w.touchSession(ctx, tx, r.session, r.started, at.UnixNano(), snap.Mode, r.o.Version); err != nil {
		return err
	}
	if err := r.w.closeOpenCascades(ctx, tx, note, r.session); err != nil {
		return err
	}
	if err := r.w.writeCascades(ctx, tx, r.casc); err != nil {
		return err
	}
	if r.gap != nil {
		g := *r.gap
		g.Pos, g.ResumeSeq, g.End = r.w.nextPos, snap.Seq, at
		if err := r.w.writeGap(ctx, tx, g); err != nil {
			return err
		}
	}
	if _, err := r.w.writeCheckpoint(ctx, tx, r.session, r.w.nextPos, snap, at.UnixNano(), reason); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.s.metrics.checkpoints.Inc()
	r.s.noteWritten(0, at.UnixNano(), true)
	return nil
}

// flush writes the pending events as one block, with a checkpoint when one is due.
func (r *Recorder) flush(ctx context.Context) {
	if len(r.pending) == 0 || r.rep == nil {
		return
	}
	start := time.Now()
	if err := r.writeBlock(ctx); err != nil {
		r.w.resetCaches()
		r.pause(err)
		return
	}
	r.s.metrics.write.Observe(time.Since(start).Seconds())
	n := len(r.pending)
	r.s.metrics.recorded.Add(float64(n))
	r.recordedSeq, r.recordedTime = r.pending[n-1].Seq, r.pending[n-1].Time
	r.pending = r.pending[:0]
	r.afterWrite(ctx)
}

func (r *Recorder) writeBlock(ctx context.Context) error {
	tx, err := r.s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	b := &r.blk
	b.reset()
	b.pos, b.session = r.w.nextPos, r.session
	for i := range r.pending {
		e := &r.pending[i]
		k, ids, err := r.w.keyOf(ctx, tx, e, b.ids)
		if err != nil {
			return err
		}
		b.ids = ids
		k.cascade = r.casc.observe(e, b.pos+int64(i), r.session, r.rep)
		n := len(b.body)
		if err := r.enc.Encode(e); err != nil { // one line of JSON
			return err
		}
		b.added(k, len(b.body)-n)
		r.rep.Apply(e)
	}
	if err := r.w.writeBlock(ctx, tx, b); err != nil {
		return err
	}
	r.casc.closeQuiet(time.Unix(0, b.lastTime))
	if err := r.w.writeCascades(ctx, tx, r.casc); err != nil {
		return err
	}
	n := len(r.pending)
	r.sinceCheckpoint += n
	checkpoint := r.forceCheckpoint || r.sinceCheckpoint >= max(r.o.CheckpointEvents, 2*r.rep.Len()) ||
		r.now().Sub(r.checkpointAt) >= r.o.CheckpointInterval
	if checkpoint {
		snap := r.rep.Snapshot()
		if _, err := r.w.writeCheckpoint(ctx, tx, r.session, b.pos+int64(n), &snap, b.lastTime, "periodic"); err != nil {
			return err
		}
	}
	if err := r.w.touchSession(ctx, tx, r.session, r.started, b.lastTime, r.rep.Mode(), r.o.Version); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.w.nextPos += int64(n)
	r.s.noteWritten(int64(n), b.lastTime, false)
	if checkpoint {
		r.s.metrics.checkpoints.Inc()
		r.sinceCheckpoint, r.checkpointAt, r.forceCheckpoint = 0, r.now(), false
	}
	return nil
}

// afterWrite empties the write-ahead log when it is due, updates the size and, past the
// high-water mark of the database's share of the size bound, makes room.
func (r *Recorder) afterWrite(ctx context.Context) {
	r.s.settleWAL(ctx)
	r.s.noteSize()
	used, err := r.s.used(ctx)
	if err != nil {
		return
	}
	if capacity := r.s.dbMax; capacity > 0 && used > capacity*highWater/100 {
		r.pruneSize(ctx, used)
	}
	if st := r.s.status.Load(); st.State == StateRecording && st.Seq != r.recordedSeq {
		c := *st
		c.Seq = r.recordedSeq
		r.s.status.Store(&c)
	}
}

// maintain runs age retention.
func (r *Recorder) maintain(ctx context.Context) {
	if r.s.opts.MaxAge > 0 {
		if err := r.pruneAge(ctx); err != nil {
			r.s.log.Warn("history: age retention failed; retrying later", "err", err)
		}
	}
}

// noteWritten adds n events ending at t (unix ns) to the totals; checkpoint: a checkpoint
// was written at t.
func (s *Store) noteWritten(n int64, t int64, checkpoint bool) {
	s.held.Lock()
	s.held.events += n
	s.held.newest = max(s.held.newest, t)
	if checkpoint && s.held.oldest == 0 {
		s.held.oldest = t
	}
	s.held.Unlock()
}

// noteSize measures the disk the recording's files take, for Status and the metrics.
func (s *Store) noteSize() {
	n := s.onDisk()
	s.held.Lock()
	s.held.bytes = n
	s.held.Unlock()
	s.metrics.bytes.Set(float64(n))
}

// endSession writes that the session ran until now: it was recording, through a quiet
// stretch with no event, until gcscope stopped (its last event's time would say it ended
// then).
func (r *Recorder) endSession(ctx context.Context) {
	tx, err := r.s.w.BeginTx(ctx, nil)
	if err != nil {
		return
	}
	defer tx.Rollback()
	if r.w.touchSession(ctx, tx, r.session, r.started, r.now().UnixNano(), r.rep.Mode(), r.o.Version) == nil {
		tx.Commit()
	}
}

// endCascades writes the end of the cascades that have been quiet long enough, when no
// block is on its way to carry it.
func (r *Recorder) endCascades(ctx context.Context, now time.Time) {
	r.casc.closeQuiet(now)
	r.saveCascades(ctx)
}

// saveCascades writes the cascades that changed since the last block.
func (r *Recorder) saveCascades(ctx context.Context) {
	if len(r.casc.dirty) == 0 && len(r.casc.joined) == 0 {
		return
	}
	tx, err := r.s.w.BeginTx(ctx, nil)
	if err != nil {
		r.pause(err)
		return
	}
	defer tx.Rollback()
	if err := r.w.writeCascades(ctx, tx, r.casc); err != nil {
		r.pause(err)
		return
	}
	if err := tx.Commit(); err != nil {
		r.pause(err)
	}
}
