package gc

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Shadow mode checks itself. Every write the engine would make in shadow mode is a
// decision; what the cluster's own collector then does to the object, as the informers
// observe it, says whether the two agree. A decision is pending until the object shows
// the decision carried out (confirmed) or something else done to it (diverged); pending
// past a threshold it is overdue (the cluster's collector is behind, or stuck). A decision
// the engine itself no longer makes (it decided otherwise since) is withdrawn.

func (d *ShadowDecision) open() bool {
	return d.Outcome == ShadowPending || d.Outcome == ShadowOverdue
}

// ShadowCounts counts decisions by outcome: pending and overdue are the open ones now,
// the others every decision so settled since the start.
type ShadowCounts struct {
	Pending   int `json:"pending"`
	Overdue   int `json:"overdue"`
	Confirmed int `json:"confirmed"`
	Diverged  int `json:"diverged"`
	Withdrawn int `json:"withdrawn"`
}

// LagSummary is the distribution of the cluster's lag behind the engine's decisions,
// over the most recent confirmations.
type LagSummary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

// ShadowReport is the state of the self-check.
type ShadowReport struct {
	// Enabled: the engine runs in shadow mode (otherwise the report is empty).
	Enabled      bool          `json:"enabled"`
	OverdueAfter time.Duration `json:"overdueAfter"`
	Counts       ShadowCounts  `json:"counts"`
	Lag          LagSummary    `json:"lag"`
	// Diverged: the most recent diverged decisions, newest first.
	Diverged []ShadowDecision `json:"diverged,omitempty"`
	// Open: pending and overdue decisions, oldest first.
	Open []ShadowDecision `json:"open,omitempty"`
}

const (
	// DefaultShadowOverdue is how long a decision waits for the cluster's collector before
	// it is overdue.
	DefaultShadowOverdue = time.Minute
	keptLags             = 4096 // confirmations the lag distribution is taken over
	keptDiverged         = 256  // diverged decisions kept for the report and Explain
	reportedOpen         = 200  // open decisions a report lists
	// foregroundMemory: how long an object seen deleting in the foreground is remembered,
	// to judge a dependent's delete policy; at most keptForeground of them.
	foregroundMemory = 10 * time.Minute
	keptForeground   = 1 << 16
)

// shadowTracker follows the engine's shadow decisions. Lock order: graph.mu, then mu.
type shadowTracker struct {
	mu           sync.Mutex
	now          func() time.Time
	overdueAfter time.Duration
	publish      func(Event)
	metrics      *metrics

	nextID   uint64
	open     map[types.UID][]*ShadowDecision
	settled  ShadowCounts // confirmed, diverged and withdrawn since the start
	lags     []time.Duration
	lagNext  int
	diverged []ShadowDecision // ring, oldest first once full
	divNext  int
	// foreground: objects last seen deleting in the foreground, and when. A collector
	// that looks at a dependent while such an owner still waits deletes it in the
	// foreground; one that looks after the owner is gone, in the background.
	foreground map[types.UID]time.Time
}

func newShadowTracker(overdueAfter time.Duration, now func() time.Time, publish func(Event), m *metrics) *shadowTracker {
	t := &shadowTracker{now: now, overdueAfter: overdueAfter, publish: publish, metrics: m,
		open: map[types.UID][]*ShadowDecision{}, foreground: map[types.UID]time.Time{}}
	m.registerShadow(func() (pending, overdue int) {
		c := t.report().Counts
		return c.Pending, c.Overdue
	})
	return t
}

// sameDecision: b would make the write a already stands for.
func sameDecision(a, b Action) bool {
	return a.Queue == b.Queue && a.Verb == b.Verb && a.Policy == b.Policy && a.Finalizer == b.Finalizer &&
		slices.Equal(slices.Sorted(slices.Values(a.Refs)), slices.Sorted(slices.Values(b.Refs)))
}

