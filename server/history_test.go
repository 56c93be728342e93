package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/recording"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// recordFake records what publish publishes on a fake engine into a fresh history.
func recordFake(t *testing.T, publish func(f *streamtest.Engine)) (*history.Store, *streamtest.Engine) {
	t.Helper()
	return recordFakeStore(t, func(f *streamtest.Engine, _ *history.Store) { publish(f) })
}

// recordFakeStore is recordFake for a publisher that watches the recording as it goes.
func recordFakeStore(t *testing.T, publish func(f *streamtest.Engine, st *history.Store)) (*history.Store, *streamtest.Engine) {
	t.Helper()
	f := streamtest.NewEngine(1 << 12)
	st, err := history.Open(history.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- history.NewRecorder(st, f, history.RecorderOptions{FlushInterval: 5 * time.Millisecond}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	testkit.Eventually(t, "the recorder to start", func() bool { return st.Status().State == history.StateRecording })
	publish(f, st)
	testkit.Eventually(t, "the recorder to catch up", func() bool { return st.Status().Seq >= f.LastSeq() })
	return st, f
}

func cmRef(ns, name string) gc.ObjectRef {
	return gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)}
}

func historyAction(verb gc.ActionVerb, obj gc.ObjectRef, errText string) gc.Event {
	return gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: verb, Object: obj, Policy: "Background", Reason: "all its owners are gone", Error: errText}}
}

