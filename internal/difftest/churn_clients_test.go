package difftest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The churn benchmark's stream clients run in a process of their own (this test binary
// again, running TestChurnStreamClients), so that the benchmark's process CPU is the
// server's alone and the clients' reading is measured apart. Each client opens the stream
// as the page does (no filters, queues on, the stream's own deflate, offering
// permessage-deflate too) and reads every frame, inflating those that came deflated (each
// distinct one once for all the clients: sharedFrames); for each graph event (node and edge events) the process keeps the latest
// receipt across clients, from the event's feed stamp, and how many clients got it as a
// delta.

const (
	churnClientsURL    = "GCSCOPE_CHURN_STREAM_URL"
	churnClientsCount  = "GCSCOPE_CHURN_STREAM_CLIENTS"
	churnClientsResult = "GCSCOPE_CHURN_STREAM_RESULT"
	churnClientsReady  = "churn-stream-clients-ready"
)

// clientsResult is what the clients' process reports.
type clientsResult struct {
	Events  int `json:"events"`  // graph events every client received as a delta
	Partial int `json:"partial"` // graph events some client did not (it was resynced)
	// Of the latest receipt across clients, per graph event:
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// Of the earliest receipt across clients, per graph event: late too when what holds
	// the event is before the server writes it to the clients (or every client's reading
	// is held), not the writes one after the other.
	// The p99 of the latest receipt in each sixth of the events, in the feed's order.
	SixthsP99Ms []float64     `json:"sixthsP99Ms"`
	FirstP50Ms  float64       `json:"firstP50Ms"`
	FirstP99Ms  float64       `json:"firstP99Ms"`
	Resyncs     int           `json:"resyncs"`  // snapshots after the first, all clients
	Frames      int           `json:"frames"`   // all clients
	Bytes       int64         `json:"bytes"`    // inflated, all clients
	Failures    []string      `json:"failures"` // clients that ended with an error
	CPU         time.Duration `json:"-"`        // the process's, measured by the parent
	// One client's deltas by event type: bytes (inflated) and events.
	TypeBytes  map[string]int64 `json:"typeBytes"`
	TypeEvents map[string]int   `json:"typeEvents"`
}

// streamClients is the clients' process, as the benchmark holds it.
type streamClients struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	result string
}

// startStreamClients starts n clients on url and returns once each has its snapshot.
func startStreamClients(ctx context.Context, url string, n int, dir string) (*streamClients, error) {
	s := &streamClients{result: filepath.Join(dir, "clients.json")}
	s.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChurnStreamClients$", "-test.count=1", "-test.timeout=30m")
	s.cmd.Env = append(os.Environ(), churnClientsURL+"="+url, churnClientsCount+"="+strconv.Itoa(n), churnClientsResult+"="+s.result)
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if lines.Text() == churnClientsReady {
				ready <- nil
				io.Copy(io.Discard, out)
				return
			}
		}
		ready <- errors.New("the stream clients' process ended before its clients were ready")
	}()
	select {
	case err = <-ready:
	case <-time.After(2 * time.Minute):
		err = errors.New("the stream clients were not ready in 2 minutes")
	}
	if err != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		return nil, err
	}
	return s, nil
}

// finish tells the clients the last seq, waits for them to receive it and returns what
// they measured.
func (s *streamClients) finish(last uint64) (clientsResult, error) {
	fmt.Fprintln(s.stdin, last)
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		return clientsResult{}, fmt.Errorf("the stream clients' process: %w", err)
	}
	var r clientsResult
	data, err := os.ReadFile(s.result)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	r.CPU = s.cmd.ProcessState.UserTime() + s.cmd.ProcessState.SystemTime()
	return r, err
}

