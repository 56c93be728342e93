package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entry is one file of an archive, as read back.
type entry struct {
	name    string
	mode    int64
	modTime time.Time
	body    string
}

func readArchive(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	var es []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return es
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s is of type %q, want a regular file", path, h.Name, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, entry{h.Name, h.Mode, h.ModTime.UTC(), string(b)})
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fakeRelease lays out what make dist has built before hack/krew runs: a binary per
// platform (a few bytes naming it) and a LICENSE.
func fakeRelease(t *testing.T, platforms ...platform) release {
	t.Helper()
	dir := t.TempDir()
	r := release{
		Version:   "v0.2.0",
		URL:       "https://github.com/gcscope/gcscope/releases/download/v0.2.0/",
		Platforms: platforms,
		Builds:    filepath.Join(dir, "build"),
		Files:     []string{filepath.Join(dir, "LICENSE")},
		MTime:     time.Unix(1767225600, 0).UTC(),
	}
	for _, p := range platforms {
		if err := os.MkdirAll(filepath.Dir(r.binary(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.binary(p), []byte("kubectl-gcscope for "+p.String()), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(r.Files[0], []byte("the license"), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

var fourPlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// TestReleaseWrite: one archive per platform holding its own binary as an executable
// kubectl-gcscope and the LICENSE, each dated the given time; the manifest and SHA256SUMS
// name the sha256 of each archive file as written, and the manifest its URL.
func TestReleaseWrite(t *testing.T) {
	r := fakeRelease(t, fourPlatforms...)
	out := t.TempDir()
	m, err := r.write(out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "gcscope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plugin := readPlugin(t, b)
	if plugin.Spec.Version != "v0.2.0" || len(plugin.Spec.Platforms) != 4 || len(m.Platforms) != 4 {
		t.Fatalf("version %q, %d platforms in the file, %d returned: want v0.2.0 and 4", plugin.Spec.Version, len(plugin.Spec.Platforms), len(m.Platforms))
	}
	sums := readSums(t, filepath.Join(out, "SHA256SUMS"))
	if len(sums) != 4 {
		t.Errorf("SHA256SUMS has %d lines, want 4: %v", len(sums), sums)
	}
	for i, p := range fourPlatforms {
		name := "kubectl-gcscope_v0.2.0_" + p.OS + "_" + p.Arch + ".tar.gz"
		path := filepath.Join(out, name)
		sum := fileSHA256(t, path)
		got := plugin.Spec.Platforms[i]
		if got.Sha256 != sum || m.Platforms[i].SHA256 != sum || sums[name] != sum {
			t.Errorf("%s: sha256 %s, but the manifest says %s, write returned %s, SHA256SUMS says %s", name, sum, got.Sha256, m.Platforms[i].SHA256, sums[name])
		}
		if want := "https://github.com/gcscope/gcscope/releases/download/v0.2.0/" + name; got.URI != want {
			t.Errorf("uri %q, want %q (one slash after the base)", got.URI, want)
		}
		if got.Selector.MatchLabels["os"] != p.OS || got.Selector.MatchLabels["arch"] != p.Arch {
			t.Errorf("%s: selector %v", name, got.Selector.MatchLabels)
		}
		want := []entry{
			{"kubectl-gcscope", 0o755, r.MTime, "kubectl-gcscope for " + p.String()},
			{"LICENSE", 0o644, r.MTime, "the license"},
		}
		if es := readArchive(t, path); !equalEntries(es, want) {
			t.Errorf("%s holds %+v, want %+v", name, es, want)
		}
	}
}

func equalEntries(a, b []entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].mode != b[i].mode || !a[i].modTime.Equal(b[i].modTime) || a[i].body != b[i].body {
			return false
		}
	}
	return true
}

// readSums reads a sha256sum file: name → sum.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not 'SUM  NAME'", path, sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

// TestReleaseIsReproducible: the same binaries and files give the same archives, byte for
// byte, whenever and wherever they are packed (the files' own times and modes are not used).
func TestReleaseIsReproducible(t *testing.T) {
	r := fakeRelease(t, platform{"linux", "amd64"})
	a := t.TempDir()
	if _, err := r.write(a); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, f := range []string{r.binary(r.Platforms[0]), r.Files[0]} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	b := t.TempDir()
	if _, err := r.write(b); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{archiveName("v0.2.0", r.Platforms[0]), "SHA256SUMS", "gcscope.yaml"} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestReleaseRefuses: a release krew would refuse, or that lacks a file, writes nothing.
func TestReleaseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*release)
		want   string
	}{
		{"untagged", func(r *release) { r.Version = "9a48164-dirty" }, "git tag"},
		{"no v", func(r *release) { r.Version = "0.2.0" }, "semantic version"},
		{"relative URL", func(r *release) { r.URL = "releases/v0.2.0" }, "release URL"},
		{"no platform", func(r *release) { r.Platforms = nil }, "no platform"},
		{"a platform twice", func(r *release) { r.Platforms = append(r.Platforms, r.Platforms[0]) }, "twice"},
		{"no binary", func(r *release) { os.Remove(r.binary(r.Platforms[1])) }, "no such file"},
		{"a missing file", func(r *release) { r.Files = append(r.Files, r.Files[0]+".md") }, "no such file"},
		{"a directory as a file", func(r *release) { r.Files = append(r.Files, r.Builds) }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeRelease(t, platform{"linux", "amd64"}, platform{"darwin", "arm64"})
			tc.change(&r)
			out := t.TempDir()
			_, err := r.write(out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
			for _, f := range []string{"gcscope.yaml", "SHA256SUMS", archiveName(r.Version, platform{"linux", "amd64"}), archiveName(r.Version, platform{"darwin", "arm64"})} {
				if _, err := os.Stat(filepath.Join(out, f)); err == nil {
					t.Errorf("%s written by a refused release", f)
				}
			}
		})
	}
}

// TestRunWarnsWithoutLicense: krew-index refuses a plugin whose archive has no license
// file; make dist packs the repository's LICENSE when there is one, and says so when not.
func TestRunWarnsWithoutLicense(t *testing.T) {
	r := fakeRelease(t, platform{"linux", "amd64"})
	args := []string{"-version", r.Version, "-url", r.URL, "-builds", r.Builds, "-out", t.TempDir(), "-mtime", "1767225600"}
	for _, tc := range []struct {
		files []string
		warns bool
	}{
		{nil, true},
		{[]string{"-file", r.Files[0]}, false},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(append(append(args, tc.files...), "linux/amd64"), &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if warns := strings.Contains(stderr.String(), "no license file"); warns != tc.warns {
			t.Errorf("files %v: stderr %q, want a warning: %v", tc.files, stderr.String(), tc.warns)
		}
		if !strings.Contains(stdout.String(), "kubectl-gcscope_v0.2.0_linux_amd64.tar.gz") {
			t.Errorf("stdout does not name the archive: %q", stdout.String())
		}
	}
	if err := run([]string{"-check", "-version", "9a48164", "-url", r.URL, "linux/amd64"}, io.Discard, io.Discard); err == nil {
		t.Error("-check accepted an untagged version")
	}
	if err := run([]string{"-check", "-version", "v0.2.0", "-url", r.URL, "windows/amd64"}, io.Discard, io.Discard); err == nil {
		t.Error("-check accepted windows")
	}
}
