package history

import "time"

// The states of a recording.
const (
	StateRecording = "recording" // following the engine's feed
	StatePaused    = "paused"    // a write failed (size cap, full or failing disk): Message says why; retried
	StateStopped   = "stopped"   // no Recorder runs
)

// Status is where the recording stands, for the API, the page and the logs.
type Status struct {
	State string `json:"state"`
	// Message says why the recording is paused (and what to do), or stopped.
	Message string `json:"message,omitempty"`
	// Since is when the recording was paused or stopped, or started recording.
	Since time.Time `json:"since,omitzero"`
	// Session is the current session (each start of a Recorder is one).
	Session int64 `json:"session,omitempty"`
	// Seq is the engine's sequence number of the last event recorded in Session.
	Seq uint64 `json:"seq,omitempty"`
	// Oldest and Newest bound what the recording holds: from the oldest moment it can
	// rebuild to its newest event.
	Oldest time.Time `json:"oldest,omitzero"`
	Newest time.Time `json:"newest,omitzero"`
	// Events is how many events it holds; Bytes the disk its files take (the database,
	// its write-ahead log and the log's index), what MaxBytes bounds.
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	// MaxBytes and MaxAge are the retention bounds (0: none).
	MaxBytes int64         `json:"maxBytes,omitempty"`
	MaxAge   time.Duration `json:"maxAge,omitempty"`
}

// Status is where the recording stands now.
func (s *Store) Status() Status {
	st := *s.status.Load()
	s.held.Lock()
	st.Events, st.Bytes = s.held.events, s.held.bytes
	if s.held.oldest > 0 {
		st.Oldest = time.Unix(0, s.held.oldest).UTC()
	}
	if s.held.newest > 0 {
		st.Newest = time.Unix(0, s.held.newest).UTC()
	}
	s.held.Unlock()
	st.MaxBytes, st.MaxAge = s.opts.MaxSize, s.opts.MaxAge
	return st
}

// setStatus replaces the status (its totals are filled in by Status), and keeps the
// paused metric in step.
func (s *Store) setStatus(st Status) {
	if st.Since.IsZero() {
		st.Since = s.opts.Now().UTC()
	}
	s.status.Store(&st)
	paused := 0.0
	if st.State == StatePaused {
		paused = 1
	}
	s.metrics.paused.Set(paused)
}
