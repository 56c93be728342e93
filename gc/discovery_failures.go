package gc

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
)

// groupFailures are the group versions the last discovery could not read.
type groupFailures struct {
	mu     sync.Mutex
	failed map[string]GroupFailure
}

// update replaces the failures with those of err (a discovery.ErrGroupDiscoveryFailed, or
// nil for none), keeping the Since of those that go on failing, and reports the group
// versions that started failing and those that recovered.
func (f *groupFailures) update(err error, now time.Time) (started, recovered []string) {
	next := map[string]GroupFailure{}
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		for gv, gerr := range failed.Groups {
			next[gv.String()] = GroupFailure{Error: gerr.Error(), Since: now}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for gv, nf := range next {
		if old, ok := f.failed[gv]; ok {
			nf.Since = old.Since
			next[gv] = nf
		} else {
			started = append(started, gv)
		}
	}
	for gv := range f.failed {
		if _, ok := next[gv]; !ok {
			recovered = append(recovered, gv)
		}
	}
	if len(next) == 0 {
		next = nil
	}
	f.failed = next
	slices.Sort(started)
	slices.Sort(recovered)
	return started, recovered
}

// current returns a copy of the failures (nil: none).
func (f *groupFailures) current() map[string]GroupFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.failed)
}

// noteGroupFailures records which group versions discovery failed to read this time:
// one log line when a group starts failing and one when it recovers, and the sync state
// published when either happens (the page's banner follows it).
func (gc *GarbageCollector) noteGroupFailures(err error) {
	started, recovered := gc.groupFailures.update(err, time.Now())
	if len(started)+len(recovered) == 0 {
		return
	}
	failures := gc.groupFailures.current()
	for _, gv := range started {
		gc.log.Warn("API discovery fails for a group version: its resources are not monitored, and namespaces cannot finish deleting while it fails",
			"groupVersion", gv, "err", failures[gv].Error)
	}
	for _, gv := range recovered {
		gc.log.Info("API discovery recovered for a group version", "groupVersion", gv)
	}
	gc.publishSync()
}

// noteRecoveredMonitors logs each monitor that has synced since it was reported failing,
// and publishes the sync state when any did (nothing else publishes a monitor's recovery).
// Called every discovery period.
func (gc *GarbageCollector) noteRecoveredMonitors() {
	st := gc.builder.monitors.state()
	gc.failingMu.Lock()
	var recovered []string
	for r := range gc.failing {
		if _, still := st.Failing[r]; !still {
			recovered = append(recovered, r)
		}
	}
	for _, r := range recovered {
		delete(gc.failing, r)
	}
	gc.failingMu.Unlock()
	if len(recovered) == 0 {
		return
	}
	slices.Sort(recovered)
	for _, r := range recovered {
		gc.log.Info("a monitor recovered: its list/watch works again", "resource", r)
	}
	gc.publishSync()
}
