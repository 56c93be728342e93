package gc

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The feed's vocabulary: every type of event it publishes and the payload each carries.
// This file is the one place it is declared. Its consumers (the Replica, the stream's
// per-user view, history's codes, replay and cascades, the kubectl plugin's tracker, the
// page's store) each have a test that walks EventTypes, and the page's JSDoc typedefs
// (static/src/events.gen.js) are generated from these structs: see docs/stream.md, "The
// vocabulary", for how to add a type.

// EventType says what an Event reports; exactly one of its payload fields is set.
type EventType string

const (
	NodeAdded    EventType = "nodeAdded"   // Node: a new node (observed or virtual)
	NodeUpdated  EventType = "nodeUpdated" // Node: the node's full new state
	NodeRemoved  EventType = "nodeRemoved" // Node: the node as it was when removed
	EdgeAdded    EventType = "edgeAdded"   // Edge: a dependent names an owner (or the reference changed)
	EdgeRemoved  EventType = "edgeRemoved" // Edge: the reference is gone
	QueueChange  EventType = "queue"       // Queue: a work-queue transition
	ActionTaken  EventType = "action"      // Action: a worker's decision or API call, with its result
	SyncChange   EventType = "sync"        // Sync: the monitored resources or their sync state changed
	ShadowChange EventType = "shadow"      // Shadow: a shadow-mode decision was made or its outcome changed
)

// vocabulary declares every type, in the order EventTypes lists them, with the JSON name
// of the Event field that carries its payload.
var vocabulary = []struct {
	typ     EventType
	payload string
}{
	{NodeAdded, "node"}, {NodeUpdated, "node"}, {NodeRemoved, "node"},
	{EdgeAdded, "edge"}, {EdgeRemoved, "edge"},
	{QueueChange, "queue"}, {ActionTaken, "action"}, {SyncChange, "sync"}, {ShadowChange, "shadow"},
}

// EventTypes is every EventType the feed publishes, in a fixed order. Each consumer of the
// feed has a test that walks it, so a type added here and not handled somewhere fails.
func EventTypes() []EventType {
	out := make([]EventType, len(vocabulary))
	for i, d := range vocabulary {
		out[i] = d.typ
	}
	return out
}

// Payload is the JSON name of the Event field that carries t's payload ("node", "edge",
// ...), or "" when t is not one of EventTypes.
func (t EventType) Payload() string {
	for _, d := range vocabulary {
		if d.typ == t {
			return d.payload
		}
	}
	return ""
}

// Event is one entry of the feed.
type Event struct {
	Seq    uint64          `json:"seq"`
	Time   time.Time       `json:"time"`
	Type   EventType       `json:"type"`
	Node   *NodeState      `json:"node,omitempty"`
	Edge   *Edge           `json:"edge,omitempty"`
	Queue  *QueueEvent     `json:"queue,omitempty"`
	Action *Action         `json:"action,omitempty"`
	Sync   *SyncState      `json:"sync,omitempty"`
	Shadow *ShadowDecision `json:"shadow,omitempty"`
}

// ObjectRef identifies an object.
type ObjectRef struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// OwnerRef is one ownerReference of an object.
type OwnerRef struct {
	APIVersion         string    `json:"apiVersion"`
	Kind               string    `json:"kind"`
	Name               string    `json:"name"`
	UID                types.UID `json:"uid"`
	Controller         bool      `json:"controller,omitempty"`
	BlockOwnerDeletion bool      `json:"blockOwnerDeletion,omitempty"`
}

