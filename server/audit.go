package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/httpapi"
)

// auditEntry is one write, or one refused or failed request, as one JSON line.
type auditEntry struct {
	Time    time.Time    `json:"time"`
	User    string       `json:"user"`
	Groups  []string     `json:"groups,omitempty"`
	Remote  string       `json:"remote"`
	Host    string       `json:"host,omitempty"`
	Path    string       `json:"path,omitempty"`
	Cluster string       `json:"cluster,omitempty"` // the cluster the request was to, when named
	Action  string       `json:"action"`
	Object  gc.ObjectRef `json:"object,omitzero"`
	Policy  string       `json:"policy,omitempty"`
	Enabled *bool        `json:"enabled,omitempty"` // slowMotion: the switch asked for
	DryRun  *bool        `json:"dryRun,omitempty"`  // delete: as asked; absent when not read
	// Scenario and Run name the scenario player's scenario and run (scenario* actions).
	Scenario string `json:"scenario,omitempty"`
	Run      string `json:"run,omitempty"`
	// Unparsable: the body could not be read as a request; nothing was taken from it.
	Unparsable   bool   `json:"unparsable,omitempty"`
	Result       string `json:"result"` // ok, denied, error
	Status       int    `json:"status"`
	Error        string `json:"error,omitempty"`
	Impersonated bool   `json:"impersonated,omitempty"`

	trail *auditTrail // the request's, marked once the line is written
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
	if e.trail != nil {
		e.trail.written.Store(true)
		e.trail = nil
	}
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

// entryFor starts the audit entry of a request: who, from where, to which host.
func entryFor(r *http.Request, action string) auditEntry {
	u := userFrom(r)
	return auditEntry{Time: time.Now(), User: u.Name, Groups: u.Groups, Remote: r.RemoteAddr,
		Host: r.Host, Path: r.URL.Path, Cluster: clusterFrom(r).name, Action: action, Impersonated: u.Impersonate, trail: trailOf(r)}
}

// refuse answers a request with e, and records the refusal in the audit log.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, action string, status int, e *httpapi.Error) {
	entry := entryFor(r, action)
	entry.Result, entry.Status, entry.Error = "denied", status, e.Message
	s.audit.write(entry)
	httpapi.WriteJSON(w, status, e)
}

// refuseWrite answers a write that did not happen with e, and writes its audit line:
// "denied", or "error" when the fault is the server's or the apiserver's.
func (s *Server) refuseWrite(w http.ResponseWriter, entry auditEntry, status int, e *httpapi.Error) {
	entry.Result, entry.Status, entry.Error = "denied", status, e.Message
	if status >= 500 || e.Code == "apiserver" {
		entry.Result = "error"
	}
	s.audit.write(entry)
	httpapi.WriteJSON(w, status, e)
}