// TestChurnStreamClients is the clients' process of BenchmarkChurn; it skips at once
// otherwise.
func TestChurnStreamClients(t *testing.T) {
	url := os.Getenv(churnClientsURL)
	if url == "" {
		t.Skip("the stream clients of BenchmarkChurn: only run by it")
	}
	n, err := strconv.Atoi(os.Getenv(churnClientsCount))
	if err != nil || n <= 0 {
		t.Fatalf("%s: want a positive number", churnClientsCount)
	}
	shared := &sharedFrames{clients: n}
	var (
		table lagTable
		last  atomic.Uint64 // the seq to read up to; 0 until the benchmark says
		mu    sync.Mutex
		res   clientsResult
		wg    sync.WaitGroup
		ready sync.WaitGroup
	)
	go func() {
		// The benchmark writes the last seq, then closes stdin.
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		v, _ := strconv.ParseUint(string(bytes.TrimSpace([]byte(line))), 10, 64)
		last.Store(max(v, 1))
	}()
	ready.Add(n)
	res.TypeBytes, res.TypeEvents = map[string]int64{}, map[string]int{}
	for i := range n {
		wg.Go(func() {
			c := churnClient{table: &table, ready: ready.Done, shared: shared}
			if i == 0 {
				c.typeBytes, c.typeEvents = res.TypeBytes, res.TypeEvents // only this client writes them
			}
			err := c.read(url, &last)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Failures = append(res.Failures, err.Error())
			}
			if !c.isReady {
				ready.Done()
			}
			res.Resyncs += c.resyncs
			res.Frames += c.frames
			res.Bytes += c.bytes
		})
	}
	ready.Wait()
	fmt.Println(churnClientsReady)
	wg.Wait()
	lags, firsts, partial := table.result(n)
	res.Events, res.Partial = len(lags), partial
	res.SixthsP99Ms = sixthsP99(lags)
	slices.Sort(lags)
	slices.Sort(firsts)
	res.P50Ms, res.P99Ms = quantileMs(lags, 0.5), quantileMs(lags, 0.99)
	res.FirstP50Ms, res.FirstP99Ms = quantileMs(firsts, 0.5), quantileMs(firsts, 0.99)
	if len(lags) > 0 {
		res.MaxMs = quantileMs(lags, 1)
	}
	data, _ := json.Marshal(res)
	if err := os.WriteFile(os.Getenv(churnClientsResult), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// churnClient is one stream client of the clients' process.
type churnClient struct {
	table   *lagTable
	ready   func()
	isReady bool
	resyncs int
	frames  int
	bytes   int64
	// typeBytes and typeEvents, when set, tally the deltas by event type.
	typeBytes  map[string]int64
	typeEvents map[string]int
	shared     *sharedFrames
}

// read reads frames until it has the last seq (once known), or fails.
func (c *churnClient) read(url string, last *atomic.Uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: websocket.CompressionNoContextTakeover})
	cancel()
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	var seq uint64
	for {
		if l := last.Load(); l != 0 && seq >= l {
			conn.Close(websocket.StatusNormalClosure, "")
			return nil
		}
		// A quiet stream still sends its seq once a second; a minute of nothing is a failure.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		kind, data, err := conn.Read(ctx)
		at := time.Now()
		cancel()
		if err != nil {
			return err
		}
		var f *decodedFrame
		if kind == websocket.MessageBinary {
			f = c.shared.decode(data)
		} else {
			f = decodeFrame(data)
		}
		if f.err != nil {
			return f.err
		}
		data = f.data
		c.frames++
		c.bytes += int64(len(data))
		typ, frameSeq := f.typ, f.seq
		switch typ {
		case "snapshot":
			if c.isReady {
				c.resyncs++
			} else {
				c.isReady = true
				c.ready()
			}
		case "deltas":
			c.table.deltas(f.events, at)
			if c.typeBytes != nil {
				c.tally(data)
			}
		}
		if frameSeq > seq {
			seq = frameSeq
		}
	}
}