// NodeState is a node of the dependency graph as the engine sees it.
type NodeState struct {
	ObjectRef
	Owners            []OwnerRef `json:"owners,omitempty"`
	Finalizers        []string   `json:"finalizers,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	// BeingDeleted: the object has a deletionTimestamp.
	BeingDeleted bool `json:"beingDeleted,omitempty"`
	// DeletingDependents: a foreground deletion is waiting for blocking dependents.
	DeletingDependents bool `json:"deletingDependents,omitempty"`
	// Virtual: only known as the owner named by dependents; not observed yet.
	Virtual bool `json:"virtual,omitempty"`
	// Observed: seen through an informer (the opposite of Virtual).
	Observed bool `json:"observed,omitempty"`
	// Orphaned: the ownerReferences the garbage collector removed from the object (an
	// Orphan delete of the owner, a dangling or waiting reference), newest last, at most
	// 8, each for a day unless dismissed. Kept in the engine's memory only.
	Orphaned []OrphanMark `json:"orphaned,omitempty"`
}

// Edge is the ownerReference from Dependent to Owner.
type Edge struct {
	Dependent          types.UID `json:"dependent"`
	Owner              types.UID `json:"owner"`
	Controller         bool      `json:"controller,omitempty"`
	BlockOwnerDeletion bool      `json:"blockOwnerDeletion,omitempty"`
}

// QueueName names one of the engine's three work queues, as upstream does.
type QueueName string

const (
	GraphChanges    QueueName = "graphChanges"
	AttemptToDelete QueueName = "attemptToDelete"
	AttemptToOrphan QueueName = "attemptToOrphan"
)

// QueueOp is a work-queue transition.
type QueueOp string

const (
	QueueAdded      QueueOp = "added"      // put in the queue (or marked dirty while in flight)
	QueueAddedAfter QueueOp = "addedAfter" // scheduled to be added after its backoff Delay
	QueueTaken      QueueOp = "taken"      // taken by a worker
	QueueDone       QueueOp = "done"       // the worker finished with it
	QueueForgotten  QueueOp = "forgotten"  // its backoff was reset
)

// QueueEvent is one queue transition of one item.
type QueueEvent struct {
	Queue  QueueName `json:"queue"`
	Op     QueueOp   `json:"op"`
	Object ObjectRef `json:"object"`
	// Change is what a graphChanges item carries: add, update, delete or virtualDelete.
	Change string `json:"change,omitempty"`
	// Delay is the backoff of an addedAfter transition.
	Delay time.Duration `json:"delay,omitempty"`
	// Retries is how many times the item has been requeued with backoff so far.
	Retries int `json:"retries,omitempty"`
	// Merged: the added item was waiting already (the same item, not another one of the
	// same object), so the queue did not grow.
	Merged bool `json:"merged,omitempty"`
	// Counts are the whole queue's counts just after this transition. A reader that is
	// sent only some objects' transitions keeps its counters right with them.
	Counts *QueueCounts `json:"counts,omitempty"`
}

// QueueCounts are a queue's counts: items waiting for a worker (what the workqueue_depth
// metric counts, an item added again while in flight included) and items workers hold.
type QueueCounts struct {
	Depth    int `json:"depth"`
	InFlight int `json:"inFlight"`
}

// ActionVerb is what a worker did.
type ActionVerb string

const (
	VerbGet             ActionVerb = "get"             // looked the item or an owner up
	VerbKeep            ActionVerb = "keep"            // decided to leave the item alone
	VerbRemoveRefs      ActionVerb = "patchRemoveRefs" // patched away dangling/waiting ownerReferences
	VerbUnblock         ActionVerb = "patchUnblock"    // set blockOwnerDeletion=false on its references
	VerbDelete          ActionVerb = "delete"          // DELETE with Policy
	VerbRemoveFinalizer ActionVerb = "removeFinalizer" // removed Finalizer
	VerbOrphan          ActionVerb = "orphan"          // removed the reference to the owner from one dependent
	VerbWarn            ActionVerb = "warn"            // recorded a Warning event on the object
	VerbRequeue         ActionVerb = "requeue"         // will retry the item
)

// Action is one decision or API call of a worker and its result.
type Action struct {
	Queue     QueueName  `json:"queue"`
	Verb      ActionVerb `json:"verb"`
	Object    ObjectRef  `json:"object"`
	Policy    string     `json:"policy,omitempty"`
	Finalizer string     `json:"finalizer,omitempty"`
	// Refs are the owner uids a patch touches, or the owner an orphaning removes.
	Refs []types.UID `json:"refs,omitempty"`
	// Reason says why, in words.
	Reason string `json:"reason,omitempty"`
	// For is the item on whose behalf Object was looked up (an owner is looked up for its
	// dependent), when it is another object; Reason names it.
	For *ObjectRef `json:"for,omitempty"`
	// Error is the API error, if the call failed.
	Error string `json:"error,omitempty"`
	// ErrorReason is Error's API status reason, when it has one: Conflict (409, another
	// writer changed the object first: the worker retries, as upstream's does), NotFound,
	// Forbidden, …
	ErrorReason string `json:"errorReason,omitempty"`
	// Shadow: computed but not performed (shadow mode).
	Shadow   bool          `json:"shadow,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
}

// SyncState is which resources the engine monitors and whether their caches have synced.
type SyncState struct {
	Resources []string `json:"resources"`
	Unsynced  []string `json:"unsynced,omitempty"`
	// Failing are resources whose list or watch keeps failing, with the last error.
	Failing map[string]string `json:"failing,omitempty"`
	// Discovery, when set, says why the engine monitors nothing yet (discovery found no
	// resource) and that it retries.
	Discovery string `json:"discovery,omitempty"`
	// DiscoveryFailures are the API group versions discovery cannot read now, by group
	// version ("metrics.k8s.io/v1beta1"): their resources are not monitored, and the
	// namespace controller cannot finish deleting any namespace while one fails.
	DiscoveryFailures map[string]GroupFailure `json:"discoveryFailures,omitempty"`
}

// ShadowOutcome is where a shadow decision stands.
type ShadowOutcome string

const (
	ShadowPending   ShadowOutcome = "pending"   // nothing done to the object yet
	ShadowOverdue   ShadowOutcome = "overdue"   // still nothing, past the threshold
	ShadowConfirmed ShadowOutcome = "confirmed" // the cluster did the same
	ShadowDiverged  ShadowOutcome = "diverged"  // the cluster did something else
	ShadowWithdrawn ShadowOutcome = "withdrawn" // the engine decided otherwise since
)

// shadowOutcomes are every ShadowOutcome, open ones first.
var shadowOutcomes = []ShadowOutcome{ShadowPending, ShadowOverdue, ShadowConfirmed, ShadowDiverged, ShadowWithdrawn}

// ShadowDecision is one write the engine would have made, and what became of it.
type ShadowDecision struct {
	ID uint64 `json:"id"`
	// Action is the write, as recorded on the feed (Shadow set).
	Action    Action        `json:"action"`
	DecidedAt time.Time     `json:"decidedAt"`
	Outcome   ShadowOutcome `json:"outcome"`
	// ResolvedAt: when the outcome was settled (confirmed, diverged or withdrawn).
	ResolvedAt *time.Time `json:"resolvedAt,omitempty"`
	// Lag: from the decision to the cluster's act (confirmed, diverged); for an open
	// decision, how long it has waited so far.
	Lag time.Duration `json:"lag"`
	// Observed says what the cluster was seen to do, in words.
	Observed string `json:"observed,omitempty"`
}

// GroupFailure is an API group version discovery could not read (an aggregated API whose
// Service is down, say), and since when it has failed without a break.
type GroupFailure struct {
	Error string    `json:"error"`
	Since time.Time `json:"since"`
}
