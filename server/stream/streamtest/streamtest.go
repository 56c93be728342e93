// Package streamtest reads the stream as a client does, for tests: a frame of any type
// decoded (Frame), and what a client makes of the frames it reads (Model), with the
// sequence rules checked on the way.
package streamtest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// Frame is any server frame, decoded; Raw is its JSON, Deflated the binary message it was
// inflated from (?encoding=deflate), nil for a text message.
type Frame struct {
	Type     string          `json:"type"`
	Reason   string          `json:"reason"`
	Seq      uint64          `json:"seq"`
	From     uint64          `json:"from"`
	Mode     gc.Mode         `json:"mode"`
	Nodes    []gc.NodeState  `json:"nodes"`
	Queues   []gc.QueueState `json:"queues"`
	Sync     *gc.SyncState   `json:"sync"`
	Events   []gc.Event      `json:"events"`
	Raw      []byte          `json:"-"`
	Deflated []byte          `json:"-"`
}

// Model is what a client makes of the frames: the nodes it holds at Seq.
type Model struct {
	Started bool
	Seq     uint64
	Nodes   map[types.UID]gc.NodeState
	Frames  map[string]int // by type, or "snapshot/"+reason
}

// NewModel is a client that has read nothing.
func NewModel() *Model {
	return &Model{Nodes: map[types.UID]gc.NodeState{}, Frames: map[string]int{}}
}

// Apply applies f and checks the sequence rules: a snapshot never goes back, a deltas
// frame starts right after the client's seq, and its events are in order within it.
func (m *Model) Apply(f Frame) error {
	switch f.Type {
	case "snapshot":
		m.Frames["snapshot/"+f.Reason]++
		if m.Started && f.Seq < m.Seq {
			return fmt.Errorf("snapshot at %d after seq %d", f.Seq, m.Seq)
		}
		if f.Nodes == nil || f.Sync == nil {
			return fmt.Errorf("snapshot without nodes or sync: %s", f.Raw)
		}
		clear(m.Nodes)
		for _, n := range f.Nodes {
			m.Nodes[n.UID] = n
		}
		m.Seq, m.Started = f.Seq, true
	case "deltas":
		m.Frames["deltas"]++
		if !m.Started {
			return fmt.Errorf("deltas before a snapshot: %s", f.Raw)
		}
		if f.From != m.Seq+1 {
			return fmt.Errorf("deltas from %d after seq %d", f.From, m.Seq)
		}
		if f.Events == nil {
			return fmt.Errorf("deltas without events: %s", f.Raw)
		}
		prev := m.Seq
		for _, e := range f.Events {
			if e.Seq <= prev || e.Seq > f.Seq {
				return fmt.Errorf("event %d out of order in deltas (%d, %d]", e.Seq, m.Seq, f.Seq)
			}
			prev = e.Seq
			ApplyEvent(m.Nodes, e)
		}
		m.Seq = f.Seq
	default:
		m.Frames[f.Type]++
	}
	return nil
}

// ApplyEvent applies a node event to a state; other events change no node.
func ApplyEvent(nodes map[types.UID]gc.NodeState, e gc.Event) {
	switch e.Type {
	case gc.NodeAdded, gc.NodeUpdated:
		nodes[e.Node.UID] = *e.Node
	case gc.NodeRemoved:
		delete(nodes, e.Node.UID)
	}
}
