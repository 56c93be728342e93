package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// The one-shot sync: the engine lists and watches every resource the collector monitors,
// builds its graph, and its workers verify the owners it has not observed (in shadow mode
// they only read), then the command answers from the graph and stops the engine.
const (
	// engineSyncTimeout is how long the engine waits for its monitors before its workers
	// start anyway. Short: a resource the user may not list must not hold the workers,
	// which verify owners; the plugin itself waits for the monitors (--sync-timeout).
	engineSyncTimeout = 5 * time.Second
	// failingGrace: a resource whose list keeps failing (forbidden, a broken conversion
	// webhook) for this long is given up; the answer then says it lacks those objects.
	failingGrace = 2 * time.Second
	// quietFor: the engine has settled when its queues are empty and nothing has happened
	// for this long.
	quietFor = 150 * time.Millisecond
	// settleTimeout bounds the wait for the workers once the monitors have synced.
	settleTimeout = 20 * time.Second
	// stopTimeout bounds the wait for the engine to stop.
	stopTimeout = 2 * time.Second
)

// session is the engine running in shadow mode over the cluster of k.
type session struct {
	engine  *gc.GarbageCollector
	tracker *tracker
	stopRun context.CancelFunc
	done    chan struct{} // closed when the engine's Run has returned, with runErr
	runErr  error
	// started is when the engine started: what it knows of the cluster begins there (a
	// group version it found failing may have failed for long before).
	started time.Time
}

// startSession starts the engine; it returns at once.
func startSession(k *kube, o *options) (*session, error) {
	md, err := metadata.NewForConfig(k.config)
	if err != nil {
		return nil, err
	}
	engine, err := gc.New(gc.Clients{Metadata: md, Discovery: k.discovery}, gc.Options{
		Mode:        gc.ModeShadow,
		SyncTimeout: engineSyncTimeout,
		Logger:      o.logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	s := &session{started: time.Now(), engine: engine, tracker: newTracker(engine), stopRun: stop, done: make(chan struct{})}
	go s.tracker.follow(runCtx)
	go func() {
		s.runErr = engine.Run(runCtx)
		close(s.done)
	}()
	return s, nil
}

// syncedSession starts the engine and waits until it has listed the cluster, showing its
// progress and then its warnings on stderr. The caller stops it.
func syncedSession(ctx context.Context, k *kube, o *options) (*session, error) {
	s, err := startSession(k, o)
	if err != nil {
		return nil, err
	}
	warnings, err := s.sync(ctx, o.syncTimeout, newProgress(o.stderr, isTerminal(o.stderr), time.Now))
	if err != nil {
		s.stop()
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(o.stderr, "warning: %s\n", w)
	}
	return s, nil
}

// running is the engine of stuck and ui: the cluster reached, the engine running over it
// in shadow mode, and deletion's explainer over both.
type running struct {
	kube      *kube
	session   *session
	deletions *deletion.Explainer
}

// prepareEngine connects to the cluster, checks that it answers and starts the engine over
// it; synced: and waits until the engine has listed the cluster, showing its progress and
// then its warnings on stderr (syncedSession). The caller stops the session.
func prepareEngine(ctx context.Context, o *options, synced bool) (*running, error) {
	k, err := reached(o)
	if err != nil {
		return nil, err
	}
	var s *session
	if synced {
		s, err = syncedSession(ctx, k, o)
	} else {
		s, err = startSession(k, o)
	}
	if err != nil {
		return nil, err
	}
	x, err := deletion.New(s.engine, k.short)
	if err != nil {
		s.stop()
		return nil, err
	}
	return &running{kube: k, session: s, deletions: x}, nil
}

// stop ends the engine and waits (bounded) for it.
func (s *session) stop() {
	s.stopRun()
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
	}
}

// sync waits until the engine has listed the cluster and its workers have settled, with
// progress on p. It returns warnings for what the answer lacks (resources it could not
// list, work still going on).
func (s *session) sync(ctx context.Context, timeout time.Duration, p *progress) ([]string, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	failingSince := map[string]time.Time{}
	var warnings []string
	defer p.clear() // an error must not land after a progress line

	// The monitors: every resource listed, or given up.
	for synced := false; !synced; {
		st := s.engine.SyncState()
		objects, _ := s.tracker.counts()
		p.syncing(len(st.Resources), len(st.Resources)-len(st.Unsynced), objects)
		now := time.Now()
		switch {
		case st.Discovery != "" && now.Sub(start) > failingGrace:
			return nil, fmt.Errorf("the garbage collector cannot monitor this cluster: %s", st.Discovery)
		case len(st.Resources) > 0 && len(st.Unsynced) == 0:
			synced = true
		case len(st.Resources) > 0 && allFailing(st, failingSince, now):
			warnings = append(warnings, unlisted(st))
			synced = true
		case now.After(deadline):
			warnings = append(warnings, fmt.Sprintf("%s not listed after %s: %s; their objects are missing from the answer (raise --sync-timeout)",
				counted(len(st.Unsynced), "resource"), timeout, strings.Join(st.Unsynced, ", ")))
			synced = true
		}
		if synced {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, fmt.Errorf("garbage collector stopped: %v", s.runErr)
		case <-tick.C:
		}
	}

	// The workers start at most engineSyncTimeout after the engine.
	select {
	case <-s.engine.Started():
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	// The workers: every queue empty and nothing happening for quietFor.
	settleBy := time.Now().Add(settleTimeout)
	// published is what the feed held a tick ago: the tracker has read that much by now.
	published := s.engine.Feed().LastSeq()
	for {
		objects, busy := s.tracker.counts()
		p.settling(objects, busy)
		if busy == 0 && s.tracker.quiet(published, quietFor) {
			break
		}
		if time.Now().After(settleBy) {
			warnings = append(warnings, fmt.Sprintf("the engine still had %s to process after %s; the answer may not show its latest decisions",
				counted(busy, "queued item"), settleTimeout))
			break
		}
		published = s.engine.Feed().LastSeq()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	objects, _ := s.tracker.counts()
	p.finish(len(s.engine.SyncState().Resources), objects, time.Since(start))
	return warnings, nil
}

// unlisted says which resources could not be listed and why, grouped by reason (a
// forbidden list says so in many words, with the resource in them), the core and common
// groups first and a dozen names at most per reason.
func unlisted(st gc.SyncState) string {
	byReason := map[string][]string{}
	for _, r := range st.Unsynced {
		reason := oneLine(errors.New(st.Failing[r]))
		if strings.Contains(reason, " is forbidden: ") {
			reason = "forbidden"
		}
		byReason[reason] = append(byReason[reason], r)
	}
	reasons := slices.Sorted(maps.Keys(byReason))
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		names := byReason[reason]
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(groupRank(a), groupRank(b)), cmp.Compare(a, b)) })
		if len(names) > namesShown {
			names = append(names[:namesShown:namesShown], fmt.Sprintf("and %d more", len(byReason[reason])-namesShown))
		}
		parts[i] = reason + ": " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("could not list %s, so their objects are missing from the answer (the engine needs list and watch across all namespaces, as the collector does); %s",
		counted(len(st.Unsynced), "resource"), strings.Join(parts, "; "))
}

