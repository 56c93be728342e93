package server

// The live stream, GET /api/v1/stream: a websocket that carries a snapshot of the engine,
// then the feed's events in batches ("deltas"), narrowed to what the client subscribed
// to. docs/stream.md is the frame schema.
//
// One hub goroutine (run) reads the feed and hands each batch to every client without
// waiting: a batch goes into the client's bounded queue, or, when that queue is full, the
// client's queue is emptied and the client is marked behind. Each client has its own
// writer goroutine (the ServeHTTP goroutine), which alone owns the client's subscription
// state: it filters the batches, encodes at the edge, writes with a timeout, and answers
// "behind" with a fresh snapshot. A slow browser costs that browser a resync, never the
// hub or the engine a stall.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/wire"
)

const (
	defaultStreamBatch  = 50 * time.Millisecond
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

// StreamCompression says whether the stream's frames are deflated (permessage-deflate,
// RFC 7692) for clients that offer it (every current browser).
type StreamCompression int

const (
	// StreamCompressionDefault is StreamCompressionOn. Measured end to end at 150,000
	// objects (docs/performance.md, "The snapshot on the wire"): deflate cuts the
	// snapshot 5×, which halves the time to the first frame at 100 Mbit/s and makes it
	// possible at all at 20 Mbit/s (undeflated, it outlasts the write timeout), for little
	// or nothing on loopback. Whether a client is near cannot be told from its address:
	// behind kubectl port-forward, a remote browser connects from loopback.
	StreamCompressionDefault StreamCompression = iota
	// StreamCompressionOff never deflates.
	StreamCompressionOff
	// StreamCompressionOn deflates every frame of 512 bytes or more, each on its own
	// (no context takeover: a connection holds no compressor between frames).
	StreamCompressionOn
)

// mode is the websocket library's compression mode for c.
func (c StreamCompression) mode() websocket.CompressionMode {
	if c == StreamCompressionOn || c == StreamCompressionDefault {
		return websocket.CompressionNoContextTakeover
	}
	return websocket.CompressionDisabled
}

// Snapshot reasons: why a client is sent a snapshot.
const (
	reasonInitial     = "initial"     // the connection starts (no since, since not held, or per-user reads)
	reasonSubscribe   = "subscribe"   // the client changed its subscription
	reasonBehind      = "behind"      // the client's queue overflowed: it did not read fast enough
	reasonStale       = "stale"       // the events the client needs have left the feed (or the hub fell behind it)
	reasonComponent   = "component"   // the uid closure took in objects the client has not seen
	reasonPermissions = "permissions" // what the user may list changed
)

// GET /api/v1/stream's query parameters: those that take one value, and the repeatable ones.
var (
	streamSingle = []string{"queues", "since"}
	streamMulti  = []string{"namespace", "kind", "uid"}
)

// hubOptions configure the stream hub.
type hubOptions struct {
	Snapshot func() gc.Snapshot // the engine's consistent snapshot
	Feed     EventSource        // the engine's feed
	Logger   *slog.Logger
	// Batch: deltas are flushed at most this often; default 50 ms.
	Batch time.Duration
	// Buffer is how many frames a client may have pending before it is resynced; default 256.
	Buffer int
	// OriginPatterns are extra allowed origins (see originAllowed); the request's own
	// scheme and host are always allowed.
	OriginPatterns []string
	// MaxClients bounds the clients in all (default 256), MaxClientsPerUser those of one
	// user (default 32); a client over either is closed with StatusTryAgainLater.
	MaxClients, MaxClientsPerUser int
	// User names the user of a request, for the per-user bound; nil: one user.
	User func(*http.Request) string
	// Visibility is what the request's user may see; nil (or a nil answer): everything.
	Visibility func(*http.Request) *visibility
	// Refuse answers a refused upgrade (and may audit it); nil: the error alone.
	Refuse func(w http.ResponseWriter, r *http.Request, status int, e *apiError)
	// Registerer takes the hub's metrics; nil: not registered.
	Registerer prometheus.Registerer
	// WriteTimeout bounds one frame write; default 10 s. A client that does not read for
	// that long while frames are due is disconnected.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a client that does not answer within
	// WriteTimeout is closed. Default 20 s.
	PingInterval time.Duration
	// Compression: whether frames are deflated for clients that offer it.
	Compression StreamCompression
	// Credentials returns a check of the request's credentials (nil: never checked
	// again), run every CredentialsInterval (default 30 s): a stream outlives its
	// upgrade by hours, and a token revoked (or a session signed out) since must not
	// keep receiving. A check that answers errNotSignedIn closes the stream, with its text.
	Credentials         func(*http.Request) func(context.Context) error
	CredentialsInterval time.Duration
}

// hub fans the engine's feed out to the stream's clients.
type hub struct {
	o       hubOptions
	log     *slog.Logger
	metrics *streamMetrics
	// ctx ends every client when run returns.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	clients map[*streamClient]struct{}
	perUser map[string]int

	running atomic.Bool
	flushed atomic.Uint64 // seq of the last event handed to the clients

	snapMu sync.Mutex
	snap   *gc.Snapshot // the latest snapshot, shared by clients that resync together
}

func newHub(o hubOptions) *hub {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Batch <= 0 {
		o.Batch = defaultStreamBatch
	}
	if o.Buffer <= 0 {
		o.Buffer = defaultClientBuffer
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.CredentialsInterval <= 0 {
		o.CredentialsInterval = 30 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = defaultPingInterval
	}
	if o.MaxClients <= 0 {
		o.MaxClients = defaultMaxClients
	}
	if o.MaxClientsPerUser <= 0 {
		o.MaxClientsPerUser = defaultMaxClientsPerUser
	}
	if o.User == nil {
		o.User = func(*http.Request) string { return "" }
	}
	if o.Refuse == nil {
		o.Refuse = func(w http.ResponseWriter, _ *http.Request, status int, e *apiError) { writeJSON(w, status, e) }
	}
	h := &hub{o: o, log: o.Logger, metrics: newStreamMetrics(o.Registerer), clients: map[*streamClient]struct{}{}, perUser: map[string]int{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// batch is a run of consecutive feed events, (from-1, to], shared by every client; it is
// never modified once handed out. Each event is encoded once, by the first writer that
// needs it.
type batch struct {
	from, to uint64
	events   []gc.Event
	once     sync.Once
	raw      [][]byte
}

func (b *batch) encoded() [][]byte {
	b.once.Do(func() {
		b.raw = make([][]byte, len(b.events))
		for i := range b.events {
			b.raw[i] = encodeEvent(b.events[i])
		}
	})
	return b.raw
}

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

// run reads the feed and fans it out until ctx ends; then it closes every client. It
// never waits for a client.
func (h *hub) run(ctx context.Context) {
	defer h.cancel()
	h.running.Store(true)
	defer h.running.Store(false)
	feed := h.o.Feed
	cursor := feed.LastSeq()
	h.flushed.Store(cursor)
	next := time.Now()
	for {
		if err := feed.Wait(ctx, cursor); err != nil {
			return
		}
		// Flush at most every Batch: let events accumulate until then.
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		for {
			events, err := feed.Since(cursor, hubReadMax)
			if errors.Is(err, gc.ErrTooOld) {
				// The hub itself fell behind the ring: everyone starts again from a snapshot.
				cursor = feed.LastSeq()
				h.flushed.Store(cursor)
				h.log.Warn("stream hub fell behind the feed; resyncing every client", "seq", cursor)
				h.resyncAll()
				break
			}
			if err != nil {
				h.log.Error("reading the feed", "err", err)
				break
			}
			if len(events) == 0 {
				break
			}
			b := &batch{from: cursor + 1, to: events[len(events)-1].Seq, events: events}
			cursor = b.to
			h.flushed.Store(cursor)
			h.fanOut(b)
			if len(events) < hubReadMax {
				break
			}
		}
		next = time.Now().Add(h.o.Batch)
	}
}

func (h *hub) fanOut(b *batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.offer(b)
	}
}

func (h *hub) resyncAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.markBehind(&resyncStale, 0)
	}
}

// add admits c, or says why not: the server's or the user's bound of clients is reached.
func (h *hub) add(c *streamClient) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(h.clients) >= h.o.MaxClients:
		h.metrics.refused.Inc()
		return fmt.Sprintf("too many streams: the server holds its maximum of %d; try again later", h.o.MaxClients)
	case h.perUser[c.user] >= h.o.MaxClientsPerUser:
		h.metrics.refused.Inc()
		return fmt.Sprintf("too many streams for this user (%d open); close another tab", h.perUser[c.user])
	}
	h.clients[c] = struct{}{}
	h.perUser[c.user]++
	h.metrics.clients.Inc()
	return ""
}

