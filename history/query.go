package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// Query selects recorded events. Every filter given must pass; a list passes when any
// of its values does. Empty filters select everything.
type Query struct {
	// From and To bound the events' times: From <= time < To (zero: unbounded).
	From, To time.Time
	// The objects an event concerns (the one it is about, the item an owner was looked up
	// for, the owners a patch touches, an edge's two ends), as they were recorded.
	UIDs, Names, Namespaces, Kinds []string // a namespace "" is cluster-scoped; kinds case-insensitive
	// NameContains keeps the objects whose name contains it, in any case (a search box's).
	NameContains string
	// Words (see Words for each one's values).
	Types, Queues, Verbs, Ops, Results []string
	// Session, when not 0, keeps one session's events.
	Session int64
	// Cascade, when not 0, keeps the events of one cascade.
	Cascade int64
	// Newest: newest first (otherwise oldest first).
	Newest bool
	// Cursor continues a previous page (its Next): the events after it, or before it when
	// Newest.
	Cursor int64
	// Limit is the page size; default 100, at most MaxLimit.
	Limit int
	// Visible, when set, leaves out the events about objects it refuses (and names no
	// object it refuses in what is kept).
	Visible func(gc.ObjectRef) bool
}

// MaxLimit is the largest page.
const MaxLimit = 10000

// maxScan bounds the events one page reads: a page can come back short, with Next.
const maxScan = 500000

// Record is a recorded event, with its place in the recording.
type Record struct {
	// Pos orders events across sessions.
	Pos     int64 `json:"pos"`
	Session int64 `json:"session"`
	gc.Event
	// Object is the object the event is about (for an edge, its dependent, as recorded).
	Object *gc.ObjectRef `json:"object,omitempty"`
	// Cascade is the id of the cascade the event belongs to (cascade.go), if any.
	Cascade int64 `json:"cascade,omitempty"`
}

// Page is one page of a query's events.
type Page struct {
	Events []Record `json:"events"`
	// Next, when not 0, is the Cursor of the next page.
	Next int64 `json:"next,omitempty"`
}

// Words are the values a Query's word filter of dim ("type", "queue", "verb", "op",
// "result") takes.
func Words(dim string) []string {
	for _, v := range vocabs() {
		if v.name == dim {
			return slices.Clone(v.words)
		}
	}
	return nil
}

func vocabs() []vocab { return []vocab{typeVocab, queueVocab, verbVocab, opVocab, resultVocab} }

// ValueError is a filter value the recording does not know.
type ValueError struct {
	Dim, Value string
	Allowed    []string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s %q is not one of %s", e.Dim, e.Value, strings.Join(e.Allowed, ", "))
}

// wordFilter is one dimension's accepted codes.
type wordFilter struct {
	v     vocab
	codes []byte
	mask  uint64
}

func (f *wordFilter) pass(c byte) bool { return f == nil || slices.Contains(f.codes, c) }

func newWordFilter(v vocab, values []string) (*wordFilter, error) {
	if len(values) == 0 {
		return nil, nil
	}
	f := &wordFilter{v: v}
	for _, w := range values {
		i := slices.Index(v.words, w)
		if i < 0 {
			return nil, &ValueError{Dim: v.name, Value: w, Allowed: slices.Clone(v.words)}
		}
		f.codes = append(f.codes, byte(i+1))
		f.mask |= v.bit(byte(i + 1))
	}
	return f, nil
}

// Validate checks q's word filters.
func (q *Query) Validate() error {
	_, err := q.wordFilters()
	return err
}

func (q *Query) wordFilters() ([5]*wordFilter, error) {
	var fs [5]*wordFilter
	var err error
	for i, p := range []struct {
		v  vocab
		vs []string
	}{{typeVocab, q.Types}, {queueVocab, q.Queues}, {verbVocab, q.Verbs}, {opVocab, q.Ops}, {resultVocab, q.Results}} {
		if fs[i], err = newWordFilter(p.v, p.vs); err != nil {
			return fs, err
		}
	}
	return fs, nil
}

// objectsInQuery is how many matching objects a query still narrows by the block index
// in SQL; past it, blocks are read by time and their events filtered here.
const objectsInQuery = 500

