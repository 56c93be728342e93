package history

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestARecordingOfTheFirstLayoutGainsTheAddedColumns: a recording whose block_stats and
// cascades tables predate their retries column (as gcscope wrote them before conflicts
// were counted as retries) is opened, gains the column, and is written to and read.
func TestARecordingOfTheFirstLayoutGainsTheAddedColumns(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Options{Dir: dir})
	s.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range addedColumns {
		if _, err := db.Exec(`ALTER TABLE ` + c.table + ` DROP COLUMN ` + c.column); err != nil {
			t.Fatalf("making the first layout: %v", err)
		}
	}
	db.Close()

	s = openStore(t, Options{Dir: dir})
	for _, c := range addedColumns {
		var n int
		if err := s.r.QueryRow(`SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s.%s after opening: %d columns, %v", c.table, c.column, n, err)
		}
	}
	e := newSynth(1<<12, 3)
	record(t, s, e, quick())
	e.grow(4)
	e.cascade()
	waitRecorded(t, s, e.feed.LastSeq())
	cs := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(cs) > 0 && cs[0].End != nil })
	tl, err := s.Timeline(context.Background(), TimelineQuery{From: cs[0].Start, To: cs[0].End.Add(time.Second)})
	if err != nil || tl.Buckets[0].Events == 0 {
		t.Fatalf("the timeline of the cascade: %v, %+v", err, tl.Buckets)
	}
}
