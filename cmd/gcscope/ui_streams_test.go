package main

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The network between the page and gcscope, as a browser test sees it (the first frame
// of each websocket) and cuts it (cutProxy).

// streamStart is the first frame of a stream's websocket, as the browser received it.
type streamStart struct {
	URL      string `json:"-"`
	Deflated bool   `json:"-"` // a binary message: the stream's own deflate (docs/stream.md)
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	From     uint64 `json:"from"`
	Seq      uint64 `json:"seq"`
}

// streamWatch records, through the browser's own network events, the first frame of
// each websocket the page opens.
type streamWatch struct {
	mu     sync.Mutex
	urls   map[network.RequestID]string
	firsts []streamStart
}

func watchStreams(t *testing.T, ctx context.Context) *streamWatch {
	t.Helper()
	w := &streamWatch{urls: map[network.RequestID]string{}}
	created := chromedp.Events(ctx, network.WebSocketCreated)
	frames := chromedp.Events(ctx, network.WebSocketFrameReceived)
	seen := map[network.RequestID]bool{}
	go func() {
		for ev, err := range created {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.urls[ev.RequestID] = ev.URL
			w.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range frames {
			if err != nil {
				return
			}
			if seen[ev.RequestID] || ev.Response == nil {
				continue
			}
			seen[ev.RequestID] = true
			var f streamStart
			data := ev.Response.PayloadData
			if ev.Response.Opcode == 2 {
				f.Deflated = true
				data, _ = io.ReadAll(flate.NewReader(bytes.NewReader(data)))
			}
			json.Unmarshal(data, &f)
			w.mu.Lock()
			f.URL = w.urls[ev.RequestID]
			w.firsts = append(w.firsts, f)
			w.mu.Unlock()
		}
	}()
	return w
}

// count is how many of the page's websockets have received a frame so far.
func (w *streamWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.firsts)
}

// after waits until more than n of the page's websockets have received a frame, and is
// the first frame of the latest. The browser's events arrive on their own goroutine, after
// the page may already have drawn what the frame said: a test that reads the latest stream
// without naming how many it had before can read the one that came before it.
func (w *streamWatch) after(t *testing.T, n int) streamStart {
	t.Helper()
	testkit.EventuallyWithin(t, 10*time.Second, fmt.Sprintf("stream %d to begin", n+1), func() bool { return w.count() > n })
	w.mu.Lock()
	f := w.firsts[len(w.firsts)-1]
	w.mu.Unlock()
	t.Logf("stream %s began with %s (reason %q, from %d, seq %d, deflated %v)", f.URL, f.Type, f.Reason, f.From, f.Seq, f.Deflated)
	return f
}

// cutProxy stands between the browser and gcscope like a network the test can cut: it
// passes requests on, and carries the stream's websockets itself, so that cut can drop
// them (the browser sees its connection lost, code 1006) and refuse new ones until
// restore.
type cutProxy struct {
	URL     string
	target  string
	forward *httputil.ReverseProxy
	mu      sync.Mutex
	isCut   bool
	conns   map[net.Conn]bool
	asked   []string // the stream URLs asked for, path and query, refused ones too
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	p := &cutProxy{target: target, conns: map[net.Conn]bool{},
		forward: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})}
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	t.Cleanup(func() {
		p.cut()
		srv.Close()
	})
	return p
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/stream" {
		p.forward.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	p.asked = append(p.asked, r.URL.RequestURI())
	cut := p.isCut
	p.mu.Unlock()
	if cut {
		http.Error(w, "the test cut the network", http.StatusBadGateway)
		return
	}
	back, err := net.Dial("tcp", p.target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		back.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[back] = true, true
	p.mu.Unlock()
	closeBoth := func() {
		client.Close()
		back.Close()
	}
	if err := r.Write(back); err != nil {
		closeBoth()
		return
	}
	go func() {
		defer closeBoth()
		io.Copy(back, buf.Reader) // what the browser sent after the request, then the rest
	}()
	go func() {
		defer closeBoth()
		io.Copy(client, back)
	}()
}

// cut drops the streams and refuses new ones.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = false
}

// streams are the stream URLs asked for so far.
func (p *cutProxy) streams() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.asked)
}