// Query returns one page of the events q selects.
func (s *Store) Query(ctx context.Context, q Query) (Page, error) {
	words, err := q.wordFilters()
	if err != nil {
		return Page{}, err
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, MaxLimit)
	page := Page{Events: []Record{}}

	var objects map[int64]gc.ObjectRef // nil: no object filter
	if len(q.UIDs)+len(q.Names)+len(q.Namespaces)+len(q.Kinds) > 0 || q.NameContains != "" {
		if objects, err = s.matchObjects(ctx, &q); err != nil {
			return page, err
		}
		if len(objects) == 0 {
			return page, nil
		}
	}

	var where []string
	var args []any
	if !q.From.IsZero() {
		where, args = append(where, "last_time >= ?"), append(args, q.From.UnixNano())
	}
	if !q.To.IsZero() {
		where, args = append(where, "first_time < ?"), append(args, q.To.UnixNano())
	}
	if q.Session != 0 {
		where, args = append(where, "session = ?"), append(args, q.Session)
	}
	if q.Cascade != 0 {
		var first, last int64
		err := s.r.QueryRowContext(ctx, `SELECT first_pos, last_pos FROM cascades WHERE id = ?`, q.Cascade).Scan(&first, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return page, nil
		}
		if err != nil {
			return page, err
		}
		where, args = append(where, "pos + count > ? AND pos <= ?"), append(args, first, last)
	}
	for _, f := range words {
		if f != nil {
			where, args = append(where, "(mask & ?) != 0"), append(args, int64(f.mask))
		}
	}
	if objects != nil && len(objects) <= objectsInQuery {
		marks := strings.TrimSuffix(strings.Repeat("?,", len(objects)), ",")
		where = append(where, "pos IN (SELECT block FROM block_objects WHERE object IN ("+marks+"))")
		for id := range objects {
			args = append(args, id)
		}
	}
	order := "ASC"
	if q.Newest {
		order = "DESC"
	}

	// The first block to read: the one holding the event after the cursor (oldest first),
	// or any block before the cursor (newest first).
	var bound int64
	switch {
	case q.Newest && q.Cursor > 0:
		bound = q.Cursor
	case q.Newest:
		bound = 1<<62 - 1
	default:
		var start sql.NullInt64
		if err := s.r.QueryRowContext(ctx, `SELECT MAX(pos) FROM blocks WHERE pos <= ?`, q.Cursor+1).Scan(&start); err != nil {
			return page, err
		}
		bound = start.Int64 - 1 // blocks after it
	}

	refs := &refCache{s: s, known: objects}
	scanned := 0
	for {
		cond := "pos > ?"
		if q.Newest {
			cond = "pos < ?"
		}
		sqlText := `SELECT pos, session, count, first_seq, first_time, body_size, keys FROM blocks WHERE ` +
			strings.Join(append([]string{cond}, where...), " AND ") + ` ORDER BY pos ` + order + ` LIMIT 32`
		blocks, err := s.readBlocks(ctx, sqlText, append([]any{bound}, args...)...)
		if err != nil {
			return page, err
		}
		if len(blocks) == 0 {
			return page, nil
		}
		for _, b := range blocks {
			bound = b.pos
			done, err := s.scanBlock(ctx, &q, &b, words, objects, refs, &page, &scanned)
			if err != nil || done {
				return page, err
			}
		}
	}
}

