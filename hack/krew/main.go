// Command krew packs the release archives of kubectl-gcscope and writes the krew plugin
// manifest that installs them. make dist cross-builds the binaries, then runs it:
//
//	go run ./hack/krew -version v0.2.0 \
//	    -url https://github.com/gcscope/gcscope/releases/download/v0.2.0 \
//	    -builds dist/build -out dist -file LICENSE -mtime 1767225600 \
//	    linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
//
// For each GOOS/GOARCH it packs dist/build/GOOS_GOARCH/kubectl-gcscope and the -file files
// into dist/kubectl-gcscope_VERSION_GOOS_GOARCH.tar.gz, then writes dist/SHA256SUMS and
// dist/gcscope.yaml, the manifest naming each archive's URL (-url/NAME) and sha256.
// -check only checks the version, the URL and the platforms (make dist does that before
// it builds anything).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hack/krew: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("krew", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r release
	fs.StringVar(&r.Version, "version", "", "the plugin's version: a semantic version with a leading v, as git describe --tags says on a tag")
	fs.StringVar(&r.URL, "url", "", "the URL the archives are downloaded from (the release's download URL)")
	fs.StringVar(&r.Builds, "builds", "dist/build", "where the binaries are: DIR/GOOS_GOARCH/kubectl-gcscope")
	out := fs.String("out", "dist", "where the archives, SHA256SUMS and gcscope.yaml are written")
	fs.Func("file", "a file packed beside the binary, under its base name (repeatable: LICENSE)", func(s string) error {
		r.Files = append(r.Files, s)
		return nil
	})
	mtime := fs.Int64("mtime", 0, "the time of every file in the archives, in Unix seconds (the commit's, so the archives are reproducible)")
	checkOnly := fs.Bool("check", false, "only check the version, the URL and the platforms")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	r.MTime = time.Unix(*mtime, 0).UTC()
	for _, a := range fs.Args() {
		p, err := parsePlatform(a)
		if err != nil {
			return err
		}
		r.Platforms = append(r.Platforms, p)
	}
	if *checkOnly {
		return r.check()
	}
	m, err := r.write(*out)
	if err != nil {
		return err
	}
	for _, a := range m.Platforms {
		name := filepath.Join(*out, archiveName(r.Version, a.platform))
		fi, err := os.Stat(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-58s %5.1f MB  sha256 %s\n", name, float64(fi.Size())/1e6, a.SHA256)
	}
	fmt.Fprintf(stdout, "%s: the krew manifest (its uris: %s/...); %s: the sums\n",
		filepath.Join(*out, manifestFile), strings.TrimSuffix(r.URL, "/"), filepath.Join(*out, sumsFile))
	if !r.hasLicense() {
		fmt.Fprintf(stderr, "warning: the archives carry no license file (one of %s): krew installs them, but krew-index refuses a plugin without one; add the project's LICENSE at the repository's root before a release\n", strings.Join(licenseNames, ", "))
	}
	return nil
}
