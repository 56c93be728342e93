package stream

// One stream client's goroutines: the reader (client frames), the keepalive, and the
// writer, which alone owns the client's subscription state.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/wire"
)

// streamClient is one websocket connection.
type streamClient struct {
	h    *Hub
	user string // for the per-user bound
	// credentials checks the client's credentials again (nil: never), last at credentialsAt.
	credentials   func(context.Context) error
	credentialsAt time.Time
	conn          *websocket.Conn
	netConn       net.Conn // under conn
	deflate       bool     // frames of deflateAtLeast bytes go deflated, as binary messages (?encoding=deflate)

	// Between the hub and the writer.
	batches chan *batch   // bounded; the hub never waits on it
	wake    chan struct{} // one pending wake-up for the writer
	// resync, when set, is the reason the writer must send a snapshot: the hub dropped
	// the client's batches (wire.ReasonBehind) or fell behind the feed itself (wire.ReasonStale).
	resync atomic.Pointer[wire.SnapshotReason]

	// Between the reader and the writer, under mu.
	mu     sync.Mutex
	newSub *subscription
	pongs  int

	// The writer's own.
	view     *view
	seq      uint64 // the client's state is the engine's at seq, through its view
	sent     uint64 // seq of the last frame sent
	lastSent time.Time
	pending  [][]byte // encoded events of the next deltas frame
	// kept, keptRaw: add's scratch, the events of a batch the view keeps and their encodings.
	kept    []gc.Event
	keptRaw [][]byte
	// The last summary frame (summary subscriptions): when, and what it said.
	summaryAt   time.Time
	summarySent []byte
}

// offer hands b to the writer without waiting; a full queue is emptied and the client
// marked behind. Called by the hub.
func (c *streamClient) offer(b *batch) {
	select {
	case c.batches <- b:
	default:
		c.markBehind(&resyncBehind, len(b.events))
	}
}

// The reasons the hub gives a writer for a resync.
var resyncBehind, resyncStale = wire.ReasonBehind, wire.ReasonStale

// pongFrame is every pong, encoded once.
var pongFrame, _ = json.Marshal(wire.PongFrame{Type: wire.FramePong})

// markBehind drops the queued batches (dropped events are counted, plus extra) and has
// the writer send a snapshot, for reason.
func (c *streamClient) markBehind(reason *wire.SnapshotReason, extra int) {
	dropped := extra
	for drained := false; !drained; {
		select {
		case b := <-c.batches:
			dropped += len(b.events)
		default:
			drained = true
		}
	}
	c.h.metrics.dropped.Add(float64(dropped))
	c.resync.Store(reason)
	c.signal()
}

func (c *streamClient) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// readLoop reads the client's frames until the connection ends or a frame is bad, in
// which case it closes the connection with the reason.
func (c *streamClient) readLoop() {
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			// Includes frames over the read limit: the library closes with StatusMessageTooBig.
			return
		}
		if typ != websocket.MessageText {
			c.closeWith(websocket.StatusUnsupportedData, "bad frame: binary frames are not accepted; send JSON text")
			return
		}
		req, err := wire.ParseClientFrame(data)
		if err != nil {
			c.closeWith(websocket.StatusPolicyViolation, wire.CloseReason(err.Error()))
			return
		}
		c.mu.Lock()
		if req.Ping {
			c.pongs = min(c.pongs+1, maxPendingPongs)
		} else {
			c.newSub = &req.Sub
		}
		c.mu.Unlock()
		c.signal()
	}
}

// closeWith closes the connection with a status and reason. The close handshake gets
// closeGrace; then the connection is cut (the library would wait 10 s for a peer that
// does not read).
func (c *streamClient) closeWith(code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		c.conn.Close(code, reason)
		close(done)
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		if c.netConn != nil {
			c.netConn.Close()
		}
		<-done
	}
}

// keepalive pings the client every PingInterval and closes a connection that does not
// answer within WriteTimeout.
func (c *streamClient) keepalive(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(c.h.o.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, c.h.o.WriteTimeout)
		err := c.conn.Ping(pctx)
		pcancel()
		if err != nil {
			if ctx.Err() == nil {
				// The peer does not answer: a close handshake would only wait for it.
				c.h.log.Debug("stream: no pong; closing", "err", err)
				c.conn.CloseNow()
				cancel()
			}
			return
		}
	}
}

