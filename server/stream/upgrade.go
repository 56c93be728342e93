package stream

// The stream's handshake: the query, the origin check, the websocket upgrade, and the
// admission of a client under the bounds of clients.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/wire"
)

// ServeHTTP serves GET /api/v1/stream: query parameters namespace, kind, uid (each
// repeatable), queues, summary, since and encoding are checked before the upgrade (400
// when invalid);
// websocket.Accept refuses a cross-origin request (403) unless OriginPatterns allow it.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sub, since, ownDeflate, perr := parseStreamQuery(r)
	if perr != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, perr)
		return
	}
	// A browser always sends Origin with a websocket; the page must be gcscope's own
	// (scheme and host) or an allowed origin. Accept's own check compares hosts only.
	if why := security.CrossSite(r, h.o.OriginPatterns); why != "" {
		h.o.Refuse(w, r, http.StatusForbidden, httpapi.ErrCSRF(strings.Replace(why, "request", "stream", 1)))
		return
	}
	var vis *access.Visibility
	if h.o.Visibility != nil {
		vis = h.o.Visibility(r)
	}
	rec := &hijackRecorder{ResponseWriter: w}
	mode := h.o.Compression.mode()
	if ownDeflate {
		mode = websocket.CompressionDisabled // never deflated twice
	}
	conn, err := websocket.Accept(rec, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // Origin checked above
		CompressionMode:    mode,
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
		deflate: ownDeflate && h.o.Compression.mode() != websocket.CompressionDisabled,
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

// parseStreamQuery reads the initial subscription, since, and whether the client takes
// the stream's own deflate (encoding=deflate: deflate.go) from the query.
func parseStreamQuery(r *http.Request) (subscription, *uint64, bool, *httpapi.Error) {
	q, perr := httpapi.StrictQuery(r, streamSingle, streamMulti)
	if perr != nil {
		return subscription{}, nil, false, perr
	}
	bad := func(msg string) *httpapi.Error {
		return httpapi.ErrBadRequest(msg, slices.Concat(streamSingle, streamMulti)...)
	}
	sub := subscription{Namespaces: q["namespace"], Kinds: q["kind"], Queues: true}
	for _, u := range q["uid"] {
		sub.UIDs = append(sub.UIDs, types.UID(u))
	}
	if q.Has("queues") {
		b, err := strconv.ParseBool(q.Get("queues"))
		if err != nil {
			return subscription{}, nil, false, bad(fmt.Sprintf("queues %q: want true or false", q.Get("queues")))
		}
		sub.Queues = b
	}
	if q.Has("summary") {
		b, err := strconv.ParseBool(q.Get("summary"))
		if err != nil {
			return subscription{}, nil, false, bad(fmt.Sprintf("summary %q: want true or false", q.Get("summary")))
		}
		sub.Summary = b
	}
	if err := sub.Validate(); err != nil {
		return subscription{}, nil, false, bad(err.Error())
	}
	var since *uint64
	if q.Has("since") {
		n, err := strconv.ParseUint(q.Get("since"), 10, 64)
		if err != nil {
			return subscription{}, nil, false, bad(fmt.Sprintf("since %q: want a sequence number (an unsigned integer)", q.Get("since")))
		}
		since = &n
	}
	switch e := q.Get("encoding"); e {
	case "", "deflate":
		return sub, since, e == "deflate", nil
	default:
		return subscription{}, nil, false, bad(fmt.Sprintf("encoding %q: want deflate (or none: JSON text frames, deflated by the websocket when it offers permessage-deflate)", e))
	}
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

// GET /api/v1/stream's query parameters: those that take one value, and the repeatable ones.
var (
	streamSingle = []string{"queues", "since", "summary", "encoding"}
	streamMulti  = []string{"namespace", "kind", "uid"}
)
