package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// ErrNotRecorded means the moment asked for is not in the recording: before its oldest
// checkpoint, or an event that was not recorded (a gap).
var ErrNotRecorded = errors.New("history: that moment is not in the recording")

// State is the engine's state at a recorded moment, as gc.Snapshot gives it live.
type State struct {
	gc.Snapshot
	Session int64 `json:"session"`
	// At is the moment asked for (zero when asked by seq); Time is that of the last event
	// the state includes (or of its checkpoint).
	At   time.Time `json:"at,omitzero"`
	Time time.Time `json:"time"`
	// Replayed is how many events were applied to the checkpoint to get here.
	Replayed int `json:"replayed"`
	// Note says what the state is when the moment itself was not recorded: a gap, or
	// after the session's last event (gcscope was stopped).
	Note string `json:"note,omitempty"`
}

// StateAt rebuilds the state at t: the checkpoint before it and the events up to t.
func (s *Store) StateAt(ctx context.Context, t time.Time) (State, error) {
	c, err := s.checkpointAt(ctx, `time <= ?`, t.UnixNano())
	if err != nil {
		return State{}, err
	}
	st, err := s.replay(ctx, c, func(k *key) bool { return k.time <= t.UnixNano() })
	if err != nil {
		return st, err
	}
	st.At = t.UTC()
	if st.Note, err = s.noteAt(ctx, c.session, t, st.Time); err != nil {
		return st, err
	}
	return st, nil
}

// StateAtSeq rebuilds the state just after the engine's event seq of session.
func (s *Store) StateAtSeq(ctx context.Context, session int64, seq uint64) (State, error) {
	var inGap bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM gaps WHERE session = ? AND after_seq < ?2 AND resume_seq > ?2)`,
		session, int64(seq)).Scan(&inGap); err != nil {
		return State{}, err
	}
	if inGap {
		return State{}, fmt.Errorf("%w: event %d of session %d falls in a gap", ErrNotRecorded, seq, session)
	}
	c, err := s.checkpointAt(ctx, `session = ? AND seq <= ?`, session, int64(seq))
	if errors.Is(err, ErrNotRecorded) {
		var known bool
		if qerr := s.r.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM checkpoints WHERE session = ?)`, session).Scan(&known); qerr == nil && !known {
			return State{}, fmt.Errorf("%w: the recording holds no session %d", ErrNotRecorded, session)
		}
	}
	if err != nil {
		return State{}, err
	}
	st, err := s.replay(ctx, c, func(k *key) bool { return k.seq <= seq })
	if err != nil {
		return st, err
	}
	if st.Seq != seq {
		return State{}, fmt.Errorf("%w: session %d is recorded up to event %d", ErrNotRecorded, session, st.Seq)
	}
	return st, nil
}

// storedCheckpoint is a checkpoint read back.
type storedCheckpoint struct {
	checkpoint
	data []byte
	size int
}

// checkpointAt reads the last checkpoint (in recording order) that passes cond.
func (s *Store) checkpointAt(ctx context.Context, cond string, args ...any) (storedCheckpoint, error) {
	var c storedCheckpoint
	var seq int64
	err := s.r.QueryRowContext(ctx, `SELECT id, pos, session, seq, time, size, data FROM checkpoints WHERE `+cond+
		` ORDER BY pos DESC, id DESC LIMIT 1`, args...).Scan(&c.id, &c.pos, &c.session, &seq, &c.time, &c.size, &c.data)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: it is older than the oldest checkpoint", ErrNotRecorded)
	}
	c.seq = uint64(seq)
	return c, err
}

