// Package recording is the flight recorder's routes (/history...): the recorded feed
// paged and searched (history.go, search.go), the state at a recorded moment, the
// timeline and the cascades (timeline.go), and a window exported as a file (export.go),
// each narrowed to what the user may list. Package history records and queries; this
// package reads requests and writes answers.
package recording

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// Deps are what the history routes need of the server.
type Deps struct {
	Edge    *edge.Edge // preconditions
	Log     *slog.Logger
	Version string // gcscope's, written in exports
	// Replay: the recording does not grow (gcscope replay); a window ends at its newest event.
	Replay bool
	// Exports holds a token per history export in progress: MaxExports at most (NewExports).
	Exports chan struct{}
}

// Resource serves the history routes.
type Resource struct{ Deps }

// New is the history routes with d.
func New(d Deps) *Resource { return &Resource{d} }

// NewExports is Deps.Exports: room for MaxExports.
func NewExports() chan struct{} { return make(chan struct{}, MaxExports) }

// Routes are the history's reads bounded in time, on a cluster's router; the export
// (HandleExport), which streams, the server mounts apart.
func (rs *Resource) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(rs.Edge.RequireHistory, httpapi.CompressJSON, rs.Edge.VisibleReads)
		r.Get("/history", rs.handleHistory)                  // the recorded feed: events by time, object, verb, result, queue; paged
		r.Get("/history/state", rs.handleHistoryState)       // the graph and queues as they were at a recorded moment
		r.Get("/history/timeline", rs.handleHistoryTimeline) // events, deletes and errors per time bucket; cascades, gaps
		r.Get("/history/cascades", rs.handleHistoryCascades) // cascades, newest first (?uid=: those an object was in)
	})
}

// GET /api/v1/history's query parameters: those that take one value, and the repeatable ones.
var (
	HistorySingle = []string{"from", "to", "last", "session", "cascade", "order", "limit", "cursor", "nameContains"}
	HistoryMulti  = []string{"uid", "name", "namespace", "kind", "type", "queue", "verb", "op", "result"}
)

// maxHistoryGaps bounds the gaps a history page lists.
const maxHistoryGaps = 100

// MaxNameContains bounds nameContains: no Kubernetes name is longer (a DNS subdomain), and
// the recording's search pattern has a size limit of its own.
const MaxNameContains = 253

// HistoryResponse is one page of recorded events.
type HistoryResponse struct {
	Events []history.Record `json:"events"`
	// NextCursor, when set, fetches the next page (which may be empty).
	NextCursor string `json:"nextCursor,omitempty"`
	// Gaps are the stretches the recording misses within the range asked for.
	Gaps []history.Gap `json:"gaps"`
	// Recording is where the recording stands.
	Recording history.Status `json:"recording"`
}

