package history

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: SQLite in pure Go, no cgo
)

// DBFile is the database's file name in the recording's directory.
const DBFile = "history.db"

// schemaVersion is the layout this code reads and writes; a database of a later one is
// refused rather than misread.
const schemaVersion = 1

// Options say where the recording lives and how much of it to keep.
type Options struct {
	// Dir holds the database (DBFile); made if missing.
	Dir string
	// MaxSize bounds the disk the recording takes, in bytes: the database, its write-ahead
	// log and the log's index (disk.go). Retention drops the oldest recording to stay
	// under it, and a write that would pass it pauses the recording. 0: no bound.
	MaxSize int64
	// MaxAge drops what is older (a segment at a time: a checkpoint and the events up to
	// the next one). 0: kept until MaxSize needs the room.
	MaxAge time.Duration
	// Driver is the database/sql driver name of SQLite; default "sqlite" (modernc.org/sqlite,
	// registered by this package). Another driver must be registered by its importer.
	Driver string
	Logger *slog.Logger
	// Now is the clock of retention and status; default time.Now.
	Now func() time.Time
}

// Store is a recording in its database. Its read methods are safe for concurrent use; it
// is written by one Recorder at a time.
type Store struct {
	opts     Options
	path     string
	log      *slog.Logger
	w        *sql.DB // the one writing connection
	r        *sql.DB // readers
	pageSize int64
	metrics  *metrics
	// dbMax is what the database's pages may take of MaxSize, walMark the write-ahead
	// log's size past which the writer empties it (disk.go); 0: no bound.
	dbMax, walMark int64

	status atomic.Pointer[Status]
	// places are the kinds and namespaces recorded (places.go).
	places placeSet
	// held are the totals of what the database holds, kept by the writer.
	held struct {
		sync.Mutex
		events int64
		bytes  int64 // the disk its files take
		oldest int64 // unix ns of the oldest checkpoint (the first rebuildable moment); 0: none
		newest int64 // unix ns of the newest event or checkpoint
	}
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
	// One row per start of a Recorder: the engine's sequence numbers restart with it.
	`CREATE TABLE IF NOT EXISTS sessions(id INTEGER PRIMARY KEY, started INTEGER NOT NULL,
		last INTEGER NOT NULL, mode TEXT NOT NULL, version TEXT NOT NULL)`,
	// Every identity an object was recorded under (a virtual owner's can change), and bare
	// uids named before their object was seen.
	`CREATE TABLE IF NOT EXISTS objects(id INTEGER PRIMARY KEY, uid TEXT NOT NULL,
		api_version TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS objects_identity ON objects(uid, kind, namespace, name, api_version)`,
	`CREATE INDEX IF NOT EXISTS objects_name ON objects(name)`,
	// Events, in blocks: pos is the first event's position in the recording; the block
	// holds positions pos .. pos+count-1. body is last: a read that skips it never touches
	// its pages.
	`CREATE TABLE IF NOT EXISTS blocks(pos INTEGER PRIMARY KEY, session INTEGER NOT NULL,
		count INTEGER NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
		first_time INTEGER NOT NULL, last_time INTEGER NOT NULL, mask INTEGER NOT NULL,
		body_size INTEGER NOT NULL, keys BLOB NOT NULL, body BLOB NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS blocks_time ON blocks(last_time)`,
	`CREATE TABLE IF NOT EXISTS block_objects(object INTEGER NOT NULL, block INTEGER NOT NULL,
		PRIMARY KEY(object, block)) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS block_objects_block ON block_objects(block)`,
	// What a timeline counts per block beside its events (timeline.go): a table of its own,
	// so that reading it never touches a block's body. Blocks written before it have none.
	`CREATE TABLE IF NOT EXISTS block_stats(pos INTEGER PRIMARY KEY, deletes INTEGER NOT NULL, errors INTEGER NOT NULL,
		retries INTEGER NOT NULL DEFAULT 0)`,
	// The state after every event before pos of its session (seq is the engine's).
	`CREATE TABLE IF NOT EXISTS checkpoints(id INTEGER PRIMARY KEY, pos INTEGER NOT NULL,
		session INTEGER NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL,
		nodes INTEGER NOT NULL, reason TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS checkpoints_pos ON checkpoints(pos)`,
	`CREATE INDEX IF NOT EXISTS checkpoints_time ON checkpoints(time)`,
	// What was not recorded: the events of session after after_seq and up to resume_seq,
	// from start to end; the recording goes on at pos with a checkpoint.
	`CREATE TABLE IF NOT EXISTS gaps(id INTEGER PRIMARY KEY, pos INTEGER NOT NULL,
		session INTEGER NOT NULL, after_seq INTEGER NOT NULL, resume_seq INTEGER NOT NULL,
		start INTEGER NOT NULL, end INTEGER NOT NULL, reason TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS gaps_end ON gaps(end)`,
	// Cascades (cascade.go): end is NULL while one is open; its events are between
	// first_pos and last_pos, tagged in their keys.
	`CREATE TABLE IF NOT EXISTS cascades(id INTEGER PRIMARY KEY, session INTEGER NOT NULL,
		root_uid TEXT NOT NULL, root_api_version TEXT NOT NULL, root_kind TEXT NOT NULL,
		root_namespace TEXT NOT NULL, root_name TEXT NOT NULL, policy TEXT NOT NULL,
		start INTEGER NOT NULL, end INTEGER, last_time INTEGER NOT NULL,
		objects INTEGER NOT NULL, deleted INTEGER NOT NULL, actions INTEGER NOT NULL, errors INTEGER NOT NULL,
		retries INTEGER NOT NULL DEFAULT 0, first_pos INTEGER NOT NULL, last_pos INTEGER NOT NULL, note TEXT NOT NULL,
		kept INTEGER NOT NULL DEFAULT 0)`,
	`CREATE INDEX IF NOT EXISTS cascades_start ON cascades(start)`,
	`CREATE INDEX IF NOT EXISTS cascades_last_pos ON cascades(last_pos)`,
	`CREATE TABLE IF NOT EXISTS cascade_members(uid TEXT NOT NULL, cascade INTEGER NOT NULL,
		PRIMARY KEY(uid, cascade)) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS cascade_members_cascade ON cascade_members(cascade)`,
}

