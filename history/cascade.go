package history

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// A cascade is the deletion of a root object and every deletion the collector made
// because of it. The Recorder tags cascades as it records, from the events alone:
//
//   - An object first seen being deleted (a node update with beingDeleted or
//     deletingDependents, or a node removal not preceded by one) joins the open cascade
//     one of its owners belongs to; when none does, it is the root of a new cascade, whose
//     policy its finalizers show (foregroundDeletion: Foreground, orphan: Orphan, else
//     Background).
//   - A worker's write about an object (delete, orphan, removeFinalizer, a patch) makes it
//     a member the same way; an orphaned dependent is a member that is not deleted. A
//     delete of an object no open cascade has (the collector's own finding: its owners
//     are absent) starts one rooted at it, with the delete's policy.
//   - So does a dependent put in attemptToDelete or attemptToOrphan while one of its
//     owners is a member: the collector has it to do, however long its queue makes it
//     wait (a backlog of thousands, at the client's QPS, is minutes), and the cascade is
//     not over before it is deleted, orphaned or freed of the reference.
//   - Every event about a member (or about an object one of whose owners is a member: the
//     queue transitions and look-ups that lead to its deletion) carries the cascade's id.
//   - A cascade ends once nothing of it is left to happen: each member was deleted,
//     orphaned, or kept (the collector decided to leave it, and it is not being deleted:
//     another owner holds it, or its reference is invalid), and nothing of it happened for
//     CascadeQuiet (2 s by default): a foreground root waits for its dependents, and a
//     background one's dependents are queued only after it is gone, so "nothing left"
//     alone would end it early. A kept member that is deleted after all is live again.
//   - A Namespace being deleted is the root of a namespace deletion: the namespace
//     controller deletes its content, and an object of that namespace first seen being
//     deleted, with no owner in an open cascade, joins it, so one namespace delete is one
//     cascade however many objects go with it.
//   - A gap in the recording (or a restart) ends every open cascade, with a note. The
//     deletions under way in the state the recording resumes from open cascades again
//     (adopt), so that one outliving gcscope is one cascade of the next session.
type Cascade struct {
	ID      int64        `json:"id"`
	Session int64        `json:"session"`
	Root    gc.ObjectRef `json:"root"`
	// Policy is the root's propagation policy as its finalizers showed it: Foreground,
	// Orphan or Background.
	Policy string    `json:"policy"`
	Start  time.Time `json:"start"`
	// End is the time of its last event once it has ended; nil while it is open.
	End *time.Time `json:"end"`
	// Objects is how many objects it concerned (its members, the root included), Deleted
	// how many of them left the graph, Kept how many stay (kept, or orphaned: see Count),
	// Actions how many writes the workers made for it, Errors how many of those failed,
	// Retries how many met a conflict (409), which the worker retries as upstream's does:
	// not failures.
	Objects int `json:"objects"`
	Deleted int `json:"deleted"`
	Kept    int `json:"kept"`
	Actions int `json:"actions"`
	Errors  int `json:"errors"`
	Retries int `json:"retries"`
	// FirstPos and LastPos bound its events in the recording.
	FirstPos int64 `json:"firstPos"`
	LastPos  int64 `json:"lastPos"`
	// Note says why it ended without finishing (a gap in the recording, a stop), or that
	// it was under way when the recording began.
	Note string `json:"note,omitempty"`
}

// Count is how the cascade is counted, the one definition every place that counts a
// cascade uses (the page's is cascades.js's tally, the same in JavaScript; docs/ui.md says
// it in words): its members are the root (counted) and every object the delete takes
// along; a member that stays — orphaned (its reference into the cascade removed: an Orphan
// delete, or another owner keeps it) or kept (the collector leaves it: its reference is
// invalid, another owner holds it) — is an outcome counted apart (kept), not work pending.
// It is said "gone of of gone" ("6 of 6 gone · 1 kept"): of the members that do not stay,
// how many left the graph.
//
// While a cascade runs, the recording learns of a member once the collector reaches it
// (queued, acted on, seen going); the page counts the dependents it holds as soon as the
// deletion begins.
func (c Cascade) Count() (gone, of, kept int) {
	return c.Deleted, c.Objects - c.Kept, c.Kept
}

