package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/recording"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// TestAStalledExportIsCut: an export whose client stops reading holds its slot (one of
// recording.MaxExports) only until recording.ExportStall has passed without the client taking more; then the
// connection is cut, so the client sees a broken transfer, and the slot is free again.
func TestAStalledExportIsCut(t *testing.T) {
	defer func(d time.Duration) { recording.ExportStall = d }(recording.ExportStall)
	recording.ExportStall = 500 * time.Millisecond

	// 20,000 events that deflate badly: a file of megabytes, far more than the buffers.
	// (Published a ring's part at a time, each recorded before the next.)
	st, _ := recordFakeStore(t, func(f *streamtest.Engine, recording *history.Store) {
		for chunk := range 20 {
			var evs []gc.Event
			for i := range 1000 {
				noise := make([]byte, 48)
				rand.Read(noise)
				evs = append(evs, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbKeep,
					Object: cmRef("shop", fmt.Sprintf("cm-%d-%d", chunk, i)), Reason: hex.EncodeToString(noise)}})
			}
			last := f.Publish(evs...)
			testkit.Eventually(t, "the recorder to take a chunk", func() bool { return recording.Status().Seq >= last })
		}
	})
	srv := New(Options{History: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = streamtest.SmallBuffers{Listener: ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)

	dialer := net.Dialer{Control: streamtest.SmallReceiveBuffer}
	conn, err := dialer.DialContext(context.Background(), "tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/history/export HTTP/1.1\r\nHost: %s\r\n\r\n", ts.Listener.Addr())
	r := bufio.NewReaderSize(conn, 1024)
	status, err := r.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("the export's status line: %q, %v", status, err)
	}

	// The client reads nothing more. Half the stall in, the export still holds its slot:
	// it is stalled, not finished. A sleep, not a condition: what is checked is that
	// something does not happen (the export ending) before the stall's write deadline,
	// which is a real socket's, out of reach of a fake clock or a synctest bubble.
	time.Sleep(recording.ExportStall / 2)
	if n := len(srv.exports); n != 1 {
		t.Fatalf("half the stall in, %d exports in progress; want 1 (stalled): the file fit in the buffers", n)
	}
	testkit.Eventually(t, "the stalled export to be cut and its slot freed", func() bool { return len(srv.exports) == 0 })
	// What the client reads now ends broken, not with the chunked body's end.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(r)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the rest: %v", err)
	}
	if strings.HasSuffix(string(rest), "0\r\n\r\n") {
		t.Fatalf("the stalled export ended as a complete response (%d more bytes); want it cut", len(rest))
	}
	// And another export runs.
	c := newClient(t, ts)
	if code, _ := c.do("GET", "/api/v1/history/export?last=1m", nil, nil); code != http.StatusOK {
		t.Fatalf("an export after the stalled one was cut: %d", code)
	}
}