// namesShown is how many resources a warning names per reason.
const namesShown = 12

// groupRank puts the core group first, then apps and batch, then the rest.
func groupRank(resource string) int {
	switch {
	case strings.Count(resource, "/") == 1:
		return 0
	case strings.HasPrefix(resource, "apps/"), strings.HasPrefix(resource, "batch/"):
		return 1
	}
	return 2
}

// allFailing reports whether every unsynced resource has kept failing with an error (not
// merely being slow) for failingGrace; failingSince remembers when each started.
func allFailing(st gc.SyncState, failingSince map[string]time.Time, now time.Time) bool {
	all := true
	for _, r := range st.Unsynced {
		msg, ok := st.Failing[r]
		// A list that is only slow is reported with this wording; it is waited for.
		if !ok || strings.HasPrefix(msg, "the list has not completed") {
			delete(failingSince, r)
			all = false
			continue
		}
		if _, seen := failingSince[r]; !seen {
			failingSince[r] = now
		}
		if now.Sub(failingSince[r]) < failingGrace {
			all = false
		}
	}
	return all
}

// monitorName names a resource as the engine's SyncState does.
func monitorName(group, version, resource string) string {
	if group == "" {
		return version + "/" + resource
	}
	return group + "/" + version + "/" + resource
}

// tracker follows the engine's feed: how many objects the graph has observed, how many
// items wait in or are held from its queues, and when the graph or the workers last did
// something that matters to an answer. A busy cluster updates its objects all the time (a
// Pod's status, a Lease): each update reaches the graph, but one that changes nothing the
// collector reads (owners, finalizers, deletion) is not a change here, so the engine can
// settle on a cluster that never stops moving.
type tracker struct {
	engine *gc.GarbageCollector

	mu      sync.Mutex
	nodes   map[types.UID]nodeMark
	objects int // nodes observed
	queues  map[gc.QueueName]gc.QueueCounts
	changed time.Time // of the last change that matters
	seq     uint64
}

