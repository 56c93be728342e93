package gc

// The words of an explanation: Next and Words narrated from the rest of it, blockers
// ordered and counted.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Narrate finishes an explanation from the rest of it, as ExplainFor does: it orders the
// blockers (the most telling first), counts them in BlockerSummary and sets Next and
// Words. For explanations assembled elsewhere too (the UI benchmark's synthetic engine);
// served reports whether the apiserver serves an apiVersion and kind.
func (e *Explanation) Narrate(served func(apiVersion, kind string) bool, now time.Time) {
	sortBlockers(e.Blockers)
	e.BlockerSummary = nil
	if len(e.Blockers)+e.HiddenBlockers > 0 {
		e.BlockerSummary = summarize(e.Blockers, e.HiddenBlockers)
	}
	e.Next, e.Words = narrate(e, served, now)
}

// narrate puts an explanation in words: the next step, then the reasons.
func narrate(e *Explanation, served func(apiVersion, kind string) bool, now time.Time) (string, []string) {
	o := e.Object
	var words []string
	count := map[OwnerState][]string{}
	for _, s := range e.Owners {
		count[s.State] = append(count[s.State], s.Kind+" "+s.Name)
	}
	dependents := len(e.Dependents) + e.HiddenDependents
	foreground := slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents)
	var next string
	switch {
	case o.Virtual && !served(o.APIVersion, o.Kind):
		next = fmt.Sprintf("retry later: the apiserver does not serve %s %s, so it cannot be looked up; it is never taken for absent, and its dependents stay", o.Kind, o.APIVersion)
		words = append(words, fmt.Sprintf("%s %s has not been observed; %s", o.Kind, o.Name, nameItsOwner(dependents)))
	case o.Virtual:
		next = "verify whether it exists: it is only known because dependents name it as their owner"
		words = append(words, fmt.Sprintf("%s %s has not been observed; %s", o.Kind, o.Name, nameItsOwner(dependents)))
	case o.DeletingDependents && foreground:
		if blockers := len(e.Blockers) + e.HiddenBlockers; blockers == 0 {
			next = "remove the foregroundDeletion finalizer: no blocking dependent remains"
		} else {
			next = fmt.Sprintf("wait for %s to be deleted", counted(blockers, "blocking dependent"))
			words = append(words, "waiting for "+describeWaitingFor(e.Blockers, e.HiddenBlockers, e.BlockerSummary, o.UID))
		}
	case o.BeingDeleted && foreground:
		next = "start the foreground deletion: delete its blocking dependents, then remove the foregroundDeletion finalizer"
	case o.BeingDeleted && slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents):
		next = fmt.Sprintf("remove its reference from %s, then the orphan finalizer", counted(dependents, "dependent"))
	case o.BeingDeleted && len(e.HeldBy) > 0:
		next = fmt.Sprintf("nothing the collector can do: %s %s of another controller holds it; the apiserver deletes it once that is removed",
			plural(len(e.HeldBy), "finalizer", "finalizers"), strings.Join(e.HeldBy, ", "))
	case o.BeingDeleted:
		next = "nothing: the apiserver deletes it once its finalizers are removed"
	case len(e.Owners) == 0:
		next = "nothing: an object without owners is never collected"
	case len(count[OwnerSolid]) > 0:
		next = "keep it: " + ownersExist(count[OwnerSolid])
		if stale := append(count[OwnerDangling], count[OwnerWaiting]...); len(stale) > 0 {
			next += "; remove its references to " + strings.Join(stale, ", ")
		}
	case len(count[OwnerUnresolvable]) > 0:
		next = "retry later: owner " + strings.Join(count[OwnerUnresolvable], ", ") + " is named through a version the apiserver does not serve, so it cannot be looked up (it is never taken for absent)"
	case len(count[OwnerUnverified]) > 0:
		next = "verify owner " + strings.Join(count[OwnerUnverified], ", ") + " before deciding"
	case len(count[OwnerInvalid]) == len(e.Owners) && o.Namespace == "":
		next = "nothing: its only owners are namespaced, which a cluster-scoped object cannot have"
	case len(count[OwnerWaiting]) > 0 && dependents > 0:
		next = "delete it in the foreground: its owner waits for it, and it has dependents of its own"
	case len(count[OwnerWaiting]) > 0:
		next = "delete it: its owner waits for it"
	default:
		next = "delete it: none of its owners exists"
	}
	for _, s := range e.Owners {
		words = append(words, fmt.Sprintf("owner %s %s: %s (%s)", s.Kind, s.Name, s.State, s.Reason))
	}
	if o.BeingDeleted {
		for _, f := range e.HeldBy {
			words = append(words, fmt.Sprintf("held by finalizer %s: %s", f, finalizerOwner(f)))
		}
	}
	// The collector's own finalizers are steps of its work, never another's hold.
	if foreground && o.BeingDeleted {
		words = append(words, "foregroundDeletion is the garbage collector's own finalizer: it removes it once no blocking dependent remains")
	}
	if slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) && o.BeingDeleted {
		words = append(words, "orphan is the garbage collector's own finalizer: it removes it once no dependent names this object as owner any more")
	}
	for _, q := range e.Queues {
		switch {
		case q.InFlight:
			words = append(words, fmt.Sprintf("a %s worker is processing it", q.Queue))
		case q.Queued:
			words = append(words, fmt.Sprintf("queued in %s", q.Queue))
		}
		if q.BackoffUntil != nil {
			words = append(words, fmt.Sprintf("%s retries it in %s (retry %d)", q.Queue, q.BackoffUntil.Sub(now).Round(time.Millisecond), q.Retries))
		}
	}
	if e.Last != nil && e.Last.Error != "" {
		words = append(words, fmt.Sprintf("last %s failed: %s", e.Last.Verb, e.Last.Error))
	}
	for _, d := range e.Shadow {
		words = append(words, shadowWords(d))
	}
	return next, words
}

