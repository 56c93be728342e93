package server

// The engine's work queues.

import (
	"net/http"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/httpapi"
)

func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	snap := clusterFrom(r).Engine.Snapshot()
	queues := visibilityFrom(r).Queues(snap.Queues)
	httpapi.WriteJSON(w, http.StatusOK, queuesResponse{Seq: snap.Seq, Mode: snap.Mode, Queues: queues, Sync: snap.Sync})
}

type queuesResponse struct {
	Seq    uint64          `json:"seq"`
	Mode   gc.Mode         `json:"mode"`
	Queues []gc.QueueState `json:"queues"`
	Sync   gc.SyncState    `json:"sync"`
}