// scanBlock adds b's matching events to page; done when the page is full or the scan
// budget spent (then page.Next is set).
func (s *Store) scanBlock(ctx context.Context, q *Query, b *block, words [5]*wordFilter, objects map[int64]gc.ObjectRef,
	refs *refCache, page *Page, scanned *int) (done bool, err error) {
	offsets := make([]int, len(b.keys)+1)
	for i, k := range b.keys {
		offsets[i+1] = offsets[i] + k.bodyLen
	}
	n := len(b.keys)
	for j := range n {
		i := j
		if q.Newest {
			i = n - 1 - j
		}
		pos := b.pos + int64(i)
		if (!q.Newest && pos <= q.Cursor) || (q.Newest && q.Cursor > 0 && pos >= q.Cursor) {
			continue
		}
		*scanned++
		if *scanned > maxScan {
			page.Next = pos
			if q.Newest {
				page.Next = pos + 1
			} else {
				page.Next = pos - 1
			}
			return true, nil
		}
		k := &b.keys[i]
		if !q.From.IsZero() && k.time < q.From.UnixNano() || !q.To.IsZero() && k.time >= q.To.UnixNano() {
			continue
		}
		if q.Cascade != 0 && k.cascade != q.Cascade {
			continue
		}
		if !words[0].pass(k.typ) || !words[1].pass(k.queue) || !words[2].pass(k.verb) || !words[3].pass(k.op) || !words[4].pass(k.result) {
			continue
		}
		if objects != nil && !slices.ContainsFunc(k.objects, func(id int64) bool { _, ok := objects[id]; return ok }) {
			continue
		}
		if b.body == nil {
			if b.body, err = s.readBody(ctx, b.pos); err != nil {
				return true, err
			}
			if len(b.body) != offsets[n] {
				return true, fmt.Errorf("%w: block %d holds %d bytes of events, its keys say %d", errCorrupt, b.pos, len(b.body), offsets[n])
			}
		}
		rec := Record{Pos: pos, Session: b.session, Cascade: k.cascade}
		if err := json.Unmarshal(b.body[offsets[i]:offsets[i+1]], &rec.Event); err != nil {
			return true, fmt.Errorf("%w: event at %d: %v", errCorrupt, pos, err)
		}
		if rec.Object, err = refs.about(ctx, &rec.Event, k); err != nil {
			return true, err
		}
		if q.Visible != nil && !visibleRecord(&rec, q.Visible) {
			continue
		}
		page.Events = append(page.Events, rec)
		if len(page.Events) == q.Limit {
			page.Next = pos
			return true, nil
		}
	}
	return false, nil
}

// visibleRecord reports whether rec may be shown to a reader who sees only what visible
// accepts, and leaves out of it the objects that reader may not see.
func visibleRecord(rec *Record, visible func(gc.ObjectRef) bool) bool {
	if rec.Object != nil && !visible(*rec.Object) {
		return false
	}
	switch {
	case rec.Node != nil:
		if n, changed := rec.Node.RedactedFor(visible); changed { // orphan marks
			rec.Node = &n
		}
	case rec.Action != nil:
		a, _ := rec.Action.RedactedFor(visible)
		rec.Action = &a
	case rec.Shadow != nil:
		d := *rec.Shadow
		d.Action, _ = d.Action.RedactedFor(visible)
		rec.Shadow = &d
	}
	return true
}

// refCache finds the object an event is about.
type refCache struct {
	s     *Store
	known map[int64]gc.ObjectRef
	read  map[int64]gc.ObjectRef
}

func (c *refCache) about(ctx context.Context, e *gc.Event, k *key) (*gc.ObjectRef, error) {
	switch {
	case e.Node != nil:
		return &e.Node.ObjectRef, nil
	case e.Queue != nil:
		return &e.Queue.Object, nil
	case e.Action != nil:
		return &e.Action.Object, nil
	case e.Shadow != nil:
		return &e.Shadow.Action.Object, nil
	case e.Edge == nil || len(k.objects) == 0:
		return nil, nil
	}
	id := k.objects[0]
	if ref, ok := c.known[id]; ok {
		return &ref, nil
	}
	if ref, ok := c.read[id]; ok {
		return &ref, nil
	}
	var ref gc.ObjectRef
	err := c.s.r.QueryRowContext(ctx, `SELECT uid, api_version, kind, namespace, name FROM objects WHERE id = ?`, id).
		Scan(&ref.UID, &ref.APIVersion, &ref.Kind, &ref.Namespace, &ref.Name)
	if err == sql.ErrNoRows {
		ref.UID = e.Edge.Dependent
	} else if err != nil {
		return nil, err
	}
	if c.read == nil {
		c.read = map[int64]gc.ObjectRef{}
	}
	c.read[id] = ref
	return &ref, nil
}

