package difftest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The fault runs: gcscope's engine on a third cluster, its client transport failing on
// purpose and the engine restarted at random points, is driven through the same scenarios
// as the fault-free gcscope side and must end every step in the same state.
const (
	readFaultRate    = 0.05 // of the engine's reads, watches aside
	writeFaultRate   = 0.5  // of its writes (few: several faults in every cascade)
	watchCutRate     = 0.5  // of its watches, each cut after 0.2–3 s
	minRestarts      = 20
	restartEveryMin  = 500 * time.Millisecond
	restartEveryMax  = 2500 * time.Millisecond
	defaultChaosSeed = 8
)

// The faults the transport injects.
const (
	faultConflict    = "409"
	faultTooMany     = "429"
	faultServerError = "500"
	faultTimeout     = "timeout"
	faultResetBefore = "reset before sending"
	faultResetAfter  = "reset after the server acted"
	faultWatchCut    = "watch cut"
)

var allFaults = []string{faultConflict, faultTooMany, faultServerError, faultTimeout, faultResetBefore, faultResetAfter, faultWatchCut}

// injector decides which requests fail, for every client of the engine, and counts.
type injector struct {
	mu     sync.Mutex
	rnd    *rand.Rand
	n      map[string]int
	paused atomic.Int32 // > 0: no fault now
}

func newInjector(seed uint64) *injector {
	return &injector{rnd: rand.New(rand.NewPCG(seed, 1)), n: map[string]int{}}
}

// faultyTransport fails the requests its injector picks.
type faultyTransport struct {
	next http.RoundTripper
	*injector
}

func (f *injector) draw(req *http.Request) string {
	if f.paused.Load() > 0 {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.URL.Query().Get("watch") == "true" {
		if f.rnd.Float64() < watchCutRate {
			f.n[faultWatchCut]++
			return faultWatchCut
		}
		return ""
	}
	rate := readFaultRate
	if req.Method != http.MethodGet {
		rate = writeFaultRate
	}
	if f.rnd.Float64() >= rate {
		return ""
	}
	choices := []string{faultTooMany, faultServerError, faultTimeout, faultResetBefore}
	if req.Method != http.MethodGet {
		// Writes are few: half their faults are the ones only a write can meet.
		choices = append(choices, faultConflict, faultResetAfter, faultConflict, faultResetAfter)
	}
	fault := choices[f.rnd.IntN(len(choices))]
	f.n[fault]++
	return fault
}

func (f *injector) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.n)
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "injected: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch f.draw(req) {
	case faultConflict:
		return status(req, http.StatusConflict, metav1.StatusReasonConflict, nil), nil
	case faultTooMany:
		return status(req, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, http.Header{"Retry-After": {"1"}}), nil
	case faultServerError:
		return status(req, http.StatusInternalServerError, metav1.StatusReasonInternalError, nil), nil
	case faultTimeout:
		time.Sleep(300 * time.Millisecond) // the fault is a slow answer: the time is the fault
		return nil, timeoutError{}
	case faultResetBefore:
		return nil, &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	case faultResetAfter:
		resp, err := f.next.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	case faultWatchCut:
		resp, err := f.next.RoundTrip(req)
		if err == nil {
			f.mu.Lock()
			after := 200*time.Millisecond + time.Duration(f.rnd.Int64N(int64(2800*time.Millisecond)))
			f.mu.Unlock()
			resp.Body = &cutBody{ReadCloser: resp.Body, at: time.Now().Add(after), paused: &f.paused}
		}
		return resp, err
	}
	return f.next.RoundTrip(req)
}

// cutBody ends a watch stream at a given moment, as a dropped connection does.
type cutBody struct {
	io.ReadCloser
	at     time.Time
	paused *atomic.Int32
}

func (c *cutBody) Read(p []byte) (int, error) {
	if time.Now().After(c.at) && c.paused.Load() == 0 {
		c.ReadCloser.Close()
		return 0, io.ErrUnexpectedEOF
	}
	return c.ReadCloser.Read(p)
}

func status(req *http.Request, code int, reason metav1.StatusReason, h http.Header) *http.Response {
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: "injected by the fault run"})
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), Request: req, ProtoMajor: 1, ProtoMinor: 1}
}

// restartingEngine is gcscope's engine over a faulty transport, stopped and started
// again on demand.
type restartingEngine struct {
	cfg    *rest.Config
	faults *injector
	// calm is held for reading while faults are paused, for writing by a restart.
	calm     sync.RWMutex
	mu       sync.Mutex
	stop     context.CancelFunc
	done     chan struct{}
	restarts int
}

