package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// release is one run of make dist: kubectl-gcscope built for each platform, packed with the
// same files, for one version, downloaded from one URL.
type release struct {
	Version   string
	URL       string     // the archives are downloaded from URL/archiveName(...)
	Platforms []platform // in the manifest's order
	Builds    string     // the binaries: Builds/GOOS_GOARCH/kubectl-gcscope
	Files     []string   // packed beside the binary (LICENSE)
	MTime     time.Time  // every archive entry's time
}

// Outputs of write, in the output directory beside the archives.
const (
	manifestFile = pluginName + ".yaml" // krew's validation wants NAME.yaml
	sumsFile     = "SHA256SUMS"         // for sha256sum -c
)

// check says what is wrong with the release before anything is built or packed: its
// version, its URL and its platforms.
func (r release) check() error {
	if err := checkVersion(r.Version); err != nil {
		return err
	}
	if err := checkURL(r.URL); err != nil {
		return err
	}
	if len(r.Platforms) == 0 {
		return fmt.Errorf("no platform given: name at least one GOOS/GOARCH")
	}
	seen := map[platform]bool{}
	for _, p := range r.Platforms {
		if seen[p] {
			return fmt.Errorf("platform %s given twice", p)
		}
		seen[p] = true
	}
	return nil
}

// binary is where make dist built kubectl-gcscope for p.
func (r release) binary(p platform) string {
	return filepath.Join(r.Builds, p.OS+"_"+p.Arch, binName)
}

// uri is where krew downloads the archive for p from.
func (r release) uri(p platform) string {
	return strings.TrimSuffix(r.URL, "/") + "/" + archiveName(r.Version, p)
}

// write packs one archive per platform into dir, then writes SHA256SUMS and the krew
// manifest that names each archive's URL and sha256. It returns the manifest.
func (r release) write(dir string) (manifest, error) {
	if err := r.check(); err != nil {
		return manifest{}, err
	}
	if err := r.checkInputs(); err != nil {
		return manifest{}, err
	}
	m := manifest{Version: r.Version}
	var sums bytes.Buffer
	for _, p := range r.Platforms {
		name := archiveName(r.Version, p)
		sum, err := r.packTo(filepath.Join(dir, name), p)
		if err != nil {
			return manifest{}, fmt.Errorf("%s: %w", p, err)
		}
		m.Platforms = append(m.Platforms, archive{platform: p, URI: r.uri(p), SHA256: sum})
		fmt.Fprintf(&sums, "%s  %s\n", sum, name)
	}
	if err := os.WriteFile(filepath.Join(dir, sumsFile), sums.Bytes(), 0o644); err != nil {
		return manifest{}, err
	}
	var b bytes.Buffer
	if err := writeManifest(&b, m); err != nil {
		return manifest{}, err
	}
	return m, os.WriteFile(filepath.Join(dir, manifestFile), b.Bytes(), 0o644)
}

// checkInputs says which binary or file to pack is missing or not a regular file, before
// any archive is written.
func (r release) checkInputs() error {
	var paths []string
	for _, p := range r.Platforms {
		paths = append(paths, r.binary(p))
	}
	for _, path := range append(paths, r.Files...) {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
	}
	return nil
}

// packTo packs the archive for p into the file path and returns its sha256.
func (r release) packTo(path string, p platform) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	err = pack(io.MultiWriter(f, h), r.binary(p), r.Files, r.MTime)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hasLicense says whether the archives carry a file krew-index takes for a license.
func (r release) hasLicense() bool {
	for _, f := range r.Files {
		if isLicense(f) {
			return true
		}
	}
	return false
}
