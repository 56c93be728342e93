package recording

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// HandleExport streams GET /api/v1/history/export?from=&to=&last=: the window as a
// file (history.ExportSchema), written as it is read. Without from, from the oldest
// recorded moment; without to, until now. With --auth=kubernetes it holds only the
// objects the user may list (events and checkpoints alike).
func (rs *Resource) HandleExport(w http.ResponseWriter, r *http.Request) {
	_, from, to, _, ok := rs.historyWindow(w, r)
	if !ok {
		return
	}
	select {
	case rs.Exports <- struct{}{}:
		defer func() { <-rs.Exports }()
	default:
		httpapi.WriteJSON(w, http.StatusTooManyRequests, httpapi.ErrTooManyRequests(fmt.Sprintf("%d history exports are in progress: try again when one has finished", MaxExports)))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	vis := edge.VisibilityFrom(r)
	var visible func(gc.ObjectRef) bool
	if vis != nil {
		// A permission that cannot be checked ends the export: a file that silently lacks
		// objects would look complete.
		visible = func(ref gc.ObjectRef) bool {
			ok := vis.Visible(ref)
			if vis.Err() != nil {
				cancel()
			}
			return ok
		}
	}
	out := &lazyAttachment{w: w}
	// Named after the window the file holds, which begins where the recording does.
	window := func(from, to time.Time) {
		out.name = "gcscope-history-" + FileTime(from) + "-" + FileTime(to) + ".jsonl.gz"
	}
	_, err := edge.ClusterFrom(r).History.Export(ctx, out, history.ExportOptions{From: from, To: to, Version: rs.Version, Visible: visible, Window: window})
	switch {
	case err == nil:
	case !out.started:
		rs.historyError(w, err) // 503 from VisibleReads instead, when a permission could not be checked
	default:
		// Part of the file is sent: cut the connection, so that the client sees a broken
		// transfer (and an importer a file without its end line), not a complete one.
		rs.Log.Warn("history export cut short", "err", err)
		panic(http.ErrAbortHandler)
	}
}

// MaxExports bounds the history exports in progress at once; ExportStall is how long one
// waits for its client to take the next bytes before it is cut (a client that stops
// reading would otherwise hold its buffers, and a database read, for ever).
const MaxExports = 4

var ExportStall = 30 * time.Second // a variable for tests

// lazyAttachment sends the attachment's headers with its first bytes, so that an error
// before any is still an ordinary JSON error. Each write must reach the client within
// ExportStall.
type lazyAttachment struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (a *lazyAttachment) Write(p []byte) (int, error) {
	if !a.started {
		a.started = true
		h := a.w.Header()
		h.Set("Content-Type", "application/gzip")
		h.Set("Content-Disposition", `attachment; filename=`+a.name)
		a.w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(a.w).SetWriteDeadline(time.Now().Add(ExportStall)) // not every writer can: then none
	return a.w.Write(p)
}

// FileTime is t in a file name: 20260501T100000Z.
func FileTime(t time.Time) string { return t.UTC().Format("20060102T150405Z") }
