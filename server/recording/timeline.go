package recording

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// TimelineResponse is the recording seen from afar, for the page's timeline.
type TimelineResponse struct {
	history.Timeline
	Recording history.Status `json:"recording"`
}

// handleHistoryTimeline answers GET /api/v1/history/timeline?from=&to=&last=&buckets=N:
// events, deletes and errors per bucket, the cascades and the gaps. Without from (or
// last), from the oldest recorded moment; without to, until now.
func (rs *Resource) handleHistoryTimeline(w http.ResponseWriter, r *http.Request) {
	v, from, to, status, ok := rs.historyWindow(w, r, "buckets")
	if !ok {
		return
	}
	buckets := history.DefaultBuckets
	if raw := v.Get("buckets"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > history.MaxBuckets {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("buckets %s: want a number from 1 to %d", httpapi.QuoteClip(raw), history.MaxBuckets)))
			return
		}
		buckets = n
	}
	tl, err := edge.ClusterFrom(r).History.Timeline(r.Context(), history.TimelineQuery{From: from, To: to, Buckets: buckets, Visible: edge.VisibilityFrom(r).Func()})
	if err != nil {
		rs.historyError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, TimelineResponse{Timeline: tl, Recording: status})
}

// historyWindow reads the window a request names (from, to, last, and the parameters of
// its own in extra) and fills its missing ends from the cluster's recording (defaultRange);
// false when it has answered 400.
func (rs *Resource) historyWindow(w http.ResponseWriter, r *http.Request, extra ...string) (v url.Values, from, to time.Time, status history.Status, ok bool) {
	v, perr := httpapi.StrictQuery(r, append([]string{"from", "to", "last"}, extra...), nil)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return nil, from, to, status, false
	}
	now := time.Now()
	if from, to, perr = parseRange(v, now); perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return nil, from, to, status, false
	}
	status = edge.ClusterFrom(r).History.Status()
	from, to, ok = rs.defaultRange(w, from, to, status, now)
	return v, from, to, status, ok
}

// defaultRange fills a range's missing ends: from the recording's oldest moment (or an
// hour before to, when it holds nothing), until now (or the newest event, for a
// recording that no longer grows: a replay).
func (rs *Resource) defaultRange(w http.ResponseWriter, from, to time.Time, status history.Status, now time.Time) (time.Time, time.Time, bool) {
	if to.IsZero() {
		to = now
		if rs.Replay && !status.Newest.IsZero() {
			to = status.Newest.Add(time.Nanosecond)
		}
	}
	if from.IsZero() {
		from = status.Oldest
		if from.IsZero() || !from.Before(to) {
			from = to.Add(-time.Hour)
		}
		if from.Before(history.EarliestMoment) {
			from = history.EarliestMoment // an hour before 1970 is not a moment a recording holds
		}
	}
	if !from.Before(to) {
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("from %s is not before to %s", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))))
		return from, to, false
	}
	return from, to, true
}

// CascadesResponse lists recorded cascades, newest first.
type CascadesResponse struct {
	Cascades  []history.Cascade `json:"cascades"`
	Recording history.Status    `json:"recording"`
}

// handleHistoryCascades answers GET /api/v1/history/cascades?uid=&from=&to=&last=&limit=:
// the cascades (those the object uid was the root or a member of), newest first.
func (rs *Resource) handleHistoryCascades(w http.ResponseWriter, r *http.Request) {
	v, perr := httpapi.StrictQuery(r, []string{"uid", "from", "to", "last", "limit"}, nil)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	from, to, perr := parseRange(v, time.Now())
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	q := history.CascadeQuery{From: from, To: to, UID: v.Get("uid"), Limit: 100}
	if raw := v.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > history.MaxCascades {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("limit %s: want a number from 1 to %d", httpapi.QuoteClip(raw), history.MaxCascades)))
			return
		}
		q.Limit = n
	}
	if v.Has("uid") && q.UID == "" {
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest("uid is empty: give an object's uid, or leave uid out for every cascade"))
		return
	}
	q.Visible = edge.VisibilityFrom(r).Func()
	cs, err := edge.ClusterFrom(r).History.Cascades(r.Context(), q)
	if err != nil {
		rs.historyError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, CascadesResponse{Cascades: cs, Recording: edge.ClusterFrom(r).History.Status()})
}