// matchObjects are the recorded objects that pass q's object filters, by id.
func (s *Store) matchObjects(ctx context.Context, q *Query) (map[int64]gc.ObjectRef, error) {
	var where []string
	var args []any
	in := func(column string, values []string, lower bool) {
		if len(values) == 0 {
			return
		}
		where = append(where, column+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(values)), ",")+")")
		for _, v := range values {
			if lower {
				v = strings.ToLower(v)
			}
			args = append(args, v)
		}
	}
	in("uid", q.UIDs, false)
	in("name", q.Names, false)
	in("namespace", q.Namespaces, false)
	in("lower(kind)", q.Kinds, true)
	if q.NameContains != "" {
		where = append(where, `lower(name) LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscaper.Replace(strings.ToLower(q.NameContains))+"%")
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, uid, api_version, kind, namespace, name FROM objects WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]gc.ObjectRef{}
	for rows.Next() {
		var id int64
		var ref gc.ObjectRef
		if err := rows.Scan(&id, &ref.UID, &ref.APIVersion, &ref.Kind, &ref.Namespace, &ref.Name); err != nil {
			return nil, err
		}
		// A filter matches only through what the reader may see: the hidden end of an
		// edge the reader sees must not answer a search for its name, letter by letter.
		if q.Visible == nil || q.Visible(ref) {
			out[id] = ref
		}
	}
	return out, rows.Err()
}

// readBlocks reads the blocks a query selects, keys decoded, bodies not read.
func (s *Store) readBlocks(ctx context.Context, query string, args ...any) ([]block, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []block
	for rows.Next() {
		var b block
		var count, bodySize int64
		var firstSeq int64
		var keys []byte
		if err := rows.Scan(&b.pos, &b.session, &count, &firstSeq, &b.firstTime, &bodySize, &keys); err != nil {
			return nil, err
		}
		b.firstSeq = uint64(firstSeq)
		if b.keys, err = decodeKeys(keys, b.firstSeq, b.firstTime); err != nil {
			return nil, fmt.Errorf("block %d: %w", b.pos, err)
		}
		if int64(len(b.keys)) != count {
			return nil, fmt.Errorf("%w: block %d holds %d keys, not %d", errCorrupt, b.pos, len(b.keys), count)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// readBody reads and inflates the body of the block at pos.
func (s *Store) readBody(ctx context.Context, pos int64) ([]byte, error) {
	var data []byte
	var size int
	if err := s.r.QueryRowContext(ctx, `SELECT body_size, body FROM blocks WHERE pos = ?`, pos).Scan(&size, &data); err != nil {
		return nil, err
	}
	return inflate(data, size)
}

// Gaps are the stretches not recorded that overlap [from, to) (zero: unbounded), oldest
// first, at most limit.
func (s *Store) Gaps(ctx context.Context, from, to time.Time, limit int) ([]Gap, error) {
	hi := int64(1<<63 - 1)
	if !to.IsZero() {
		hi = to.UnixNano()
	}
	var lo int64
	if !from.IsZero() {
		lo = from.UnixNano()
	}
	rows, err := s.r.QueryContext(ctx, `SELECT session, pos, after_seq, resume_seq, start, end, reason FROM gaps
		WHERE end >= ? AND start < ? ORDER BY pos LIMIT ?`, lo, hi, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Gap{}
	for rows.Next() {
		var g Gap
		var start, end int64
		if err := rows.Scan(&g.Session, &g.Pos, &g.AfterSeq, &g.ResumeSeq, &start, &end, &g.Reason); err != nil {
			return nil, err
		}
		g.Start, g.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		out = append(out, g)
	}
	return out, rows.Err()
}

// The moments a recording can hold: its times are stored as Unix nanoseconds, from 1970.
var (
	EarliestMoment = time.Unix(0, 0).UTC()
	LatestMoment   = time.Unix(0, math.MaxInt64).UTC()
)

// Representable reports whether a recording can hold the moment t.
func Representable(t time.Time) bool { return !t.Before(EarliestMoment) && !t.After(LatestMoment) }

// likeEscaper makes a string match itself in a LIKE pattern (ESCAPE '\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
