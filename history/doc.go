// Package history records the engine's feed in an embedded SQLite database, so that what
// the collector did can be searched and any recorded moment rebuilt, hours or restarts
// later.
//
// The Recorder follows the feed from its own goroutine, as a stream client does: it reads
// with Since and Wait, never holds the engine up, and when it falls more than the feed's
// ring behind it records a gap and starts again from a fresh Snapshot. Events are written
// in blocks (compressed JSON, with a small uncompressed key record per event for
// filtering), one transaction per block. The Recorder keeps its own replica of the
// engine's state, rebuilt from the events it records, and writes it as a checkpoint every
// so many events: a moment is rebuilt from the checkpoint before it and the events
// between, never from the beginning. Retention drops whole segments (a checkpoint and the
// events up to the next one), oldest first, by age and by size. A write that fails (the
// size cap reached, a full or failing disk) pauses the recording, with the reason in
// Status and a metric, and the Recorder tries again later; the engine is never touched.
//
// As it writes, the Recorder tags cascades (a root's deletion and every deletion the
// collector made because of it; cascade.go) and stores each event's cascade in its key.
// Timeline answers events per time bucket from the blocks' ranges and counts, without
// reading events; Export writes a window as a file (ExportSchema) that Import reads into
// an empty store, for gcscope replay.
//
// Every start of the Recorder is a new session: the engine's sequence numbers start again
// with each engine, so an event is identified by its session and seq, and ordered across
// sessions by its position (Pos) in the recording.
//
// Concurrency: one goroutine (Recorder.Run, or Import) writes; Query, StateAt, Timeline,
// Cascades, Export and Status are safe from any goroutine and read a consistent snapshot
// of the database (WAL mode).
package history
