package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream"
	"github.com/gcscope/gcscope/server/wire"
)

// The stream through the hub: the browser's websocket is accepted at the hub and a second
// one dialled to the remote's /api/v1/stream with the same query, as the user. Frames are
// copied as they come, piece by piece through a fixed buffer: the hub holds no graph, and
// a snapshot of any size costs it 32 KiB. Back-pressure carries through: a browser that
// reads slowly slows the hub's reads, and the remote resyncs the hub as it would the
// browser. The remote's own frames, deflated or not (?encoding=deflate), pass unchanged.

// StatusRefused closes a relayed stream whose remote no longer accepts the user's
// credential (the remote's 4401): the user is still signed in to the hub, so the page must
// not sign them out (4000 plus HTTP's 403).
const StatusRefused websocket.StatusCode = 4403

// clientReadLimit bounds what a browser may send on the stream (the remote's own bound).
const clientReadLimit = 64 << 10

// recheckInterval is how often a relayed stream asks the hub whether its user is still
// signed in (the remote re-checks the forwarded credential on its own).
const recheckInterval = 30 * time.Second

// relay serves the stream of the remote through the hub.
func (rm *Remote) relay(w http.ResponseWriter, r *http.Request, call Call) {
	token, err := rm.forward.pick(rm.cfg.Name, call.Credential)
	if err != nil {
		httpapi.WriteJSON(w, http.StatusForbidden, httpapi.ErrForbidden(err.Error()))
		return
	}
	if !isUpgrade(r) {
		httpapi.WriteJSON(w, http.StatusUpgradeRequired, httpapi.ErrBadRequest("the stream is a websocket: ask for an upgrade"))
		return
	}
	// The hub's page, or an allowed origin: the remote sees the hub as a client that is
	// not a browser, so this is the only origin check the stream gets.
	if why := security.CrossSite(r, rm.origins); why != "" {
		httpapi.WriteJSON(w, http.StatusForbidden, httpapi.ErrCSRF(strings.Replace(why, "request", "stream", 1)))
		return
	}
	if call.Seats != nil {
		if why := call.Seats.Take(call.User); why != "" {
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable(why))
			return
		}
		defer call.Seats.Give(call.User)
	}
	select {
	case rm.streams <- struct{}{}:
		defer func() { <-rm.streams }()
	default:
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable(fmt.Sprintf("too many streams to cluster %q through the hub (%d)", rm.cfg.Name, cap(rm.streams))))
		return
	}

	up, dialErr := rm.dialStream(r.Context(), r.URL.RawQuery, token)
	var status *handshakeRefusal
	if errors.As(dialErr, &status) {
		// The remote answered the handshake with a status (a bad query, a refusal): the
		// browser gets the same answer before any upgrade.
		httpapi.WriteJSON(w, status.code, status.err)
		return
	}
	mode := websocket.CompressionNoContextTakeover
	if strings.Contains(r.URL.RawQuery, "encoding=deflate") {
		mode = websocket.CompressionDisabled // the remote's frames are deflated already
	}
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true /* Origin checked above */, CompressionMode: mode})
	if err != nil {
		if up != nil {
			up.CloseNow()
		}
		return // Accept has answered
	}
	down.SetReadLimit(clientReadLimit)
	if dialErr != nil {
		// Told on the websocket, where a browser can read it; the page tries again.
		rm.probeNow()
		closeWith(down, websocket.StatusTryAgainLater, fmt.Sprintf("cluster %q cannot be reached: %v", rm.cfg.Name, rootCause(dialErr)))
		return
	}
	rm.pipe(r.Context(), up, down, call)
}

// handshakeRefusal is a status the remote answered the stream's handshake with.
type handshakeRefusal struct {
	code int
	err  *httpapi.Error
}

func (h *handshakeRefusal) Error() string { return h.err.Message }

// dialStream opens the remote's stream with query, as the holder of token.
func (rm *Remote) dialStream(ctx context.Context, query, token string) (*websocket.Conn, error) {
	u, _ := rm.endpoint("/api/v1/stream")
	u.RawQuery = query
	h := http.Header{"User-Agent": {"gcscope-hub"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(ctx, rm.limits.DialTimeout+rm.limits.ResponseTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient: rm.client, HTTPHeader: h, CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			msg := errorMessage(resp.Body)
			switch resp.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden:
				return nil, &handshakeRefusal{http.StatusForbidden, httpapi.ErrForbidden(fmt.Sprintf("cluster %q refuses your stream: %s", rm.cfg.Name, msg))}
			case http.StatusBadRequest:
				return nil, &handshakeRefusal{http.StatusBadRequest, httpapi.ErrBadRequest(msg)}
			}
			return nil, fmt.Errorf("its stream answered %d: %s", resp.StatusCode, msg)
		}
		if resp != nil {
			return nil, fmt.Errorf("its stream answered %d, not a websocket (a redirect is not followed)", resp.StatusCode)
		}
		return nil, err
	}
	conn.SetReadLimit(rm.limits.MaxFrameBytes)
	return conn, nil
}

