package history

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// A timeline is the recording seen from afar: events per time bucket, the cascades and
// the gaps. It is answered from the blocks' time ranges, counts and masks: a block that
// falls within one bucket and holds no delete and no error adds its count without being
// read; only the others' keys (never their bodies) are decoded, a few bytes per event.

// TimelineQuery asks for a timeline of [From, To) in Buckets buckets.
type TimelineQuery struct {
	From, To time.Time
	// Buckets is how many; default DefaultBuckets, at most MaxBuckets.
	Buckets int
	// Visible, when set, leaves out the cascades whose root it refuses. The counts stay
	// whole: they name nothing, as a queue's counters do.
	Visible func(gc.ObjectRef) bool
}

// Bucket limits.
const (
	DefaultBuckets = 120
	MaxBuckets     = 2000
	// maxTimelineCascades bounds the cascades a timeline lists (the newest).
	maxTimelineCascades = MaxCascades
	maxTimelineGaps     = 100
)

// Bucket is one stretch of a timeline: its events, the collector's deletes (successful
// delete actions, shadow ones included), the failed actions, and the conflicts retried.
type Bucket struct {
	T       time.Time `json:"t"`
	Events  int       `json:"events"`
	Deletes int       `json:"deletes"`
	Errors  int       `json:"errors"`
	Retries int       `json:"retries"`
}

// Timeline is the recording between From and To.
type Timeline struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Bucket is each bucket's width, in nanoseconds.
	Bucket   time.Duration `json:"bucket"`
	Buckets  []Bucket      `json:"buckets"`
	Cascades []Cascade     `json:"cascades"`
	// CascadesCapped: more cascades overlap the window than Cascades lists (the newest).
	CascadesCapped bool `json:"cascadesCapped,omitempty"`
	// SingleDeletions counts the cascades left out of Cascades because the collector had
	// nothing to do in them (CascadeQuery.Acted): on a busy cluster, Pods deleted by their
	// controllers, thousands of which would crowd the collector's cascades out.
	SingleDeletions int   `json:"singleDeletions"`
	Gaps            []Gap `json:"gaps"`
}