func newRestartingEngine(cfg *rest.Config, seed uint64) *restartingEngine {
	e := &restartingEngine{cfg: rest.CopyConfig(cfg), faults: newInjector(seed)}
	e.cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &faultyTransport{next: rt, injector: e.faults}
	}
	return e
}

// start runs a new engine and waits until it has started.
func (e *restartingEngine) start() error {
	engine, err := gc.NewForConfig(e.cfg, gc.Options{Workers: workers, DiscoveryPeriod: syncPeriod, SyncTimeout: syncPeriod})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); engine.Run(ctx) }()
	select {
	case <-engine.Started():
	case <-time.After(time.Minute):
		stop()
		return errors.New("gcscope's engine did not start")
	}
	e.mu.Lock()
	e.stop, e.done = stop, done
	e.mu.Unlock()
	return nil
}

// pause holds faults and restarts back until resume is called.
func (e *restartingEngine) pause() (resume func()) {
	e.calm.RLock()
	e.faults.paused.Add(1)
	return func() { e.faults.paused.Add(-1); e.calm.RUnlock() }
}

// restart stops the running engine (waiting until it has returned) and starts another.
func (e *restartingEngine) restart() error {
	e.calm.Lock()
	defer e.calm.Unlock()
	e.mu.Lock()
	stop, done := e.stop, e.done
	e.restarts++
	e.mu.Unlock()
	stop()
	<-done
	return e.start()
}

func (e *restartingEngine) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		e.stop()
		<-e.done
	}
}

func chaosSeeds(t *testing.T) []int64 {
	if os.Getenv("GCSCOPE_CHAOS_SEEDS") != "" {
		t.Setenv("GCSCOPE_DIFFTEST_SEEDS", os.Getenv("GCSCOPE_CHAOS_SEEDS"))
		return seeds(t)
	}
	out := make([]int64, defaultChaosSeed)
	for i := range out {
		out[i] = int64(1000 + i)
	}
	return out
}

// TestFaultsChangeNoOutcome plays scenarios on the fault-free gcscope side and on a side
// whose engine meets every fault of allFaults and at least minRestarts restarts: after
// every step, both must settle in the same state (no wrong delete, no garbage left, no
// owner left Terminating).
func TestFaultsChangeNoOutcome(t *testing.T) {
	_, ours := env(t)
	ctx := context.Background()
	chaos := newSide("gcscope under faults", testkit.NewCluster(t, testkit.Options{}))
	engine := newRestartingEngine(chaos.config, 42)
	if err := engine.start(); err != nil {
		t.Fatal(err)
	}
	defer engine.close()
	chaos.calm, chaos.looseTiming = engine.pause, true

	// Restart at random points until the scenarios are done (and at least minRestarts times).
	scenariosDone := make(chan struct{})
	restarterDone := make(chan error, 1)
	go func() {
		r := rand.New(rand.NewPCG(7, 7))
		for {
			wait := restartEveryMin + time.Duration(r.Int64N(int64(restartEveryMax-restartEveryMin)))
			select {
			case <-scenariosDone:
				engine.mu.Lock()
				n := engine.restarts
				engine.mu.Unlock()
				if n >= minRestarts {
					restarterDone <- nil
					return
				}
			case <-time.After(wait):
			}
			if err := engine.restart(); err != nil {
				restarterDone <- err
				return
			}
		}
	}()

	start := time.Now()
	ss := chaosSeeds(t)
	var mu sync.Mutex
	var divergent []string
	for round := 0; ; round++ {
		forEach(ss, func(seed int64) {
			d, err := runScenario(ctx, ours, chaos, generate(seed))
			if err != nil {
				t.Error(err)
			} else if d != nil {
				mu.Lock()
				divergent = append(divergent, d.String())
				mu.Unlock()
			}
		})
		engine.mu.Lock()
		n := engine.restarts
		engine.mu.Unlock()
		if n >= minRestarts || round > 5 {
			break
		}
	}
	close(scenariosDone)
	if err := <-restarterDone; err != nil {
		t.Fatalf("restarting the engine: %v", err)
	}
	counts := engine.faults.counts()
	var missing, report []string
	for _, f := range allFaults {
		if counts[f] == 0 {
			missing = append(missing, f)
		}
		report = append(report, fmt.Sprintf("%s ×%d", f, counts[f]))
	}
	t.Logf("%d seeds in %v; %d restarts; faults: %s; %d divergent", len(ss), time.Since(start).Round(time.Second),
		engine.restarts, strings.Join(report, ", "), len(divergent))
	if len(missing) > 0 {
		t.Errorf("faults never injected: %v", missing)
	}
	slices.Sort(divergent)
	for _, d := range divergent {
		t.Error(d)
	}
}
