package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pack writes a .tar.gz of the binary, as binName with mode 0755, and then each of files
// under its base name with mode 0644, all at the top of the archive (krew installs every
// file of it and links bin). Only the contents and names come from the disk: owners,
// modes and times are fixed (every entry dated mtime), so the same inputs give the same
// bytes and the same sha256.
func pack(w io.Writer, binary string, files []string, mtime time.Time) error {
	gz := gzip.NewWriter(w) // no name, no time in the gzip header
	tw := tar.NewWriter(gz)
	entries := append([]string{binary}, files...)
	for i, path := range entries {
		name, mode := filepath.Base(path), int64(0o644)
		if i == 0 {
			name, mode = binName, 0o755
		}
		if err := packFile(tw, path, name, mode, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func packFile(tw *tar.Writer, path, name string, mode int64, mtime time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     fi.Size(),
		ModTime:  mtime,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// licenseNames are the file names krew-index's check (validate-krew-manifest) takes for a
// license once a plugin is installed, compared without case; it refuses a plugin with none.
var licenseNames = []string{"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying", "copying.txt"}

// isLicense says whether krew-index takes a file of that name for a license.
func isLicense(path string) bool {
	for _, n := range licenseNames {
		if strings.EqualFold(filepath.Base(path), n) {
			return true
		}
	}
	return false
}