func historyServer(t *testing.T, o Options) (*httptest.Server, *client) {
	t.Helper()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := New(o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, newClient(t, ts)
}

func getHistory(t *testing.T, c *client, query string, header http.Header) recording.HistoryResponse {
	t.Helper()
	code, body := c.do("GET", "/api/v1/history?"+query, nil, header)
	var resp recording.HistoryResponse
	if code != http.StatusOK || json.Unmarshal(body, &resp) != nil {
		t.Fatalf("GET /api/v1/history?%s: %d %s", query, code, body)
	}
	return resp
}

func TestHistoryRoutes(t *testing.T) {
	owner, child, other := cmRef("shop", "owner"), cmRef("shop", "child"), cmRef("shop", "other")
	var mid gc.Snapshot
	var midTime time.Time
	st, f := recordFake(t, func(f *streamtest.Engine) {
		for _, r := range []gc.ObjectRef{owner, child, other} {
			f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: r, Observed: true}})
		}
		f.Publish(gc.Event{Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: owner, Observed: true}})
		mid = f.Snapshot()
		evs, _ := f.Feed().Since(mid.Seq-1, 1)
		midTime = evs[0].Time
		f.Publish(historyAction(gc.VerbDelete, child, ""))
		f.Publish(historyAction(gc.VerbDelete, other, "the object has been modified"))
		f.Publish(gc.Event{Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: child, Observed: true}})
	})
	_, c := historyServer(t, Options{History: st})

	all := getHistory(t, c, "", nil)
	if len(all.Events) != int(f.LastSeq()) || all.Recording.State != history.StateRecording || all.Gaps == nil {
		t.Fatalf("everything: %d events (want %d), recording %+v, gaps %v", len(all.Events), f.LastSeq(), all.Recording, all.Gaps)
	}
	for i := 1; i < len(all.Events); i++ {
		if all.Events[i].Pos >= all.Events[i-1].Pos {
			t.Fatal("not newest first by default")
		}
	}
	deletes := getHistory(t, c, "order=oldest&type=action&verb=delete", nil)
	if len(deletes.Events) != 2 || deletes.Events[0].Action.Object.Name != "child" || deletes.Events[1].Action.Object.Name != "other" {
		t.Fatalf("the deletes, oldest first: %+v", deletes.Events)
	}
	if errs := getHistory(t, c, "result=error", nil); len(errs.Events) != 1 || errs.Events[0].Action.Error == "" {
		t.Fatalf("the failed actions: %+v", errs.Events)
	}
	if byName := getHistory(t, c, "name=child&kind=configmap&namespace=shop", nil); len(byName.Events) != 3 {
		t.Fatalf("child's events: %d, want its add, its delete and its removal", len(byName.Events))
	}
	if none := getHistory(t, c, "from="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), nil); none.Events == nil || len(none.Events) != 0 {
		t.Fatalf("the future: %+v", none.Events)
	}
	if last := getHistory(t, c, "last=1h", nil); len(last.Events) != len(all.Events) {
		t.Fatalf("the last hour: %d events, want %d", len(last.Events), len(all.Events))
	}
	// Pages of 2, newest first, follow nextCursor to the end.
	var paged []int64
	cursor := ""
	for range 100 {
		p := getHistory(t, c, "limit=2"+cursor, nil)
		for _, e := range p.Events {
			paged = append(paged, e.Pos)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + p.NextCursor
	}
	var want []int64
	for _, e := range all.Events {
		want = append(want, e.Pos)
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("pages of 2 give %v, want %v", paged, want)
	}

	for query, allowed := range map[string][]string{
		"verb=obliterate": history.Words("verb"),
		"order=sideways":  {"newest", "oldest"},
		"limit=0":         nil,
		"limit=abc":       nil,
		"from=yesterday":  nil,
		"last=-1h":        nil,
		"last=1h&from=" + url.QueryEscape(time.Now().Format(time.RFC3339)): nil,
		"cursor=-3":       nil,
		"session=zero":    nil,
		"bogus=1":         append(slices.Clone(recording.HistorySingle), recording.HistoryMulti...),
		"limit=1&limit=2": append(slices.Clone(recording.HistorySingle), recording.HistoryMulti...),
	} {
		code, body := c.do("GET", "/api/v1/history?"+query, nil, nil)
		var e httpapi.Error
		if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Code != "bad_request" || !slices.Equal(e.Allowed, allowed) {
			t.Errorf("?%s: %d %s, want a 400 listing %v", query, code, body, allowed)
		}
	}
	// A search as long as the longest name is a search; 500,000 characters (once a 503
	// with the store's "pattern too complex") is a 400 that says the limit.
	if code, body := c.do("GET", "/api/v1/history?nameContains="+strings.Repeat("a", recording.MaxNameContains), nil, nil); code != http.StatusOK {
		t.Errorf("nameContains of %d characters: %d %s", recording.MaxNameContains, code, body)
	}
	if code, body := c.do("GET", "/api/v1/history?nameContains="+strings.Repeat("a", 500_000), nil, nil); code != http.StatusBadRequest ||
		!strings.Contains(string(body), "at most 253") {
		t.Errorf("nameContains of 500,000 characters: %d %.200s, want a 400 saying the limit", code, body)
	}

	// The state at the moment the owner had just gone.
	state := func(query string) recording.HistoryStateResponse {
		t.Helper()
		code, body := c.do("GET", "/api/v1/history/state?"+query, nil, nil)
		var s recording.HistoryStateResponse
		if code != http.StatusOK || json.Unmarshal(body, &s) != nil {
			t.Fatalf("state ?%s: %d %s", query, code, body)
		}
		return s
	}
	names := func(nodes []gc.NodeState) (out []string) {
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	wantNames := names(mid.Nodes)
	if s := state("at=" + url.QueryEscape(midTime.Format(time.RFC3339Nano))); !slices.Equal(names(s.Nodes), wantNames) || s.Seq != mid.Seq {
		t.Fatalf("the state at the owner's removal: %v at seq %d, want %v at %d", names(s.Nodes), s.Seq, wantNames, mid.Seq)
	}
	if s := state("session=1&seq=" + strconv.FormatUint(mid.Seq, 10)); !slices.Equal(names(s.Nodes), wantNames) {
		t.Fatalf("the state at seq %d: %v, want %v", mid.Seq, names(s.Nodes), wantNames)
	}
	for query, code := range map[string]int{
		"at=2001-01-01T00:00:00Z":       http.StatusNotFound,
		"session=1&seq=100000":          http.StatusNotFound,
		"at=now":                        http.StatusBadRequest,
		"at=2001-01-01T00:00:00Z&seq=3": http.StatusBadRequest,
		"session=1":                     http.StatusBadRequest,
		"":                              http.StatusBadRequest,
		"when=1":                        http.StatusBadRequest,
	} {
		if got, body := c.do("GET", "/api/v1/history/state?"+query, nil, nil); got != code {
			t.Errorf("state ?%s: %d %s, want %d", query, got, body, code)
		}
	}
	// A search box's query: part of a name, in any case.
	if got := getHistory(t, c, "nameContains=WNE", nil); len(got.Events) == 0 || slices.ContainsFunc(got.Events, func(r history.Record) bool {
		return r.Object == nil || !strings.Contains(r.Object.Name, "wne")
	}) {
		t.Errorf("nameContains=WNE: %d events, want the owner's only", len(got.Events))
	}
	if _, body := c.do("GET", "/api/v1/history/state?session=99&seq=1", nil, nil); !strings.Contains(string(body), "no session 99") {
		t.Errorf("a session that never was: %s, want it said so", body)
	}

	code, body := c.do("GET", "/metrics", nil, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "gcscope_history_events_recorded_total") || !strings.Contains(string(body), "gcscope_history_recording_paused 0") {
		t.Fatalf("/metrics does not carry the recording's metrics: %d", code)
	}
}

func TestHistoryOffAnswers503(t *testing.T) {
	_, c := historyServer(t, Options{})
	for _, path := range []string{"/api/v1/history", "/api/v1/history/state?at=2026-01-01T00:00:00Z"} {
		code, body := c.do("GET", path, nil, nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "--history") {
			t.Errorf("%s without a recording: %d %s, want 503 naming --history", path, code, body)
		}
	}
}

// TestHistoryPerUser: with --auth=kubernetes the history answers each user only the
// events of objects it may list, and no event names an object it may not see; so does
// the state at a moment.
func TestHistoryPerUser(t *testing.T) {
	w := newRBACWorld(t)
	a, b := cmRef(w.nsA, "recorded-a"), cmRef(w.nsB, "recorded-b")
	st, _ := recordFake(t, func(f *streamtest.Engine) {
		f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: a, Observed: true}})
		f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: b, Observed: true}})
		// A look-up of a's owner made for b: bob sees it, without a named.
		f.Publish(gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: b, For: &a,
			Reason: "look up owner of ConfigMap recorded-a: found"}})
		f.Publish(historyAction(gc.VerbDelete, a, ""))
		f.Publish(historyAction(gc.VerbDelete, b, ""))
	})
	ts, _ := w.e.serve(t, Options{History: st, Auth: security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews())})
	c := newClient(t, ts)
	as := func(user string) http.Header { return http.Header{"Authorization": {"Bearer " + w.tokens[user]}} }
	for user, want := range map[string]struct {
		ns     string
		events int
	}{"alice": {w.nsA, 2}, "bob": {w.nsB, 3}, "nobody": {"", 0}} {
		resp := getHistory(t, c, "", as(user))
		raw, _ := json.Marshal(resp.Events)
		if len(resp.Events) != want.events {
			t.Errorf("%s sees %d events, want %d: %s", user, len(resp.Events), want.events, raw)
		}
		for _, e := range resp.Events {
			if e.Object == nil || e.Object.Namespace != want.ns {
				t.Errorf("%s sees an event about %+v", user, e.Object)
			}
		}
		for _, other := range []string{w.nsA, w.nsB} {
			if other != want.ns && strings.Contains(string(raw), other) {
				t.Errorf("%s's history names namespace %s: %s", user, other, raw)
			}
		}
		code, body := c.do("GET", "/api/v1/history/state?session=1&seq=5", nil, as(user))
		var s recording.HistoryStateResponse
		if code != http.StatusOK || json.Unmarshal(body, &s) != nil {
			t.Fatalf("state as %s: %d %s", user, code, body)
		}
		for _, n := range s.Nodes {
			if n.Namespace != want.ns {
				t.Errorf("%s's state holds %s/%s", user, n.Namespace, n.Name)
			}
		}
		if want.events > 0 && len(s.Nodes) != 1 {
			t.Errorf("%s's state holds %d nodes, want its one", user, len(s.Nodes))
		}
	}
	bob := getHistory(t, c, "verb=get", as("bob"))
	if len(bob.Events) != 1 || bob.Events[0].Action.For != nil || !strings.Contains(bob.Events[0].Action.Reason, "an object you may not see") {
		t.Fatalf("bob's look-up made for alice's object: %+v", bob.Events)
	}
}
