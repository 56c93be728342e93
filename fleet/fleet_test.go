package fleet

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/registry"
)

// apiserver answers /version as an apiserver does, or 500 while failing is set.
func apiserver(t *testing.T, failing *atomic.Bool) *rest.Config {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing != nil && failing.Load() {
			http.Error(w, "etcd is down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`))
	}))
	t.Cleanup(ts.Close)
	return &rest.Config{Host: ts.URL}
}

// engine is a stand-in engine: started when the test says, stopped with err when the
// test says or when its context ends.
type engine struct {
	started chan struct{}
	stop    chan error
}

func newEngine() *engine { return &engine{started: make(chan struct{}), stop: make(chan error, 1)} }

func (e *engine) Started() <-chan struct{} { return e.started }

func (e *engine) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.stop:
		return err
	}
}

// builder builds each cluster with the engine engines gives its name.
type builder struct {
	engines map[string]chan *engine
	stopped atomic.Int32 // Built.Stop calls
}

func (b *builder) build(_ context.Context, name string, _ *rest.Config) (*Built, error) {
	e := <-b.engines[name]
	return &Built{Cluster: registry.Cluster{}, Engine: e, Stop: func() { b.stopped.Add(1) }}, nil
}

func state(f *Fleet, name string) registry.Status {
	for _, st := range f.List() {
		if st.Name == name {
			return st
		}
	}
	return registry.Status{}
}