// Timeline counts the events of [q.From, q.To) per bucket and lists the cascades and gaps
// that overlap it.
func (s *Store) Timeline(ctx context.Context, q TimelineQuery) (Timeline, error) {
	if q.Buckets <= 0 {
		q.Buckets = DefaultBuckets
	}
	q.Buckets = min(q.Buckets, MaxBuckets)
	if !q.From.Before(q.To) {
		return Timeline{}, fmt.Errorf("history: a timeline from %s to %s is empty", q.From, q.To)
	}
	from, to := q.From.UnixNano(), q.To.UnixNano()
	width := (to - from + int64(q.Buckets) - 1) / int64(q.Buckets)
	tl := Timeline{From: q.From.UTC(), To: q.To.UTC(), Bucket: time.Duration(width), Buckets: make([]Bucket, q.Buckets)}
	for i := range tl.Buckets {
		tl.Buckets[i].T = time.Unix(0, from+int64(i)*width).UTC()
	}
	bucketOf := func(t int64) int { return int((t - from) / width) }
	add := func(t int64, verb, result byte) {
		if t < from || t >= to {
			return
		}
		b := &tl.Buckets[bucketOf(t)]
		b.Events++
		if verb == deleteCode && (result == okCode || result == shadowCode) {
			b.Deletes++
		}
		switch result {
		case errorCode:
			b.Errors++
		case retryCode:
			b.Retries++
		}
	}

	rows, err := s.r.QueryContext(ctx, `SELECT b.pos, b.count, b.first_time, b.last_time, b.mask, s.deletes, s.errors, s.retries
		FROM blocks b LEFT JOIN block_stats s ON s.pos = b.pos
		WHERE b.last_time >= ? AND b.first_time < ? ORDER BY b.pos`, from, to)
	if err != nil {
		return tl, err
	}
	var read []int64 // the blocks whose keys must be read
	for rows.Next() {
		var pos, count, first, last, mask int64
		var deletes, errs, retries sql.NullInt64
		if err := rows.Scan(&pos, &count, &first, &last, &mask, &deletes, &errs, &retries); err != nil {
			rows.Close()
			return tl, err
		}
		whole := first >= from && last < to && bucketOf(first) == bucketOf(last)
		switch {
		case whole && deletes.Valid:
			b := &tl.Buckets[bucketOf(first)]
			b.Events, b.Deletes, b.Errors, b.Retries = b.Events+int(count), b.Deletes+int(deletes.Int64), b.Errors+int(errs.Int64), b.Retries+int(retries.Int64)
		case whole && uint64(mask)&(verbVocab.bit(deleteCode)|resultVocab.bit(errorCode)|resultVocab.bit(retryCode)) == 0:
			tl.Buckets[bucketOf(first)].Events += int(count)
		default:
			read = append(read, pos)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return tl, err
	}
	for len(read) > 0 {
		n := min(len(read), 256)
		if err := s.eachKeysRecord(ctx, read[:n], func(pos, firstTime int64, keys []byte) error {
			if err := eachKeyTime(keys, firstTime, add); err != nil {
				return fmt.Errorf("block %d: %w", pos, err)
			}
			return nil
		}); err != nil {
			return tl, err
		}
		read = read[n:]
	}

	if tl.Cascades, err = s.listCascades(ctx, CascadeQuery{From: q.From, To: q.To, Limit: maxTimelineCascades + 1, Visible: q.Visible, Acted: true}); err != nil {
		return tl, err
	}
	// Counted whole, as the buckets are: a count names nothing.
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cascades WHERE start < ? AND end >= ? AND NOT `+acted,
		q.To.UnixNano(), q.From.UnixNano()).Scan(&tl.SingleDeletions); err != nil {
		return tl, err
	}
	if len(tl.Cascades) > maxTimelineCascades {
		tl.Cascades, tl.CascadesCapped = tl.Cascades[:maxTimelineCascades], true
	}
	if tl.Gaps, err = s.Gaps(ctx, q.From, q.To, maxTimelineGaps); err != nil {
		return tl, err
	}
	return tl, nil
}

// eachKeysRecord reads the keys of the blocks at positions.
func (s *Store) eachKeysRecord(ctx context.Context, positions []int64, fn func(pos, firstTime int64, keys []byte) error) error {
	args := make([]any, len(positions))
	for i, p := range positions {
		args[i] = p
	}
	rows, err := s.r.QueryContext(ctx, `SELECT pos, first_time, keys FROM blocks WHERE pos IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(positions)), ",")+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pos, first int64
		var keys []byte
		if err := rows.Scan(&pos, &first, &keys); err != nil {
			return err
		}
		if err := fn(pos, first, keys); err != nil {
			return err
		}
	}
	return rows.Err()
}

// eachKeyTime walks a keys record for each event's time, verb and result, skipping the
// rest and allocating nothing.
func eachKeyTime(data []byte, firstTime int64, fn func(t int64, verb, result byte)) error {
	if len(data) == 0 || data[0] != 1 && data[0] != keysFormat {
		return fmt.Errorf("%w: unknown keys format", errCorrupt)
	}
	withCascade := data[0] >= 2
	r := keyReader{data: data[1:]}
	n := r.uvarint()
	for range n {
		r.uvarint() // seq
		t := firstTime + r.varint()
		if len(r.data) < 5 {
			r.fail()
			break
		}
		verb, result := r.data[2], r.data[4]
		r.data = r.data[5:]
		if withCascade {
			r.uvarint()
		}
		r.uvarint() // body length
		for range r.uvarint() {
			_, m := binary.Uvarint(r.data)
			if m <= 0 {
				r.fail()
				break
			}
			r.data = r.data[m:]
		}
		if r.err != nil {
			return r.err
		}
		fn(t, verb, result)
	}
	return r.err
}
