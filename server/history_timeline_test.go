package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/recording"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// publishCascade publishes a background cascade: owner deleted, then child deleted by the
// collector because of it.
func publishCascade(f *streamtest.Engine, owner, child gc.ObjectRef) {
	f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: owner, Observed: true}})
	f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: child, Observed: true,
		Owners: []gc.OwnerRef{{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}}}})
	f.Publish(gc.Event{Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: owner, Observed: true}})
	f.Publish(historyAction(gc.VerbDelete, child, ""))
	f.Publish(gc.Event{Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: child, Observed: true}})
}

func getJSON(t *testing.T, c *client, path string, header http.Header, v any) {
	t.Helper()
	code, body := c.do("GET", path, nil, header)
	if code != http.StatusOK || json.Unmarshal(body, v) != nil {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
}

func exported(t *testing.T, c *client, query string, header http.Header) (string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.base+"/api/v1/history/export?"+query, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export ?%s: %d %s", query, resp.StatusCode, body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(plain), resp.Header
}

func TestHistoryTimelineCascadesAndExportRoutes(t *testing.T) {
	owner, child, other := cmRef("shop", "owner"), cmRef("shop", "child"), cmRef("shop", "other")
	st, f := recordFake(t, func(f *streamtest.Engine) {
		f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: other, Observed: true}})
		publishCascade(f, owner, child)
		f.Publish(historyAction(gc.VerbDelete, other, "the object has been modified"))
	})
	srv := New(Options{History: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := newClient(t, ts)

	var tl recording.TimelineResponse
	getJSON(t, c, "/api/v1/history/timeline?buckets=10", nil, &tl)
	events, deletes, errs := 0, 0, 0
	for _, b := range tl.Buckets {
		events, deletes, errs = events+b.Events, deletes+b.Deletes, errs+b.Errors
	}
	if len(tl.Buckets) != 10 || events != int(f.LastSeq()) || deletes != 1 || errs != 1 || tl.Recording.State != history.StateRecording || tl.Gaps == nil {
		t.Fatalf("timeline: %d buckets, %d events (want %d), %d deletes, %d errors, %+v", len(tl.Buckets), events, f.LastSeq(), deletes, errs, tl.Recording)
	}
	if len(tl.Cascades) != 1 || tl.Cascades[0].Root != owner || tl.Cascades[0].Objects != 2 || tl.Cascades[0].Deleted != 2 || tl.Cascades[0].Policy != "Background" {
		t.Fatalf("timeline cascades: %+v", tl.Cascades)
	}
	var def recording.TimelineResponse
	getJSON(t, c, "/api/v1/history/timeline?last=1h", nil, &def)
	if len(def.Buckets) != history.DefaultBuckets || def.Bucket != time.Hour/history.DefaultBuckets {
		t.Fatalf("the last hour: %d buckets of %s", len(def.Buckets), def.Bucket)
	}

	id := tl.Cascades[0].ID
	for _, uid := range []string{string(owner.UID), string(child.UID)} {
		var cs recording.CascadesResponse
		getJSON(t, c, "/api/v1/history/cascades?uid="+uid, nil, &cs)
		if len(cs.Cascades) != 1 || cs.Cascades[0].ID != id {
			t.Fatalf("cascades of %s: %+v", uid, cs.Cascades)
		}
	}
	var none recording.CascadesResponse
	getJSON(t, c, "/api/v1/history/cascades?uid="+string(other.UID), nil, &none)
	if none.Cascades == nil || len(none.Cascades) != 0 {
		t.Fatalf("cascades of an object never in one: %+v", none.Cascades)
	}
	inCascade := getHistory(t, c, "cascade="+jsonOf(id), nil)
	if len(inCascade.Events) != 3 {
		t.Fatalf("the cascade's events: %d, want the owner's removal, the child's delete and its removal", len(inCascade.Events))
	}
	for _, e := range inCascade.Events {
		if e.Cascade != id {
			t.Fatalf("an event of cascade %d says %d", id, e.Cascade)
		}
	}

	file, h := exported(t, c, "", nil)
	if !strings.HasPrefix(h.Get("Content-Disposition"), "attachment; filename=gcscope-history-") || !strings.HasSuffix(h.Get("Content-Disposition"), ".jsonl.gz") {
		t.Fatalf("Content-Disposition %q", h.Get("Content-Disposition"))
	}
	lines := strings.Split(strings.TrimSpace(file), "\n")
	if !strings.Contains(lines[0], `"schema":"gcscope-history/1"`) || !strings.HasPrefix(lines[1], `{"checkpoint":`) ||
		!strings.HasPrefix(lines[len(lines)-1], `{"end":{"events":`+jsonOf(f.LastSeq())) {
		t.Fatalf("export: %s … %s", lines[0], lines[len(lines)-1])
	}
	// A window that begins before the recording: the file, and its name, begin with it.
	day, dh := exported(t, c, "last=24h", nil)
	var head struct{ From, To time.Time }
	if err := json.Unmarshal([]byte(day[:strings.IndexByte(day, '\n')]), &head); err != nil {
		t.Fatal(err)
	}
	if want := "attachment; filename=gcscope-history-" + recording.FileTime(head.From) + "-" + recording.FileTime(head.To) + ".jsonl.gz"; dh.Get("Content-Disposition") != want ||
		time.Since(head.From) > time.Hour {
		t.Fatalf("the last 24 h of a recording begun %s ago: named %q, its header from %s; want named %q after the recording's start",
			time.Since(tl.From).Round(time.Second), dh.Get("Content-Disposition"), head.From, want)
	}

	for path, want := range map[string]string{
		"/api/v1/history/timeline?buckets=0":       "buckets",
		"/api/v1/history/timeline?buckets=2001":    "buckets",
		"/api/v1/history/timeline?bucket=3":        "unknown parameter",
		"/api/v1/history/timeline?from=yesterday":  "from",
		"/api/v1/history/timeline?last=1h&last=2h": "given 2 times",
		"/api/v1/history/cascades?uid=":            "uid is empty",
		"/api/v1/history/cascades?limit=0":         "limit",
		"/api/v1/history/cascades?id=3":            "unknown parameter",
		"/api/v1/history?cascade=x":                "cascade",
		"/api/v1/history/export?from=" + url.QueryEscape(time.Now().Format(time.RFC3339)) + "&to=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)): "not before",
		"/api/v1/history/export?format=csv": "unknown parameter",
		// Beyond what a recording's times (Unix nanoseconds) can hold: refused, not wrapped.
		"/api/v1/history/timeline?from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z": "the times a recording can hold",
		"/api/v1/history/state?at=2300-01-01T00:00:00Z":                              "the times a recording can hold",
		"/api/v1/history/export?to=2262-04-12T00:00:00Z":                             "the times a recording can hold",
		"/api/v1/history?last=2000000h":                                              "shorter duration",
	} {
		code, body := c.do("GET", path, nil, nil)
		var e httpapi.Error
		if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %s, want a 400 saying %q", path, code, body, want)
		}
	}
	// Another site may not make the browser export (it could not read the file, but it
	// could make gcscope write it again and again); gcscope's own page may.
	if code, body := c.do("GET", "/api/v1/history/export", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}}); code != http.StatusForbidden || !strings.Contains(string(body), "cross-site") {
		t.Errorf("a cross-site export: %d %s, want 403", code, body)
	}
	if _, h := exported(t, c, "", http.Header{"Sec-Fetch-Site": {"same-origin"}}); h.Get("Content-Type") != "application/gzip" {
		t.Errorf("a same-origin export: %v", h)
	}
	// At most recording.MaxExports at once.
	for range recording.MaxExports {
		srv.exports <- struct{}{}
	}
	code, body := c.do("GET", "/api/v1/history/export", nil, nil)
	for range recording.MaxExports {
		<-srv.exports
	}
	if code != http.StatusTooManyRequests || !strings.Contains(string(body), "exports are in progress") {
		t.Errorf("an export beyond %d at once: %d %s, want 429", recording.MaxExports, code, body)
	}
	// A window before the recording: nothing to export.
	old := url.QueryEscape(time.Now().Add(-48 * time.Hour).Format(time.RFC3339))
	if code, body := c.do("GET", "/api/v1/history/export?from="+old+"&to="+url.QueryEscape(time.Now().Add(-47*time.Hour).Format(time.RFC3339)), nil, nil); code != http.StatusNotFound {
		t.Errorf("an export of a window not recorded: %d %s, want 404", code, body)
	}
}

