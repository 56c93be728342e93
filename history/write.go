package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// writer writes blocks, checkpoints and gaps, each within a transaction the Recorder
// opens; it owns the object-id caches. Only the Recorder's goroutine uses it.
type writer struct {
	s       *Store
	nextPos int64 // the position of the next event recorded
	comp    *compressor
	keysBuf []byte
	refs    []gc.ObjectRef // keyOf's
	uids    []string
	seen    map[int64]bool // writeBlock's
	idsJSON []byte

	byIdentity map[gc.ObjectRef]int64
	byUID      map[types.UID]int64

	findObject, findUID, insertObject, insertBlock, insertBlockObjects,
	insertCheckpoint, insertGap, upsertSession, upsertCascade, insertMember, insertStats *sql.Stmt
}

// maxCachedObjects bounds the object-id caches; past it they start again (ids are read
// back from the database).
const maxCachedObjects = 1 << 18

func newWriter(ctx context.Context, s *Store) (*writer, error) {
	w := &writer{s: s, comp: newCompressor()}
	w.resetCaches()
	var blocksEnd, checkpointsEnd sql.NullInt64
	if err := s.w.QueryRowContext(ctx, `SELECT MAX(pos + count) FROM blocks`).Scan(&blocksEnd); err != nil {
		return nil, err
	}
	if err := s.w.QueryRowContext(ctx, `SELECT MAX(pos) FROM checkpoints`).Scan(&checkpointsEnd); err != nil {
		return nil, err
	}
	w.nextPos = max(1, blocksEnd.Int64, checkpointsEnd.Int64)
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&w.findObject, `SELECT id FROM objects WHERE uid = ? AND kind = ? AND namespace = ? AND name = ? AND api_version = ?`},
		{&w.findUID, `SELECT id FROM objects WHERE uid = ? ORDER BY kind != '' DESC, id DESC LIMIT 1`},
		{&w.insertObject, `INSERT OR IGNORE INTO objects(uid, api_version, kind, namespace, name) VALUES(?, ?, ?, ?, ?)`},
		{&w.insertBlock, `INSERT INTO blocks(pos, session, count, first_seq, last_seq, first_time, last_time, mask, body_size, keys, body)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.insertBlockObjects, `INSERT OR IGNORE INTO block_objects(object, block) SELECT value, ?1 FROM json_each(?2)`},
		{&w.insertCheckpoint, `INSERT INTO checkpoints(pos, session, seq, time, nodes, reason, size, data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.insertGap, `INSERT INTO gaps(pos, session, after_seq, resume_seq, start, end, reason) VALUES(?, ?, ?, ?, ?, ?, ?)`},
		{&w.upsertSession, `INSERT INTO sessions(id, started, last, mode, version) VALUES(?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET last = excluded.last`},
		{&w.upsertCascade, `INSERT INTO cascades(id, session, root_uid, root_api_version, root_kind, root_namespace, root_name,
			policy, start, end, last_time, objects, deleted, kept, actions, errors, retries, first_pos, last_pos, note)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET end = excluded.end, last_time = excluded.last_time, objects = excluded.objects,
			deleted = excluded.deleted, kept = excluded.kept, actions = excluded.actions, errors = excluded.errors, retries = excluded.retries, last_pos = excluded.last_pos`},
		{&w.insertMember, `INSERT OR IGNORE INTO cascade_members(uid, cascade) VALUES(?, ?)`},
		{&w.insertStats, `INSERT INTO block_stats(pos, deletes, errors, retries) VALUES(?, ?, ?, ?)`},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			w.close()
			return nil, err
		}
		*p.st = st
	}
	return w, nil
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.findObject, w.findUID, w.insertObject, w.insertBlock, w.insertBlockObjects, w.insertCheckpoint, w.insertGap, w.upsertSession, w.upsertCascade, w.insertMember, w.insertStats} {
		if st != nil {
			st.Close()
		}
	}
}

// resetCaches forgets the cached object ids: after a rolled-back transaction (ids it made
// do not exist) and after retention dropped objects.
func (w *writer) resetCaches() {
	w.byIdentity = map[gc.ObjectRef]int64{}
	w.byUID = map[types.UID]int64{}
}

