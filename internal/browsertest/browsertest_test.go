package browsertest_test

import (
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
)

// testPage has a button whose click changes the DOM, and a link that makes the page
// write a console error and throw.
const testPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>browsertest</title>
<link rel="icon" href="data:,"></head>
<body>
<h1>browsertest</h1>
<button id="inc" type="button">more</button>
<p>clicks: <span id="count">0</span></p>
<ul id="list"></ul>
<button id="fail" type="button">fail</button>
<script>
let n = 0;
document.getElementById("inc").addEventListener("click", () => {
  n++;
  document.getElementById("count").textContent = String(n);
  const li = document.createElement("li");
  li.textContent = "item " + n;
  document.getElementById("list").append(li);
});
document.getElementById("fail").addEventListener("click", () => {
  console.error("browsertest: something broke", 42);
  setTimeout(() => { throw new Error("browsertest: uncaught"); });
});
console.log("browsertest: loaded");
</script>
</body></html>`

func serve(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(testPage))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestClickChangesTheDOMAndConsoleErrorsAreCaptured(t *testing.T) {
	ts := serve(t)
	t.Setenv("GCSCOPE_ARTIFACTS", t.TempDir())
	p := browsertest.Start(t, browsertest.Options{Width: 800, Height: 600})
	ctx := p.Ctx

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("inc"))); err != nil {
		t.Fatal(err)
	}
	if !p.WaitFor(5*time.Second, func(m chromedp.ConsoleMessage) bool { return m.Text == "browsertest: loaded" }) {
		t.Fatalf("the page's console.log did not arrive; got %v", p.Messages())
	}
	p.NoErrors(t) // a clean load has none

	for range 3 {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("inc"))); err != nil {
			t.Fatal(err)
		}
	}
	count, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("count")))
	if err != nil {
		t.Fatal(err)
	}
	items, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#list li").length`))
	if err != nil {
		t.Fatal(err)
	}
	if count != "3" || items != 3 {
		t.Errorf("after 3 clicks: count %q and %d list items, want 3 and 3", count, items)
	}

	path := browsertest.Screenshot(t, ctx, t.Name()+"/after clicks")
	if filepath.Dir(path) != os.Getenv("GCSCOPE_ARTIFACTS") || !strings.HasSuffix(path, ".png") {
		t.Errorf("screenshot saved as %s, want a .png in $GCSCOPE_ARTIFACTS", path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() < 100 {
		t.Errorf("screenshot is %v, want the 800 px wide page", b)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("fail"))); err != nil {
		t.Fatal(err)
	}
	if !p.WaitFor(5*time.Second, func(m chromedp.ConsoleMessage) bool { return m.IsException() }) {
		t.Fatalf("the uncaught exception did not arrive; got %v", p.Messages())
	}
	errs := p.Errors()
	var sawError, sawException bool
	for _, m := range errs {
		switch {
		case m.Type == chromedp.ConsoleError && strings.Contains(m.Text, "browsertest: something broke 42"):
			sawError = true
		case m.IsException() && strings.Contains(m.Text, "browsertest: uncaught"):
			sawException = true
		}
	}
	if !sawError || !sawException || len(errs) != 2 {
		t.Errorf("Errors() = %v; want the console.error and the uncaught exception", errs)
	}
}

func TestArtifactsDirDefaultsToTheRepositoryRoot(t *testing.T) {
	t.Setenv("GCSCOPE_ARTIFACTS", "")
	dir, err := browsertest.ArtifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "test-artifacts"); dir != want {
		t.Errorf("ArtifactsDir() = %s, want %s", dir, want)
	}
}

func TestFindHonoursGCSCOPE_CHROMIUM(t *testing.T) {
	t.Setenv("GCSCOPE_CHROMIUM", "/nonexistent/chromium")
	if path, err := browsertest.Find(); err == nil {
		t.Errorf("Find() = %s with a GCSCOPE_CHROMIUM that does not exist, want an error", path)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GCSCOPE_CHROMIUM", self)
	if path, err := browsertest.Find(); err != nil || path != self {
		t.Errorf("Find() = %s, %v; want %s", path, err, self)
	}
}
