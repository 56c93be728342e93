package graph

// The engine's work queues.

import (
	"net/http"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

func (rs *Resource) handleQueues(w http.ResponseWriter, r *http.Request) {
	snap := edge.ClusterFrom(r).Engine.Snapshot()
	queues := edge.VisibilityFrom(r).Queues(snap.Queues)
	httpapi.WriteJSON(w, http.StatusOK, QueuesResponse{Seq: snap.Seq, Mode: snap.Mode, Queues: queues, Sync: snap.Sync})
}

type QueuesResponse struct {
	Seq    uint64          `json:"seq"`
	Mode   gc.Mode         `json:"mode"`
	Queues []gc.QueueState `json:"queues"`
	Sync   gc.SyncState    `json:"sync"`
}
