package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/recording"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// countingAuthz allows listing in one namespace and counts the questions it is asked.
type countingAuthz struct {
	allow string
	mu    sync.Mutex
	asked int
}

func (a *countingAuthz) Allowed(_ context.Context, _ *security.User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	return res != nil && res.Namespace == a.allow, nil
}

func (a *countingAuthz) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked
}

// recordConfigMaps records a ConfigMap named name in each of namespaces.
func recordConfigMaps(f *streamtest.Engine, name string, namespaces ...string) {
	for _, ns := range namespaces {
		f.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: cmRef(ns, name), Observed: true}})
	}
}

// TestASearchOfTheRecordingAsksTheSameWhateverItFinds: a user of one namespace searching
// the recording by name makes the same access reviews whether the name is found in 30
// namespaces they may not see or nowhere, and finds only their own. Asked only for what
// matched, the first search took 30 reviews and the second none: its delay told that the
// name exists where the user may not look (a trial saw 10 s against 4 ms).
func TestASearchOfTheRecordingAsksTheSameWhateverItFinds(t *testing.T) {
	e := env(t)
	hidden := make([]string, 30)
	for i := range hidden {
		hidden[i] = fmt.Sprintf("team-%02d", i)
	}
	st, _ := recordFake(t, func(f *streamtest.Engine) {
		recordConfigMaps(f, "payroll-keys", hidden...)
		recordConfigMaps(f, "payroll-mine", "mine")
		recordConfigMaps(f, "plain", "mine")
	})
	authz := &countingAuthz{allow: "mine"}
	ts, _ := e.serve(t, Options{History: st, Authorizer: authz})
	c := newClient(t, ts)

	reviews := map[string]int{}
	for _, search := range []string{"nameContains=payroll-keys", "nameContains=absent-anywhere", "name=payroll-keys", "name=absent", "nameContains=payroll"} {
		before := authz.count()
		resp := getHistory(t, c, search, nil)
		reviews[search] = authz.count() - before
		for _, ev := range resp.Events {
			if ev.Object == nil || ev.Object.Namespace != "mine" {
				t.Errorf("%s: the user of namespace mine sees %+v", search, ev.Object)
			}
		}
		if search == "nameContains=payroll" && len(resp.Events) != 1 {
			t.Errorf("%s: %d events, want the one about mine/payroll-mine", search, len(resp.Events))
		}
	}
	want := reviews["nameContains=absent-anywhere"]
	if want < len(hidden) {
		t.Errorf("a search asked %d questions: the user's access in each of the %d namespaces recorded must be asked before matching", want, len(hidden)+1)
	}
	for _, n := range reviews {
		if n != want {
			t.Errorf("access reviews per search differ with what it finds: %v", reviews)
			break
		}
	}

	// Namespaces the recording does not hold cost no review: made-up names must not buy
	// questions the cache has never answered (a rerun's 247 reviews per request).
	var madeUp []string
	for i := range 20 {
		madeUp = append(madeUp, fmt.Sprintf("namespace=made-up-%d", i))
	}
	before := authz.count()
	getHistory(t, c, strings.Join(madeUp, "&"), nil)
	if n := authz.count() - before; n > 2 {
		t.Errorf("a search of 20 namespaces never recorded asked %d questions", n)
	}
}

// TestASearchTooBroadForTheUsersAccessIsRefused: when the user's access would have to be
// asked in more places than recording.MaxSearchReviews, a search by name is refused (whatever it
// would find) with how to narrow it, and a search of the user's namespace still answers.
func TestASearchTooBroadForTheUsersAccessIsRefused(t *testing.T) {
	e := env(t)
	many := make([]string, recording.MaxSearchReviews+1)
	for i := range many {
		many[i] = fmt.Sprintf("tenant-%03d", i)
	}
	st, _ := recordFake(t, func(f *streamtest.Engine) {
		recordConfigMaps(f, "ledger", many...)
		recordConfigMaps(f, "ledger", "mine")
	})
	authz := &countingAuthz{allow: "mine"}
	ts, _ := e.serve(t, Options{History: st, Authorizer: authz})
	c := newClient(t, ts)
	for _, search := range []string{"nameContains=ledger", "nameContains=absent"} {
		before := authz.count()
		code, body := c.do("GET", "/api/v1/history?"+search, nil, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "namespace=") {
			t.Errorf("%s: %d %s, want 400 saying to name the namespaces", search, code, body)
		}
		if n := authz.count() - before; n > 10 {
			t.Errorf("%s: a refused search asked %d questions: it must refuse before asking namespace by namespace", search, n)
		}
	}
	resp := getHistory(t, c, "nameContains=ledger&namespace=mine", nil)
	if len(resp.Events) != 1 || resp.Events[0].Object.Namespace != "mine" {
		raw, _ := json.Marshal(resp.Events)
		t.Fatalf("the search of namespace mine: %s, want its ledger", raw)
	}
	// Browsing without a search is not refused: it asks for what it reads, as the graph does.
	getHistory(t, c, "limit=5", nil)
}
