package web_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// An emulated network link for the benchmarks: a TCP proxy on loopback between the
// browser and the server. Each direction has its own bandwidth, shared by every
// connection through the proxy (as on one access link), and a one-way delay (half the
// round trip): a chunk read from one side arrives at the other once the link has
// serialized it and everything queued before it, plus the delay. The link's buffer holds
// linkBuffer's worth of bytes waiting to be serialized: beyond that, the proxy stops
// reading, so a sender faster than the link is held back as TCP would hold it (the
// server's writes block, and its write timeouts apply). It does not emulate loss or TCP's
// slow start (on a link of these round trips, slow start reaches the window a few round
// trips in: tens of milliseconds).

const (
	linkChunk  = 16 << 10              // bytes read at most at once
	linkBuffer = 50 * time.Millisecond // the bottleneck's buffer, in time to serialize it
)

// shaper is one direction of the link.
type shaper struct {
	bps   float64
	delay time.Duration

	mu   sync.Mutex
	free time.Time // when the link has serialized everything scheduled so far
}

// waitRoom waits until the link's buffer has room.
func (s *shaper) waitRoom() {
	for {
		s.mu.Lock()
		backlog := time.Until(s.free)
		s.mu.Unlock()
		if backlog <= linkBuffer {
			return
		}
		time.Sleep(backlog - linkBuffer)
	}
}

// schedule returns when n bytes, handed to the link now, arrive at the far end.
func (s *shaper) schedule(n int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.free.Before(now) {
		s.free = now
	}
	s.free = s.free.Add(time.Duration(float64(n) * 8 / s.bps * float64(time.Second)))
	return s.free.Add(s.delay)
}

// linkProxy accepts on loopback and forwards to target over the emulated link.
type linkProxy struct {
	ln       net.Listener
	target   string
	down, up *shaper // down: target to client

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// startLinkProxy starts a proxy to target over l; it is closed when the test ends.
func startLinkProxy(t testing.TB, target string, l link) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("link proxy: %v", err)
	}
	p := &linkProxy{ln: ln, target: target,
		down: &shaper{bps: l.down, delay: l.rtt / 2}, up: &shaper{bps: l.up, delay: l.rtt / 2}}
	p.wg.Go(p.serve)
	t.Cleanup(p.Close)
	return p
}

func (p *linkProxy) Addr() net.Addr { return p.ln.Addr() }

// Close stops accepting and cuts every connection.
func (p *linkProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *linkProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *linkProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		p.wg.Go(func() {
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				return
			}
			if !p.track(server) {
				client.Close()
				return
			}
			var both sync.WaitGroup
			both.Go(func() { forward(server, client, p.up) })
			both.Go(func() { forward(client, server, p.down) })
			both.Wait()
			client.Close()
			server.Close()
		})
	}
}

// forward copies src to dst through s, then half-closes dst (or closes it, and src,
// when dst fails).
func forward(dst, src net.Conn, s *shaper) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	// Holds what is buffered and in flight (bounded by the bandwidth-delay product, and
	// by linkBuffer).
	q := make(chan chunk, 1<<14)
	go func() {
		defer close(q)
		buf := make([]byte, linkChunk)
		for {
			s.waitRoom()
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{bytes.Clone(buf[:n]), s.schedule(n)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			dst.Close()
			src.Close()
			for range q {
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// TestLinkProxy checks the emulated link: a bulk transfer takes its size over the
// bandwidth, and a request and its answer take a round trip.
func TestLinkProxy(t *testing.T) {
	const size = 2 << 20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err != nil {
					return
				}
				if b[0] == 'p' { // ping
					c.Write(b[:])
					return
				}
				c.Write(payload)
			}()
		}
	}()
	l := link{name: "test", down: 80e6, up: 20e6, rtt: 40 * time.Millisecond}
	p := startLinkProxy(t, ln.Addr().String(), l)

	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Write([]byte("p"))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	rtt := time.Since(start)
	c.Close()

	c, err = net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start = time.Now()
	c.Write([]byte("d"))
	got, err := io.ReadAll(c)
	if err != nil || len(got) != size {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, size)
	}
	elapsed := time.Since(start)
	want := l.rtt + time.Duration(float64(size)*8/l.down*float64(time.Second)) // 40 ms + 210 ms
	t.Logf("round trip %v (link: %v); %d bytes in %v (want about %v: %.1f Mbit/s)",
		rtt, l.rtt, size, elapsed, want, float64(size)*8/elapsed.Seconds()/1e6)
	if rtt < l.rtt || rtt > l.rtt+30*time.Millisecond {
		t.Errorf("round trip %v, want %v (+ up to 30 ms)", rtt, l.rtt)
	}
	// Never faster than the link (what the shaping is for); slower only within reason: on
	// a loaded machine the copy loop itself falls behind (346 ms for 250 ms was seen while
	// make test ran beside it), which is the machine's time, not the link's.
	if elapsed < want-10*time.Millisecond || elapsed > want*2 {
		t.Errorf("transfer took %v, want %v (−10 ms, up to twice as long on a loaded machine)", elapsed, want)
	}
}
