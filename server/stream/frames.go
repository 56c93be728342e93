package stream

// The stream's frames on the wire: events encoded once, deltas and snapshot frames,
// and large messages handed to the connection a piece at a time.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/narrow"
	"github.com/gcscope/gcscope/server/wire"
)

// encodeEvent encodes e; the only failure json can have here (a time outside years
// 0-9999) is answered by dropping the times.
func encodeEvent(e gc.Event) []byte {
	data, err := json.Marshal(e)
	if err == nil {
		return data
	}
	e.Time = time.Time{}
	if e.Node != nil && e.Node.DeletionTimestamp != nil {
		n := *e.Node
		n.DeletionTimestamp = nil
		e.Node = &n
	}
	if data, err = json.Marshal(e); err == nil {
		return data
	}
	data, _ = json.Marshal(struct {
		Seq   uint64       `json:"seq"`
		Type  gc.EventType `json:"type"`
		Error string       `json:"error"`
	}{e.Seq, e.Type, err.Error()})
	return data
}

// flush sends the pending events as a deltas frame covering (sent, seq]. With nothing
// pending it sends an empty frame only when forced, or when the client has not been told
// its sequence number for idleSeqInterval.
func (c *streamClient) flush(ctx context.Context, force bool) error {
	if len(c.pending) == 0 && !force && (c.seq == c.sent || time.Since(c.lastSent) < idleSeqInterval) {
		return nil
	}
	buf := deltasFrame(c.sent+1, c.seq, c.pending)
	clear(c.pending)
	c.pending = c.pending[:0]
	if err := c.write(ctx, wire.FrameDeltas, buf); err != nil {
		return err
	}
	c.sent = c.seq
	return nil
}

// deltasPrefix opens every deltas frame.
const deltasPrefix = `{"type":"` + string(wire.FrameDeltas) + `","from":`

// deltasFrame is the deltas frame covering from … seq with the encoded events.
func deltasFrame(from, seq uint64, events [][]byte) []byte {
	size := 64
	for _, p := range events {
		size += len(p) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, deltasPrefix...)
	buf = strconv.AppendUint(buf, from, 10)
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendUint(buf, seq, 10)
	buf = append(buf, `,"events":[`...)
	for i, p := range events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, p...)
	}
	return append(buf, "]}"...)
}

