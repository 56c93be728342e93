// Package browsertest starts headless Chromium for gcscope's browser tests and
// benchmarks, through chromedp. Import it from _test.go files only.
//
// The browser is $GCSCOPE_CHROMIUM, else chromium or chromium-browser on PATH (`make
// browser` installs Debian's chromium). Without one, a test is skipped, or fails when the
// CI environment variable is set. Chromium runs headless with the flags the machines here
// need (see Flags) and a fresh profile in the test's temporary directory.
package browsertest

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Flags are the Chromium switches every browser test starts with, besides the window
// size, the device scale factor and a fresh --user-data-dir. Without the
// background-networking ones, Chromium keeps trying to reach Google's hosts, which the
// machines here refuse.
var Flags = []string{
	"headless",
	"no-sandbox",
	"disable-gpu",
	"disable-quic",
	"no-first-run",
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
}

// Options configure the browser. Zero values take the defaults.
type Options struct {
	// Width and Height are the window size; default 1400×900.
	Width, Height int
	// Scale is the device scale factor; 0 leaves Chromium's (1).
	Scale float64
	// TrustCertificate is a server certificate (DER) the browser accepts as if a CA it
	// trusts had signed it: a test's own TLS server (an identity provider), by its SPKI hash.
	TrustCertificate []byte
	// OneProcess keeps every site in the tab's one renderer: a test that follows a page
	// across sites (to an identity provider and back) keeps its hold on the tab.
	OneProcess bool
}

// Find returns the browser binary: $GCSCOPE_CHROMIUM, else chromium or
// chromium-browser on PATH.
func Find() (string, error) {
	if p := os.Getenv("GCSCOPE_CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("GCSCOPE_CHROMIUM=%s: %w", p, err)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("no chromium or chromium-browser on PATH and GCSCOPE_CHROMIUM is not set")
}

// Require returns the browser binary, or ends the test: skipped, with how to install
// one, or failed when $CI is set (CI must run the browser tests).
func Require(t testing.TB) string {
	t.Helper()
	path, err := Find()
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("browser tests: %v (CI is set, so they may not be skipped; `make browser` installs Debian's chromium)", err)
	}
	t.Skipf("browser tests: %v; run `make browser` to install Debian's chromium, or set GCSCOPE_CHROMIUM", err)
	return ""
}

// Page is a started browser tab.
type Page struct {
	// Ctx is the chromedp context of the tab; it is cancelled, and the browser stopped,
	// when the test ends.
	Ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	close    func()
}

// Start starts headless Chromium with one tab and returns it. Everything the page writes
// to its console and every uncaught exception is logged with t.Logf and kept (Messages,
// Errors). The browser is stopped in t.Cleanup.
func Start(t testing.TB, o Options) *Page {
	t.Helper()
	bin := Require(t)
	if o.Width <= 0 {
		o.Width = 1400
	}
	if o.Height <= 0 {
		o.Height = 900
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin)}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	opts = append(opts,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(o.Width, o.Height),
	)
	if o.Scale > 0 {
		opts = append(opts, chromedp.Flag("force-device-scale-factor", fmt.Sprint(o.Scale)))
	}
	if o.OneProcess {
		opts = append(opts, chromedp.Flag("disable-site-isolation-trials", true), chromedp.Flag("disable-features", "IsolateOrigins,site-per-process"))
	}
	if o.TrustCertificate != nil {
		cert, err := x509.ParseCertificate(o.TrustCertificate)
		if err != nil {
			t.Fatalf("browsertest: TrustCertificate: %v", err)
		}
		spki := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])))
	}
	var output strings.Builder
	var outputMu sync.Mutex
	opts = append(opts, chromedp.CombinedOutput(writerFunc(func(p []byte) (int, error) {
		outputMu.Lock()
		defer outputMu.Unlock()
		if output.Len() < 64<<10 {
			output.Write(p)
		}
		return len(p), nil
	})))

	// chromedp and the console reader log from their own goroutines; nothing may reach t
	// once the test is over.
	var logMu sync.Mutex
	over := false
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !over {
			t.Logf(format, args...)
		}
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf))
	p := &Page{Ctx: ctx}

	// The first action starts the browser and opens the tab.
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		outputMu.Lock()
		defer outputMu.Unlock()
		t.Fatalf("starting %s: %v\nits output:\n%s", bin, err, output.String())
	}
	t.Logf("browser: %s started in %v", bin, time.Since(start).Round(time.Millisecond))

	// Subscribe now, before the test navigates, so that no message is lost.
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.messages = append(p.messages, m)
			p.mu.Unlock()
			logf("browser console: %s", describe(m))
		}
	}()
	var closeOnce sync.Once
	p.close = func() {
		closeOnce.Do(func() {
			// Close the browser gracefully, so that it is gone before t.TempDir, its
			// profile, is removed; kill it if that takes too long.
			closeCtx, cancelClose := context.WithTimeout(ctx, 10*time.Second)
			if err := chromedp.Cancel(closeCtx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				logf("browser: closing: %v", err)
			}
			cancelClose()
			cancel()
			cancelAlloc()
			<-done
			logMu.Lock()
			over = true
			logMu.Unlock()
		})
	}
	t.Cleanup(p.Close)
	return p
}

