package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// go test ./hack/krew -run Manifest -update rewrites testdata/gcscope.yaml.
var update = flag.Bool("update", false, "rewrite testdata/gcscope.yaml with the current manifest")

// krewPlugin is the part of krew's index.Plugin (sigs.k8s.io/krew/pkg/index, v0.4.4) that
// a manifest may hold, read with sigs.k8s.io/yaml as krew reads it. Read strictly, a field
// krew does not know fails the read.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats"`
		Homepage         string         `json:"homepage"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels      map[string]string `json:"matchLabels"`
		MatchExpressions []any             `json:"matchExpressions"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Files  []any  `json:"files"`
	Bin    string `json:"bin"`
}

func readPlugin(t *testing.T, b []byte) krewPlugin {
	t.Helper()
	var p krewPlugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("the manifest does not read as a krew plugin: %v\n%s", err, b)
	}
	return p
}

// exampleManifest is the manifest of a release of the four platforms make dist builds,
// with made-up sums: testdata/gcscope.yaml shows it.
func exampleManifest() manifest {
	base := "https://github.com/gcscope/gcscope/releases/download/v0.2.0/"
	m := manifest{Version: "v0.2.0"}
	for i, p := range []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		sum := strings.Repeat(string("0123456789abcdef"[i]), 64)
		m.Platforms = append(m.Platforms, archive{platform: p, URI: base + archiveName(m.Version, p), SHA256: sum})
	}
	return m
}

// TestManifestExample: testdata/gcscope.yaml, the example docs/kubectl.md points to, is what
// the template writes.
func TestManifestExample(t *testing.T) {
	var b bytes.Buffer
	if err := writeManifest(&b, exampleManifest()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", manifestFile)
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the manifest differs from %s (go test -update accepts it):\n--- got\n%s\n--- want\n%s", path, b.Bytes(), want)
	}
}

// TestManifestFields: the manifest is a krew Plugin named gcscope, with the version, a
// one-line short description, a description, a homepage, and one platform per archive in
// the archives' order, each selected by exactly its os and arch and naming the archive's
// URI, its sha256 and the binary.
func TestManifestFields(t *testing.T) {
	m := exampleManifest()
	var b bytes.Buffer
	if err := writeManifest(&b, m); err != nil {
		t.Fatal(err)
	}
	p := readPlugin(t, b.Bytes())
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion %q kind %q: want krew.googlecontainertools.github.com/v1alpha2 Plugin", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != "gcscope" {
		t.Errorf("metadata.name %q: want gcscope (kubectl gcscope)", p.Metadata.Name)
	}
	s := p.Spec
	if s.Version != "v0.2.0" {
		t.Errorf("version %q: want v0.2.0", s.Version)
	}
	if s.ShortDescription == "" || strings.ContainsAny(s.ShortDescription, "\r\n") || len(s.ShortDescription) > 50 {
		t.Errorf("shortDescription %q: want one line of at most 50 characters", s.ShortDescription)
	}
	for _, cmd := range []string{"tree", "why", "predict", "stuck", "ui"} {
		if !strings.Contains(s.Description, "kubectl gcscope "+cmd) {
			t.Errorf("the description does not name kubectl gcscope %s:\n%s", cmd, s.Description)
		}
	}
	if !strings.Contains(s.Caveats, "list and watch") {
		t.Errorf("the caveats do not say the engine lists and watches cluster-wide:\n%s", s.Caveats)
	}
	if s.Homepage != "https://github.com/gcscope/gcscope" {
		t.Errorf("homepage %q", s.Homepage)
	}
	if len(s.Platforms) != len(m.Platforms) {
		t.Fatalf("%d platforms, want %d (one per archive)", len(s.Platforms), len(m.Platforms))
	}
	for i, got := range s.Platforms {
		want := m.Platforms[i]
		labels := got.Selector.MatchLabels
		if len(labels) != 2 || labels["os"] != want.OS || labels["arch"] != want.Arch || got.Selector.MatchExpressions != nil {
			t.Errorf("platform %d: selector %+v, want matchLabels {os: %s, arch: %s} alone", i, got.Selector, want.OS, want.Arch)
		}
		wantURI := "https://github.com/gcscope/gcscope/releases/download/v0.2.0/kubectl-gcscope_v0.2.0_" + want.OS + "_" + want.Arch + ".tar.gz"
		if got.URI != wantURI {
			t.Errorf("platform %d: uri %q, want %q", i, got.URI, wantURI)
		}
		if got.Sha256 != want.SHA256 {
			t.Errorf("platform %d: sha256 %q, want %q", i, got.Sha256, want.SHA256)
		}
		if got.Bin != "kubectl-gcscope" {
			t.Errorf("platform %d: bin %q, want kubectl-gcscope", i, got.Bin)
		}
		if got.Files != nil {
			t.Errorf("platform %d: files %v: want none (krew then installs the whole archive)", i, got.Files)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.2.0", "v1.0.0-rc.1", "v0.2.0-3-g9a48164", "v0.2.0-dirty", "v10.20.30+build.7"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	// An untagged commit's git describe, a version without its v, and a version that is
	// not semantic: krew refuses each.
	for _, v := range []string{"9a48164", "9a48164-dirty", "dev", "0.2.0", "v0.2", "v01.2.3", ""} {
		err := checkVersion(v)
		if err == nil || !strings.Contains(err.Error(), "git tag") {
			t.Errorf("%q: %v, want a refusal saying to tag the commit", v, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	if err := checkURL("https://github.com/gcscope/gcscope/releases/download/v0.2.0"); err != nil {
		t.Error(err)
	}
	for _, u := range []string{"", "github.com/gcscope/gcscope", "/releases/v0.2.0", "ftp://example.com/x", "https://example.com/x?y=1", "https:///x"} {
		if checkURL(u) == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	for _, s := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		p, err := parsePlatform(s)
		if err != nil || p.String() != s {
			t.Errorf("%s: %v %v", s, p, err)
		}
	}
	for _, s := range []string{"windows/amd64", "linux", "linux/", "linux/amd64/v2", "plan9/amd64", "darwin/386"} {
		if _, err := parsePlatform(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestDocsNameWhatMakeDistWrites: the install commands of docs/kubectl.md and the release
// steps of docs/install.md name the files make dist writes and the platforms it builds.
func TestDocsNameWhatMakeDistWrites(t *testing.T) {
	for doc, wants := range map[string][]string{
		"../../docs/kubectl.md": {
			"kubectl krew install --manifest=" + manifestFile,
			"--manifest=dist/" + manifestFile,
			"--archive=dist/" + archiveName("v0.2.0", platform{"linux", "amd64"}),
			sumsFile,
		},
		"../../docs/install.md": {
			"make dist",
			"dist/" + manifestFile,
			"dist/" + sumsFile,
			"dist/kubectl-gcscope_v0.2.0_OS_ARCH.tar.gz",
			"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64", // DIST_PLATFORMS
		},
	} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ") // lines joined as a reader does
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("%s does not say %q", doc, w)
			}
		}
	}
}