// pipe copies frames both ways until one side ends, then ends the other with a reason.
func (rm *Remote) pipe(ctx context.Context, up, down *websocket.Conn, call Call) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // the handler's context ends with the hijack
	defer cancel()
	var once sync.Once
	end := func(f func()) { once.Do(func() { f(); cancel() }) }

	var wg sync.WaitGroup
	wg.Go(func() { // the remote's frames to the browser
		err := copyFrames(ctx, down, up, rm.limits.FrameWriteTimeout)
		end(func() { rm.upEnded(down, err) })
	})
	wg.Go(func() { // the browser's (subscription changes, pings) to the remote
		err := copyFrames(ctx, up, down, rm.limits.FrameWriteTimeout)
		end(func() {
			_ = err // the browser closed or went away: the remote's stream ends too
			go up.Close(websocket.StatusNormalClosure, "")
		})
	})
	if call.Recheck != nil {
		wg.Go(func() {
			t := time.NewTicker(recheckInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := call.Recheck(ctx); errors.Is(err, security.ErrNotSignedIn) {
						end(func() { closeWith(down, stream.StatusSignedOut, err.Error()); up.CloseNow() })
						return
					}
				}
			}
		})
	}
	<-ctx.Done()
	// Close handshakes have had their chance (closeWith bounds its own); cut what remains.
	up.CloseNow()
	down.CloseNow()
	wg.Wait()
}

// upEnded closes the browser's stream once the remote's has ended, saying why.
func (rm *Remote) upEnded(down *websocket.Conn, err error) {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code == stream.StatusSignedOut:
		closeWith(down, StatusRefused, fmt.Sprintf("cluster %q no longer accepts your credential: %s", rm.cfg.Name, ce.Reason))
	case errors.As(err, &ce):
		closeWith(down, ce.Code, ce.Reason) // the remote's own close: its code and reason
	case isWriteErr(err):
		// The browser did not take a frame in time, or went away: nothing to tell it.
	default:
		rm.probeNow()
		closeWith(down, websocket.StatusTryAgainLater, fmt.Sprintf("cluster %q went away: %v", rm.cfg.Name, rootCause(err)))
	}
}

// writeErr marks an error of the destination of copyFrames, not its source.
type writeErr struct{ err error }

func (e writeErr) Error() string { return e.err.Error() }
func (e writeErr) Unwrap() error { return e.err }

func isWriteErr(err error) bool {
	var we writeErr
	return errors.As(err, &we)
}

// copyFrames copies src's messages to dst as they come, each through one 32 KiB buffer,
// until either fails; a message must be written within timeout.
func copyFrames(ctx context.Context, dst, src *websocket.Conn, timeout time.Duration) error {
	buf := make([]byte, 32<<10)
	for {
		typ, rd, err := src.Reader(ctx)
		if err != nil {
			return err
		}
		if err := copyFrame(ctx, dst, typ, rd, buf, timeout); err != nil {
			return err
		}
	}
}

func copyFrame(ctx context.Context, dst *websocket.Conn, typ websocket.MessageType, rd io.Reader, buf []byte, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wr, err := dst.Writer(wctx, typ)
	if err != nil {
		return writeErr{err}
	}
	for {
		n, rerr := rd.Read(buf)
		if n > 0 {
			if _, err := wr.Write(buf[:n]); err != nil {
				return writeErr{err}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr // the source's: a frame over the limit, a connection lost
		}
	}
	if err := wr.Close(); err != nil {
		return writeErr{err}
	}
	return nil
}

// closeGrace bounds a close handshake with a peer that does not answer.
const closeGrace = 2 * time.Second

// closeWith closes c with code and reason (clipped to a close frame's 123 bytes), waiting
// at most closeGrace for the peer.
func closeWith(c *websocket.Conn, code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		c.Close(code, wire.CloseReason(reason))
		close(done)
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.CloseNow()
	}
}

// rootCause is err's innermost error ("connect: connection refused", "EOF"): a close
// reason holds 123 bytes, which the dial's wrapping ("failed to WebSocket dial: failed to
// send handshake request: Get ...") would spend before the cause.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