func (h *hub) remove(c *streamClient) {
	h.mu.Lock()
	delete(h.clients, c)
	if h.perUser[c.user]--; h.perUser[c.user] <= 0 {
		delete(h.perUser, c.user)
	}
	h.mu.Unlock()
	h.metrics.clients.Dec()
}

// clientCount is how many clients are connected.
func (h *hub) clientCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// snapshot returns a snapshot at atLeast or later and no older than the batches already
// handed out, so that the next batch a client receives continues it. Clients that resync
// together share one; it must not be modified.
func (h *hub) snapshot(atLeast uint64) *gc.Snapshot {
	h.snapMu.Lock()
	defer h.snapMu.Unlock()
	if s := h.snap; s != nil && s.Seq >= atLeast {
		if s.Seq == h.o.Feed.LastSeq() {
			return s
		}
		if h.running.Load() && s.Seq >= h.flushed.Load() {
			// The hub's next batch continues it, if the feed still holds what follows.
			if _, err := h.o.Feed.Since(s.Seq, 1); err == nil {
				return s
			}
		}
	}
	s := h.o.Snapshot()
	h.snap = &s
	return h.snap
}

// ServeHTTP serves GET /api/v1/stream: query parameters namespace, kind, uid (each
// repeatable), queues and since are checked before the upgrade (400 when invalid);
// websocket.Accept refuses a cross-origin request (403) unless OriginPatterns allow it.
func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sub, since, perr := parseStreamQuery(r)
	if perr != nil {
		writeJSON(w, http.StatusBadRequest, perr)
		return
	}
	// A browser always sends Origin with a websocket; the page must be gcscope's own
	// (scheme and host) or an allowed origin. Accept's own check compares hosts only.
	if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, r, h.o.OriginPatterns) {
		h.o.Refuse(w, r, http.StatusForbidden, &apiError{Code: "csrf", Message: "cross-origin stream from " + quoteClip(o)})
		return
	}
	var vis *visibility
	if h.o.Visibility != nil {
		vis = h.o.Visibility(r)
	}
	rec := &hijackRecorder{ResponseWriter: w}
	conn, err := websocket.Accept(rec, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // Origin checked above
		CompressionMode:    h.o.Compression.mode(),
	})
	if err != nil {
		// Accept has answered (426 for a plain GET).
		h.log.Debug("stream: upgrade refused", "err", err)
		return
	}
	conn.SetReadLimit(streamReadLimit)

	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	c := &streamClient{
		h:       h,
		conn:    conn,
		netConn: rec.conn,
		batches: make(chan *batch, h.o.Buffer),
		wake:    make(chan struct{}, 1),
		view:    newView(sub, vis),
		user:    h.o.User(r),
	}
	if h.o.Credentials != nil {
		c.credentials = h.o.Credentials(r)
		c.credentialsAt = time.Now()
	}
	if why := h.add(c); why != "" {
		// Told on the websocket, where a browser can read it (it cannot read an HTTP status).
		c.closeWith(websocket.StatusTryAgainLater, wire.CloseReason(why))
		conn.CloseNow()
		return
	}
	defer h.remove(c)

	var wg sync.WaitGroup
	wg.Go(func() {
		// The reader reads without a context: cancelling one closes the connection at
		// once, and the writer may still be closing it with a reason.
		c.readLoop()
		cancel()
	})
	wg.Go(func() { c.keepalive(ctx, cancel) })

	err = c.writeLoop(ctx, since)
	switch {
	case h.ctx.Err() != nil:
		c.closeWith(websocket.StatusGoingAway, "server shutting down")
	case err != nil && ctx.Err() == nil:
		h.log.Debug("stream: client dropped", "err", err)
	}
	cancel()
	conn.CloseNow()
	wg.Wait()
}

