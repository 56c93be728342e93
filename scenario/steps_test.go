package scenario

// The steps' declaration and the runner's playing of it, without a cluster.

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The menu's titles are the declared steps' titles, built without a runner, and every
// step has something to run.
func TestStepsDeclared(t *testing.T) {
	served := (&Player{}).Scenarios()
	if len(served) != len(scenarios) {
		t.Fatalf("%d scenarios served, %d declared", len(served), len(scenarios))
	}
	for i, sc := range scenarios {
		steps := sc.steps(nil) // a step that touched the runner while built would panic here
		if got, want := served[i].Steps, titles(steps); !slices.Equal(got, want) {
			t.Errorf("scenario %s: served titles %q, declared %q", sc.ID, got, want)
		}
		for j, st := range steps {
			if st.title == "" || st.run == nil {
				t.Errorf("scenario %s, step %d: title %q, run set %v", sc.ID, j, st.title, st.run != nil)
			}
			if st.user != nil && (st.user.awaiting == nil || st.user.released == nil) {
				t.Errorf("scenario %s, step %d (%s): waits for the user without awaiting or released", sc.ID, j, st.title)
			}
		}
	}
}

// testRunner is a runner of a player with no cluster, whose run has steps' titles.
func testRunner(steps []step) *runner {
	r := &run{status: Run{State: RunRunning}}
	for _, st := range steps {
		r.status.Steps = append(r.status.Steps, Step{Title: st.title, State: StepPending})
	}
	return &runner{p: &Player{}, r: r}
}

func (x *runner) snapshot() Run {
	x.p.mu.Lock()
	defer x.p.mu.Unlock()
	return x.r.status.clone()
}

// Steps play in order, each done with its detail; the first failure stops the play, its
// step failed and the next ones pending; the onEnd functions run however it ends.
func TestPlayInOrder(t *testing.T) {
	var order []string
	var x *runner
	ended := 0
	steps := []step{
		{title: "one", run: func(context.Context) (string, error) {
			order = append(order, "one")
			x.onEnd(func() { ended++ })
			return "did one", nil
		}},
		{title: "two", run: func(context.Context) (string, error) {
			order = append(order, "two")
			return "", errors.New("two broke")
		}},
		{title: "three", run: func(context.Context) (string, error) {
			order = append(order, "three")
			return "did three", nil
		}},
	}
	x = testRunner(steps)
	err := x.play(context.Background(), steps)
	if err == nil || err.Error() != "two broke" {
		t.Fatalf("play: %v, want two broke", err)
	}
	if !slices.Equal(order, []string{"one", "two"}) || ended != 1 {
		t.Errorf("ran %v, onEnd ran %d times", order, ended)
	}
	s := x.snapshot()
	want := []Step{{Title: "one", State: StepDone, Detail: "did one"}, {Title: "two", State: StepFailed, Detail: "two broke"}, {Title: "three", State: StepPending}}
	for i, w := range want {
		if g := s.Steps[i]; g.Title != w.Title || g.State != w.State || g.Detail != w.Detail {
			t.Errorf("step %d: %s %q %q, want %s %q %q", i, g.State, g.Title, g.Detail, w.State, w.Title, w.Detail)
		}
	}
	if s.Step != 1 {
		t.Errorf("current step %d, want 1", s.Step)
	}
}

// A step waiting for the user holds the run, shows what it awaits, and is done with its
// run's detail once released; the run goes on.
func TestPlayWaitsForUser(t *testing.T) {
	var released atomic.Bool
	steps := []step{
		{title: "act", run: func(context.Context) (string, error) { return "acted", nil }},
		{title: "release", user: &userWait{
			awaiting: func() string { return "waiting for you" },
			released: func(context.Context) (bool, error) { return released.Load(), nil },
		}, run: func(context.Context) (string, error) { return "you released", nil }},
		{title: "watch", run: func(context.Context) (string, error) { return "watched", nil }},
	}
	x := testRunner(steps)
	done := make(chan error, 1)
	go func() { done <- x.play(context.Background(), steps) }()
	testkit.Eventually(t, "the run waiting for the user", func() bool {
		s := x.snapshot()
		return s.State == RunWaiting && s.Hold && s.Step == 1 && s.Steps[1].State == StepWaiting && s.Steps[1].Detail == "waiting for you"
	})
	if s := x.snapshot(); s.Steps[2].State != StepPending {
		t.Errorf("the step after the wait is %s before the release", s.Steps[2].State)
	}
	released.Store(true)
	if err := <-done; err != nil {
		t.Fatalf("play: %v", err)
	}
	s := x.snapshot()
	if s.State != RunRunning || s.Hold || s.Step != 2 {
		t.Errorf("after the release: state %s, hold %v, step %d", s.State, s.Hold, s.Step)
	}
	for i, d := range []string{"acted", "you released", "watched"} {
		if s.Steps[i].State != StepDone || s.Steps[i].Detail != d {
			t.Errorf("step %d: %s %q, want done %q", i, s.Steps[i].State, s.Steps[i].Detail, d)
		}
	}
}

// A stopped wait for the user ends the play with the context's error; the step stays
// waiting, as the run shows it.
func TestPlayWaitStopped(t *testing.T) {
	steps := []step{{title: "release", user: &userWait{
		awaiting: func() string { return "waiting for you" },
		released: func(context.Context) (bool, error) { return false, nil },
	}, run: func(context.Context) (string, error) { return "never", nil }}}
	x := testRunner(steps)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := x.play(ctx, steps); !errors.Is(err, context.Canceled) {
		t.Fatalf("play: %v, want context canceled", err)
	}
	if s := x.snapshot(); s.Steps[0].State != StepWaiting || s.Hold {
		t.Errorf("stopped wait: step %s, hold %v", s.Steps[0].State, s.Hold)
	}
}