// Propagation policies, as the API names them.
const (
	policyForeground = "Foreground"
	policyBackground = "Background"
	policyOrphan     = "Orphan"
)

// DefaultCascadeQuiet is how long a cascade with nothing left waits for more of it.
const DefaultCascadeQuiet = 2 * time.Second

// openCascade is a cascade being recorded.
type openCascade struct {
	Cascade
	last    time.Time // its latest event
	members map[types.UID]member
	live    int // the members still to happen
}

// member is where a cascade's member stands.
type member uint8

const (
	memberGone member = iota // deleted: it left the graph
	memberLive               // something of it is still to happen
	memberKept               // it stays (orphaned, or the collector leaves it): an outcome, unless it is deleted after all
)

// cascades tags events with their cascade; only the Recorder's goroutine uses it.
type cascades struct {
	quiet  time.Duration
	nextID int64
	open   map[int64]*openCascade
	byUID  map[types.UID]*openCascade // the members of open cascades
	dirty  map[int64]*openCascade     // to write with the next block
	joined []cascadeMember            // members to write with the next block
	// namespaces are the open namespace deletions, by the namespace's name.
	namespaces map[string]*openCascade
}

type cascadeMember struct {
	cascade int64
	uid     types.UID
}

func newCascades(quiet time.Duration, nextID int64) *cascades {
	return &cascades{quiet: quiet, nextID: nextID, open: map[int64]*openCascade{},
		byUID: map[types.UID]*openCascade{}, dirty: map[int64]*openCascade{}, namespaces: map[string]*openCascade{}}
}

// writes are the verbs that count as the collector acting on an object for a cascade.
var writes = []gc.ActionVerb{gc.VerbDelete, gc.VerbOrphan, gc.VerbRemoveFinalizer, gc.VerbRemoveRefs, gc.VerbUnblock}

// observe tags e, the event at pos of session, before rep applies it, and returns its
// cascade's id (0: none).
func (cs *cascades) observe(e *gc.Event, pos, session int64, rep *gc.Replica) int64 {
	if len(cs.open) == 0 && !nodeGoing(e) && !collectorDelete(e) {
		return 0 // most events, most of the time: only a deletion can start one
	}
	if tag := cascadeTagging[e.Type]; tag != nil {
		return tag(cs, e, pos, session, rep)
	}
	return 0 // a type this version does not know (a newer engine's)
}

// cascadeTagging is how observe tags each type of event: every type of gc.EventTypes has
// its entry, notCascaded for those about no object (TestCascadesDecideEveryEventType).
var cascadeTagging = map[gc.EventType]func(cs *cascades, e *gc.Event, pos, session int64, rep *gc.Replica) int64{
	gc.NodeAdded:    (*cascades).tagNode,
	gc.NodeUpdated:  (*cascades).tagNode,
	gc.NodeRemoved:  (*cascades).tagNode,
	gc.EdgeAdded:    (*cascades).tagEdge,
	gc.EdgeRemoved:  (*cascades).tagEdge,
	gc.QueueChange:  (*cascades).tagQueue,
	gc.ActionTaken:  (*cascades).tagAction,
	gc.ShadowChange: (*cascades).tagAction,
	gc.SyncChange:   notCascaded, // the monitored resources: about no object
}

func notCascaded(*cascades, *gc.Event, int64, int64, *gc.Replica) int64 { return 0 }

// nodeGoing: e shows a node going. A node first seen already being deleted (the engine
// started while a deletion was under way) is going as much as one that is updated to it.
func nodeGoing(e *gc.Event) bool {
	return e.Node != nil && (e.Type == gc.NodeUpdated || e.Type == gc.NodeRemoved ||
		e.Type == gc.NodeAdded && (e.Node.BeingDeleted || e.Node.DeletingDependents))
}

// collectorDelete: e is a delete the collector made (and the API accepted).
func collectorDelete(e *gc.Event) bool {
	return e.Action != nil && e.Action.Verb == gc.VerbDelete && e.Action.Error == ""
}

