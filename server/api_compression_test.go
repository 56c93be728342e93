package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/static"
)

// The large reads are gzipped for a client that asks, and say the same thing; /session,
// which carries the CSRF token, never is.
func TestAPIResponsesGzippedWhenAsked(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	ns := e.namespace(t)
	owner := e.configMap(t, ns, "owner", nil)
	const dependents = 300
	for i := range dependents {
		e.configMap(t, ns, fmt.Sprintf("dependent-%03d", i), nil, owner)
	}
	// The client asks for gzip itself, so that Go's transport hands over the body as sent.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path, encoding string) (body []byte, contentEncoding string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		body, _ = io.ReadAll(resp.Body)
		return body, resp.Header.Get("Content-Encoding")
	}
	explain := "/api/v1/objects/" + string(owner.UID) + "/explain"
	testkit.Eventually(t, "the engine sees all the dependents", func() bool {
		body, _ := get(explain, "")
		var ex objects.ExplainResponse
		return json.Unmarshal(body, &ex) == nil && len(ex.Dependents) == dependents
	})

	for _, path := range []string{explain, "/api/v1/objects/" + string(owner.UID), "/api/v1/graph?namespace=" + ns, "/api/v1/queues"} {
		plain, enc := get(path, "")
		if enc != "" {
			t.Errorf("GET %s without Accept-Encoding: Content-Encoding %q", path, enc)
		}
		zipped, enc := get(path, "gzip")
		if enc != "gzip" {
			t.Errorf("GET %s with Accept-Encoding gzip: Content-Encoding %q", path, enc)
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		var a, b any
		if json.Unmarshal(plain, &a) != nil || json.Unmarshal(unzipped, &b) != nil {
			t.Fatalf("GET %s: not JSON", path)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		// The queues and the graph change as the engine works; the object's explanation and
		// detail must be the same.
		if path == explain && !bytes.Equal(ja, jb) {
			t.Errorf("GET %s: the gzipped answer says something else", path)
		}
		t.Logf("GET %s: %d bytes, %d gzipped (%.2f)", path, len(plain), len(zipped), float64(len(zipped))/float64(len(plain)))
		if path == explain && len(zipped)*4 > len(plain) {
			t.Errorf("GET %s: gzipped %d bytes of %d", path, len(zipped), len(plain))
		}
	}
	if _, enc := get("/api/v1/session", "gzip"); enc != "" {
		t.Errorf("GET /api/v1/session (the CSRF token) compressed: %q", enc)
	}
	// The page's script: the same bytes, a fraction of them on the wire.
	script := "/static/app.js?v=" + static.Version
	plain, _ := get(script, "")
	zipped, enc := get(script, "gzip")
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if enc != "gzip" || err != nil {
		t.Fatalf("GET %s with Accept-Encoding gzip: Content-Encoding %q (%v)", script, enc, err)
	}
	if unzipped, err := io.ReadAll(zr); err != nil || !bytes.Equal(unzipped, plain) {
		t.Errorf("GET %s: the gzipped script is not the script (%v)", script, err)
	}
	t.Logf("GET %s: %d bytes, %d gzipped", script, len(plain), len(zipped))
}