// writeLoop sends the client its first frame (a snapshot, or the deltas after since),
// then whatever the hub and the reader ask for, until ctx ends or a write fails.
func (c *streamClient) writeLoop(ctx context.Context, since *uint64) error {
	if err := c.start(ctx, since); err != nil {
		return err
	}
	idle := time.NewTicker(idleSeqInterval)
	defer idle.Stop()
	for {
		if err := c.serveRequests(ctx); err != nil {
			return err
		}
		if reason := c.resync.Swap(nil); reason != nil {
			c.h.metrics.resyncs.Inc()
			if err := c.sendSnapshot(ctx, *reason); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case b := <-c.batches:
			if err := c.deliver(ctx, b); err != nil {
				return err
			}
			if err := c.sendSummary(ctx, false); err != nil {
				return err
			}
		case <-c.wake:
		case <-idle.C:
			if err := c.recheckCredentials(ctx); err != nil {
				c.closeWith(StatusSignedOut, wire.CloseReason(err.Error()))
				return nil
			}
			if c.view.vis.Refresh() {
				// The user's permissions changed: what the client holds is redrawn.
				if err := c.sendSnapshot(ctx, wire.ReasonPermissions); err != nil {
					return err
				}
			}
			if err := c.flush(ctx, false); err != nil {
				return err
			}
			if err := c.sendSummary(ctx, false); err != nil {
				return err
			}
		}
	}
}

// StatusSignedOut closes a stream whose credentials are no longer accepted (a code of the
// range RFC 6455 leaves to applications: 4000 plus HTTP's 401). The page stops
// reconnecting and offers to sign in again.
const StatusSignedOut websocket.StatusCode = 4401

// recheckCredentials asks again, every CredentialsInterval, whether the client's
// credentials are still good; it answers security.ErrNotSignedIn when they are not (a cluster that
// cannot be asked right now keeps the stream going).
func (c *streamClient) recheckCredentials(ctx context.Context) error {
	if c.credentials == nil || time.Since(c.credentialsAt) < c.h.o.CredentialsInterval {
		return nil
	}
	c.credentialsAt = time.Now()
	if err := c.credentials(ctx); errors.Is(err, security.ErrNotSignedIn) {
		return err
	}
	return nil
}

// serveRequests answers the reader's pings and subscription changes.
func (c *streamClient) serveRequests(ctx context.Context) error {
	c.mu.Lock()
	pongs, sub := c.pongs, c.newSub
	c.pongs, c.newSub = 0, nil
	c.mu.Unlock()
	for range pongs {
		if err := c.write(ctx, wire.FramePong, pongFrame); err != nil {
			return err
		}
	}
	if sub != nil {
		c.view = newView(*sub, c.view.vis)
		return c.sendSnapshot(ctx, wire.ReasonSubscribe)
	}
	return nil
}

// start sends the first frame. With since, while the feed still holds the events after
// it, the client resumes: deltas from since+1 and no snapshot. A uid subscription always
// starts from a snapshot, since its component is computed from the graph; so does a
// user's stream under per-user reads: a resume filters the events up to now
// conservatively (a removal for whatever the client may hold), which must never name an
// object the user may not see, and the objects the client holds may be ones the user
// has since lost the right to see.
func (c *streamClient) start(ctx context.Context, since *uint64) error {
	feed := c.h.o.Feed
	if since == nil || len(c.view.sub.UIDs) > 0 || c.view.vis != nil || *since > feed.LastSeq() {
		return c.sendSnapshot(ctx, wire.ReasonInitial)
	}
	if _, err := feed.Since(*since, 1); err != nil {
		return c.sendSnapshot(ctx, wire.ReasonStale)
	}
	c.seq, c.sent = *since, *since
	if err := c.sendSummary(ctx, true); err != nil {
		return err
	}
	if !c.view.all {
		// Which objects the client holds is not known exactly: take it from the graph
		// now, and filter the events up to now conservatively.
		s := c.viewSnapshot(c.h.o.Feed.LastSeq())
		c.view.seedResume(s.Nodes, s.Seq)
	}
	if err := c.catchUp(ctx, feed.LastSeq()); err != nil {
		return err
	}
	if c.sent == *since && c.seq == *since {
		// Nothing new yet: say that the resume worked.
		return c.flush(ctx, true)
	}
	return nil
}