// tagNode: a node going joins the cascade of its owners (or its namespace's) or starts one.
func (cs *cascades) tagNode(e *gc.Event, pos, session int64, rep *gc.Replica) int64 {
	n := e.Node
	if n == nil {
		return 0
	}
	if !nodeGoing(e) { // added
		if c := cs.byUID[n.UID]; c != nil {
			cs.touch(c, e, pos)
			return c.ID
		}
		return 0
	}
	c := cs.byUID[n.UID]
	deleting := e.Type == gc.NodeRemoved || n.BeingDeleted || n.DeletingDependents
	if c == nil && deleting {
		if c = cs.ownersCascade(n.UID, n.Owners, rep); c == nil {
			c = cs.namespaces[n.Namespace]
		}
		if c == nil {
			c = cs.start(n.ObjectRef, policyOf(n.Finalizers), e.Time, pos, session)
		}
		cs.join(c, n.UID)
	}
	if c == nil {
		return cs.byOwner(n.UID, n.Owners, rep, e, pos)
	}
	switch state := c.members[n.UID]; {
	case e.Type == gc.NodeRemoved && state != memberGone:
		// Once: a virtual node the graph makes for a gone owner is removed again later.
		c.settle(n.UID, memberGone)
		c.Deleted++
	case deleting && state == memberKept:
		c.settle(n.UID, memberLive) // kept, then deleted after all
	case !deleting && state == memberLive && n.UID != c.Root.UID && cs.ownersCascade(n.UID, n.Owners, nil) != c:
		// Its owners in the cascade are gone from its references: orphaned, it stays.
		c.settle(n.UID, memberKept)
	}
	cs.touch(c, e, pos)
	return c.ID
}

// tagAction: a worker's write (or shadow decision) about an object makes it a member; a
// look-up is tagged with the cascade of the object it is for.
func (cs *cascades) tagAction(e *gc.Event, pos, session int64, rep *gc.Replica) int64 {
	a := e.Action
	if a == nil && e.Shadow != nil {
		a = &e.Shadow.Action
	}
	if a == nil {
		return 0
	}
	c := cs.byUID[a.Object.UID]
	if c == nil && slices.Contains(writes, a.Verb) {
		n, _ := rep.Node(a.Object.UID)
		if c = cs.ownersCascade(a.Object.UID, n.Owners, rep); c == nil && a.Verb == gc.VerbOrphan {
			c = cs.anyOf(a.Refs)
		}
		if c == nil && collectorDelete(e) {
			// The collector deleted it on its own finding (its owners are absent): it is
			// the root, whichever comes first of this and the object's own events.
			policy := a.Policy
			if policy == "" {
				policy = policyBackground
			}
			c = cs.start(a.Object, policy, e.Time, pos, session)
		}
		if c != nil {
			cs.join(c, a.Object.UID)
		}
	}
	if c == nil && a.For != nil {
		c = cs.byUID[a.For.UID]
	}
	if c == nil {
		c = cs.anyOf(a.Refs)
	}
	if c == nil {
		n, _ := rep.Node(a.Object.UID)
		return cs.byOwner(a.Object.UID, n.Owners, rep, e, pos)
	}
	if e.Action != nil && slices.Contains(writes, a.Verb) {
		c.Actions++
		switch {
		case retried(e.Action):
			c.Retries++
		case a.Error != "":
			c.Errors++
		}
		switch {
		case a.Verb == gc.VerbOrphan && a.Error == "":
			c.settle(a.Object.UID, memberKept) // orphaned: it stays
		case a.Verb == gc.VerbDelete && c.members[a.Object.UID] == memberKept:
			c.settle(a.Object.UID, memberLive) // kept, then deleted after all
		}
	}
	if e.Action != nil && a.Verb == gc.VerbKeep && c.members[a.Object.UID] == memberLive {
		// The collector leaves it; unless it is being deleted (waiting for its dependents or
		// for other finalizers), nothing more of it is to happen for this cascade.
		if n, _ := rep.Node(a.Object.UID); !n.BeingDeleted && !n.DeletingDependents {
			c.settle(a.Object.UID, memberKept)
		}
	}
	cs.touch(c, e, pos)
	return c.ID
}

