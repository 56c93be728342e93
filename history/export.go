package history

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// An export is a window of the recording in one file: gzip-compressed JSON, one value a
// line, in this order:
//
//	{"schema":"gcscope-history/1","version":…,"from":…,"to":…,"exportedAt":…}
//	{"checkpoint":<gc.Snapshot>,"checkpointSession":N,"at":…}   the state just before from
//	<Record>                                            every event of the window, in order
//	{"gap":<Gap>}                                       where the recording missed events,
//	{"checkpoint":…}                                    and the state it started again from
//	{"end":{"events":N,"gaps":N,"checkpoints":N}}       the last line: a file without it is cut short
//
// A gap (or a restart of gcscope) inside the window is followed by the checkpoint its
// recording resumed from, so that every moment of the window can be rebuilt from the file
// alone. It is written as it is read, a page of events at a time: an export of any size
// holds only a page in memory.

// ExportSchema names the file's layout; Import refuses any other.
const ExportSchema = "gcscope-history/1"

// ExportOptions choose the window and the reader.
type ExportOptions struct {
	From, To time.Time
	// Version is gcscope's, written in the header.
	Version string
	// Visible, when set, keeps only the objects it accepts: the events about others are
	// left out (and not named in those kept), and the checkpoints hold only its nodes and
	// queue items; the queues' counters stay whole.
	Visible func(gc.ObjectRef) bool
	// Now is when the export is made; default time.Now.
	Now func() time.Time
	// Window, when set, is told the window the file holds (the header's: From moves to
	// where the recording begins when that is later) before anything is written.
	Window func(from, to time.Time)
}

// ExportHeader is an export's first line.
type ExportHeader struct {
	Schema     string    `json:"schema"`
	Version    string    `json:"version"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	ExportedAt time.Time `json:"exportedAt"`
}

// ExportEnd is an export's last line: what it holds.
type ExportEnd struct {
	Events      int `json:"events"`
	Gaps        int `json:"gaps"`
	Checkpoints int `json:"checkpoints"`
}

// exportLine is any line after the header.
type exportLine struct {
	Checkpoint *gc.Snapshot `json:"checkpoint,omitempty"`
	// The checkpoint's session in the recording and the time of its last event (names of
	// their own: an event's line has a session and a time).
	CheckpointSession int64      `json:"checkpointSession,omitempty"`
	At                *time.Time `json:"at,omitempty"`
	Gap               *Gap       `json:"gap,omitempty"`
	End               *ExportEnd `json:"end,omitempty"`
}

// exportPage is how many events an export reads at a time.
const exportPage = 2000

// Export writes the window [o.From, o.To) of the recording to w (see ExportSchema). An
// error part way leaves the file without its end line, which Import refuses.
func (s *Store) Export(ctx context.Context, w io.Writer, o ExportOptions) (ExportEnd, error) {
	var end ExportEnd
	if !o.From.Before(o.To) {
		return end, fmt.Errorf("history: an export from %s to %s is empty", o.From, o.To)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	// The state just before the window: the events at From are in it. A window that
	// starts before the recording starts at its first checkpoint.
	q := Query{From: o.From, To: o.To, Limit: exportPage, Visible: o.Visible}
	first, err := s.StateAt(ctx, o.From.Add(-time.Nanosecond))
	startPos := int64(0) // the seeds at or before it are not seeds of the window
	if errors.Is(err, ErrNotRecorded) {
		var c storedCheckpoint
		if c, err = s.checkpointAfter(ctx, o.From); err == nil && c.time < o.To.UnixNano() {
			first, err = s.StateAtSeq(ctx, c.session, c.seq)
			o.From, q.From, q.Cursor, startPos = time.Unix(0, c.time), time.Time{}, c.pos-1, c.pos
		} else if err == nil {
			err = fmt.Errorf("%w: nothing was recorded between %s and %s", ErrNotRecorded, o.From.Format(time.RFC3339Nano), o.To.Format(time.RFC3339Nano))
		}
	}
	if err != nil {
		return end, err
	}
	// Where the recording started again within the window (after a gap or a restart).
	seeds, err := s.seedsBetween(ctx, o.From, o.To)
	if err != nil {
		return end, err
	}
	seeds = slices.DeleteFunc(seeds, func(sd seed) bool { return sd.pos <= startPos })
	gaps, err := s.Gaps(ctx, o.From, o.To, 1<<20)
	if err != nil {
		return end, err
	}

	if o.Window != nil {
		o.Window(o.From.UTC(), o.To.UTC())
	}
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriterSize(zw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ExportHeader{Schema: ExportSchema, Version: o.Version, From: o.From.UTC(), To: o.To.UTC(), ExportedAt: o.Now().UTC()}); err != nil {
		return end, err
	}
	checkpoint := func(st State) error {
		snap := narrowSnapshot(st.Snapshot, o.Visible)
		end.Checkpoints++
		return enc.Encode(exportLine{Checkpoint: &snap, CheckpointSession: st.Session, At: &st.Time})
	}
	if err := checkpoint(first); err != nil {
		return end, err
	}
	// gapsUpTo writes the gaps before pos; the loop below writes each seed at or before an
	// event after the gaps before it.
	gapsUpTo := func(pos int64) error {
		for len(gaps) > 0 && gaps[0].Pos <= pos {
			end.Gaps++
			if err := enc.Encode(exportLine{Gap: &gaps[0]}); err != nil {
				return err
			}
			gaps = gaps[1:]
		}
		return nil
	}
	for {
		page, err := s.Query(ctx, q)
		if err != nil {
			return end, err
		}
		for i := range page.Events {
			r := &page.Events[i]
			for len(seeds) > 0 && seeds[0].pos <= r.Pos {
				if err := gapsUpTo(seeds[0].pos); err != nil {
					return end, err
				}
				st, err := s.StateAtSeq(ctx, seeds[0].session, seeds[0].seq)
				if err != nil {
					return end, err
				}
				if err := checkpoint(st); err != nil {
					return end, err
				}
				seeds = seeds[1:]
			}
			if err := enc.Encode(r); err != nil {
				return end, err
			}
			end.Events++
		}
		if page.Next == 0 {
			break
		}
		q.Cursor = page.Next
	}
	if err := gapsUpTo(1<<62 - 1); err != nil {
		return end, err
	}
	if err := ctx.Err(); err != nil {
		return end, err // no end line: the file is not complete
	}
	if err := enc.Encode(exportLine{End: &end}); err != nil {
		return end, err
	}
	if err := bw.Flush(); err != nil {
		return end, err
	}
	return end, zw.Close()
}

// seed is a checkpoint the recording started (again) from.
type seed struct {
	pos, session int64
	seq          uint64
}

func (s *Store) seedsBetween(ctx context.Context, from, to time.Time) ([]seed, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT pos, session, seq FROM checkpoints WHERE reason <> 'periodic'
		AND time >= ? AND time < ? ORDER BY pos, id`, from.UnixNano(), to.UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seed
	for rows.Next() {
		var sd seed
		var seq int64
		if err := rows.Scan(&sd.pos, &sd.session, &seq); err != nil {
			return nil, err
		}
		sd.seq = uint64(seq)
		out = append(out, sd)
	}
	return out, rows.Err()
}