// A member goes idle → connecting → syncing (with a cluster to serve) → ready, started when
// first opened; a member whose apiserver cannot be reached fails with why, and holds
// neither the default member nor another.
func TestMembersStartWhenOpenedAndFailAlone(t *testing.T) {
	b := &builder{engines: map[string]chan *engine{"east": make(chan *engine, 1), "west": make(chan *engine, 1)}}
	f, err := New(Options{Build: b.build, Members: []Member{
		{Name: "east", Config: apiserver(t, nil)},
		{Name: "gone", Config: &rest.Config{Host: "http://127.0.0.1:1"}},
		{Name: "west", Config: apiserver(t, nil)},
		{Name: "broken", Err: errors.New("exec plugin: aws not found")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	if st := f.List(); st[0].Name != "east" || !st[0].Default || st[1].Default || st[0].State != registry.Idle {
		t.Fatalf("before Start: %+v; want east first, the default, idle", st)
	}
	if st := state(f, "broken"); st.State != registry.Failed || !strings.Contains(st.Reason, "aws not found") {
		t.Errorf("a member the kubeconfig cannot configure: %+v; want failed with why", st)
	}
	f.Start(false)
	if st := state(f, "east"); st.State != registry.Connecting {
		t.Errorf("east just started: %s, want connecting", st.State)
	}
	if st := state(f, "west"); st.State != registry.Idle {
		t.Errorf("west before it is opened: %s, want idle", st.State)
	}
	east := newEngine()
	b.engines["east"] <- east
	testkit.Eventually(t, "east syncing", func() bool { return state(f, "east").State == registry.Syncing })
	if c, _, _ := f.Open("east", true); c == nil {
		t.Error("a syncing member has no cluster to serve")
	}
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "syncing") {
		t.Errorf("Ready while the default member syncs: %v", err)
	}
	close(east.started)
	testkit.Eventually(t, "east ready", func() bool { return state(f, "east").State == registry.Ready })
	if err := f.Ready(); err != nil {
		t.Errorf("Ready with the default member ready: %v", err)
	}

	// Asked for without start (another site's request), gone stays idle.
	if c, st, _ := f.Open("gone", false); c != nil || st.State != registry.Idle {
		t.Errorf("gone asked for without start: %v %+v; want idle, not started", c, st)
	}
	// Opening gone starts it; it fails with why; west, opened after, is not held by it.
	if c, st, known := f.Open("gone", true); c != nil || !known || st.State != registry.Connecting {
		t.Errorf("gone opened: %v %+v %v; want no cluster yet, connecting", c, st, known)
	}
	testkit.Eventually(t, "gone failed", func() bool { return state(f, "gone").State == registry.Failed })
	if st := state(f, "gone"); !strings.Contains(st.Reason, "cannot reach http://127.0.0.1:1") {
		t.Errorf("gone failed for %q; want that it cannot reach its apiserver", st.Reason)
	}
	f.Open("west", true)
	west := newEngine()
	close(west.started)
	b.engines["west"] <- west
	testkit.Eventually(t, "west ready", func() bool { return state(f, "west").State == registry.Ready })
	if _, _, known := f.Open("nowhere", true); known {
		t.Error("a name the fleet does not have is known")
	}
}

// A member that failed is started again when opened once RetryAfter has passed, not
// before; an engine that stops on its own fails its member, and what was built around it
// is undone.
func TestAFailedMemberIsRetried(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	b := &builder{engines: map[string]chan *engine{"east": make(chan *engine, 2)}}
	f, err := New(Options{Build: b.build, RetryAfter: time.Second, Members: []Member{{Name: "east", Config: apiserver(t, &failing)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.Start(false)
	testkit.Eventually(t, "east failed", func() bool { return state(f, "east").State == registry.Failed })
	if st := state(f, "east"); !strings.Contains(st.Reason, "etcd is down") {
		t.Errorf("reason %q; want the apiserver's answer", st.Reason)
	}
	failing.Store(false)
	if _, st, _ := f.Open("east", true); st.State != registry.Failed {
		t.Errorf("opened again at once: %s; want still failed until RetryAfter", st.State)
	}
	e := newEngine()
	close(e.started)
	b.engines["east"] <- e
	// Nobody opens it: it is retried by itself.
	testkit.Eventually(t, "east retried by itself and ready", func() bool { return state(f, "east").State == registry.Ready })

	e.stop <- errors.New("informers gone")
	testkit.Eventually(t, "east failed when its engine stopped", func() bool { return state(f, "east").State == registry.Failed })
	if st := state(f, "east"); !strings.Contains(st.Reason, "garbage collector stopped: informers gone") {
		t.Errorf("reason %q", st.Reason)
	}
	if c, _, _ := f.Open("east", true); c != nil {
		t.Error("a failed member still has a cluster to serve")
	}
	testkit.Eventually(t, "what was built undone", func() bool { return b.stopped.Load() == 1 })
}

// Two members of one name are a mistake.
func TestNamesAreUnique(t *testing.T) {
	if _, err := New(Options{Members: []Member{{Name: "a"}, {Name: "a"}}}); err == nil {
		t.Error("two members named a were accepted")
	}
}

// troubled is an engine that cannot list some of what it monitors.
type troubled struct {
	*engine
	failing map[string]string
}

func (e troubled) SyncState() gc.SyncState {
	return gc.SyncState{Resources: []string{"v1/pods", "v1/secrets", "v1/configmaps"}, Failing: e.failing}
}

// A ready member whose apiserver stops answering stays ready (its engine goes on) and
// says so; one whose engine cannot list what it monitors says that.
func TestAReadyMemberSaysWhatItCannotSee(t *testing.T) {
	var failing atomic.Bool
	e := troubled{engine: newEngine(), failing: map[string]string{"v1/secrets": "secrets is forbidden: User \"x\" cannot list"}}
	close(e.started)
	f, err := New(Options{CheckEvery: 50 * time.Millisecond, Members: []Member{{Name: "east", Config: apiserver(t, &failing)}},
		Build: func(context.Context, string, *rest.Config) (*Built, error) {
			return &Built{Engine: e, Stop: func() {}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.Start(false)
	testkit.Eventually(t, "east ready", func() bool { return state(f, "east").State == registry.Ready })
	if st := state(f, "east"); !strings.Contains(st.Reason, "1 of 3 monitored resources cannot be listed or watched (v1/secrets: secrets is forbidden") {
		t.Errorf("a ready engine that cannot list secrets: reason %q", st.Reason)
	}
	failing.Store(true)
	testkit.Eventually(t, "east says its apiserver does not answer", func() bool {
		st := state(f, "east")
		return st.State == registry.Ready && strings.Contains(st.Reason, "does not answer")
	})
	failing.Store(false)
	testkit.Eventually(t, "east answers again", func() bool { return !strings.Contains(state(f, "east").Reason, "does not answer") })
}

// A member the kubeconfig could not configure is configured again when opened after
// RetryAfter (its file fixed since), then starts.
func TestAMemberIsConfiguredAgain(t *testing.T) {
	var fixed atomic.Bool
	cfg := apiserver(t, nil)
	b := &builder{engines: map[string]chan *engine{"east": make(chan *engine, 1)}}
	f, err := New(Options{Build: b.build, RetryAfter: 100 * time.Millisecond, Members: []Member{{Name: "east",
		Err: errors.New("client-certificate /home/me/east.crt: no such file"),
		Reload: func() (*rest.Config, error) {
			if !fixed.Load() {
				return nil, errors.New("client-certificate /home/me/east.crt: still no such file")
			}
			return cfg, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	e := newEngine()
	close(e.started)
	b.engines["east"] <- e
	testkit.Eventually(t, "opened again, still failing", func() bool {
		_, st, _ := f.Open("east", true)
		return strings.Contains(st.Reason, "still no such file")
	})
	fixed.Store(true)
	testkit.Eventually(t, "opened again, configured and ready", func() bool {
		_, st, _ := f.Open("east", true)
		return st.State == registry.Ready
	})
}
