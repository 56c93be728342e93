package history

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gcscope/gcscope/internal/testkit"
)

// recordingFiles are the sizes of a recording's files in dir, as the disk has them.
func recordingFiles(t testing.TB, dir string) (db, wal, shm int64) {
	t.Helper()
	size := func(name string) int64 {
		fi, err := os.Stat(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	return size(DBFile), size(DBFile + "-wal"), size(DBFile + "-shm")
}

// TestTheSizeBoundHoldsTheWriteAheadLog: the size bound (--history-max-size, "the most
// disk the recording uses") holds the database, its write-ahead log and the log's index
// together. At the smallest bound the flag allows (1 MiB), batches of 2,000 events each
// (SQLite alone let the log grow past 4 MB, four times the bound, by the fourth) keep the
// three files within it after every batch and at every look while the recorder writes,
// with retention at work; and Status says what the files take.
func TestTheSizeBoundHoldsTheWriteAheadLog(t *testing.T) {
	const bound = 1 << 20 // cmd/gcscope's minHistorySize
	e := newSynth(1<<16, 11)
	e.churn(300, 0)
	dir := t.TempDir()
	s := openStore(t, Options{Dir: dir, MaxSize: bound})
	within := func(when string) {
		t.Helper()
		if db, wal, shm := recordingFiles(t, dir); db+wal+shm > bound {
			t.Fatalf("%s: the recording takes %d bytes (database %d, log %d, index %d), over its bound of %d",
				when, db+wal+shm, db, wal, shm, bound)
		}
	}
	stop := record(t, s, e, fast)
	for batch := range 25 {
		e.churn(300, 2000)
		seq := e.feed.LastSeq()
		var st Status
		err := testkit.Poll(context.Background(), 30*time.Second, func() bool {
			within("while the recorder writes") // (the poll is its pace: every 20 to 250 ms)
			st = s.Status()
			return st.State == StateRecording && st.Seq >= seq
		})
		if err != nil {
			t.Fatalf("batch %d: not recorded up to %d within 30 s: %+v", batch, seq, st)
		}
		within("after a batch")
		if st.Bytes <= 0 || st.Bytes > bound {
			t.Fatalf("batch %d: the status says the recording takes %d bytes, bound %d", batch, st.Bytes, bound)
		}
	}
	if testutil.ToFloat64(s.metrics.pruned) == 0 {
		t.Fatal("nothing was pruned: the recording never reached its bound, and the test shows nothing")
	}
	if st := s.Status(); st.Events == 0 {
		t.Fatalf("the recording holds nothing: %+v", st)
	}

	// What Status and the metric report is what the three files take.
	stop()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, Options{Dir: dir, MaxSize: bound})
	db, wal, shm := recordingFiles(t, dir)
	if st := s.Status(); st.Bytes != db+wal+shm || st.MaxBytes != bound {
		t.Fatalf("status: %d bytes of %d; the files take %d (database %d, log %d, index %d)", st.Bytes, st.MaxBytes, db+wal+shm, db, wal, shm)
	}
	if got := testutil.ToFloat64(s.metrics.bytes); got != float64(db+wal+shm) {
		t.Fatalf("gcscope_history_database_bytes = %v, want the %d bytes the files take", got, db+wal+shm)
	}
}