// parseStreamQuery reads the initial subscription and since from the query.
func parseStreamQuery(r *http.Request) (subscription, *uint64, *apiError) {
	q, perr := strictQuery(r, streamSingle, streamMulti)
	if perr != nil {
		return subscription{}, nil, perr
	}
	bad := func(msg string) *apiError {
		return &apiError{Code: "bad_request", Message: msg, Allowed: slices.Concat(streamSingle, streamMulti)}
	}
	sub := subscription{Namespaces: q["namespace"], Kinds: q["kind"], Queues: true}
	for _, u := range q["uid"] {
		sub.UIDs = append(sub.UIDs, types.UID(u))
	}
	if q.Has("queues") {
		b, err := strconv.ParseBool(q.Get("queues"))
		if err != nil {
			return subscription{}, nil, bad(fmt.Sprintf("queues %q: want true or false", q.Get("queues")))
		}
		sub.Queues = b
	}
	if err := sub.Validate(); err != nil {
		return subscription{}, nil, bad(err.Error())
	}
	var since *uint64
	if q.Has("since") {
		n, err := strconv.ParseUint(q.Get("since"), 10, 64)
		if err != nil {
			return subscription{}, nil, bad(fmt.Sprintf("since %q: want a sequence number (an unsigned integer)", q.Get("since")))
		}
		since = &n
	}
	return sub, since, nil
}