// lastSession is the highest session id recorded so far (0: none).
func (w *writer) lastSession(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := w.s.w.QueryRowContext(ctx, `SELECT MAX(id) FROM sessions`).Scan(&id)
	return id.Int64, err
}

// objectID is the id of the object recorded under ref's identity, made if new.
func (w *writer) objectID(ctx context.Context, tx *sql.Tx, ref gc.ObjectRef) (int64, error) {
	if id, ok := w.byIdentity[ref]; ok {
		return id, nil // byUID was set when it was cached: a uid's identity changes only to a new one
	}
	// Most objects are new: insert first, look up only when it was there already.
	w.s.places.add(ref)
	var id int64
	res, err := tx.StmtContext(ctx, w.insertObject).ExecContext(ctx, ref.UID, ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		id, err = res.LastInsertId()
	} else {
		err = tx.StmtContext(ctx, w.findObject).QueryRowContext(ctx, ref.UID, ref.Kind, ref.Namespace, ref.Name, ref.APIVersion).Scan(&id)
	}
	if err != nil {
		return 0, err
	}
	if len(w.byIdentity) >= maxCachedObjects {
		w.resetCaches()
	}
	w.byIdentity[ref] = id
	w.byUID[ref.UID] = id
	return id, nil
}

// uidID is the id of the latest identity recorded for uid, or of the bare uid.
func (w *writer) uidID(ctx context.Context, tx *sql.Tx, uid types.UID) (int64, error) {
	if id, ok := w.byUID[uid]; ok {
		return id, nil
	}
	var id int64
	err := tx.StmtContext(ctx, w.findUID).QueryRowContext(ctx, uid).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return w.objectID(ctx, tx, gc.ObjectRef{UID: uid})
	}
	if err != nil {
		return 0, err
	}
	w.byUID[uid] = id
	return id, nil
}

// keyOf is e's key, its objects' ids made as needed and appended to ids (k.objects is a
// slice of the result).
func (w *writer) keyOf(ctx context.Context, tx *sql.Tx, e *gc.Event, ids []int64) (key, []int64, error) {
	typ, queue, verb, op, result := wordsOf(e)
	k := key{seq: e.Seq, time: e.Time.UnixNano(), typ: typeVocab.code(typ), queue: queueVocab.code(queue),
		verb: verbVocab.code(verb), op: opVocab.code(op), result: resultVocab.code(result)}
	w.refs, w.uids = refsOf(e, w.refs[:0], w.uids[:0])
	start := len(ids)
	for _, ref := range w.refs {
		id, err := w.objectID(ctx, tx, ref)
		if err != nil {
			return k, ids, err
		}
		ids = append(ids, id)
	}
	for _, uid := range w.uids {
		id, err := w.uidID(ctx, tx, types.UID(uid))
		if err != nil {
			return k, ids, err
		}
		ids = append(ids, id)
	}
	k.objects = ids[start:len(ids):len(ids)]
	return k, ids, nil
}

// writeBlock writes b (its pos and session set) and indexes its objects.
func (w *writer) writeBlock(ctx context.Context, tx *sql.Tx, b *block) error {
	w.keysBuf = b.encodeKeys(w.keysBuf)
	body := w.comp.deflate(b.body)
	if _, err := tx.StmtContext(ctx, w.insertBlock).ExecContext(ctx, b.pos, b.session, len(b.keys), int64(b.firstSeq), int64(b.lastSeq),
		b.firstTime, b.lastTime, int64(b.mask), len(b.body), w.keysBuf, body); err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, w.insertStats).ExecContext(ctx, b.pos, b.deletes, b.errors, b.retries); err != nil {
		return err
	}
	// Its objects, each once, in one statement: a JSON array SQLite walks itself.
	if w.seen == nil {
		w.seen = map[int64]bool{}
	}
	clear(w.seen)
	w.idsJSON = append(w.idsJSON[:0], '[')
	for i := range b.keys {
		for _, id := range b.keys[i].objects {
			if w.seen[id] {
				continue
			}
			if len(w.seen) > 0 {
				w.idsJSON = append(w.idsJSON, ',')
			}
			w.seen[id] = true
			w.idsJSON = strconv.AppendInt(w.idsJSON, id, 10)
		}
	}
	w.idsJSON = append(w.idsJSON, ']')
	_, err := tx.StmtContext(ctx, w.insertBlockObjects).ExecContext(ctx, b.pos, string(w.idsJSON))
	return err
}

