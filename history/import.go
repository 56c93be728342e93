package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// ImportSummary is what an imported export holds.
type ImportSummary struct {
	Header   ExportHeader `json:"header"`
	Events   int          `json:"events"`
	Gaps     int          `json:"gaps"`
	Cascades int          `json:"cascades"`
	// First and Last are the times of the first and last events (zero: none).
	First, Last time.Time
}

// ErrBadExport means a file is not an export this gcscope can read: another schema, not
// gzip, corrupt, or cut short. Its message says which, in one line.
var ErrBadExport = errors.New("not a readable gcscope history export")

// maxExportLine bounds one line of an export: a checkpoint of a 170,000-object cluster is
// about 50 MiB of JSON. A longer line is not gcscope's, and reading it whole could take
// gigabytes from a file of a few megabytes.
var maxExportLine = 256 << 20 // a variable for its test

// maxBlankRun bounds a run of blank bytes (spaces, tabs, newlines) between or inside
// lines: an export has one newline between its lines, but the JSON decoder keeps every
// blank byte before a value, and blank lines reset the line bound (512 MiB of them, 517 KB
// of gzip, once took a replay to 1.66 GB).
var maxBlankRun = 1 << 20 // a variable for its test

// maxExpansion bounds how many times its compressed size an export may grow to, counted
// as it is read (plus expansionSlack): gcscope's JSON, with a uid and a time in every
// line, compresses about tenfold; a gzip bomb, a thousandfold. The file is refused as it
// is read, before its bytes are parsed.
var maxExpansion int64 = 100 // a variable for its test

const expansionSlack = 16 << 20

var (
	errLineTooLong = errors.New("line too long")
	errBlankRun    = errors.New("blank run too long")
	errExpansion   = errors.New("expands too much")
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// shapeLimit passes r through, and fails once more than maxLine bytes come without a
// newline, more than maxBlank blank bytes in a row, or more than maxExpansion times the
// compressed bytes read so far.
type shapeLimit struct {
	r                 io.Reader
	compressed        *countingReader
	maxLine, maxBlank int
	since             int   // bytes since the last newline
	blank             int   // blank bytes in a row, up to the last one read
	total             int64 // bytes read
	err               error // the bound passed: every read from then on fails
}

// Read fails for good once a bound is passed, with no bytes: the JSON decoder reads on
// past an error that comes with bytes that complete a value.
func (l *shapeLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.read(p)
	if errors.Is(err, errLineTooLong) || errors.Is(err, errBlankRun) || errors.Is(err, errExpansion) {
		l.err = err
		return 0, err
	}
	return n, err
}

func (l *shapeLimit) read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.total += int64(n); l.total > maxExpansion*l.compressed.n+expansionSlack {
		return n, errExpansion
	}
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.since = n - i - 1
	} else {
		l.since += n
	}
	if l.since > l.maxLine {
		return n, errLineTooLong
	}
	for _, c := range p[:n] {
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
			if l.blank++; l.blank > l.maxBlank {
				return n, errBlankRun
			}
		} else {
			l.blank = 0
		}
	}
	return n, err
}

