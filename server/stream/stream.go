// Package stream is the live stream, GET /api/v1/stream: a websocket that carries a snapshot of the engine,
// then the feed's events in batches ("deltas"), narrowed to what the client subscribed
// to. docs/stream.md is the frame schema.
//
// One hub goroutine (Hub.Run) reads the feed and hands each batch to every client without
// waiting: a batch goes into the client's bounded queue, or, when that queue is full, the
// client's queue is emptied and the client is marked behind. Each client has its own
// writer goroutine (the ServeHTTP goroutine), which alone owns the client's subscription
// state: it filters the batches, encodes at the edge, writes with a timeout, and answers
// "behind" with a fresh snapshot. A slow browser costs that browser a resync, never the
// hub or the engine a stall.
//
// The server composes it: New takes what it needs of the server as Options (who the
// user is, what they may see, how a refusal is answered and audited, how credentials are
// checked again), so that the stream knows nothing of sessions or routes.
package stream

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
)

const (
	defaultStreamBatch  = 50 * time.Millisecond
	defaultQuickBatch   = 20 * time.Millisecond
	defaultClientBuffer = 256
	defaultWriteTimeout = 10 * time.Second
	defaultPingInterval = 20 * time.Second
	// A browser tab holds one stream: these bound what a runaway script or a shared
	// install's users can hold open.
	defaultMaxClients        = 256
	defaultMaxClientsPerUser = 32

	// streamReadLimit bounds a client's frame; a bigger one closes the connection with
	// StatusMessageTooBig.
	streamReadLimit = 64 << 10
	// maxFrameEvents bounds the events of one deltas frame when a client catches up.
	maxFrameEvents = 4096
	// hubReadMax is how many events the hub takes from the feed at once.
	hubReadMax = 8192
	// idleSeqInterval: when a client's subscription filtered everything out, an empty
	// deltas frame tells it the sequence number at most this often.
	idleSeqInterval = time.Second
	// maxPendingPongs bounds the pongs owed to a client that pings faster than it reads.
	maxPendingPongs = 8
	// closeGrace is how long a close handshake may take before the connection is cut.
	closeGrace = 2 * time.Second
	// streamPiece: a message larger than this is handed to the connection in pieces of
	// this size (see message).
	streamPiece = 256 << 10
)

// Compression says whether the stream's frames are deflated (permessage-deflate,
// RFC 7692) for clients that offer it (every current browser).
type Compression int

const (
	// CompressionDefault is CompressionOn. Measured end to end at 150,000
	// objects (docs/performance.md, "The snapshot on the wire"): deflate cuts the
	// snapshot 5×, which halves the time to the first frame at 100 Mbit/s and makes it
	// possible at all at 20 Mbit/s (undeflated, it outlasts the write timeout), for little
	// or nothing on loopback. Whether a client is near cannot be told from its address:
	// behind kubectl port-forward, a remote browser connects from loopback.
	CompressionDefault Compression = iota
	// CompressionOff never deflates.
	CompressionOff
	// CompressionOn deflates every frame of 512 bytes or more, each on its own
	// (no context takeover: a connection holds no compressor between frames).
	CompressionOn
)

// mode is the websocket library's compression mode for c.
func (c Compression) mode() websocket.CompressionMode {
	if c == CompressionOn || c == CompressionDefault {
		return websocket.CompressionNoContextTakeover
	}
	return websocket.CompressionDisabled
}

// EventSource is the part of the engine's feed the stream reads.
type EventSource interface {
	LastSeq() uint64
	Since(seq uint64, max int) ([]gc.Event, error)
	Wait(ctx context.Context, seq uint64) error
}