// shadowWords tells a shadow decision the cluster's collector has not followed.
func shadowWords(d ShadowDecision) string {
	would := fmt.Sprintf("gcscope would have chosen to %s at %s because %s", decisionWords(d.Action),
		d.DecidedAt.Format(time.TimeOnly), d.Action.Reason)
	switch d.Outcome {
	case ShadowDiverged:
		return fmt.Sprintf("the cluster's collector did otherwise: %s; %s", d.Observed, would)
	case ShadowOverdue:
		return fmt.Sprintf("the cluster's collector has not acted on this for %s (overdue: it is behind or stuck); %s", d.Lag.Round(time.Second), would)
	}
	return fmt.Sprintf("the cluster's collector has not acted on this yet (%s); %s", d.Lag.Round(time.Millisecond), would)
}

// blockersNamed is how many blockers of one object the words name; the others are
// counted.
const blockersNamed = 10

// describeWaitingFor says what a foreground deletion waits for: every blocker when there
// are few, else their counts and the first few.
func describeWaitingFor(bs []Blocker, hidden int, sum *BlockerSummary, root types.UID) string {
	if sum == nil || sum.Total <= blockersNamed {
		return describeBlockers(bs, hidden, root)
	}
	head := counted(sum.Total, "blocking dependent")
	var parts []string
	if sum.InFlight > 0 {
		parts = append(parts, thousands(sum.InFlight)+" in flight")
	}
	if sum.Held > 0 {
		parts = append(parts, fmt.Sprintf("%s held by %s %s", thousands(sum.Held),
			plural(len(sum.HeldBy), "finalizer", "finalizers"), strings.Join(sum.HeldBy, ", ")))
	}
	if sum.Waiting > 0 {
		parts = append(parts, thousands(sum.Waiting)+" waiting for their own")
	}
	if hidden > 0 {
		parts = append(parts, thousands(hidden)+" you may not see")
	}
	if len(parts) > 0 {
		head += ", " + strings.Join(parts, ", ")
	}
	if len(bs) == 0 {
		return head
	}
	named := bs[:min(len(bs), blockersNamed)]
	brief := make([]string, len(named), len(named)+1)
	for i, b := range named {
		brief[i] = strings.ToLower(b.Object.Kind) + " " + b.Object.Name + " (" + blockerState(b, root) + ")"
	}
	if more := len(bs) - len(named); more > 0 {
		brief = append(brief, "and "+thousands(more)+" more")
	}
	return head + "; first " + strconv.Itoa(len(named)) + ": " + strings.Join(brief, ", ")
}

// blockerState is where one blocker stands, in a few words.
func blockerState(b Blocker, root types.UID) string {
	held := HeldBy(b.Finalizers)
	switch {
	case len(held) > 0:
		return plural(len(held), "held by finalizer ", "held by finalizers ") + strings.Join(held, ", ")
	case b.Cycle && b.Object.UID == root:
		return "the object itself"
	case b.Cycle:
		return "an ownership cycle"
	case b.DeletingDependents:
		return "waits for " + counted(len(b.Blockers)+b.Hidden, "blocking dependent") + " of its own"
	case b.InFlight:
		return "in flight"
	case b.BeingDeleted:
		return "being deleted"
	}
	return "not deleted yet"
}