// replay loads c and applies the events of its session after it while include says so
// (events are in order: the first refused ends the replay).
func (s *Store) replay(ctx context.Context, c storedCheckpoint, include func(*key) bool) (State, error) {
	js, err := inflate(c.data, c.size)
	if err != nil {
		return State{}, err
	}
	var snap gc.Snapshot
	if err := json.Unmarshal(js, &snap); err != nil {
		return State{}, fmt.Errorf("%w: checkpoint %d: %v", errCorrupt, c.id, err)
	}
	rep := gc.NewReplica(&snap)
	st := State{Session: c.session, Time: time.Unix(0, c.time).UTC()}
	bound := c.pos - 1
	for {
		blocks, err := s.readBlocks(ctx, `SELECT pos, session, count, first_seq, first_time, body_size, keys FROM blocks
			WHERE session = ? AND pos > ? ORDER BY pos LIMIT 16`, c.session, bound)
		if err != nil {
			return st, err
		}
		if len(blocks) == 0 {
			break
		}
		for _, b := range blocks {
			bound = b.pos
			n, done, err := s.replayBlock(ctx, &b, rep, include)
			st.Replayed += n
			if n > 0 {
				st.Time = time.Unix(0, b.keys[n-1].time).UTC()
			}
			if err != nil {
				return st, err
			}
			if done {
				st.Snapshot = rep.Snapshot()
				return st, nil
			}
		}
	}
	st.Snapshot = rep.Snapshot()
	return st, nil
}

// replayBlock applies b's events to rep while include accepts them; it returns how many
// it took, and done when one was refused.
func (s *Store) replayBlock(ctx context.Context, b *block, rep *gc.Replica, include func(*key) bool) (int, bool, error) {
	n := 0
	for n < len(b.keys) && include(&b.keys[n]) {
		n++
	}
	if n == 0 {
		return 0, true, nil
	}
	body, err := s.readBody(ctx, b.pos)
	if err != nil {
		return 0, true, err
	}
	off := 0
	for i := range n {
		k := &b.keys[i]
		js := body[off : off+k.bodyLen]
		off += k.bodyLen
		typ := gc.EventType(typeVocab.word(k.typ))
		if changes, known := replayChanges[typ]; known && !changes {
			rep.Apply(&gc.Event{Seq: k.seq, Type: typ}) // only the seq moves: the body need not be read
			continue
		}
		var e gc.Event
		if err := json.Unmarshal(js, &e); err != nil {
			return i, true, fmt.Errorf("%w: event at %d: %v", errCorrupt, b.pos+int64(i), err)
		}
		rep.Apply(&e)
	}
	return n, n < len(b.keys), nil
}

// replayChanges says, for each type of event, whether replaying it changes the state (its
// body is read and applied) or only its seq (the body is skipped). Every type of
// gc.EventTypes has its entry (TestReplayDecidesEveryEventType checks each against the
// Replica); a type this version does not know (a newer engine's) is read and applied.
var replayChanges = map[gc.EventType]bool{
	gc.NodeAdded: true, gc.NodeUpdated: true, gc.NodeRemoved: true,
	gc.EdgeAdded: false, gc.EdgeRemoved: false, // the edges are in the nodes' owners
	gc.QueueChange: true, gc.ActionTaken: true, gc.SyncChange: true,
	gc.ShadowChange: false, // a snapshot holds no shadow decisions
}

// noteAt says what the state at t is when t itself was not recorded.
func (s *Store) noteAt(ctx context.Context, session int64, t, last time.Time) (string, error) {
	var reason string
	var start int64
	err := s.r.QueryRowContext(ctx, `SELECT reason, start FROM gaps WHERE start <= ?1 AND end > ?1 ORDER BY pos DESC LIMIT 1`,
		t.UnixNano()).Scan(&reason, &start)
	switch {
	case err == nil:
		return fmt.Sprintf("not recorded at that moment (%s); this is the state at %s, the last event before", reason, last.Format(time.RFC3339Nano)), nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	var sessionLast, next sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT last FROM sessions WHERE id = ?`, session).Scan(&sessionLast); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	if err := s.r.QueryRowContext(ctx, `SELECT MIN(started) FROM sessions WHERE id > ?`, session).Scan(&next); err != nil {
		return "", err
	}
	if next.Valid && sessionLast.Valid && t.UnixNano() > sessionLast.Int64 {
		return fmt.Sprintf("gcscope was not recording at that moment (session %d ended at %s); this is the state it ended with",
			session, time.Unix(0, sessionLast.Int64).UTC().Format(time.RFC3339Nano)), nil
	}
	if t.After(s.opts.Now()) {
		return fmt.Sprintf("that moment has not come yet; this is the state as last recorded, at %s", last.Format(time.RFC3339Nano)), nil
	}
	return "", nil
}