func TestHistoryTimelineCascadesExportPerUser(t *testing.T) {
	w := newRBACWorld(t)
	aOwner, aChild := cmRef(w.nsA, "cascade-owner"), cmRef(w.nsA, "cascade-child")
	bOwner, bChild := cmRef(w.nsB, "cascade-owner"), cmRef(w.nsB, "cascade-child")
	st, f := recordFake(t, func(f *streamtest.Engine) {
		publishCascade(f, aOwner, aChild)
		publishCascade(f, bOwner, bChild)
	})
	ts, _ := w.e.serve(t, Options{History: st, Auth: security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews())})
	c := newClient(t, ts)
	as := func(user string) http.Header { return http.Header{"Authorization": {"Bearer " + w.tokens[user]}} }
	for user, want := range map[string]struct {
		ns    string
		root  gc.ObjectRef
		other gc.ObjectRef
	}{"alice": {w.nsA, aOwner, bChild}, "bob": {w.nsB, bOwner, aChild}, "nobody": {"", gc.ObjectRef{}, aChild}} {
		var tl recording.TimelineResponse
		getJSON(t, c, "/api/v1/history/timeline", as(user), &tl)
		total := 0
		for _, b := range tl.Buckets {
			total += b.Events
		}
		raw, _ := json.Marshal(tl)
		if total != int(f.LastSeq()) {
			t.Errorf("%s's timeline counts %d events, want all %d (counts name nothing)", user, total, f.LastSeq())
		}
		var cs recording.CascadesResponse
		getJSON(t, c, "/api/v1/history/cascades", as(user), &cs)
		var byUID recording.CascadesResponse
		getJSON(t, c, "/api/v1/history/cascades?uid="+string(want.other.UID), as(user), &byUID)
		file, _ := exported(t, c, "", as(user))
		for what, got := range map[string]string{"timeline": string(raw), "export": file} {
			for _, ns := range []string{w.nsA, w.nsB} {
				if ns != want.ns && strings.Contains(got, ns) {
					t.Errorf("%s's %s names namespace %s", user, what, ns)
				}
			}
		}
		if want.ns == "" {
			if len(tl.Cascades)+len(cs.Cascades) != 0 {
				t.Errorf("nobody sees cascades: %s", raw)
			}
			continue
		}
		if len(tl.Cascades) != 1 || tl.Cascades[0].Root != want.root || len(cs.Cascades) != 1 || cs.Cascades[0].Root != want.root {
			t.Errorf("%s's cascades: timeline %+v, list %+v; want only the one rooted at %s", user, tl.Cascades, cs.Cascades, want.root.Name)
		}
		if len(byUID.Cascades) != 0 {
			t.Errorf("%s sees the cascades of another's object: %+v", user, byUID.Cascades)
		}
		if !strings.Contains(file, string(want.root.UID)) || strings.Count(file, "\n") < 5 {
			t.Errorf("%s's export lacks its own cascade:\n%s", user, file)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