// subscription narrows what a client receives (parsed by package wire).
type subscription = wire.Subscription

// hijackRecorder keeps the connection websocket.Accept takes over, so that a close
// handshake with a peer that does not read can be cut short.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	w.conn = c
	return c, brw, err
}

// streamClient is one websocket connection.
type streamClient struct {
	h    *hub
	user string // for the per-user bound
	// credentials checks the client's credentials again (nil: never), last at credentialsAt.
	credentials   func(context.Context) error
	credentialsAt time.Time
	conn          *websocket.Conn
	netConn       net.Conn // under conn

	// Between the hub and the writer.
	batches chan *batch   // bounded; the hub never waits on it
	wake    chan struct{} // one pending wake-up for the writer
	// resync, when set, is the reason the writer must send a snapshot: the hub dropped
	// the client's batches (reasonBehind) or fell behind the feed itself (reasonStale).
	resync atomic.Pointer[string]

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
var resyncBehind, resyncStale = reasonBehind, reasonStale

// markBehind drops the queued batches (dropped events are counted, plus extra) and has
// the writer send a snapshot, for reason.
func (c *streamClient) markBehind(reason *string, extra int) {
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
		case <-c.wake:
		case <-idle.C:
			if err := c.recheckCredentials(ctx); err != nil {
				c.closeWith(StatusSignedOut, wire.CloseReason(err.Error()))
				return nil
			}
			if c.view.vis.refresh() {
				// The user's permissions changed: what the client holds is redrawn.
				if err := c.sendSnapshot(ctx, reasonPermissions); err != nil {
					return err
				}
			}
			if err := c.flush(ctx, false); err != nil {
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
// credentials are still good; it answers errNotSignedIn when they are not (a cluster that
// cannot be asked right now keeps the stream going).
func (c *streamClient) recheckCredentials(ctx context.Context) error {
	if c.credentials == nil || time.Since(c.credentialsAt) < c.h.o.CredentialsInterval {
		return nil
	}
	c.credentialsAt = time.Now()
	if err := c.credentials(ctx); errors.Is(err, errNotSignedIn) {
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
		if err := c.write(ctx, "pong", []byte(`{"type":"pong"}`)); err != nil {
			return err
		}
	}
	if sub != nil {
		c.view = newView(*sub, c.view.vis)
		return c.sendSnapshot(ctx, reasonSubscribe)
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
		return c.sendSnapshot(ctx, reasonInitial)
	}
	if _, err := feed.Since(*since, 1); err != nil {
		return c.sendSnapshot(ctx, reasonStale)
	}
	c.seq, c.sent = *since, *since
	if !c.view.all {
		// Which objects the client holds is not known exactly: take it from the graph
		// now, and filter the events up to now conservatively.
		s := c.h.snapshot(c.h.o.Feed.LastSeq())
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
			return c.sendSnapshot(ctx, reasonStale)
		}
		if err != nil {
			return err
		}
		if len(events) == 0 {
			break
		}
		c.add(events, nil)
		if c.view.needsSnapshot() {
			return c.sendSnapshot(ctx, reasonComponent)
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
	for i, e := range events {
		if e.Seq <= c.seq {
			continue
		}
		out, keep, rewritten := c.view.filter(e)
		if keep {
			if raw != nil && !rewritten {
				c.pending = append(c.pending, raw[i])
			} else {
				c.pending = append(c.pending, encodeEvent(out))
			}
		}
		c.seq = e.Seq
	}
}

// deliver sends b, and the batches queued behind it, as one deltas frame.
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
		c.add(b.events, b.encoded())
		c.seq = b.to
		if c.view.needsSnapshot() {
			return c.sendSnapshot(ctx, reasonComponent)
		}
		if len(c.pending) >= maxFrameEvents {
			if err := c.flush(ctx, false); err != nil {
				return err
			}
		}
	}
	return c.flush(ctx, false)
}

// flush sends the pending events as a deltas frame covering (sent, seq]. With nothing
// pending it sends an empty frame only when forced, or when the client has not been told
// its sequence number for idleSeqInterval.
func (c *streamClient) flush(ctx context.Context, force bool) error {
	if len(c.pending) == 0 && !force && (c.seq == c.sent || time.Since(c.lastSent) < idleSeqInterval) {
		return nil
	}
	size := 64
	for _, p := range c.pending {
		size += len(p) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"type":"deltas","from":`...)
	buf = strconv.AppendUint(buf, c.sent+1, 10)
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendUint(buf, c.seq, 10)
	buf = append(buf, `,"events":[`...)
	for i, p := range c.pending {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, p...)
	}
	buf = append(buf, "]}"...)
	clear(c.pending)
	c.pending = c.pending[:0]
	if err := c.write(ctx, "deltas", buf); err != nil {
		return err
	}
	c.sent = c.seq
	return nil
}

// snapshotFrame is the "snapshot" frame.
type snapshotFrame struct {
	Type   string          `json:"type"`
	Reason string          `json:"reason"`
	Seq    uint64          `json:"seq"`
	Mode   gc.Mode         `json:"mode"`
	Nodes  []gc.NodeState  `json:"nodes"`
	Queues []gc.QueueState `json:"queues,omitempty"`
	Sync   gc.SyncState    `json:"sync"`
}

// sendSnapshot sends a fresh snapshot through the client's view and restarts the
// client's sequence from it.
func (c *streamClient) sendSnapshot(ctx context.Context, reason string) error {
	c.resync.Store(nil) // a resync asked for until now is answered by this snapshot
	s := c.h.snapshot(c.seq)
	f := snapshotFrame{Type: "snapshot", Reason: reason, Seq: s.Seq, Mode: s.Mode, Nodes: c.view.reset(s.Nodes), Sync: s.Sync}
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
	c.wrote("snapshot")
	return nil
}

// snapshotPieceNodes is how many nodes writeSnapshot encodes at once (about 300 KB).
const snapshotPieceNodes = 1024

// writeSnapshot encodes f into w, as json.Marshal would. The nodes, most of a large
// snapshot, are encoded a piece at a time, so that, written to a message, the first
// pieces are on their way (deflated, when the connection is) while the next are encoded,
// and the whole encoding is never held at once.
func writeSnapshot(w io.Writer, f snapshotFrame) error {
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

func (c *streamClient) write(ctx context.Context, typ string, data []byte) error {
	wctx, cancel := context.WithTimeout(ctx, c.h.o.WriteTimeout)
	defer cancel()
	var err error
	if len(data) <= streamPiece {
		err = c.conn.Write(wctx, websocket.MessageText, data)
	} else {
		m := c.newMessage(wctx)
		if _, err = m.Write(data); err == nil {
			err = m.Close()
		}
	}
	if err != nil {
		return err
	}
	c.wrote(typ)
	return nil
}

// wrote counts a frame of typ written.
func (c *streamClient) wrote(typ string) {
	c.lastSent = time.Now()
	c.h.metrics.frames.WithLabelValues(typ).Inc()
}

// message is one text message to the client. A small one is written whole when closed;
// a large one (a snapshot) is handed to the connection a piece at a time as it is
// written, so that, deflated, each piece is compressed and sent while the next is
// encoded and compressed, rather than the whole message encoded, then compressed, before
// its first byte leaves. The client receives one message either way.
type message struct {
	ctx  context.Context // bounds the whole message
	conn *websocket.Conn
	buf  []byte
	w    io.WriteCloser // once the message is large
}

func (c *streamClient) newMessage(ctx context.Context) *message {
	return &message{ctx: ctx, conn: c.conn}
}

// Write adds p to the message; it fails only once the connection has.
func (m *message) Write(p []byte) (int, error) {
	if m.w == nil && len(m.buf)+len(p) <= streamPiece {
		m.buf = append(m.buf, p...)
		return len(p), nil
	}
	if m.w == nil {
		w, err := m.conn.Writer(m.ctx, websocket.MessageText)
		if err != nil {
			return 0, err
		}
		m.w = w
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

// view is a client's subscription applied: which events it receives, and what it holds.
// Owned by the client's writer.
type view struct {
	sub subscription
	all bool // no namespace, kind, uid or permission filter
	objectFilter
	// vis is what the client's user may see (nil: everything): objects it may not see
	// never leave the server.
	vis *visibility
	// closure is the uid component: seeded from a snapshot, it grows as node events
	// link objects to it, and is recomputed at the next snapshot. Nil without uids.
	closure map[types.UID]bool
	// visible are the uids of the nodes the client holds (nil when all).
	visible map[types.UID]bool
	// gone, wasGone: nodes removed from the client in this batch and the previous one,
	// whose edge removals still follow.
	gone, wasGone map[types.UID]bool
	// unsure: events up to this seq follow a resume, when what the client holds is not
	// known exactly; they are filtered conservatively (extra removals).
	unsure uint64
	// unknown: uids the closure took in (as owners) whose state the client has not been
	// sent by the end of the batch; widened: an existing object joined the closure (its
	// dependents may have too). Both call for a snapshot.
	unknown map[types.UID]bool
	widened bool
}

func newView(sub subscription, vis *visibility) *view {
	return &view{sub: sub, objectFilter: newObjectFilter(sub.Namespaces, sub.Kinds), vis: vis,
		all: len(sub.Namespaces) == 0 && len(sub.Kinds) == 0 && len(sub.UIDs) == 0 && vis == nil}
}

// reset starts the view over from a snapshot's nodes; it returns the nodes the client
// receives (nodes itself when all; never modified).
func (v *view) reset(nodes []gc.NodeState) []gc.NodeState {
	v.unsure, v.widened, v.unknown = 0, false, nil
	v.gone, v.wasGone = map[types.UID]bool{}, map[types.UID]bool{}
	if v.all {
		return nodes
	}
	nodes = v.vis.nodes(nodes) // before the closure: it must not walk through hidden objects
	if len(v.sub.UIDs) > 0 {
		v.closure = closure(nodes, v.sub.UIDs)
		for _, u := range v.sub.UIDs {
			v.closure[u] = true // an object that does not exist yet joins when it appears
		}
	}
	v.visible = map[types.UID]bool{}
	out := make([]gc.NodeState, 0, min(len(nodes), 1024))
	for i := range nodes {
		if v.passNode(&nodes[i]) {
			out = append(out, nodes[i])
			v.visible[nodes[i].UID] = true
		}
	}
	return out
}

// seedResume prepares the view for a resume: the client is assumed to hold the nodes of
// the view in nodes (a snapshot at seq at), and events up to at are filtered
// conservatively. Not for uid subscriptions.
func (v *view) seedResume(nodes []gc.NodeState, at uint64) {
	v.reset(nodes)
	v.unsure = at
}

func (v *view) passNode(n *gc.NodeState) bool {
	return v.pass(&n.ObjectRef) && (v.closure == nil || v.closure[n.UID]) && v.vis.visible(n.ObjectRef)
}

// needsSnapshot ends a batch: it reports whether the closure took in objects the client
// has not been sent. (A virtual owner's nodeAdded that the batch boundary puts in the
// next batch costs a snapshot too: rare, and the client is never left incomplete.)
func (v *view) needsSnapshot() bool {
	need := v.widened || len(v.unknown) > 0
	v.widened, v.unknown = false, nil
	v.wasGone, v.gone = v.gone, v.wasGone
	clear(v.gone)
	return need
}

// grow adds the node of e to the closure when it is linked to it, with its owners.
func (v *view) grow(e *gc.Event) {
	n := e.Node
	in := v.closure[n.UID]
	for i := 0; !in && i < len(n.Owners); i++ {
		in = v.closure[n.Owners[i].UID]
	}
	if !in {
		return
	}
	if !v.closure[n.UID] {
		v.closure[n.UID] = true
		if e.Type == gc.NodeUpdated {
			v.widened = true // an existing object: its own dependents are not known here
		}
	}
	if e.Type == gc.NodeAdded {
		// A new node (a virtual owner named by a member, say) brings no links of its own
		// besides its owners. An existing one that was unknown stays so: its other
		// dependents are not known here.
		delete(v.unknown, n.UID)
	}
	for _, o := range n.Owners {
		if !v.closure[o.UID] {
			v.closure[o.UID] = true
			if v.unknown == nil {
				v.unknown = map[types.UID]bool{}
			}
			v.unknown[o.UID] = true
		}
	}
}

// filter decides whether the client receives e. A node that leaves the view arrives as
// nodeRemoved (rewritten).
func (v *view) filter(e gc.Event) (out gc.Event, keep, rewritten bool) {
	switch e.Type {
	case gc.NodeAdded, gc.NodeUpdated:
		if v.all {
			return e, true, false
		}
		if e.Node == nil {
			return e, false, false
		}
		if v.closure != nil && v.vis.visible(e.Node.ObjectRef) {
			v.grow(&e)
		}
		uid := e.Node.UID
		if v.passNode(e.Node) {
			v.visible[uid] = true
			return e, true, false
		}
		if v.visible[uid] || (e.Type == gc.NodeUpdated && e.Seq <= v.unsure) {
			delete(v.visible, uid)
			v.gone[uid] = true
			e.Type = gc.NodeRemoved
			return e, true, true
		}
		return e, false, false
	case gc.NodeRemoved:
		if v.all {
			return e, true, false
		}
		if e.Node == nil {
			return e, false, false
		}
		uid := e.Node.UID
		if v.visible[uid] || (e.Seq <= v.unsure && v.pass(&e.Node.ObjectRef)) {
			delete(v.visible, uid)
			v.gone[uid] = true
			return e, true, false
		}
		return e, false, false
	case gc.EdgeAdded, gc.EdgeRemoved:
		if v.all {
			return e, true, false
		}
		if e.Edge == nil {
			return e, false, false
		}
		d := e.Edge.Dependent
		return e, v.visible[d] || v.gone[d] || v.wasGone[d], false
	case gc.QueueChange:
		if !v.sub.Queues {
			return e, false, false
		}
		return e, v.all || (e.Queue != nil && v.passObject(&e.Queue.Object)), false
	case gc.ActionTaken:
		if !v.sub.Queues {
			return e, false, false
		}
		if v.all {
			return e, true, false
		}
		if e.Action == nil || !v.passObject(&e.Action.Object) {
			return e, false, false
		}
		if v.vis != nil {
			if a, changed := e.Action.RedactedFor(v.vis.visible); changed {
				e.Action = &a
				return e, true, true
			}
		}
		return e, true, false
	case gc.ShadowChange:
		if !v.sub.Queues || e.Shadow == nil {
			return e, false, false
		}
		if v.all {
			return e, true, false
		}
		if !v.passObject(&e.Shadow.Action.Object) {
			return e, false, false
		}
		if v.vis != nil {
			if a, changed := e.Shadow.Action.RedactedFor(v.vis.visible); changed {
				d := *e.Shadow
				d.Action = a
				e.Shadow = &d
				return e, true, true
			}
		}
		return e, true, false
	default: // sync, and types this server does not know of
		return e, true, false
	}
}

// passObject: an object named by a queue transition or an action is in the view.
func (v *view) passObject(r *gc.ObjectRef) bool {
	return v.pass(r) && (v.closure == nil || v.closure[r.UID]) && v.vis.visible(*r)
}

// queues narrows the queues' items and recent actions to the view; the counters stay
// the whole queue's.
func (v *view) queues(qs []gc.QueueState) []gc.QueueState {
	if v.all {
		return qs
	}
	out := make([]gc.QueueState, len(qs))
	for i, q := range qs {
		q.Items = slices.DeleteFunc(slices.Clone(q.Items), func(it gc.QueueItem) bool { return !v.passObject(&it.Object) })
		q.Recent = slices.DeleteFunc(slices.Clone(q.Recent), func(a gc.Action) bool { return !v.passObject(&a.Object) })
		if v.vis != nil {
			for j := range q.Recent {
				q.Recent[j], _ = q.Recent[j].RedactedFor(v.vis.visible)
			}
		}
		out[i] = q
	}
	return out
}

// streamMetrics are the hub's own metrics.
type streamMetrics struct {
	clients prometheus.Gauge
	frames  *prometheus.CounterVec
	resyncs prometheus.Counter
	dropped prometheus.Counter
	refused prometheus.Counter
}

func newStreamMetrics(reg prometheus.Registerer) *streamMetrics {
	m := &streamMetrics{
		clients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gcscope_stream_clients", Help: "Websocket stream clients connected.",
		}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gcscope_stream_frames_total", Help: "Frames sent to stream clients, by frame type.",
		}, []string{"type"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_resyncs_total", Help: "Snapshots sent because a client fell behind or the events it needed had left the feed.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_events_dropped_total", Help: "Events dropped from the queues of stream clients that fell behind.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gcscope_stream_refused_total", Help: "Stream clients closed at once because the server's or their user's bound of streams was reached.",
		}),
	}
	if reg != nil {
		m.clients = registerOrExisting(reg, m.clients)
		m.frames = registerOrExisting(reg, m.frames)
		m.resyncs = registerOrExisting(reg, m.resyncs)
		m.dropped = registerOrExisting(reg, m.dropped)
		m.refused = registerOrExisting(reg, m.refused)
	}
	return m
}

// registerOrExisting registers c, or returns the collector already registered as c (a
// second hub on the same registry shares the first one's metrics).
func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
