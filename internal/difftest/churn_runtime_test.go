package difftest

import (
	"context"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
)

// What a run's lags were waiting on, read around each run of the churn benchmark: the Go
// scheduler's latency (how long runnable goroutines waited for a thread: a process short
// of CPU shows it), the share of the process's CPU its garbage collector took, its
// stop-the-world pauses, and how busy the machine's cores were (other work included).

type runtimeSample struct {
	sched, pauses     *metrics.Float64Histogram
	gcCPU, processCPU float64
	machineBusy       float64 // jiffies of /proc/stat, all cores
	machineTotal      float64
}

func readRuntime() runtimeSample {
	s := []metrics.Sample{
		{Name: "/sched/latencies:seconds"},
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
	}
	metrics.Read(s)
	r := runtimeSample{gcCPU: s[2].Value.Float64(), processCPU: s[3].Value.Float64()}
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		r.sched = s[0].Value.Float64Histogram()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		r.pauses = s[1].Value.Float64Histogram()
	}
	r.machineBusy, r.machineTotal = machineJiffies()
	return r
}

// runtimeSpan is what happened between two samples.
type runtimeSpan struct {
	schedP99, pauseP99, pauseMax time.Duration
	gcShare                      float64 // of the process's CPU
	machineCores                 float64 // cores busy, all processes
}

func (a runtimeSample) until(b runtimeSample, wall time.Duration, cores int) runtimeSpan {
	sp := runtimeSpan{
		schedP99: histQuantile(a.sched, b.sched, 0.99),
		pauseP99: histQuantile(a.pauses, b.pauses, 0.99),
		pauseMax: histQuantile(a.pauses, b.pauses, 1),
	}
	if cpu := b.processCPU - a.processCPU; cpu > 0 {
		sp.gcShare = (b.gcCPU - a.gcCPU) / cpu
	}
	if total := b.machineTotal - a.machineTotal; total > 0 {
		sp.machineCores = (b.machineBusy - a.machineBusy) / total * float64(cores)
	}
	return sp
}

// histQuantile is the q quantile of what b counted since a, as its bucket's upper bound.
func histQuantile(a, b *metrics.Float64Histogram, q float64) time.Duration {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return 0
	}
	var total uint64
	for i := range b.Counts {
		total += b.Counts[i] - a.Counts[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i := range b.Counts {
		seen += b.Counts[i] - a.Counts[i]
		if seen >= max(want, 1) {
			upper := b.Buckets[i+1]
			if upper > 1e9 { // the last bucket is unbounded
				upper = b.Buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}

// machineJiffies reads the machine's busy and total CPU time from /proc/stat.
func machineJiffies() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal (guest: in user)
	if len(fields) < 9 {
		return 0, 0
	}
	for i, f := range fields[1:9] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// waitIdle waits until the process spends under a tenth of a core over half a second (the
// apiserver's start-up, a collector's start or the last run's tail are over), for at most
// limit: each run starts from a quiet process. It reports whether it was.
func waitIdle(ctx context.Context, limit time.Duration) bool {
	last := time.Duration(-1) // the first check only reads
	return testkit.PollEvery(ctx, 500*time.Millisecond, limit, func() bool {
		now := testkit.ProcessCPU()
		quiet := last >= 0 && now-last < 50*time.Millisecond
		last = now
		return quiet
	}) == nil
}