// Import reads an export (see ExportSchema) into s, which must hold no recording yet, as
// the recording it was taken from: each checkpoint starts a session (or resumes one after
// its gap), the events follow with their own seqs and times, and cascades are tagged again
// as they were when recording. The store is then read like any other.
func Import(ctx context.Context, s *Store, r io.Reader) (ImportSummary, error) {
	var sum ImportSummary
	bad := func(format string, args ...any) (ImportSummary, error) {
		return sum, fmt.Errorf("%w: "+format, append([]any{ErrBadExport}, args...)...)
	}
	compressed := &countingReader{r: r}
	zr, err := gzip.NewReader(bufio.NewReader(compressed))
	if errors.Is(err, io.EOF) {
		return bad("the file is empty")
	}
	if err != nil {
		return bad("it is not gzip-compressed (%v)", err)
	}
	shape := &shapeLimit{r: zr, compressed: compressed, maxLine: maxExportLine, maxBlank: maxBlankRun}
	dec := json.NewDecoder(shape)
	readErr := func(err error, what string) (ImportSummary, error) {
		if errors.Is(err, errLineTooLong) {
			return bad("%s is longer than %d MiB: not an export of gcscope's", what, maxExportLine>>20)
		}
		if errors.Is(err, errExpansion) {
			return bad("it expands more than %d-fold (%d MiB from %d KiB, at %s): not an export of gcscope's", maxExpansion, shape.total>>20, compressed.n>>10, what)
		}
		if errors.Is(err, errBlankRun) {
			return bad("%s follows more than %d KiB of blank space: not an export of gcscope's", what, maxBlankRun>>10)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return bad("the file is cut short (after %d events, before its end line)", sum.Events)
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return bad("%s is corrupt (%v)", what, err)
		}
		return bad("%s: %v", what, err)
	}
	if err := dec.Decode(&sum.Header); err != nil {
		return readErr(err, "its first line")
	}
	if sum.Header.Schema != ExportSchema {
		return bad("its schema is %q; this gcscope reads %q", clip(sum.Header.Schema), ExportSchema)
	}

	w, err := newWriter(ctx, s)
	if err != nil {
		return sum, err
	}
	defer w.close()
	if w.nextPos > 1 {
		return sum, errors.New("history: import into a store that holds a recording already")
	}
	o := RecorderOptions{Version: sum.Header.Version}
	o.defaults(0)
	rec := newRecorder(s, nil, o)
	rec.w = w
	var (
		gap      *Gap
		sessions = map[int64]int64{} // the file's session: the store's
		ended    bool
		lastSeq  uint64 // the engine's seq of the last event (or checkpoint) read
	)
	flush := func() error {
		if len(rec.pending) == 0 {
			return nil
		}
		if err := rec.writeBlock(ctx); err != nil {
			return err
		}
		rec.pending = rec.pending[:0]
		return nil
	}
	for !ended {
		var line struct {
			exportLine
			Record
		}
		if err := dec.Decode(&line); err != nil {
			return readErr(err, fmt.Sprintf("the line after event %d", sum.Events))
		}
		switch {
		case line.End != nil:
			if line.End.Events != sum.Events || line.End.Gaps != sum.Gaps {
				return bad("its end line counts %d events and %d gaps; it holds %d and %d", line.End.Events, line.End.Gaps, sum.Events, sum.Gaps)
			}
			ended = true
		case line.Gap != nil:
			g := *line.Gap
			gap = &g
			sum.Gaps++
		case line.Checkpoint != nil:
			if err := flush(); err != nil {
				return sum, err
			}
			session, ok := sessions[line.CheckpointSession]
			if !ok {
				session = int64(len(sessions) + 1)
				sessions[line.CheckpointSession] = session
			}
			at := sum.Header.From
			if line.At != nil {
				at = *line.At
			}
			rec.session, rec.started = session, at.UnixNano()
			rec.gap = nil
			// As the recorder's seeds: the cascades open end, with the reason (the first
			// checkpoint has none open), and the deletions under way open again.
			note, began := "gcscope stopped before it ended", underWay
			if rec.rep == nil {
				began = "under way when the export starts"
			}
			if gap != nil {
				g := *gap
				g.Session = session
				rec.gap, note = &g, "not recorded to its end: "+g.Reason
			}
			rec.casc.reset()
			rec.casc.adopt(line.Checkpoint, at, w.nextPos, session, began)
			if err := rec.writeSeed(ctx, line.Checkpoint, at, "imported", note); err != nil {
				return sum, err
			}
			rec.rep, rec.seeded, gap = gc.NewReplica(line.Checkpoint), true, nil
			lastSeq = line.Checkpoint.Seq
			rec.sinceCheckpoint, rec.checkpointAt = 0, time.Now()
		case line.Type != "":
			if rec.rep == nil {
				return bad("an event comes before any checkpoint")
			}
			if line.Seq <= lastSeq {
				return bad("event %d (seq %d) does not follow seq %d: events are in order, each once", sum.Events+1, line.Seq, lastSeq)
			}
			if !Representable(line.Time) {
				return bad("event %d is at %s, outside the times a recording can hold (1970 to 2262)", sum.Events+1, line.Time.Format(time.RFC3339Nano))
			}
			lastSeq = line.Seq
			if sum.Events == 0 {
				sum.First = line.Time
			}
			sum.Last = line.Time
			rec.pending = append(rec.pending, line.Event)
			sum.Events++
			if len(rec.pending) >= rec.o.BlockEvents {
				if err := flush(); err != nil {
					return sum, err
				}
			}
		default:
			return bad("line after event %d is neither an event, a checkpoint, a gap nor the end", sum.Events)
		}
	}
	if dec.More() {
		return bad("it goes on after its end line")
	}
	if err := flush(); err != nil {
		return sum, err
	}
	// Cascades still open at the end of the window: those with nothing left end now, the
	// others are left as the export saw them, ended with a note.
	if rec.rep != nil {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return sum, err
		}
		defer tx.Rollback()
		rec.casc.closeQuiet(sum.Last.Add(rec.o.CascadeQuiet))
		if err := w.writeCascades(ctx, tx, rec.casc); err != nil {
			return sum, err
		}
		if err := w.closeOpenCascades(ctx, tx, "the export ends before it did", 0); err != nil {
			return sum, err
		}
		if gap != nil { // the window ends in it: nothing resumed
			g := *gap
			g.Session, g.Pos = rec.session, w.nextPos
			if err := w.writeGap(ctx, tx, g); err != nil {
				return sum, err
			}
		}
		if err := tx.Commit(); err != nil {
			return sum, err
		}
	}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cascades`).Scan(&sum.Cascades); err != nil {
		return sum, err
	}
	if err := s.loadTotals(ctx); err != nil {
		return sum, err
	}
	s.setStatus(Status{State: StateStopped, Message: "a replay of an exported recording"})
	return sum, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
