package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// auditEntry is one write, as one JSON line.
type auditEntry struct {
	Time         time.Time    `json:"time"`
	User         string       `json:"user"`
	Groups       []string     `json:"groups,omitempty"`
	Remote       string       `json:"remote"`
	Action       string       `json:"action"`
	Object       gc.ObjectRef `json:"object,omitzero"`
	Policy       string       `json:"policy,omitempty"`
	Enabled      *bool        `json:"enabled,omitempty"` // slowMotion: the switch asked for
	DryRun       bool         `json:"dryRun"`
	Result       string       `json:"result"` // ok, denied, error
	Status       int          `json:"status"`
	Error        string       `json:"error,omitempty"`
	Impersonated bool         `json:"impersonated,omitempty"`
}

// auditLog writes entries to w, or to the logger when w is nil.
type auditLog struct {
	mu  sync.Mutex
	enc *json.Encoder
	log *slog.Logger
}

func newAuditLog(w io.Writer, log *slog.Logger) *auditLog {
	a := &auditLog{log: log}
	if w != nil {
		a.enc = json.NewEncoder(w)
	}
	return a
}

func (a *auditLog) write(e auditEntry) {
	if a.enc == nil {
		a.log.Info("audit", "entry", e)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.enc.Encode(e); err != nil {
		a.log.Error("audit log write failed", "err", err, "entry", e)
	}
}
