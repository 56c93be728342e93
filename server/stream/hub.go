package stream

// The stream hub: reads the engine's feed and hands each batch to every client
// without waiting for any.

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
)

// Options configure the stream hub.
type Options struct {
	Snapshot func() gc.Snapshot // the engine's consistent snapshot
	Summary  func() gc.Summary  // the engine's graph counted (summary subscriptions)
	// Bare is Snapshot without the nodes, for a client that holds none (a summary
	// subscription naming nothing); nil: Snapshot is used.
	Bare func() gc.Snapshot
	// Subset is Snapshot narrowed to some namespaces and the components of some uids (a
	// summary subscription that names them), read from the engine's index; nil: Snapshot
	// is used and filtered.
	Subset func(namespaces []string, uids []types.UID) gc.Snapshot
	Feed   EventSource // the engine's feed
	Logger *slog.Logger
	// Batch: deltas are flushed at most this often while a client lags (has not taken
	// the previous batch when the next is handed out); default 50 ms.
	Batch time.Duration
	// QuickBatch: how long events gather while every client keeps up; default 20 ms
	// (Batch, when shorter).
	QuickBatch time.Duration
	// Buffer is how many frames a client may have pending before it is resynced; default 256.
	Buffer int
	// OriginPatterns are extra allowed origins (see originAllowed); the request's own
	// scheme and host are always allowed.
	OriginPatterns []string
	// MaxClients bounds the clients in all (default 256), MaxClientsPerUser those of one
	// user (default 32); a client over either is closed with StatusTryAgainLater. Seats,
	// when set, are shared with other hubs and bound them all together instead.
	MaxClients, MaxClientsPerUser int
	Seats                         *Seats
	// User names the user of a request, for the per-user bound; nil: one user.
	User func(*http.Request) string
	// Visibility is what the request's user may see; nil (or a nil answer): everything.
	Visibility func(*http.Request) *access.Visibility
	// Refuse answers a refused upgrade (and may audit it); nil: the error alone.
	Refuse func(w http.ResponseWriter, r *http.Request, status int, e *httpapi.Error)
	// Registerer takes the hub's metrics; nil: not registered.
	Registerer prometheus.Registerer
	// WriteTimeout bounds one frame write; default 10 s. A client that does not read for
	// that long while frames are due is disconnected.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a client that does not answer within
	// WriteTimeout is closed. Default 20 s.
	PingInterval time.Duration
	// Compression: whether frames are deflated for clients that offer it.
	Compression Compression
	// Credentials returns a check of the request's credentials (nil: never checked
	// again), run every CredentialsInterval (default 30 s): a stream outlives its
	// upgrade by hours, and a token revoked (or a session signed out) since must not
	// keep receiving. A check that answers security.ErrNotSignedIn closes the stream, with its text.
	Credentials         func(*http.Request) func(context.Context) error
	CredentialsInterval time.Duration
}

// Hub fans the engine's feed out to the stream's clients.
type Hub struct {
	o       Options
	log     *slog.Logger
	metrics *streamMetrics
	// ctx ends every client when run returns.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	clients map[*streamClient]struct{}

	running atomic.Bool
	flushed atomic.Uint64 // seq of the last event handed to the clients

	snapMu sync.Mutex
	snap   *gc.Snapshot // the latest snapshot, shared by clients that resync together
}

