package history

import (
	"context"
	"os"
)

// The disk a recording takes is three files: the database (DBFile), its write-ahead log
// (DBFile-wal: every write lands there first; a checkpoint copies it into the database)
// and the log's shared-memory index (DBFile-shm). Options.MaxSize bounds the three.
//
// The log gets a share of the bound (walShare) and the database's pages the rest (dbMax:
// max_page_count, and retention's marks). SQLite's own checkpoints reuse the log's file
// but leave it at its largest (4 MB and more, whatever the bound); so once a write leaves
// the log over a quarter of its share (walMark), the writer checkpoints all of it into
// the database and truncates the file (settleWAL). The rest of the share holds the log's
// index and the write that crossed the mark: a write logs every page it changes, and in
// a small database (a few MiB) one block of events, or one dropped segment, changes a
// third of it or more (the objects' indexes are ordered by uid and name, not by time),
// hence the share's floor.
// A write that alone outgrows the share passes the bound until it is settled, as does a
// log that readers still read (the truncation waits busy_timeout for them, and is tried
// again after the next write).

const (
	// The log's share: a quarter of the bound, at least minWALShare and at most
	// maxWALShare, and never more than half the bound.
	minWALShare = 4 << 20
	maxWALShare = 64 << 20
	// The index takes 32 KiB for every 4,096 pages of the log (the first block holds
	// a few less).
	indexBlock     = 32 << 10
	indexPerFrames = 4062
)

// budget splits a size bound between the database's pages and the log (see above): dbMax
// is what the pages may take, walMark the log's size past which a write is settled. Both
// 0: no bound.
func budget(maxSize, pageSize int64) (dbMax, walMark int64) {
	if maxSize <= 0 {
		return 0, 0
	}
	share := min(max(maxSize/4, minWALShare), maxWALShare, maxSize/2)
	index := indexBlock * (share/pageSize/indexPerFrames + 1)
	return maxSize - share, max(share-index, 4*pageSize) / 4
}

// onDisk is how many bytes the recording's files take.
func (s *Store) onDisk() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(s.path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// settleWAL checkpoints the log into the database and truncates it, when it is over
// walMark. It must be called between transactions, from the writing goroutine.
func (s *Store) settleWAL(ctx context.Context) {
	if s.walMark <= 0 {
		return
	}
	if fi, err := os.Stat(s.path + "-wal"); err != nil || fi.Size() <= s.walMark {
		return
	}
	var busy, frames, copied int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied); err != nil {
		s.log.Warn("history: emptying the write-ahead log failed; trying again after the next write", "err", err)
	} else if busy != 0 {
		s.log.Debug("history: the write-ahead log is still read; emptying it after the next write", "frames", frames, "copied", copied)
	}
}