// decided records a write the engine made in shadow mode (a.Shadow) or, for VerbKeep, its
// decision to leave the object alone. current is the graph's view of the object now; gone:
// it is no longer in the graph. Requires graph.mu held (read), so no observation slips
// between the view and the record.
func (t *shadowTracker) decided(a Action, current *metav1.PartialObjectMetadata, gone bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	uid := a.Object.UID
	ds := t.open[uid]
	// A new decision from the same queue replaces the open ones: the engine no longer
	// makes them. (An unblock is the first step of a foreground delete: both stand.)
	for _, d := range ds {
		switch {
		case d.Action.Queue != a.Queue:
		case a.Verb != VerbKeep && sameDecision(d.Action, a):
			return // decided again: the first decision's time stands
		case d.Action.Verb == VerbUnblock && a.Verb == VerbDelete:
		default:
			t.settle(d, ShadowWithdrawn, now, "the engine decided otherwise since: "+decisionWords(a))
		}
	}
	t.compact(uid)
	if a.Verb == VerbKeep {
		return
	}
	t.nextID++
	d := &ShadowDecision{ID: t.nextID, Action: a, DecidedAt: now, Outcome: ShadowPending}
	// The view the decision was made on may already be behind the graph: if the graph shows
	// the cluster has acted, the decision is confirmed now; if it shows something else
	// done, the decision came too late to be compared, and is withdrawn.
	if outcome, words := verdict(a, current, gone, t.sawForeground); outcome == ShadowConfirmed {
		t.settle(d, ShadowConfirmed, now, words)
		return
	} else if outcome == ShadowDiverged {
		t.settle(d, ShadowWithdrawn, now, "the object changed while the engine decided: "+words)
		return
	}
	t.open[uid] = append(t.open[uid], d)
	t.metrics.shadowDecisions.WithLabelValues(string(ShadowPending)).Inc()
	t.publishLocked(d)
}

// observed judges the open decisions on the object of an informer event: obj is its new
// state, or its last one when gone. It returns the decisions to remove references that
// the cluster's collector was seen to carry out. Requires graph.mu held.
func (t *shadowTracker) observed(obj *metav1.PartialObjectMetadata, gone bool) (removedRefs []Action) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if obj.DeletionTimestamp != nil && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents) {
		if len(t.foreground) >= keptForeground {
			t.forgetForeground(now.Add(foregroundMemory)) // full: forget them all
		}
		t.foreground[obj.UID] = now
	}
	ds := t.open[obj.UID]
	if len(ds) == 0 {
		return nil
	}
	for _, d := range ds {
		if outcome, words := verdict(d.Action, obj, gone, t.sawForeground); outcome != "" {
			t.settle(d, outcome, now, words)
			if outcome == ShadowConfirmed && (d.Action.Verb == VerbOrphan || d.Action.Verb == VerbRemoveRefs) {
				removedRefs = append(removedRefs, d.Action)
			}
		}
	}
	t.compact(obj.UID)
	return removedRefs
}

// settle gives d its final outcome. Requires mu held; compact removes it from open.
func (t *shadowTracker) settle(d *ShadowDecision, outcome ShadowOutcome, now time.Time, words string) {
	d.Outcome, d.ResolvedAt, d.Lag, d.Observed = outcome, &now, now.Sub(d.DecidedAt), words
	t.metrics.shadowDecisions.WithLabelValues(string(outcome)).Inc()
	switch outcome {
	case ShadowConfirmed:
		t.settled.Confirmed++
		t.metrics.shadowLag.Observe(d.Lag.Seconds())
		if len(t.lags) < keptLags {
			t.lags = append(t.lags, d.Lag)
		} else {
			t.lags[t.lagNext] = d.Lag
			t.lagNext = (t.lagNext + 1) % keptLags
		}
	case ShadowDiverged:
		t.settled.Diverged++
		if len(t.diverged) < keptDiverged {
			t.diverged = append(t.diverged, *d)
		} else {
			t.diverged[t.divNext] = *d
			t.divNext = (t.divNext + 1) % keptDiverged
		}
	case ShadowWithdrawn:
		t.settled.Withdrawn++
	}
	t.publishLocked(d)
}

// compact drops the settled decisions of uid from open.
func (t *shadowTracker) compact(uid types.UID) {
	ds := slices.DeleteFunc(t.open[uid], func(d *ShadowDecision) bool { return !d.open() })
	if len(ds) == 0 {
		delete(t.open, uid)
		return
	}
	t.open[uid] = ds
}

func (t *shadowTracker) publishLocked(d *ShadowDecision) {
	c := *d
	if c.open() {
		c.Lag = t.now().Sub(c.DecidedAt)
	}
	t.publish(Event{Type: ShadowChange, Shadow: &c})
}

