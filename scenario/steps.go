package scenario

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// step is one step of a scenario, declared once: the title the menu and the run show,
// and what plays it. A scenario's steps are built by a function of the runner (its
// locals are what the steps share), and the menu builds them with a nil runner to read
// the titles: building must not touch the runner, only the steps' run may.
type step struct {
	title string
	// user, when set, makes the step wait for the user before run.
	user *userWait
	// run acts and waits; detail says what happened. For a step waiting for the user,
	// it runs once the user released, and says what they did.
	run func(ctx context.Context) (detail string, err error)
}

// userWait is what a step waiting for the user asks and watches.
type userWait struct {
	// awaiting says what the user is asked; read when the step is reached.
	awaiting func() string
	// released reports whether the user did it; polled with no time limit but the run's.
	released func(ctx context.Context) (bool, error)
}

// titles are the titles of steps, in order.
func titles(steps []step) []string {
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.title
	}
	return out
}

// info is what the menu shows of s: its steps' titles come from their declaration.
func (s scenario) info() Info {
	i := s.Info
	i.Steps = titles(s.steps(nil))
	return i
}

// play plays steps in order and stops at the first that fails; then the functions
// registered with onEnd run, last first.
func (x *runner) play(ctx context.Context, steps []step) error {
	defer func() {
		for _, f := range slices.Backward(x.atEnd) {
			f()
		}
	}()
	for i, st := range steps {
		var err error
		if st.user != nil {
			err = x.waitForUser(ctx, i, st)
		} else {
			err = x.step(ctx, i, st.run, i < len(steps)-1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// onEnd registers f to run when the run ends, however it ends.
func (x *runner) onEnd(f func()) { x.atEnd = append(x.atEnd, f) }

// step runs step i: reported running, then done with the detail run returns, or failed.
// A done step's result stays Options.Pause before the next one acts (when pause is set).
func (x *runner) step(ctx context.Context, i int, run func(context.Context) (string, error), pause bool) error {
	x.p.update(x.r, func(s *Run) {
		s.Step = i
		s.Steps[i].State, s.Steps[i].At = StepRunning, time.Now()
	})
	detail, err := run(ctx)
	x.p.update(x.r, func(s *Run) {
		s.Steps[i].At = time.Now()
		if err != nil {
			s.Steps[i].State, s.Steps[i].Detail = StepFailed, err.Error()
			return
		}
		s.Steps[i].State, s.Steps[i].Detail = StepDone, detail
	})
	if err != nil {
		return err
	}
	if pause && x.p.opts.Pause > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(x.p.opts.Pause):
		}
	}
	return nil
}

// waitForUser marks step i as waiting on the user (st.user.awaiting says for what) and
// polls st.user.released, with no time limit but the run's; then the step is done, with
// the detail st.run returns. The next step follows at once.
func (x *runner) waitForUser(ctx context.Context, i int, st step) error {
	awaiting := st.user.awaiting()
	x.p.update(x.r, func(s *Run) {
		s.Step, s.State, s.Hold = i, RunWaiting, true
		s.Steps[i].State, s.Steps[i].Detail, s.Steps[i].At = StepWaiting, awaiting, time.Now()
	})
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, st.user.released)
	x.p.update(x.r, func(s *Run) { s.State, s.Hold = RunRunning, false })
	if err != nil {
		return err
	}
	detail, err := st.run(ctx)
	x.p.update(x.r, func(s *Run) {
		s.Steps[i].At = time.Now()
		if err != nil {
			s.Steps[i].State, s.Steps[i].Detail = StepFailed, err.Error()
			return
		}
		s.Steps[i].State, s.Steps[i].Detail = StepDone, detail
	})
	return err
}