// tagQueue: a dependent put in attemptToDelete or attemptToOrphan while an owner is a
// member joins; other transitions are tagged with a member's cascade.
func (cs *cascades) tagQueue(e *gc.Event, pos, _ int64, rep *gc.Replica) int64 {
	if e.Queue == nil {
		return 0
	}
	uid := e.Queue.Object.UID
	if c := cs.byUID[uid]; c != nil {
		cs.touch(c, e, pos)
		return c.ID
	}
	n, _ := rep.Node(uid)
	if e.Queue.Op == gc.QueueAdded && e.Queue.Queue != gc.GraphChanges {
		if c := cs.ownersCascade(uid, n.Owners, rep); c != nil {
			cs.join(c, uid)
			cs.touch(c, e, pos)
			return c.ID
		}
	}
	return cs.byOwner(uid, n.Owners, rep, e, pos)
}

// tagEdge: an edge is tagged with its dependent's cascade, else its owner's.
func (cs *cascades) tagEdge(e *gc.Event, pos, _ int64, _ *gc.Replica) int64 {
	if e.Edge == nil {
		return 0
	}
	c := cs.byUID[e.Edge.Dependent]
	if c == nil {
		c = cs.byUID[e.Edge.Owner]
	}
	if c == nil {
		return 0
	}
	cs.touch(c, e, pos)
	return c.ID
}

// byOwner tags an event about a non-member whose owner is a member (its look-ups and
// queue transitions on the way to being collected) without making it one.
func (cs *cascades) byOwner(uid types.UID, owners []gc.OwnerRef, rep *gc.Replica, e *gc.Event, pos int64) int64 {
	if c := cs.ownersCascade(uid, owners, rep); c != nil {
		cs.touch(c, e, pos)
		return c.ID
	}
	return 0
}

// ownersCascade is the open cascade one of owners (else, when rep is given, of the
// owners rep knows for uid) belongs to.
func (cs *cascades) ownersCascade(uid types.UID, owners []gc.OwnerRef, rep *gc.Replica) *openCascade {
	if len(cs.open) == 0 {
		return nil
	}
	for _, o := range owners {
		if c := cs.byUID[o.UID]; c != nil {
			return c
		}
	}
	if rep != nil {
		if n, ok := rep.Node(uid); ok {
			for _, o := range n.Owners {
				if c := cs.byUID[o.UID]; c != nil {
					return c
				}
			}
		}
	}
	return nil
}

func (cs *cascades) anyOf(uids []types.UID) *openCascade {
	for _, u := range uids {
		if c := cs.byUID[u]; c != nil {
			return c
		}
	}
	return nil
}

// underWay is the note of a cascade that began before the recording did.
const underWay = "under way when the recording began"

// adopt opens the cascades already under way in snap, the state a recording starts from
// (at a start, after a restart or a gap): every object being deleted joins the cascade of
// its topmost owner that is being deleted too. So a foreground deletion that outlived
// gcscope's last run is one cascade of the next, rather than a cascade for each of its
// dependents as they go, and pos is where its events begin. note says why it began
// before (underWay, or an import's window).
func (cs *cascades) adopt(snap *gc.Snapshot, at time.Time, pos, session int64, note string) {
	deleting := map[types.UID]*gc.NodeState{}
	for i := range snap.Nodes {
		if n := &snap.Nodes[i]; n.BeingDeleted || n.DeletingDependents {
			deleting[n.UID] = n
		}
	}
	namespaces := map[string]*gc.NodeState{} // the namespaces being deleted, by name
	for _, n := range deleting {
		if isNamespace(n.ObjectRef) {
			namespaces[n.Name] = n
		}
	}
	for i := range snap.Nodes { // in uid order: the same snapshot gives the same cascades
		n := &snap.Nodes[i]
		if deleting[n.UID] == nil {
			continue
		}
		root := n
		for seen := map[types.UID]bool{n.UID: true}; ; {
			var up *gc.NodeState
			for _, o := range root.Owners {
				if d := deleting[o.UID]; d != nil && !seen[o.UID] {
					up = d
					break
				}
			}
			if up == nil {
				break
			}
			seen[up.UID], root = true, up
		}
		if ns := namespaces[root.Namespace]; ns != nil {
			root = ns
		}
		c := cs.byUID[root.UID]
		if c == nil {
			c = cs.start(root.ObjectRef, policyOf(root.Finalizers), at, pos, session)
			c.Note = note
			cs.join(c, root.UID)
			cs.dirty[c.ID] = c
		}
		cs.join(c, n.UID)
	}
}