// addedColumns are the columns added to tables after their first layout.
var addedColumns = []struct{ table, column, decl string }{
	{"block_stats", "retries", "INTEGER NOT NULL DEFAULT 0"},
	{"cascades", "retries", "INTEGER NOT NULL DEFAULT 0"},
	{"cascades", "kept", "INTEGER NOT NULL DEFAULT 0"},
}

// Open opens the recording in o.Dir, creating it if needed. Close it when done.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("history: no directory")
	}
	if o.MaxSize < 0 || o.MaxAge < 0 {
		return nil, errors.New("history: negative size or age bound")
	}
	if o.Driver == "" {
		o.Driver = "sqlite"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	s := &Store{opts: o, path: filepath.Join(o.Dir, DBFile), log: o.Logger, metrics: newMetrics()}
	if err := s.open(); err != nil {
		s.Close()
		return nil, fmt.Errorf("history: database %s: %w", s.path, err)
	}
	s.setStatus(Status{State: StateStopped, Message: "not recording yet"})
	return s, nil
}

func (s *Store) open() error {
	ctx := context.Background()
	var err error
	// The writer: one connection. auto_vacuum must be chosen before the first table.
	if s.w, err = openDB(s.opts.Driver, s.path, 1,
		"PRAGMA busy_timeout=10000", "PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL",
		"PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-32768", "PRAGMA journal_size_limit=16777216"); err != nil {
		return err
	}
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_size").Scan(&s.pageSize); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if s.dbMax, s.walMark = budget(s.opts.MaxSize, s.pageSize); s.dbMax > 0 {
		// The hard bound: a write that needs more pages fails (SQLITE_FULL) and pauses the
		// recording. Retention keeps well under it. The log's file is cut back to its mark
		// whenever SQLite starts it again.
		pages := max(s.dbMax/s.pageSize, 16)
		if _, err := s.w.ExecContext(ctx, "PRAGMA max_page_count="+strconv.FormatInt(pages, 10)); err != nil {
			return err
		}
		if _, err := s.w.ExecContext(ctx, "PRAGMA journal_size_limit="+strconv.FormatInt(s.walMark, 10)); err != nil {
			return err
		}
		s.settleWAL(ctx) // a log left large by an earlier run
	}
	if s.r, err = openDB(s.opts.Driver, s.path, 4, "PRAGMA busy_timeout=10000", "PRAGMA query_only=1", "PRAGMA cache_size=-16384"); err != nil {
		return err
	}
	return s.loadTotals(ctx)
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, schema[0]); err != nil {
		return err
	}
	var v string
	switch err := s.w.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		if n, _ := strconv.Atoi(v); n != schemaVersion {
			return fmt.Errorf("written with layout %s, this gcscope reads layout %d: use another directory", v, schemaVersion)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range schema[1:] {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	// Columns added since a table was first made, each with a default: a recording made
	// by an earlier version gains them, and an earlier version still reads it.
	for _, c := range addedColumns {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.decl); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO meta(key, value) VALUES('schema', ?)`, strconv.Itoa(schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *Store) loadTotals(ctx context.Context) error {
	var events, oldest, newestEvent, newestCheckpoint sql.NullInt64
	if err := s.w.QueryRowContext(ctx, `SELECT SUM(count), MAX(last_time) FROM blocks`).Scan(&events, &newestEvent); err != nil {
		return err
	}
	if err := s.w.QueryRowContext(ctx, `SELECT MIN(time), MAX(time) FROM checkpoints`).Scan(&oldest, &newestCheckpoint); err != nil {
		return err
	}
	s.held.Lock()
	s.held.events, s.held.oldest, s.held.newest = events.Int64, oldest.Int64, max(newestEvent.Int64, newestCheckpoint.Int64)
	s.held.Unlock()
	s.noteSize()
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	for _, db := range []*sql.DB{s.r, s.w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// used is how many bytes the database's pages hold (its size less its free pages), what
// retention weighs against dbMax; onDisk (disk.go) is what its files take.
func (s *Store) used(ctx context.Context) (int64, error) {
	var pages, free int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, err
	}
	if err := s.w.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return 0, err
	}
	return (pages - free) * s.pageSize, nil
}

// openDB opens a pool of at most conns connections to path, each set up with pragmas as
// it is made (pragmas are per connection).
func openDB(driverName, path string, conns int, pragmas ...string) (*sql.DB, error) {
	probe, err := sql.Open(driverName, path)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close()
	db := sql.OpenDB(&connector{drv: drv, dsn: path, pragmas: pragmas})
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

type connector struct {
	drv     driver.Driver
	dsn     string
	pragmas []string
}

func (c *connector) Driver() driver.Driver { return c.drv }

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("driver %T cannot run statements on a connection", c.drv)
	}
	for _, p := range c.pragmas {
		if _, err := ex.ExecContext(ctx, p, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return conn, nil
}

// isFull reports whether err is SQLite's "database or disk is full" (SQLITE_FULL): the
// size bound was reached, or the disk is full.
func isFull(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == 13 {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "database or disk is full")
}