// describeBlockers puts a tree of blockers in words, with hidden more the reader may not
// see; root is the explained object. Past blockersNamed on one level, the rest are
// counted.
func describeBlockers(bs []Blocker, hidden int, root types.UID) string {
	named := bs[:min(len(bs), blockersNamed)]
	parts := make([]string, len(named), len(named)+2)
	for i, b := range named {
		p := strings.ToLower(b.Object.Kind) + " " + b.Object.Name
		held := HeldBy(b.Finalizers)
		switch {
		case len(held) > 0:
			p += " is held by finalizer " + strings.Join(held, ", ")
		case b.Cycle && b.Object.UID == root:
			p += " is the object itself: it names itself as a blocking owner, so its foreground deletion waits on its own reference"
		case b.Cycle:
			p += " waits for its own blocking dependents, which lead back here (an ownership cycle)"
		case b.DeletingDependents && len(b.Blockers) == 0 && b.Hidden > 0:
			p += " waits for " + hiddenCount(b.Hidden)
		case b.DeletingDependents && len(b.Blockers) == 0:
			p += " waits for blocking dependents of its own (not followed further)"
		case b.DeletingDependents:
			p += " waits for its blocking dependents: " + describeBlockers(b.Blockers, b.Hidden, root)
		case b.InFlight:
			p += " is being deleted by a worker now"
		case b.BeingDeleted:
			p += " is being deleted"
		default:
			p += " is not deleted yet"
		}
		parts[i] = p
	}
	if more := len(bs) - len(named); more > 0 {
		parts = append(parts, "and "+thousands(more)+" more")
	}
	if hidden > 0 {
		parts = append(parts, hiddenCount(hidden))
	}
	return strings.Join(parts, "; ")
}

// sortBlockers puts the most telling blockers first, on every level: held by another
// controller's finalizer, waiting for their own, being deleted by a worker, being deleted,
// the rest; each group by namespace, kind and name.
func sortBlockers(bs []Blocker) {
	rank := func(b *Blocker) int {
		switch {
		case len(HeldBy(b.Finalizers)) > 0:
			return 0
		case b.DeletingDependents:
			return 1
		case b.InFlight:
			return 2
		case b.BeingDeleted:
			return 3
		}
		return 4
	}
	slices.SortStableFunc(bs, func(a, b Blocker) int {
		return cmp.Or(cmp.Compare(rank(&a), rank(&b)), cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name))
	})
	for i := range bs {
		sortBlockers(bs[i].Blockers)
	}
}

// summarize counts the first level of blockers.
func summarize(bs []Blocker, hidden int) *BlockerSummary {
	s := &BlockerSummary{Total: len(bs) + hidden}
	byFinalizer := map[string]int{}
	for _, b := range bs {
		held := HeldBy(b.Finalizers)
		switch {
		case len(held) > 0:
			s.Held++
			for _, f := range held {
				byFinalizer[f]++
			}
		case b.DeletingDependents:
			s.Waiting++
		case b.InFlight:
			s.InFlight++
		case b.BeingDeleted:
			s.BeingDeleted++
		}
	}
	for f := range byFinalizer {
		s.HeldBy = append(s.HeldBy, f)
	}
	slices.SortFunc(s.HeldBy, func(a, b string) int { return cmp.Or(cmp.Compare(byFinalizer[b], byFinalizer[a]), cmp.Compare(a, b)) })
	return s
}

// markInFlight marks the blockers a worker has now. Requires feed.mu.
func markInFlight(bs []Blocker, items map[types.UID]*QueueItem) {
	for i := range bs {
		if it, ok := items[bs[i].Object.UID]; ok && it.InFlight {
			bs[i].InFlight = true
		}
		markInFlight(bs[i].Blockers, items)
	}
}

func hiddenCount(n int) string {
	return counted(n, "blocking dependent") + " you may not see"
}

// counted is n and the noun, "1 blocking dependent" or "1,560 blocking dependents".
func counted(n int, noun string) string {
	return thousands(n) + " " + plural(n, noun, noun+"s")
}

// ownersExist says "owner Widget alpha exists", or "owners Widget alpha and Widget beta
// exist".
func ownersExist(names []string) string {
	return plural(len(names), "owner ", "owners ") + listWords(names) + plural(len(names), " exists", " exist")
}

// listWords joins "a", "a and b", "a, b and c".
func listWords(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// nameItsOwner says how many dependents name a virtual object as their owner.
func nameItsOwner(n int) string {
	if n == 1 {
		return "1 dependent names it as its owner"
	}
	return thousands(n) + " dependents name it as their owner"
}

// thousands writes n with thousands separators: 1,560.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