// policyOf is the propagation policy an object's finalizers show.
func policyOf(finalizers []string) string {
	switch {
	case slices.Contains(finalizers, "foregroundDeletion"):
		return policyForeground
	case slices.Contains(finalizers, "orphan"):
		return policyOrphan
	}
	return policyBackground
}

func (cs *cascades) start(root gc.ObjectRef, policy string, t time.Time, pos, session int64) *openCascade {
	c := &openCascade{Cascade: Cascade{ID: cs.nextID, Session: session, Root: root, Policy: policy,
		Start: t.UTC(), FirstPos: pos, LastPos: pos}, last: t, members: map[types.UID]member{}}
	cs.nextID++
	cs.open[c.ID] = c
	if isNamespace(root) {
		cs.namespaces[root.Name] = c
	}
	return c
}

// isNamespace reports whether ref is a Namespace, whose deletion takes its content along.
func isNamespace(ref gc.ObjectRef) bool { return ref.APIVersion == "v1" && ref.Kind == "Namespace" }

func (cs *cascades) join(c *openCascade, uid types.UID) {
	if _, ok := c.members[uid]; ok {
		return
	}
	c.members[uid] = memberLive
	c.live++
	c.Objects++
	cs.byUID[uid] = c
	cs.joined = append(cs.joined, cascadeMember{cascade: c.ID, uid: uid})
}

// settle moves a member to state, keeping the counts of those still to happen and of
// those that stay.
func (c *openCascade) settle(uid types.UID, state member) {
	old, ok := c.members[uid]
	if !ok || old == state {
		return
	}
	switch old {
	case memberLive:
		c.live--
	case memberKept:
		c.Kept--
	}
	switch state {
	case memberLive:
		c.live++
	case memberKept:
		c.Kept++
	}
	c.members[uid] = state
}

func (cs *cascades) touch(c *openCascade, e *gc.Event, pos int64) {
	c.LastPos = pos
	if e.Time.After(c.last) {
		c.last = e.Time
	}
	cs.dirty[c.ID] = c
}

// due reports whether an open cascade can end at now.
func (cs *cascades) due(now time.Time) bool {
	for _, c := range cs.open {
		if c.live <= 0 && now.Sub(c.last) >= cs.quiet {
			return true
		}
	}
	return false
}

// closeQuiet ends the cascades with nothing left and nothing new for the quiet period.
func (cs *cascades) closeQuiet(now time.Time) {
	for id, c := range cs.open {
		if c.live > 0 || now.Sub(c.last) < cs.quiet {
			continue
		}
		end := c.last.UTC()
		c.End = &end
		cs.dirty[id] = c
		delete(cs.open, id)
		for uid := range c.members {
			if cs.byUID[uid] == c {
				delete(cs.byUID, uid)
			}
		}
		if isNamespace(c.Root) && cs.namespaces[c.Root.Name] == c {
			delete(cs.namespaces, c.Root.Name)
		}
	}
}

// reset forgets every open cascade (at a seed: the store has closed them). Ids go on.
func (cs *cascades) reset() {
	*cs = *newCascades(cs.quiet, cs.nextID)
}

// nextDue is when the next open cascade with nothing left may end.
func (cs *cascades) nextDue() (time.Time, bool) {
	var t time.Time
	for _, c := range cs.open {
		if c.live <= 0 && (t.IsZero() || c.last.Add(cs.quiet).Before(t)) {
			t = c.last.Add(cs.quiet)
		}
	}
	return t, !t.IsZero()
}

// take returns what to write and forgets it.
func (cs *cascades) take() ([]*openCascade, []cascadeMember) {
	out := make([]*openCascade, 0, len(cs.dirty))
	for _, c := range cs.dirty {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *openCascade) int { return int(a.ID - b.ID) })
	clear(cs.dirty)
	joined := cs.joined
	cs.joined = nil
	return out, joined
}