// tally counts a deltas frame's events and their bytes by type.
func (c *churnClient) tally(data []byte) {
	marker := []byte(`{"seq":`)
	events := after(data, []byte(`"events":[`))
	for len(events) > 0 {
		start := bytes.Index(events, marker)
		if start < 0 {
			return
		}
		events = events[start:]
		size := bytes.Index(events[len(marker):], marker) + len(marker)
		if size < len(marker) {
			size = len(events) - 2 // the last event: the frame ends with ]}
		}
		typ := "?"
		if v := after(events[:size], []byte(`"type":"`)); v != nil {
			if end := bytes.IndexByte(v, '"'); end >= 0 {
				typ = string(v[:end])
			}
		}
		c.typeBytes[typ] += int64(size)
		c.typeEvents[typ]++
		events = events[size:]
	}
}

// frameHead reads a frame's type and seq without decoding the rest.
func frameHead(data []byte) (typ string, seq uint64) {
	if v := after(data, []byte(`"type":"`)); v != nil {
		if end := bytes.IndexByte(v, '"'); end >= 0 {
			typ = string(v[:end])
		}
	}
	// Both frames' own seq comes before their events or nodes.
	head := data
	if i := bytes.Index(data, []byte(`"events":`)); i >= 0 {
		head = data[:i]
	} else if i := bytes.Index(data, []byte(`"nodes":`)); i >= 0 {
		head = data[:i]
	}
	if v := after(head, []byte(`"seq":`)); v != nil {
		seq, _ = leadingUint(v)
	}
	return typ, seq
}

func after(data, marker []byte) []byte {
	i := bytes.Index(data, marker)
	if i < 0 {
		return nil
	}
	return data[i+len(marker):]
}

func leadingUint(v []byte) (uint64, int) {
	var n uint64
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		n = n*10 + uint64(v[i]-'0')
	}
	return n, i
}

// lagTable holds, per seq, the latest receipt of a graph event across clients (as
// nanoseconds after its feed stamp) and how many clients received it.
type lagTable struct {
	mu     sync.Mutex
	chunks map[uint64]*lagChunk
}

const lagChunkSize = 4096

type lagChunk struct {
	latest [lagChunkSize]atomic.Int64
	first  [lagChunkSize]atomic.Int64 // the earliest receipt, +1 (0: none yet)
	count  [lagChunkSize]atomic.Int32
}

func (t *lagTable) chunk(seq uint64) *lagChunk {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.chunks == nil {
		t.chunks = map[uint64]*lagChunk{}
	}
	c := t.chunks[seq/lagChunkSize]
	if c == nil {
		c = &lagChunk{}
		t.chunks[seq/lagChunkSize] = c
	}
	return c
}

// deltas records a deltas frame's graph events (stamps), received at at.
func (t *lagTable) deltas(events []stampedEvent, at time.Time) {
	var (
		c  *lagChunk
		ci uint64
	)
	for _, e := range events {
		lag := int64(at.Sub(e.published))
		if c == nil || e.seq/lagChunkSize != ci {
			ci, c = e.seq/lagChunkSize, t.chunk(e.seq)
		}
		i := e.seq % lagChunkSize
		for cur := c.latest[i].Load(); lag > cur && !c.latest[i].CompareAndSwap(cur, lag); cur = c.latest[i].Load() {
		}
		for cur := c.first[i].Load(); (cur == 0 || lag+1 < cur) && !c.first[i].CompareAndSwap(cur, lag+1); cur = c.first[i].Load() {
		}
		c.count[i].Add(1)
	}
}

// stampedEvent is a graph event of a deltas frame: its seq and feed stamp.
type stampedEvent struct {
	seq       uint64
	published time.Time
}