func (rs *Resource) handleHistory(w http.ResponseWriter, r *http.Request) {
	q, perr := parseHistoryQuery(r, time.Now())
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	if err := settleSearch(r.Context(), edge.ClusterFrom(r).History, edge.VisibilityFrom(r), &q); err != nil {
		rs.writeSearchError(w, err)
		return
	}
	q.Visible = edge.VisibilityFrom(r).Func()
	page, err := edge.ClusterFrom(r).History.Query(r.Context(), q)
	if err != nil {
		rs.historyError(w, err)
		return
	}
	gaps, err := edge.ClusterFrom(r).History.Gaps(r.Context(), q.From, q.To, maxHistoryGaps)
	if err != nil {
		rs.historyError(w, err)
		return
	}
	resp := HistoryResponse{Events: page.Events, Gaps: gaps, Recording: edge.ClusterFrom(r).History.Status()}
	if page.Next != 0 {
		resp.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// parseHistoryQuery reads GET /api/v1/history's parameters; now anchors last=.
func parseHistoryQuery(r *http.Request, now time.Time) (history.Query, *httpapi.Error) {
	v, perr := httpapi.StrictQuery(r, HistorySingle, HistoryMulti)
	if perr != nil {
		return history.Query{}, perr
	}
	bad := func(format string, args ...any) (history.Query, *httpapi.Error) {
		return history.Query{}, httpapi.ErrBadRequest(fmt.Sprintf(format, args...))
	}
	q := history.Query{
		UIDs: v["uid"], Names: v["name"], Namespaces: v["namespace"], Kinds: v["kind"], NameContains: v.Get("nameContains"),
		Types: v["type"], Queues: v["queue"], Verbs: v["verb"], Ops: v["op"], Results: v["result"],
		Newest: true,
	}
	if n := len(q.NameContains); n > MaxNameContains {
		return bad("nameContains is %d bytes long: at most %d, the longest a Kubernetes name can be", n, MaxNameContains)
	}
	var err error
	if q.From, q.To, perr = parseRange(v, now); perr != nil {
		return history.Query{}, perr
	}
	if raw := v.Get("cascade"); raw != "" {
		if q.Cascade, err = strconv.ParseInt(raw, 10, 64); err != nil || q.Cascade < 1 {
			return bad("cascade %s: want a cascade's id (1, 2, ...)", httpapi.QuoteClip(raw))
		}
	}
	if raw := v.Get("session"); raw != "" {
		if q.Session, err = strconv.ParseInt(raw, 10, 64); err != nil || q.Session < 1 {
			return bad("session %s: want a session number (1, 2, ...)", httpapi.QuoteClip(raw))
		}
	}
	switch o := v.Get("order"); o {
	case "", "newest":
	case "oldest":
		q.Newest = false
	default:
		return history.Query{}, httpapi.ErrBadRequest(fmt.Sprintf("order %s is not one of the allowed values", httpapi.QuoteClip(o)), []string{"newest", "oldest"}...)
	}
	q.Limit = 100
	if raw := v.Get("limit"); raw != "" {
		if q.Limit, err = strconv.Atoi(raw); err != nil || q.Limit < 1 || q.Limit > history.MaxLimit {
			return bad("limit %s: want a number from 1 to %d", httpapi.QuoteClip(raw), history.MaxLimit)
		}
	}
	if raw := v.Get("cursor"); raw != "" {
		if q.Cursor, err = strconv.ParseInt(raw, 10, 64); err != nil || q.Cursor < 1 {
			return bad("cursor %s: want the nextCursor of a previous page", httpapi.QuoteClip(raw))
		}
	}
	var ve *history.ValueError
	if err := q.Validate(); errors.As(err, &ve) {
		return history.Query{}, httpapi.ErrBadRequest(fmt.Sprintf("%s %s is not one of the allowed values", ve.Dim, httpapi.QuoteClip(ve.Value)), ve.Allowed...)
	}
	return q, nil
}

// parseMoment reads a time of the history's parameters.
func parseMoment(raw string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, raw)
	switch {
	case err != nil:
		return time.Time{}, errors.New("want a time in RFC 3339, like 2026-05-01T10:00:00.123Z")
	case !history.Representable(t):
		return time.Time{}, fmt.Errorf("want a time from %s to %s, the times a recording can hold", history.EarliestMoment.Format(time.RFC3339), history.LatestMoment.Format(time.RFC3339))
	}
	return t, nil
}

// parseRange reads from=, to= and last= (which ends at now); either end may be missing.
func parseRange(v url.Values, now time.Time) (from, to time.Time, _ *httpapi.Error) {
	bad := func(format string, args ...any) (time.Time, time.Time, *httpapi.Error) {
		return time.Time{}, time.Time{}, httpapi.ErrBadRequest(fmt.Sprintf(format, args...))
	}
	var err error
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"from", &from}, {"to", &to}} {
		if raw := v.Get(t.name); raw != "" {
			if *t.to, err = parseMoment(raw); err != nil {
				return bad("%s %s: %v", t.name, httpapi.QuoteClip(raw), err)
			}
		}
	}
	if raw := v.Get("last"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return bad("last %s: want a positive duration of at most 2562047h, like 1h or 15m", httpapi.QuoteClip(raw))
		}
		if now.Add(-d).Before(history.EarliestMoment) {
			return bad("last %s reaches before %d: want a shorter duration", httpapi.QuoteClip(raw), history.EarliestMoment.Year())
		}
		if !from.IsZero() {
			return bad("last and from both say where the range starts: give one")
		}
		from = now.Add(-d)
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return bad("from %s is not before to %s", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	return from, to, nil
}

// HistoryStateResponse is the engine's state at a recorded moment.
type HistoryStateResponse struct {
	history.State
	// Queues and Nodes narrowed to what the user may see (the queues' counters stay whole).
	Queues []gc.QueueState `json:"queues"`
	Nodes  []gc.NodeState  `json:"nodes"`
}

// handleHistoryState rebuilds the graph, the queues and the sync state at ?at=TIME, or
// just after ?session=N&seq=S, from the recording: what time travel shows.
func (rs *Resource) handleHistoryState(w http.ResponseWriter, r *http.Request) {
	v, perr := httpapi.StrictQuery(r, []string{"at", "session", "seq"}, nil)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	var st history.State
	var err error
	switch at, session, seq := v.Get("at"), v.Get("session"), v.Get("seq"); {
	case at != "" && (session != "" || seq != ""):
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest("give at, or session and seq, not both"))
		return
	case at != "":
		t, terr := parseMoment(at)
		if terr != nil {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("at %s: %v", httpapi.QuoteClip(at), terr)))
			return
		}
		st, err = edge.ClusterFrom(r).History.StateAt(r.Context(), t)
	case session != "" && seq != "":
		n, serr := strconv.ParseInt(session, 10, 64)
		sq, qerr := strconv.ParseUint(seq, 10, 64)
		if serr != nil || qerr != nil || n < 1 {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("session %s and seq %s: want a session number and a sequence number", httpapi.QuoteClip(session), httpapi.QuoteClip(seq))))
			return
		}
		st, err = edge.ClusterFrom(r).History.StateAtSeq(r.Context(), n, sq)
	default:
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest("give at=TIME, or session=N and seq=S"))
		return
	}
	if err != nil {
		rs.historyError(w, err)
		return
	}
	vis := edge.VisibilityFrom(r)
	resp := HistoryStateResponse{State: st, Nodes: vis.Nodes(st.Nodes), Queues: vis.Queues(st.Queues)}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// historyError answers a failed read of the recording.
func (rs *Resource) historyError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, history.ErrNotRecorded):
		httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(err.Error()))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("reading the history took too long: narrow the query"))
	default:
		rs.Log.Warn("reading the history", "err", err)
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable("reading the history failed: "+err.Error()))
	}
}
