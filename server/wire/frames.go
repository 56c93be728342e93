package wire

// The stream's frames (GET /api/v1/stream; docs/stream.md is their schema): the types a
// server frame can have, why a snapshot is sent, and the shape of each frame. Declared
// once, as the feed's event types are in gc/events.go: the page's copy,
// static/src/frames.gen.js, is generated from these (server/wire/internal/framesjs), and
// each consumer's tests walk FrameTypes and SnapshotReasons.

import "github.com/gcscope/gcscope/gc"

// FrameType is the "type" of a frame the server sends.
type FrameType string

const (
	FrameSnapshot FrameType = "snapshot" // the objects the client holds, replaced whole (SnapshotFrame)
	FrameDeltas   FrameType = "deltas"   // the feed's events since the client's seq (DeltasFrame)
	FrameSummary  FrameType = "summary"  // the graph counted per namespace and kind (SummaryFrame)
	FramePong     FrameType = "pong"     // the answer to a client's ping (PongFrame)
)

// FrameTypes is every type of frame the server sends.
func FrameTypes() []FrameType {
	return []FrameType{FrameSnapshot, FrameDeltas, FrameSummary, FramePong}
}

// SnapshotReason says why a client is sent a snapshot.
type SnapshotReason string

const (
	ReasonInitial     SnapshotReason = "initial"     // the connection starts (no since, since not held, or per-user reads)
	ReasonSubscribe   SnapshotReason = "subscribe"   // the client changed its subscription
	ReasonBehind      SnapshotReason = "behind"      // the client's queue overflowed: it did not read fast enough
	ReasonStale       SnapshotReason = "stale"       // the events the client needs have left the feed (or the hub fell behind it)
	ReasonComponent   SnapshotReason = "component"   // the uid closure took in objects the client has not seen
	ReasonPermissions SnapshotReason = "permissions" // what the user may list changed
)

// SnapshotReasons is every reason a snapshot is sent for.
func SnapshotReasons() []SnapshotReason {
	return []SnapshotReason{ReasonInitial, ReasonSubscribe, ReasonBehind, ReasonStale, ReasonComponent, ReasonPermissions}
}

// SnapshotFrame replaces what the client holds: the objects it subscribed to and may see,
// at Seq, the engine's mode and sync state, and the queues when subscribed to them.
type SnapshotFrame struct {
	Type   FrameType       `json:"type"`
	Reason SnapshotReason  `json:"reason"`
	Seq    uint64          `json:"seq"`
	Mode   gc.Mode         `json:"mode"`
	Nodes  []gc.NodeState  `json:"nodes"`
	Queues []gc.QueueState `json:"queues,omitempty"`
	Sync   gc.SyncState    `json:"sync"`
}

// DeltasFrame carries the events from From to Seq that the client's subscription selects
// (none, when it only tells the client Seq). The server writes it by hand, event by event
// as each was encoded once for every client; a test checks the bytes decode into this
// shape, key for key.
type DeltasFrame struct {
	Type   FrameType  `json:"type"`
	From   uint64     `json:"from"`
	Seq    uint64     `json:"seq"`
	Events []gc.Event `json:"events"`
}

// SummaryFrame is the graph counted, as GET /api/v1/summary answers it.
type SummaryFrame struct {
	Type FrameType `json:"type"`
	Summary
}

// PongFrame answers a ping.
type PongFrame struct {
	Type FrameType `json:"type"`
}

// Summary is the graph counted, of what the user may list: per namespace (its totals,
// not its kinds: a page draws a namespace it does not show in detail as a box with
// counts) and per kind cluster-wide (for the kind filter). Its size follows the
// namespaces, not the objects (docs/api.md).
type Summary struct {
	Seq        uint64           `json:"seq"`
	Objects    int              `json:"objects"`
	Namespaces []NamespaceCount `json:"namespaces"` // by name; "" is cluster-scoped
	Kinds      []KindCount      `json:"kinds"`      // by apiVersion and kind
}

// NamespaceCount is one namespace's objects counted.
type NamespaceCount struct {
	Name               string `json:"name"`
	Objects            int    `json:"objects"`
	BeingDeleted       int    `json:"beingDeleted,omitempty"`
	DeletingDependents int    `json:"deletingDependents,omitempty"`
	Virtual            int    `json:"virtual,omitempty"`
}

// KindCount is one kind's objects counted, cluster-wide.
type KindCount struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Objects    int    `json:"objects"`
}