// stamps reads a deltas frame's graph events. Each event begins {"seq":N,"time":"…",
// "type":"…" (encoding/json writes gc.Event's fields in order).
func stamps(data []byte) []stampedEvent {
	events := after(data, []byte(`"events":[`))
	marker := []byte(`{"seq":`)
	var out []stampedEvent
	for {
		v := after(events, marker)
		if v == nil {
			return out
		}
		seq, n := leadingUint(v)
		v = v[n:]
		events = v
		stamp, ok := cutQuoted(v, `,"time":"`)
		if !ok {
			continue
		}
		typ, ok := cutQuoted(v[len(`,"time":"`)+len(stamp)+1:], `,"type":"`)
		if !ok || !(bytes.HasPrefix(typ, []byte("node")) || bytes.HasPrefix(typ, []byte("edge"))) {
			continue
		}
		published, err := time.Parse(time.RFC3339Nano, string(stamp))
		if err != nil {
			continue
		}
		out = append(out, stampedEvent{seq, published})
	}
}

// decodedFrame is a frame as the clients read it.
type decodedFrame struct {
	once   sync.Once
	data   []byte // the JSON
	typ    string
	seq    uint64
	events []stampedEvent // of a deltas frame
	err    error
	takers int       // clients that took it (sharedFrames)
	born   time.Time // when the first did
}

// decodeFrame reads a frame's JSON.
func decodeFrame(data []byte) *decodedFrame {
	f := &decodedFrame{data: data}
	f.typ, f.seq = frameHead(data)
	if f.typ == "deltas" {
		f.events = stamps(data)
	}
	return f
}

// sharedFrames decodes each distinct binary frame (the stream's own deflate) once for all
// the clients that receive the same bytes: the clients' process stands for 50 browsers on
// 50 machines, and inflating and reading every frame 50 times on the benchmark's two
// cores (about 0.45 of a core) would take them from the server it measures. Each client
// still reads every message off its own connection, timed when it has it whole.
type sharedFrames struct {
	clients int
	mu      sync.Mutex
	m       map[string]*decodedFrame
	added   int
}

func (s *sharedFrames) decode(wire []byte) *decodedFrame {
	s.mu.Lock()
	f := s.m[string(wire)]
	if f == nil {
		if s.m == nil {
			s.m = map[string]*decodedFrame{}
		}
		f = &decodedFrame{born: time.Now()}
		s.m[string(wire)] = f
		if s.added++; s.added%1024 == 0 {
			// A frame not every client gets (one that lagged joins batches) is let go.
			for k, old := range s.m {
				if time.Since(old.born) > 30*time.Second {
					delete(s.m, k)
				}
			}
		}
	}
	if f.takers++; f.takers == s.clients {
		delete(s.m, string(wire))
	}
	s.mu.Unlock()
	f.once.Do(func() {
		data, err := io.ReadAll(flate.NewReader(bytes.NewReader(wire)))
		if err != nil {
			f.err = fmt.Errorf("inflating a binary frame of %d bytes: %w", len(wire), err)
			return
		}
		d := decodeFrame(data)
		f.data, f.typ, f.seq, f.events = d.data, d.typ, d.seq, d.events
	})
	return f
}

// cutQuoted reads the string value after prefix at the start of v.
func cutQuoted(v []byte, prefix string) ([]byte, bool) {
	if !bytes.HasPrefix(v, []byte(prefix)) {
		return nil, false
	}
	v = v[len(prefix):]
	end := bytes.IndexByte(v, '"')
	if end < 0 {
		return nil, false
	}
	return v[:end], true
}

// result is the latest and the earliest receipt of each graph event every one of n
// clients received, and how many graph events some client did not receive.
func (t *lagTable) result(n int) (lags, firsts []time.Duration, partial int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.chunks {
		for i := range lagChunkSize {
			switch got := int(c.count[i].Load()); {
			case got == 0:
			case got < n:
				partial++
			default:
				lags = append(lags, max(0, time.Duration(c.latest[i].Load())))
				firsts = append(firsts, max(0, time.Duration(c.first[i].Load()-1)))
			}
		}
	}
	return lags, firsts, partial
}