// nodeMark is what the tracker keeps of a node: whether it is observed, and a
// fingerprint of what the collector reads of it.
type nodeMark struct {
	observed    bool
	fingerprint uint64
}

func newTracker(engine *gc.GarbageCollector) *tracker {
	return &tracker{engine: engine, nodes: map[types.UID]nodeMark{}, queues: map[gc.QueueName]gc.QueueCounts{}, changed: time.Now()}
}

// follow reads the feed until ctx ends. A reader that falls behind the feed's ring starts
// again from a snapshot, as the feed's contract says.
func (t *tracker) follow(ctx context.Context) {
	t.engine.Feed().Follow(ctx, 0, gc.Follower{
		Resync: func(context.Context) (uint64, error) { return t.reset(t.engine.Snapshot()), nil },
		Events: func(_ context.Context, events []gc.Event) error {
			t.apply(events) // (the engine is this binary's: it publishes no type apply does not know)
			return nil
		},
	})
}

// apply follows events. Each type of the feed's vocabulary has its case; an event of
// another type counts as a change, and apply returns the types it did not know.
func (t *tracker) apply(events []gc.Event) (unknown []gc.EventType) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for _, e := range events {
		switch e.Type {
		case gc.NodeRemoved:
			if e.Node == nil {
				break
			}
			if t.nodes[e.Node.UID].observed {
				t.objects--
			}
			delete(t.nodes, e.Node.UID)
			changed = true
		case gc.NodeAdded, gc.NodeUpdated:
			if e.Node == nil {
				break
			}
			mark := nodeMark{observed: e.Node.Observed, fingerprint: fingerprint(e.Node)}
			if old, ok := t.nodes[e.Node.UID]; !ok || old != mark {
				if old.observed {
					t.objects--
				}
				if mark.observed {
					t.objects++
				}
				t.nodes[e.Node.UID] = mark
				changed = true
			}
		case gc.QueueChange:
			if e.Queue == nil {
				break
			}
			if e.Queue.Counts != nil {
				t.queues[e.Queue.Queue] = *e.Queue.Counts
			}
			// graphChanges carries every update of every object; the other queues move
			// only when the collector has work.
			changed = changed || e.Queue.Queue != gc.GraphChanges
		case gc.EdgeAdded, gc.EdgeRemoved, gc.ActionTaken, gc.SyncChange, gc.ShadowChange:
			changed = true
		default:
			unknown = append(unknown, e.Type)
			changed = true
		}
		t.seq = e.Seq
	}
	if changed {
		t.changed = time.Now()
	}
	return unknown
}

// fingerprint hashes what the collector reads of a node.
func fingerprint(n *gc.NodeState) uint64 {
	h := fnv.New64a()
	for _, o := range n.Owners {
		fmt.Fprintf(h, "%s|%s|%s|%s|%t|%t;", o.UID, o.APIVersion, o.Kind, o.Name, o.Controller, o.BlockOwnerDeletion)
	}
	fmt.Fprintf(h, "%q|%t|%t|%t", n.Finalizers, n.BeingDeleted, n.DeletingDependents, n.Virtual)
	return h.Sum64()
}

func (t *tracker) reset(s gc.Snapshot) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.nodes)
	t.objects = 0
	for i := range s.Nodes {
		n := &s.Nodes[i]
		t.nodes[n.UID] = nodeMark{observed: n.Observed, fingerprint: fingerprint(n)}
		if n.Observed {
			t.objects++
		}
	}
	for _, q := range s.Queues {
		t.queues[q.Name] = gc.QueueCounts{Depth: q.Depth, InFlight: q.InFlight}
	}
	t.seq, t.changed = s.Seq, time.Now()
	return s.Seq
}

// counts are the objects observed and the items queued or in flight in all queues.
func (t *tracker) counts() (objects, busy int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, q := range t.queues {
		busy += q.Depth + q.InFlight
	}
	return t.objects, busy
}

// quiet reports whether the tracker has read the feed up to seq at least, and nothing
// that matters has happened for d. (On a busy cluster the feed never stops: the tracker
// is asked about what was published a moment ago, which it has read by now.)
func (t *tracker) quiet(seq uint64, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seq >= seq && time.Since(t.changed) >= d
}

// progress tells the reader on stderr what a long sync is doing: on a terminal one line
// rewritten in place; otherwise a line now and then, and only once the sync is slow.
type progress struct {
	w   io.Writer
	tty bool
	now func() time.Time

	start     time.Time
	lastPrint time.Time
	line      string // on screen (tty)
	printed   bool
}

// Progress cadence.
const (
	ttyProgressAfter   = 300 * time.Millisecond // a terminal shows progress once a sync takes this long
	ttyProgressEvery   = 100 * time.Millisecond
	plainProgressAfter = 2 * time.Second // a pipe or file gets a line once a sync takes this long
	plainProgressEvery = 5 * time.Second
)

