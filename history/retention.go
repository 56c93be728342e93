package history

import (
	"context"
	"database/sql"
	"math"
)

// Retention drops whole segments, oldest first: a segment is a checkpoint and the events
// after it up to the next checkpoint, so what is left can always be rebuilt. By age: every
// segment that ends before the cutoff (a segment is dropped once the checkpoint after it
// is older than --history-max-age). By size: past highWater percent of the database's
// share of the size bound (dbMax, disk.go), segments go until it holds less than
// lowWater percent; SQLite reuses the freed pages. The segment being written is never
// dropped: when it alone fills the database, the Recorder writes a checkpoint early,
// which ends it.

const (
	highWater = 90
	lowWater  = 70
)

// pruneSize makes room under the size bound.
func (r *Recorder) pruneSize(ctx context.Context, used int64) {
	limit := r.s.dbMax * lowWater / 100
	for used > limit {
		cps, err := r.w.oldestCheckpoints(ctx, 2)
		if err != nil {
			r.s.log.Warn("history: size retention failed", "err", err)
			return
		}
		if len(cps) < 2 {
			// One segment: end it with a checkpoint (not more often than every quarter of
			// the checkpoint spacing), so that the next pass can drop it.
			if r.sinceCheckpoint >= r.o.CheckpointEvents/4 {
				r.forceCheckpoint = true
			}
			return
		}
		if err := r.dropBefore(ctx, cps[1]); err != nil {
			r.s.log.Warn("history: size retention failed", "err", err)
			return
		}
		r.s.settleWAL(ctx) // (what a drop writes goes through the log too)
		r.s.noteSize()
		if used, err = r.s.used(ctx); err != nil {
			return
		}
	}
}

// pruneAge drops the segments older than MaxAge.
func (r *Recorder) pruneAge(ctx context.Context) error {
	cutoff := r.now().Add(-r.s.opts.MaxAge).UnixNano()
	var c checkpoint
	err := r.s.w.QueryRowContext(ctx, `SELECT id, pos, session, seq, time FROM checkpoints WHERE time <= ?
		ORDER BY pos DESC, id DESC LIMIT 1`, cutoff).Scan(&c.id, &c.pos, &c.session, &c.seq, &c.time)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	var older bool
	if err := r.s.w.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM checkpoints WHERE pos < ?1 OR (pos = ?1 AND id < ?2))
		OR EXISTS(SELECT 1 FROM blocks WHERE pos < ?1)`, c.pos, c.id).Scan(&older); err != nil || !older {
		return err
	}
	if err := r.dropBefore(ctx, c); err != nil {
		return err
	}
	// Give the space back to the disk.
	if _, err := r.s.w.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
		return err
	}
	r.s.settleWAL(ctx)
	r.s.noteSize()
	return nil
}

// dropAll drops the whole recording before the next position.
func (r *Recorder) dropAll(ctx context.Context) error {
	return r.dropBefore(ctx, checkpoint{pos: r.w.nextPos, id: math.MaxInt64})
}

// dropBefore deletes everything recorded before checkpoint c: the events before its
// position, the checkpoints and gaps before it, and the objects and sessions nothing
// refers to any more.
func (r *Recorder) dropBefore(ctx context.Context, c checkpoint) error {
	tx, err := r.s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var dropped sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT SUM(count) FROM blocks WHERE pos < ?`, c.pos).Scan(&dropped); err != nil {
		return err
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM block_objects WHERE block < ?`, []any{c.pos}},
		{`DELETE FROM blocks WHERE pos < ?`, []any{c.pos}},
		{`DELETE FROM block_stats WHERE pos < ?`, []any{c.pos}},
		{`DELETE FROM checkpoints WHERE pos < ?1 OR (pos = ?1 AND id < ?2)`, []any{c.pos, c.id}},
		{`DELETE FROM gaps WHERE pos < ?`, []any{c.pos}},
		{`DELETE FROM cascade_members WHERE cascade IN (SELECT id FROM cascades WHERE last_pos < ? AND end IS NOT NULL)`, []any{c.pos}},
		{`DELETE FROM cascades WHERE last_pos < ? AND end IS NOT NULL`, []any{c.pos}},
		{`DELETE FROM sessions WHERE id <> ? AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE session = sessions.id)`, []any{r.session}},
		{`DELETE FROM objects WHERE NOT EXISTS (SELECT 1 FROM block_objects WHERE object = objects.id)`, nil},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	var oldest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN(time) FROM checkpoints`).Scan(&oldest); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.w.resetCaches() // the objects it knew may be gone
	r.s.held.Lock()
	r.s.held.events -= dropped.Int64
	r.s.held.oldest = oldest.Int64
	r.s.held.Unlock()
	r.s.metrics.pruned.Add(float64(dropped.Int64))
	return nil
}

// oldestCheckpoints are the first n checkpoints, in recording order.
func (w *writer) oldestCheckpoints(ctx context.Context, n int) ([]checkpoint, error) {
	rows, err := w.s.w.QueryContext(ctx, `SELECT id, pos, session, seq, time FROM checkpoints ORDER BY pos, id LIMIT ?`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []checkpoint
	for rows.Next() {
		var c checkpoint
		if err := rows.Scan(&c.id, &c.pos, &c.session, &c.seq, &c.time); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