// catchUp brings the client to at least target from the feed, in frames of at most
// maxFrameEvents events; a gap the feed no longer holds is answered with a snapshot.
func (c *streamClient) catchUp(ctx context.Context, target uint64) error {
	for c.seq < target {
		events, err := c.h.o.Feed.Since(c.seq, maxFrameEvents)
		if errors.Is(err, gc.ErrTooOld) {
			c.h.metrics.resyncs.Inc()
			return c.sendSnapshot(ctx, wire.ReasonStale)
		}
		if err != nil {
			return err
		}
		if len(events) == 0 {
			break
		}
		c.add(events, nil)
		if c.view.needsSnapshot() {
			return c.sendSnapshot(ctx, wire.ReasonComponent)
		}
		if err := c.flush(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// add filters events (consecutive, following c.seq) into the pending frame; raw, when
// given, are their encodings.
func (c *streamClient) add(events []gc.Event, raw [][]byte) {
	kept, enc := c.kept[:0], c.keptRaw[:0]
	for i, e := range events {
		if e.Seq <= c.seq {
			continue
		}
		out, keep, rewritten := c.view.filter(e)
		if keep {
			kept = append(kept, out)
			if raw != nil && !rewritten {
				enc = append(enc, raw[i])
			} else {
				enc = append(enc, encodeEvent(out))
			}
		}
		c.seq = e.Seq
	}
	c.pending = appendFolded(c.pending, kept, enc)
	clear(kept)
	clear(enc)
	c.kept, c.keptRaw = kept[:0], enc[:0]
}

// deliver sends b and the batches queued behind it: as their own shared frames, or as one
// deltas frame of the client's.
func (c *streamClient) deliver(ctx context.Context, b *batch) error {
	batches := []*batch{b}
	n := len(b.events)
	for more := true; more && n < maxFrameEvents; {
		select {
		case next := <-c.batches:
			batches = append(batches, next)
			n += len(next.events)
		default:
			more = false
		}
	}
	// A client that sees everything and is where the batches begin is sent each batch's
	// own frame, encoded once for every such client; one that asked for the stream's
	// deflate takes them one by one even when several waited (each deflated once for all),
	// where another joins them into one frame of its own (fewer frames, nothing deflated).
	for len(batches) > 0 && (len(batches) == 1 || c.deflate) && c.view.all && len(c.pending) == 0 && c.sent == c.seq && batches[0].from == c.seq+1 {
		b := batches[0]
		frame := b.frame(c.view.sub.Queues)
		if frame == nil {
			break // nothing of it for this client: its seq goes on in the next frame
		}
		if err := c.writeFrame(ctx, wire.FrameDeltas, frame, func() []byte { return b.deflatedFrame(c.view.sub.Queues) }); err != nil {
			return err
		}
		c.seq, c.sent = b.to, b.to
		batches = batches[1:]
	}
	for _, b := range batches {
		if b.to <= c.seq {
			continue // the client's snapshot already has it
		}
		if b.from > c.seq+1 {
			// A gap (the client resynced or resumed behind the hub): take it from the feed.
			if err := c.flush(ctx, false); err != nil {
				return err
			}
			if err := c.catchUp(ctx, b.from-1); err != nil {
				return err
			}
			if b.to <= c.seq {
				continue
			}
		}
		if c.view.all && b.from == c.seq+1 {
			// Filtered and folded once for every client that sees everything.
			c.pending = append(c.pending, b.everything(c.view.sub.Queues)...)
		} else {
			c.add(b.events, b.encoded())
		}
		c.seq = b.to
		if c.view.needsSnapshot() {
			return c.sendSnapshot(ctx, wire.ReasonComponent)
		}
		if len(c.pending) >= maxFrameEvents {
			if err := c.flush(ctx, false); err != nil {
				return err
			}
		}
	}
	return c.flush(ctx, false)
}