// Close stops the browser now rather than when the test ends; Messages and Errors still
// answer. Calling it again does nothing.
func (p *Page) Close() { p.close() }

// Messages returns every console message and uncaught exception so far.
func (p *Page) Messages() []chromedp.ConsoleMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.messages)
}

// Errors returns the console errors (console.error, the browser's error log entries, such
// as a failed request) and the uncaught exceptions so far.
func (p *Page) Errors() []chromedp.ConsoleMessage {
	var errs []chromedp.ConsoleMessage
	for _, m := range p.Messages() {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			errs = append(errs, m)
		}
	}
	return errs
}

// NoErrorsExcept is NoErrors, but logs instead of failing on the messages allow accepts
// (a race the test cannot avoid, such as a fetch that met the deletion it asked about).
func (p *Page) NoErrorsExcept(t testing.TB, allow func(message string) bool) {
	t.Helper()
	for _, m := range p.Errors() {
		if d := describe(m); allow(d) {
			t.Logf("browser console (allowed): %s", d)
		} else {
			t.Errorf("browser console: %s", d)
		}
	}
}

// NoErrors fails the test if the page wrote a console error or threw an uncaught
// exception. Console messages arrive asynchronously: give one that a test just caused a
// moment (WaitFor) before calling this.
func (p *Page) NoErrors(t testing.TB) {
	t.Helper()
	for _, m := range p.Errors() {
		t.Errorf("browser console: %s", describe(m))
	}
}

// WaitFor waits up to timeout for a console message that match accepts, and reports
// whether one came.
func (p *Page) WaitFor(timeout time.Duration, match func(chromedp.ConsoleMessage) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if slices.ContainsFunc(p.Messages(), match) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe is a message with where it came from.
func describe(m chromedp.ConsoleMessage) string {
	s := m.String()
	if m.Source != "" {
		s = m.Source + " " + s
	}
	if m.URL != "" {
		s += fmt.Sprintf(" (%s:%d:%d)", m.URL, m.Line+1, m.Column+1)
	}
	return s
}

// ArtifactsDir is where screenshots go: $GCSCOPE_ARTIFACTS, else test-artifacts/ at the
// root of the repository (the directory of go.mod).
func ArtifactsDir() (string, error) {
	if d := os.Getenv("GCSCOPE_ARTIFACTS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "test-artifacts"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: set GCSCOPE_ARTIFACTS")
		}
		dir = parent
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot saves a full-page PNG of the tab of ctx as NAME.png in ArtifactsDir (NAME
// with anything but letters, digits, '.', '_' and '-' replaced), logs its path and
// returns it.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	dir, err := ArtifactsDir()
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, strings.Trim(unsafeName.ReplaceAllString(name, "_"), "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Frames waits until the page has run n animation frames from now: long enough for a page
// that draws in requestAnimationFrame to have drawn what it held when Frames began (its
// callback of the first frame runs before this one's, as it asked first).
func Frames(n int) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`new Promise((done) => {
		let left = %d;
		const tick = () => (--left > 0 ? requestAnimationFrame(tick) : done());
		requestAnimationFrame(tick);
	})`, n), chromedp.EvalAwaitPromise)
}