// narrowSnapshot keeps the nodes and queue items visible accepts (all when nil), and
// leaves out of the recent actions kept the objects it refuses.
func narrowSnapshot(s gc.Snapshot, visible func(gc.ObjectRef) bool) gc.Snapshot {
	if visible == nil {
		return s
	}
	s.Nodes = slices.DeleteFunc(slices.Clone(s.Nodes), func(n gc.NodeState) bool { return !visible(n.ObjectRef) })
	for i := range s.Nodes {
		s.Nodes[i], _ = s.Nodes[i].RedactedFor(visible) // orphan marks: a former owner it may not see
	}
	qs := make([]gc.QueueState, len(s.Queues))
	for i, q := range s.Queues {
		q.Items = slices.DeleteFunc(slices.Clone(q.Items), func(it gc.QueueItem) bool { return !visible(it.Object) })
		q.Recent = slices.DeleteFunc(slices.Clone(q.Recent), func(a gc.Action) bool { return !visible(a.Object) })
		for j := range q.Recent {
			q.Recent[j], _ = q.Recent[j].RedactedFor(visible)
		}
		qs[i] = q
	}
	s.Queues = qs
	return s
}

// checkpointAfter is the first checkpoint at or after t.
func (s *Store) checkpointAfter(ctx context.Context, t time.Time) (storedCheckpoint, error) {
	var c storedCheckpoint
	var seq int64
	err := s.r.QueryRowContext(ctx, `SELECT id, pos, session, seq, time FROM checkpoints WHERE time >= ? ORDER BY pos, id LIMIT 1`,
		t.UnixNano()).Scan(&c.id, &c.pos, &c.session, &seq, &c.time)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: nothing was recorded after %s", ErrNotRecorded, t.Format(time.RFC3339Nano))
	}
	c.seq = uint64(seq)
	return c, err
}
