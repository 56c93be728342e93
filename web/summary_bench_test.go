package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gcscope/gcscope/server"
)

// The summary-first benchmark (issue 26, the first step of a page whose cost follows what
// is on screen): what the page's first frame would need, the graph counted per namespace
// and kind (GET /api/v1/summary), against what it needs today, the whole graph (the
// stream's snapshot), at 10,000 objects and at GCSCOPE_UI_OBJECTS (default 150,000; the
// issue's goal is 1,000,000). Both through the real server over the synthetic engine;
// bytes as encoded (JSON), and the time the server takes to answer the summary.
//
// It reports, per size, summary-KiB, snapshot-MiB and their ratio; it asserts nothing.

func uiObjects(b *testing.B) int {
	if v := os.Getenv("GCSCOPE_UI_OBJECTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("GCSCOPE_UI_OBJECTS=%q: want a number ≥ 1000", v)
		}
		return n
	}
	return 150_000
}

func BenchmarkSummaryFirst(b *testing.B) {
	for _, n := range []int{10_000, uiObjects(b)} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			e := newSynthEngine()
			e.load(buildGraph(n))
			s := server.New(server.Options{Engine: e})
			ts := httptest.NewServer(s)
			defer ts.Close()
			snap, err := json.Marshal(e.Snapshot())
			if err != nil {
				b.Fatal(err)
			}
			var summary int
			var took time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.URL+"/api/v1/summary", nil)
				req.Host = "127.0.0.1"
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("summary: %d %s", resp.StatusCode, body)
				}
				took += time.Since(start)
				summary = len(body)
			}
			b.ReportMetric(float64(summary)/1024, "summary-KiB")
			b.ReportMetric(float64(len(snap))/(1<<20), "snapshot-MiB")
			b.ReportMetric(float64(summary)/float64(len(snap)), "summary/snapshot-bytes")
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "summary-ms")
		})
	}
}