// markOverdue turns the pending decisions older than the threshold overdue.
func (t *shadowTracker) markOverdue() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.forgetForeground(now)
	for _, ds := range t.open {
		for _, d := range ds {
			if d.Outcome == ShadowPending && now.Sub(d.DecidedAt) >= t.overdueAfter {
				d.Outcome = ShadowOverdue
				t.metrics.shadowDecisions.WithLabelValues(string(ShadowOverdue)).Inc()
				t.publishLocked(d)
			}
		}
	}
}

// forgetForeground drops the objects seen deleting in the foreground longer than
// foregroundMemory before now. Requires mu held.
func (t *shadowTracker) forgetForeground(now time.Time) {
	maps.DeleteFunc(t.foreground, func(_ types.UID, seen time.Time) bool { return now.Sub(seen) >= foregroundMemory })
}

// sawForeground: uid was seen deleting in the foreground lately. Requires mu held.
func (t *shadowTracker) sawForeground(uid types.UID) bool {
	_, ok := t.foreground[uid]
	return ok
}

// run marks overdue decisions until ctx ends.
func (t *shadowTracker) run(ctx context.Context) {
	every := min(max(t.overdueAfter/10, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.markOverdue()
		}
	}
}

// report is the tracker's state now.
func (t *shadowTracker) report() ShadowReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	r := ShadowReport{Enabled: true, OverdueAfter: t.overdueAfter, Counts: t.settled}
	var open []ShadowDecision
	for _, ds := range t.open {
		for _, d := range ds {
			c := *d
			c.Lag = now.Sub(c.DecidedAt)
			open = append(open, c)
			if c.Outcome == ShadowOverdue {
				r.Counts.Overdue++
			} else {
				r.Counts.Pending++
			}
		}
	}
	slices.SortFunc(open, func(a, b ShadowDecision) int { return a.DecidedAt.Compare(b.DecidedAt) })
	r.Open = open[:min(len(open), reportedOpen)]
	r.Lag = summarizeLags(t.lags)
	for i := range t.diverged {
		r.Diverged = append(r.Diverged, t.diverged[(t.divNext+len(t.diverged)-1-i)%len(t.diverged)])
	}
	return r
}

// about returns the open decisions on uid and the diverged ones still kept.
func (t *shadowTracker) about(uid types.UID) []ShadowDecision {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var out []ShadowDecision
	for _, d := range t.open[uid] {
		c := *d
		c.Lag = now.Sub(c.DecidedAt)
		out = append(out, c)
	}
	for _, d := range t.diverged {
		if d.Action.Object.UID == uid {
			out = append(out, d)
		}
	}
	return out
}

func summarizeLags(lags []time.Duration) LagSummary {
	if len(lags) == 0 {
		return LagSummary{}
	}
	s := slices.Sorted(slices.Values(lags))
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return LagSummary{Count: len(s), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: s[len(s)-1]}
}

// verdict says what the observed state of an object means for the write a: the cluster
// did the same (confirmed), something else (diverged), or nothing yet (""), and in words
// what it did. obj is the object's state (its last one when gone; nil when not known).
// sawForeground tells the owners lately seen deleting in the foreground.
func verdict(a Action, obj *metav1.PartialObjectMetadata, gone bool, sawForeground func(types.UID) bool) (ShadowOutcome, string) {
	deleting := gone || (obj != nil && obj.DeletionTimestamp != nil)
	switch a.Verb {
	case VerbDelete:
		switch {
		case !deleting:
			return "", ""
		case obj == nil || (gone && obj.DeletionTimestamp == nil):
			return ShadowConfirmed, "deleted"
		}
		policy := observedPolicy(obj.Finalizers)
		if string(policy) == a.Policy || (a.Policy == "" && policy == metav1.DeletePropagationBackground) {
			return ShadowConfirmed, "deleted with the " + string(policy) + " policy"
		}
		if owner, ok := foregroundTiming(a, policy, obj, sawForeground); ok {
			return ShadowConfirmed, fmt.Sprintf("deleted with the %s policy where gcscope chose %s: owner %s was deleting in the foreground, "+
				"and the two collectors looked before and after it was gone (the same rule at different moments)", policy, a.Policy, owner)
		}
		return ShadowDiverged, fmt.Sprintf("deleted with the %s policy, where gcscope would have used %s", policy, a.Policy)

	case VerbRemoveRefs, VerbOrphan:
		if obj != nil && !namesAny(obj.OwnerReferences, a.Refs) {
			if a.Verb == VerbOrphan {
				return ShadowConfirmed, "its reference to the owner removed"
			}
			return ShadowConfirmed, "the references removed"
		}
		if deleting {
			what := "removing the references"
			if a.Verb == VerbOrphan {
				what = "orphaning it"
			}
			return ShadowDiverged, "deleted instead of " + what
		}
		return "", ""

	case VerbUnblock:
		if obj != nil && !blocksAny(obj.OwnerReferences, a.Refs) {
			return ShadowConfirmed, "its references no longer block their owners"
		}
		if deleting {
			return ShadowDiverged, "deleted while its references still block their owners"
		}
		return "", ""

	case VerbRemoveFinalizer:
		switch {
		case gone:
			return ShadowConfirmed, "finalizer removed and the object deleted"
		case obj != nil && !slices.Contains(obj.Finalizers, a.Finalizer):
			return ShadowConfirmed, "finalizer " + a.Finalizer + " removed"
		}
		return "", ""
	}
	return "", ""
}