// checkpoint is one stored checkpoint's place.
type checkpoint struct {
	id, pos, session int64
	seq              uint64
	time             int64
}

// writeCheckpoint stores snap as the state after every event of session before pos, at
// time t (unix ns); it returns its compressed size.
func (w *writer) writeCheckpoint(ctx context.Context, tx *sql.Tx, session, pos int64, snap *gc.Snapshot, t int64, reason string) (int, error) {
	js, err := json.Marshal(snap)
	if err != nil {
		return 0, err
	}
	data := w.comp.deflate(js)
	_, err = tx.StmtContext(ctx, w.insertCheckpoint).ExecContext(ctx, pos, session, int64(snap.Seq), t, len(snap.Nodes), reason, len(js), data)
	return len(data), err
}

// Gap is a stretch of a session that was not recorded: the engine's events after
// AfterSeq up to ResumeSeq, from Start to End. The recording goes on at Pos, with a
// checkpoint.
type Gap struct {
	Session   int64     `json:"session"`
	Pos       int64     `json:"pos"`
	AfterSeq  uint64    `json:"afterSeq"`
	ResumeSeq uint64    `json:"resumeSeq"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Reason    string    `json:"reason"`
}

func (w *writer) writeGap(ctx context.Context, tx *sql.Tx, g Gap) error {
	_, err := tx.StmtContext(ctx, w.insertGap).ExecContext(ctx, g.Pos, g.Session, int64(g.AfterSeq), int64(g.ResumeSeq), g.Start.UnixNano(), g.End.UnixNano(), g.Reason)
	return err
}

func (w *writer) touchSession(ctx context.Context, tx *sql.Tx, id, started, last int64, mode gc.Mode, version string) error {
	_, err := tx.StmtContext(ctx, w.upsertSession).ExecContext(ctx, id, started, last, string(mode), version)
	return err
}

// writeCascades writes the cascades that changed and the members that joined them.
func (w *writer) writeCascades(ctx context.Context, tx *sql.Tx, cs *cascades) error {
	changed, joined := cs.take()
	up := tx.StmtContext(ctx, w.upsertCascade)
	for _, c := range changed {
		var end any
		if c.End != nil {
			end = c.End.UnixNano()
		}
		r := c.Root
		if _, err := up.ExecContext(ctx, c.ID, c.Session, string(r.UID), r.APIVersion, r.Kind, r.Namespace, r.Name, c.Policy,
			c.Start.UnixNano(), end, c.last.UnixNano(), c.Objects, c.Deleted, c.Kept, c.Actions, c.Errors, c.Retries, c.FirstPos, c.LastPos, c.Note); err != nil {
			return err
		}
	}
	ins := tx.StmtContext(ctx, w.insertMember)
	for _, m := range joined {
		if _, err := ins.ExecContext(ctx, string(m.uid), m.cascade); err != nil {
			return err
		}
	}
	return nil
}

// closeOpenCascades ends every cascade still open in the database, with note: the
// recording was interrupted (a gap, a pause, a restart), so nothing more of it will be
// seen. It ends at its last event; one of a session before current, at that session's
// end (gcscope stopped: a deletion stuck until then was under way until then, not over
// with its last event). current 0: at the last event.
func (w *writer) closeOpenCascades(ctx context.Context, tx *sql.Tx, note string, current int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE cascades SET note = ?, end = MAX(last_time,
		COALESCE((SELECT s.last FROM sessions s WHERE s.id = cascades.session AND ? > 0 AND s.id <> ?), last_time))
		WHERE end IS NULL`, note, current, current)
	return err
}

// nextCascade is the id of the next cascade.
func (w *writer) nextCascade(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := w.s.w.QueryRowContext(ctx, `SELECT MAX(id) FROM cascades`).Scan(&id)
	return id.Int64 + 1, err
}
