package edge

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

// Entry is one write, or one refused or failed request, as one JSON line.
type Entry struct {
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

// Audit writes entries to w, or to the logger when w is nil.
type Audit struct {
	mu  sync.Mutex
	enc *json.Encoder
	log *slog.Logger
}

// NewAudit is the audit log of the server: w, or log when w is nil.
func NewAudit(w io.Writer, log *slog.Logger) *Audit {
	a := &Audit{log: log}
	if w != nil {
		a.enc = json.NewEncoder(w)
	}
	return a
}

// Write writes one line.
func (a *Audit) Write(e Entry) {
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

// EntryFor starts the audit entry of a request: who, from where, to which host.
func EntryFor(r *http.Request, action string) Entry {
	u := UserFrom(r)
	return Entry{Time: time.Now(), User: u.Name, Groups: u.Groups, Remote: r.RemoteAddr,
		Host: r.Host, Path: r.URL.Path, Cluster: ClusterFrom(r).Name, Action: action, Impersonated: u.Impersonate, trail: trailOf(r)}
}

// Refuse answers a request with e, and records the refusal in the audit log.
func (a *Audit) Refuse(w http.ResponseWriter, r *http.Request, action string, status int, e *httpapi.Error) {
	entry := EntryFor(r, action)
	entry.Result, entry.Status, entry.Error = "denied", status, e.Message
	a.Write(entry)
	httpapi.WriteJSON(w, status, e)
}

// RefuseWrite answers a write that did not happen with e, and writes its audit line:
// "denied", or "error" when the fault is the server's or the apiserver's. An apiserver's
// 4xx is the cluster refusing (RBAC's 403 to the user a delete impersonates): denied.
func (a *Audit) RefuseWrite(w http.ResponseWriter, entry Entry, status int, e *httpapi.Error) {
	entry.Result, entry.Status, entry.Error = "denied", status, e.Message
	if status >= 500 || e.Code == httpapi.CodeAPIServer && status < 400 {
		entry.Result = "error"
	}
	a.Write(entry)
	httpapi.WriteJSON(w, status, e)
}