// sendSnapshot sends a fresh snapshot through the client's view and restarts the
// client's sequence from it.
func (c *streamClient) sendSnapshot(ctx context.Context, reason wire.SnapshotReason) error {
	if err := c.sendSummary(ctx, true); err != nil {
		return err
	}
	c.resync.Store(nil) // a resync asked for until now is answered by this snapshot
	s := c.viewSnapshot(c.seq)
	f := wire.SnapshotFrame{Type: wire.FrameSnapshot, Reason: reason, Seq: s.Seq, Mode: s.Mode, Nodes: c.view.reset(s.Nodes), Sync: s.Sync}
	if f.Nodes == nil {
		f.Nodes = []gc.NodeState{}
	}
	if c.view.sub.Queues {
		f.Queues = c.view.queues(s.Queues)
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	c.seq = s.Seq
	wctx, cancel := context.WithTimeout(ctx, c.h.o.WriteTimeout)
	defer cancel()
	m := c.newMessage(wctx)
	if err := writeSnapshot(m, f); err != nil {
		return err
	}
	if err := m.Close(); err != nil {
		return err
	}
	c.sent = s.Seq
	c.wrote(wire.FrameSnapshot)
	return nil
}

// viewSnapshot is a snapshot at atLeast or later with at least the nodes the client's
// view selects: without nodes for a summary subscription that names nothing, from the
// engine's index for one that names some (Bare and Subset take the engine's seq now:
// past atLeast, and the batches that follow continue it), else the hub's.
func (c *streamClient) viewSnapshot(atLeast uint64) *gc.Snapshot {
	switch {
	case c.view.none && c.h.o.Bare != nil:
		s := c.h.o.Bare()
		return &s
	case c.view.sub.Summary && c.h.o.Subset != nil:
		s := c.h.o.Subset(c.view.sub.Namespaces, c.view.sub.UIDs)
		return &s
	}
	return c.h.snapshot(atLeast)
}

// snapshotPieceNodes is how many nodes writeSnapshot encodes at once (about 300 KB).
const snapshotPieceNodes = 1024

// writeSnapshot encodes f into w, as json.Marshal would. The nodes, most of a large
// snapshot, are encoded a piece at a time, so that, written to a message, the first
// pieces are on their way (deflated, when the connection is) while the next are encoded,
// and the whole encoding is never held at once.
func writeSnapshot(w io.Writer, f wire.SnapshotFrame) error {
	nodes := f.Nodes
	f.Nodes = []gc.NodeState{}
	frame, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding a snapshot: %w", err)
	}
	// The fields before the nodes hold no user data (type, reason, seq, mode): the first
	// "nodes":[] is the nodes array, which the nodes are written into.
	const key = `"nodes":[`
	at := bytes.Index(frame, []byte(key+"]"))
	if at < 0 {
		return fmt.Errorf("encoding a snapshot: no nodes array in %.100q", frame)
	}
	at += len(key)
	if _, err := w.Write(frame[:at]); err != nil {
		return err
	}
	first := true
	for piece := range slices.Chunk(nodes, snapshotPieceNodes) {
		data, err := json.Marshal(piece)
		if err != nil {
			return fmt.Errorf("encoding a snapshot: %w", err)
		}
		data = data[:len(data)-1] // the array's closing bracket
		if first {
			data = data[1:] // its opening one
		} else {
			data[0] = ',' // in place of the opening one
		}
		first = false
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	_, err = w.Write(frame[at:])
	return err
}

func (c *streamClient) write(ctx context.Context, typ wire.FrameType, data []byte) error {
	return c.writeFrame(ctx, typ, data, func() []byte { return deflated(data) })
}

// writeFrame sends frame: as deflate makes it (once for every client that is sent a
// shared frame) to a client on the stream's own deflate, else as text, a large one in
// pieces (permessage-deflate then compresses each while the next is handed over).
func (c *streamClient) writeFrame(ctx context.Context, typ wire.FrameType, frame []byte, deflate func() []byte) error {
	wctx, cancel := context.WithTimeout(ctx, c.h.o.WriteTimeout)
	defer cancel()
	var err error
	switch {
	case c.deflate && len(frame) >= deflateAtLeast:
		err = c.conn.Write(wctx, websocket.MessageBinary, deflate())
	case len(frame) > streamPiece:
		m := c.newMessage(wctx)
		if _, err = m.Write(frame); err == nil {
			err = m.Close()
		}
	default:
		err = c.conn.Write(wctx, websocket.MessageText, frame)
	}
	if err != nil {
		return err
	}
	c.wrote(typ)
	return nil
}

// wrote counts a frame of typ written.
func (c *streamClient) wrote(typ wire.FrameType) {
	c.lastSent = time.Now()
	c.h.metrics.frames.WithLabelValues(string(typ)).Inc()
}

// message is one text message to the client. A small one is written whole when closed;
// a large one (a snapshot) is handed to the connection a piece at a time as it is
// written, so that, deflated, each piece is compressed and sent while the next is
// encoded and compressed, rather than the whole message encoded, then compressed, before
// its first byte leaves. The client receives one message either way.
type message struct {
	ctx     context.Context // bounds the whole message
	conn    *websocket.Conn
	deflate bool // the stream's own deflate (deflate.go): a binary message
	buf     []byte
	w       io.WriteCloser // once the message is large
}

func (c *streamClient) newMessage(ctx context.Context) *message {
	return &message{ctx: ctx, conn: c.conn, deflate: c.deflate}
}

// Write adds p to the message; it fails only once the connection has.
func (m *message) Write(p []byte) (int, error) {
	if m.w == nil && len(m.buf)+len(p) <= streamPiece {
		m.buf = append(m.buf, p...)
		return len(p), nil
	}
	if m.w == nil {
		typ := websocket.MessageText
		if m.deflate {
			typ = websocket.MessageBinary
		}
		w, err := m.conn.Writer(m.ctx, typ)
		if err != nil {
			return 0, err
		}
		m.w = w
		if m.deflate {
			m.w = newDeflateWriter(w)
		}
	}
	for len(m.buf)+len(p) >= streamPiece {
		n := streamPiece - len(m.buf)
		m.buf = append(m.buf, p[:n]...)
		p = p[n:]
		if _, err := m.w.Write(m.buf); err != nil {
			return 0, err
		}
		m.buf = m.buf[:0]
	}
	m.buf = append(m.buf, p...)
	return len(p), nil
}

// Close sends what is left of the message and ends it.
func (m *message) Close() error {
	if m.w == nil && m.deflate && len(m.buf) >= deflateAtLeast {
		return m.conn.Write(m.ctx, websocket.MessageBinary, deflated(m.buf))
	}
	if m.w == nil {
		return m.conn.Write(m.ctx, websocket.MessageText, m.buf)
	}
	if len(m.buf) > 0 {
		if _, err := m.w.Write(m.buf); err != nil {
			return err
		}
	}
	return m.w.Close()
}

// summaryEvery is how often, at most, a summary subscription is sent the counts again
// while they change.
const summaryEvery = time.Second

// sendSummary sends a summary subscription the graph counted, for what its user may see:
// always with force (before each snapshot), else when summaryEvery has passed and the
// counts changed since the last one.
func (c *streamClient) sendSummary(ctx context.Context, force bool) error {
	if !c.view.sub.Summary || c.h.o.Summary == nil || (!force && time.Since(c.summaryAt) < summaryEvery) {
		return nil
	}
	c.summaryAt = time.Now()
	counts := narrow.Summarize(c.h.o.Summary(), c.view.vis)
	seq := counts.Seq
	counts.Seq = 0 // the counts alone say whether anything changed
	same, _ := json.Marshal(counts)
	if !force && bytes.Equal(same, c.summarySent) {
		return nil
	}
	c.summarySent = same
	counts.Seq = seq
	data, err := json.Marshal(wire.SummaryFrame{Type: wire.FrameSummary, Summary: counts})
	if err != nil {
		return err
	}
	return c.write(ctx, wire.FrameSummary, data)
}