// foregroundTiming: the Background/Foreground difference between a and the observed policy
// comes from when each collector looked. A dependent (with dependents of its own) whose
// other owners are gone is deleted in the foreground while an owner deleting in the
// foreground still waits, and in the background once that owner is gone too. It returns
// that owner's name.
func foregroundTiming(a Action, observed metav1.DeletionPropagation, obj *metav1.PartialObjectMetadata, sawForeground func(types.UID) bool) (string, bool) {
	bg, fg := string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationForeground)
	chosen := cmp.Or(a.Policy, bg)
	if sawForeground == nil || !(chosen == bg && observed == metav1.DeletePropagationForeground || chosen == fg && observed == metav1.DeletePropagationBackground) {
		return "", false
	}
	for _, r := range obj.OwnerReferences {
		if sawForeground(r.UID) {
			return r.Kind + " " + r.Name, true
		}
	}
	return "", false
}

// observedPolicy is the propagation policy an object being deleted shows by its finalizers.
func observedPolicy(finalizers []string) metav1.DeletionPropagation {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationBackground
}

func namesAny(refs []metav1.OwnerReference, uids []types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
}

func blocksAny(refs []metav1.OwnerReference, uids []types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool {
		return slices.Contains(uids, r.UID) && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
	})
}

// decisionWords puts a decision in a few words.
func decisionWords(a Action) string {
	switch a.Verb {
	case VerbKeep:
		return "keep it (" + a.Reason + ")"
	case VerbDelete:
		return "delete it with the " + a.Policy + " policy"
	case VerbRemoveFinalizer:
		return "remove finalizer " + a.Finalizer
	case VerbRemoveRefs:
		return "remove its references to absent or waiting owners"
	case VerbUnblock:
		return "unblock its owners"
	case VerbOrphan:
		return "remove its reference to the owner"
	}
	return string(a.Verb)
}

// ShadowReport is the self-check of shadow mode: how the cluster's own collector followed
// the engine's decisions. Empty (Enabled false) in active mode.
func (gc *GarbageCollector) ShadowReport() ShadowReport {
	if gc.shadow == nil {
		return ShadowReport{}
	}
	return gc.shadow.report()
}

// ShadowDecisionsAbout returns the open and the recently diverged decisions on uid.
func (gc *GarbageCollector) ShadowDecisionsAbout(uid types.UID) []ShadowDecision {
	if gc.shadow == nil {
		return nil
	}
	return gc.shadow.about(uid)
}

// recordShadow hands a shadow write, or a keep in shadow mode, to the tracker with the
// graph's current view of the object.
func (gc *GarbageCollector) recordShadow(a Action) {
	if gc.shadow == nil {
		return
	}
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	n, ok := gc.graph.read(a.Object.UID)
	switch {
	case !ok:
		gc.shadow.decided(a, nil, true)
	case n.virtual:
		gc.shadow.decided(a, nil, false) // not observed yet: its observation will tell
	default:
		gc.shadow.decided(a, n.metadata(), false)
	}
}