func New(o Options) *Hub {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Batch <= 0 {
		o.Batch = defaultStreamBatch
	}
	if o.QuickBatch <= 0 {
		o.QuickBatch = defaultQuickBatch
	}
	o.QuickBatch = min(o.QuickBatch, o.Batch)
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
	if o.Seats == nil {
		o.Seats = NewSeats(o.MaxClients, o.MaxClientsPerUser)
	}
	if o.User == nil {
		o.User = func(*http.Request) string { return "" }
	}
	if o.Refuse == nil {
		o.Refuse = func(w http.ResponseWriter, _ *http.Request, status int, e *httpapi.Error) {
			httpapi.WriteJSON(w, status, e)
		}
	}
	h := &Hub{o: o, log: o.Logger, metrics: newStreamMetrics(o.Registerer), clients: map[*streamClient]struct{}{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	// The hub follows the feed from here, not from whenever run starts: a client admitted
	// before then gets a snapshot at the feed's seq of the moment, and the events after it
	// must reach it through the hub.
	if o.Feed != nil {
		h.flushed.Store(o.Feed.LastSeq())
	}
	return h
}

// batch is a run of consecutive feed events, (from-1, to], shared by every client; it is
// never modified once handed out. Each event is encoded once, by the first writer that
// needs it; so is the whole deltas frame of the clients that receive every event (see
// frame).
type batch struct {
	from, to uint64
	events   []gc.Event
	once     sync.Once
	raw      [][]byte
	// shared are, for a view of everything without and with the queues' events, what it
	// receives of the batch and the deltas frame of (from-1, to] holding it.
	shared [2]sharedFrame
}

type sharedFrame struct {
	once     sync.Once
	events   [][]byte // encoded, graphChanges items that passed folded (appendFolded)
	frame    []byte   // nil when the view selects no event of the batch
	zonce    sync.Once
	deflated []byte // frame deflated, for the clients that asked for the stream's own deflate
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

// everything is what a client whose view is everything (view.all: no filter, no per-user
// visibility, which every such client shares) receives of the batch, with or without the
// queues' events, encoded and folded; and frame is the deltas frame covering exactly the
// batch with them (nil when the view selects none of the batch's events). Both are built
// once, by the first writer that needs them; every such client is sent the same bytes.
func (b *batch) everything(queues bool) [][]byte { return b.sharedFor(queues).events }

func (b *batch) frame(queues bool) []byte { return b.sharedFor(queues).frame }

// deflatedFrame is frame deflated (deflate.go), once for every client that asked.
func (b *batch) deflatedFrame(queues bool) []byte {
	f := b.sharedFor(queues)
	f.zonce.Do(func() { f.deflated = deflated(f.frame) })
	return f.deflated
}

func (b *batch) sharedFor(queues bool) *sharedFrame {
	f := &b.shared[0]
	if queues {
		f = &b.shared[1]
	}
	f.once.Do(func() {
		raw := b.encoded()
		v := newView(subscription{Queues: queues}, nil) // a view of everything keeps no state
		var kept []gc.Event
		var enc [][]byte
		for i, e := range b.events {
			if _, keep, _ := v.filter(e); keep {
				kept = append(kept, e)
				enc = append(enc, raw[i])
			}
		}
		if len(kept) > 0 {
			f.events = appendFolded(nil, kept, enc)
			f.frame = deltasFrame(b.from, b.to, f.events)
		}
	})
	return f
}

// run reads the feed and fans it out until ctx ends; then it closes every client. It
// never waits for a client.
func (h *Hub) Run(ctx context.Context) {
	defer h.cancel()
	h.running.Store(true)
	defer h.running.Store(false)
	cursor := h.flushed.Load() // where newHub found the feed, or where an earlier run stopped
	err := gc.Follow(ctx, h.o.Feed, cursor, gc.Follower{
		Max: hubReadMax,
		Events: func(ctx context.Context, events []gc.Event) error {
			b := &batch{from: events[0].Seq, to: events[len(events)-1].Seq, events: events}
			h.flushed.Store(b.to)
			lagging := h.fanOut(b)
			if len(events) < hubReadMax {
				// Caught up: let events gather before the next flush, for a QuickBatch while
				// every client keeps up, for a Batch once one does not (its frames then carry
				// more events each, fewer of them). The first event after a quiet moment
				// (no event for the hold) is flushed at once: Follow hands it over as it comes.
				t := time.NewTimer(h.holdAfter(lagging))
				defer t.Stop()
				select {
				case <-ctx.Done():
				case <-t.C:
				}
			}
			return nil
		},
		Resync: func(context.Context) (uint64, error) {
			// The hub itself fell behind the ring: everyone starts again from a snapshot.
			cursor := h.o.Feed.LastSeq()
			h.flushed.Store(cursor)
			h.log.Warn("stream hub fell behind the feed; resyncing every client", "seq", cursor)
			h.resyncAll()
			return cursor, nil
		},
	})
	if err != nil && ctx.Err() == nil {
		h.log.Error("reading the feed", "err", err)
	}
}

// holdAfter is how long the hub lets events gather after a flush: QuickBatch while every
// client keeps up, Batch once one lags.
func (h *Hub) holdAfter(lagging bool) time.Duration {
	if lagging {
		return h.o.Batch
	}
	return h.o.QuickBatch
}

// fanOut offers b to every client; it reports whether a client had not yet taken the
// batch before it (its writer is still busy with earlier ones).
func (h *Hub) fanOut(b *batch) (lagging bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if len(c.batches) > 0 {
			lagging = true
		}
		c.offer(b)
	}
	return lagging
}

func (h *Hub) resyncAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.markBehind(&resyncStale, 0)
	}
}

// add admits c, or says why not: the server's or the user's bound of clients is reached.
func (h *Hub) add(c *streamClient) string {
	if why := h.o.Seats.Take(c.user); why != "" {
		h.metrics.refused.Inc()
		return why
	}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	h.metrics.clients.Inc()
	return ""
}

func (h *Hub) remove(c *streamClient) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	h.o.Seats.Give(c.user)
	h.metrics.clients.Dec()
}

// clientCount is how many clients are connected.
func (h *Hub) clientCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// snapshot returns a snapshot at atLeast or later and no older than the batches already
// handed out, so that the next batch a client receives continues it. Clients that resync
// together share one; it must not be modified.
func (h *Hub) snapshot(atLeast uint64) *gc.Snapshot {
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