func newProgress(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, now: now, start: now()}
}

func (p *progress) syncing(resources, synced, objects int) {
	if resources == 0 {
		p.show("discovering resources…")
		return
	}
	p.show(fmt.Sprintf("syncing %s (%s listed)… %s", counted(resources, "resource"), thousands(synced), counted(objects, "object")))
}

func (p *progress) settling(objects, busy int) {
	p.show(fmt.Sprintf("checking owners… %s, %s queued", counted(objects, "object"), thousands(busy)))
}

// finish clears the line on a terminal, or closes the lines printed elsewhere with a
// summary.
func (p *progress) finish(resources, objects int, took time.Duration) {
	if p == nil {
		return
	}
	p.clear()
	if !p.tty && p.printed {
		fmt.Fprintf(p.w, "synced %s: %s in %s\n", counted(resources, "resource"), counted(objects, "object"), took.Round(100*time.Millisecond))
		p.printed = false
	}
}

// clear takes the progress line off a terminal.
func (p *progress) clear() {
	if p != nil && p.tty && p.line != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.line = ""
	}
}

func (p *progress) show(line string) {
	if p == nil {
		return
	}
	now := p.now()
	if p.tty {
		if now.Sub(p.start) < ttyProgressAfter || line == p.line || now.Sub(p.lastPrint) < ttyProgressEvery {
			return
		}
		fmt.Fprint(p.w, "\r\x1b[K"+line)
		p.line, p.lastPrint = line, now
		return
	}
	if now.Sub(p.start) < plainProgressAfter || (p.printed && now.Sub(p.lastPrint) < plainProgressEvery) {
		return
	}
	fmt.Fprintln(p.w, line)
	p.printed, p.lastPrint = true, now
}

// counted is n and the noun: "1 resource", "12,000 objects".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(n) + " " + noun + "s"
}

// thousands writes n with thousands separators: 12,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// answer is what every command starts with: the named object, resolved and read, and
// the engine's graph of the cluster around it.
type answer struct {
	kube    *kube
	target  target
	uid     types.UID
	session *session
}

// prepare connects, resolves and reads the named object, and syncs the engine. The
// caller stops the session.
func prepare(ctx context.Context, o *options, args []string) (*answer, error) {
	kind, name, err := splitObjectArg(args)
	if err != nil {
		return nil, err
	}
	k, err := reached(o)
	if err != nil {
		return nil, err
	}
	t, err := k.resolve(kind, name)
	if err != nil {
		return nil, err
	}
	getCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	obj, err := k.get(getCtx, t)
	cancel()
	if err != nil {
		return nil, err
	}
	gvr := t.mapping.Resource
	s, err := startSession(k, o)
	if err != nil {
		return nil, err
	}
	warnings, err := s.sync(ctx, o.syncTimeout, newProgress(o.stderr, isTerminal(o.stderr), time.Now))
	if err != nil {
		s.stop()
		return nil, err
	}
	if _, ok := s.engine.Node(obj.UID); !ok {
		s.stop()
		name := monitorName(gvr.Group, gvr.Version, gvr.Resource)
		st := s.engine.SyncState()
		if reason, failing := st.Failing[name]; failing {
			return nil, fmt.Errorf("the engine could not list %s across all namespaces, as the collector needs to: %s", resourceName(gvr.GroupResource()), oneLine(errors.New(reason)))
		}
		if !slices.Contains(st.Resources, name) {
			return nil, fmt.Errorf("the garbage collector does not monitor %s (it ignores them, or they cannot be listed, watched and deleted), so it has no view of %s",
				resourceName(gvr.GroupResource()), t)
		}
		return nil, fmt.Errorf("%s was deleted while the engine listed the cluster", t)
	}
	for _, w := range warnings {
		fmt.Fprintf(o.stderr, "warning: %s\n", w)
	}
	return &answer{kube: k, target: t, uid: obj.UID, session: s}, nil
}

// explain is the engine's explanation of uid for a one-shot answer, without the engine's
// comparison of its shadow decisions with what the cluster's collector did: decisions of
// an engine started a moment ago are all "pending" by a few milliseconds, which says
// nothing about the cluster's collector. (The engine's own last decision stays, in Last.)
func (a *answer) explain(uid types.UID) (gc.Explanation, bool) {
	e, ok := a.session.engine.Explain(uid)
	if ok && len(e.Shadow) > 0 {
		e.Shadow = nil
		e.Narrate(a.kube.served, time.Now())
	}
	return e, ok
}
