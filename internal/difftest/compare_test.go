package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/testkit"
)

// Settling. Both collectors act within milliseconds of an event; what can be pending for
// longer is a retry: an item whose owner's kind could not be mapped (a version switched
// off, a CRD deleted) backs off exponentially from 5 ms, so its next try is at most about
// as far away as the kind was unmappable (under 15 s in these scenarios). So the two sides
// have settled when their states are equal and unchanged for settleQuiet; different states
// are a divergence only once both have been unchanged for divergeQuiet.
const (
	settlePoll   = 100 * time.Millisecond
	settleQuiet  = time.Second
	divergeQuiet = 20 * time.Second
	settleMax    = 2 * time.Minute
)

// divergence is the first step after which the two sides differed.
type divergence struct {
	Scenario Scenario
	After    string
	A, B     string // the states of the two sides
	names    [2]string
}

func (d *divergence) String() string {
	return fmt.Sprintf("divergence after %s\nscenario %s\n%s:\n%s\n%s:\n%s", d.After, d.Scenario, d.names[0], d.A, d.names[1], d.B)
}

var nsCounter atomic.Int64

// both runs f on the two plays at once.
func both(a, b *play, f func(*play) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []*play{a, b} {
		wg.Go(func() { errs[i] = f(p) })
	}
	wg.Wait()
	for i, p := range []*play{a, b} {
		if errs[i] != nil {
			return fmt.Errorf("%s side: %w", p.side.name, errs[i])
		}
	}
	return nil
}

// settle waits for the two plays to settle (see settleQuiet) and returns their states.
func settle(ctx context.Context, a, b *play) (string, string, error) {
	start := time.Now()
	var states [2]string
	var changed [2]time.Time
	var stateErr error
	settled := func() bool {
		for i, p := range []*play{a, b} {
			st, err := p.state(ctx)
			if err != nil {
				stateErr = fmt.Errorf("%s side: %w", p.side.name, err)
				return true
			}
			if changed[i].IsZero() || st != states[i] {
				states[i], changed[i] = st, time.Now()
			}
		}
		quiet := min(time.Since(changed[0]), time.Since(changed[1]))
		return states[0] == states[1] && quiet >= settleQuiet || quiet >= divergeQuiet || time.Since(start) > settleMax
	}
	// At a fixed pace: the quiet spells are measured between checks. settleMax ends it first.
	if err := testkit.PollEvery(ctx, settlePoll, settleMax+time.Minute, settled); err != nil {
		return "", "", err
	}
	if stateErr != nil {
		return "", "", stateErr
	}
	return states[0], states[1], nil
}

// runScenario plays s on both sides, each in a fresh namespace of the same name, and
// returns the first divergence (nil if none).
func runScenario(ctx context.Context, a, b *side, s Scenario) (*divergence, error) {
	ns := fmt.Sprintf("dt-%d-%d-%04x", s.Seed, nsCounter.Add(1), rand.IntN(1<<16))
	pa, pb := newPlay(a, s, ns), newPlay(b, s, ns)
	pa.looseTiming = a.looseTiming || b.looseTiming
	pb.looseTiming = pa.looseTiming
	compare := func(after string) (*divergence, error) {
		sa, sb, err := settle(ctx, pa, pb)
		if err != nil || sa == sb {
			return nil, err
		}
		return &divergence{Scenario: s, After: after, A: sa, B: sb, names: [2]string{a.name, b.name}}, nil
	}
	defer cleanup(pa, pb)
	if err := both(pa, pb, func(p *play) error { return p.create(ctx) }); err != nil {
		return nil, fmt.Errorf("%s: creating: %w", s, err)
	}
	if d, err := compare("creation"); d != nil || err != nil {
		return d, err
	}
	for i, st := range s.Steps {
		if err := both(pa, pb, func(p *play) error { return p.apply(ctx, st) }); err != nil {
			return nil, fmt.Errorf("%s: step %d (%s): %w", s, i, st, err)
		}
		if d, err := compare(fmt.Sprintf("step %d (%s)", i, st)); d != nil || err != nil {
			return d, err
		}
	}
	return nil, nil
}

// cleanup deletes the scenario's CRD, so that a thousand scenarios do not leave a thousand
// resources for both collectors to watch; namespaces stay (nothing here finalizes them).
func cleanup(plays ...*play) {
	for _, p := range plays {
		if p.s.usesCRD() {
			_ = p.side.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), p.crd().Name, metav1.DeleteOptions{})
		}
	}
}

// minimize shrinks a divergent scenario: it drops steps, then objects, keeping each cut
// after which the sides still diverge, within a budget of attempts.
func minimize(ctx context.Context, a, b *side, d *divergence) *divergence {
	const budget = 40
	attempts := 0
	try := func(s Scenario) bool {
		if attempts >= budget {
			return false
		}
		attempts++
		nd, err := runScenario(ctx, a, b, s)
		if err != nil || nd == nil {
			return false
		}
		d = nd
		return true
	}
	for i := len(d.Scenario.Steps) - 1; i >= 0; i-- {
		s := d.Scenario
		if i >= len(s.Steps) {
			continue
		}
		s.Steps = slices.Delete(slices.Clone(s.Steps), i, i+1)
		try(s)
	}
	for k := len(d.Scenario.Objects) - 1; k >= 0; k-- {
		if k < len(d.Scenario.Objects) && len(d.Scenario.Objects) > 1 {
			try(d.Scenario.without(k))
		}
	}
	return d
}

// without is s less object k: references to it and steps on it go, later indices shift.
func (s Scenario) without(k int) Scenario {
	remap := func(refs []Ref) []Ref {
		var out []Ref
		for _, r := range refs {
			switch {
			case r.Owner == k:
				continue
			case r.Owner > k:
				r.Owner--
			}
			out = append(out, r)
		}
		return out
	}
	out := Scenario{Seed: s.Seed}
	for i, o := range s.Objects {
		if i == k {
			continue
		}
		o.Refs = remap(o.Refs)
		out.Objects = append(out.Objects, o)
	}
	for _, st := range s.Steps {
		switch st.Op {
		case opDelete, opRelease, opHold, opSetRefs:
			if st.Target == k {
				continue
			}
			if st.Target > k {
				st.Target--
			}
			st.Refs = remap(st.Refs)
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

// regression is a file of testdata/: a scenario that once diverged, replayed by
// TestRegressions.
type regression struct {
	Found    string   `json:"found"`
	Scenario Scenario `json:"scenario"`
}

func writeRegression(d *divergence) (string, error) {
	path := filepath.Join("testdata", fmt.Sprintf("divergence-%d.json", d.Scenario.Seed))
	data, err := json.MarshalIndent(regression{Found: d.String(), Scenario: d.Scenario}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

func readRegressions(t *testing.T) map[string]Scenario {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Scenario{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r regression
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[filepath.Base(path)] = r.Scenario
	}
	return out
}
