package main

import (
	_ "embed"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/version"
)

const (
	// pluginName is the plugin's name in krew (kubectl gcscope); krew reads it from the
	// manifest's file name too, so the manifest is written as pluginName.yaml.
	pluginName = "gcscope"
	// binName is the executable in every archive, and the command kubectl runs.
	binName = "kubectl-gcscope"
)

// platform is one os/arch pair, written as GOOS/GOARCH.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "/" + p.Arch }

// krewPlatforms are the pairs krew v0.4.4 installs on (validate-krew-manifest refuses a
// platform whose selector matches none of them), less windows, where the binary would be
// kubectl-gcscope.exe.
var krewPlatforms = []platform{
	{"linux", "386"}, {"linux", "amd64"}, {"linux", "arm"}, {"linux", "arm64"}, {"linux", "ppc64le"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
}

// parsePlatform reads GOOS/GOARCH, one of krewPlatforms.
func parsePlatform(s string) (platform, error) {
	goos, goarch, ok := strings.Cut(s, "/")
	p := platform{goos, goarch}
	if !ok {
		return p, fmt.Errorf("platform %q: want GOOS/GOARCH, like linux/amd64", s)
	}
	for _, k := range krewPlatforms {
		if p == k {
			return p, nil
		}
	}
	return p, fmt.Errorf("platform %q: krew installs kubectl-gcscope on %s only", s, joinPlatforms(krewPlatforms))
}

func joinPlatforms(ps []platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// archiveName is the file name of the archive for p: the release's assets sit side by
// side under one URL, and a downloaded one says what it holds.
func archiveName(version string, p platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", binName, version, p.OS, p.Arch)
}

// checkVersion accepts what krew accepts as a plugin's version: a semantic version with a
// leading v (v0.2.0, v0.2.0-rc.1). `git describe` gives one on a tagged commit; on an
// untagged one it gives a bare commit hash, which krew refuses.
func checkVersion(v string) error {
	if _, err := version.ParseSemantic(v); err != nil || !strings.HasPrefix(v, "v") {
		return fmt.Errorf("version %q is not a semantic version with a leading v, as krew requires (v0.2.0, v0.2.0-rc.1): tag the commit (git tag v0.2.0) or pass VERSION=v0.2.0", v)
	}
	return nil
}

// checkURL accepts an absolute http or https URL, the base every archive is downloaded
// from (krew fetches a platform's uri with a plain GET).
func checkURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("release URL %q: want an absolute https URL with no query, like https://github.com/gcscope/gcscope/releases/download/v0.2.0", base)
	}
	return nil
}

// archive is one packed archive as the manifest names it.
type archive struct {
	platform
	URI    string // where krew downloads it from
	SHA256 string // of the archive file, in lower-case hex
}

// manifest is what the plugin manifest says: the version, and one archive per platform.
type manifest struct {
	Version   string
	Platforms []archive
}

// Name and Bin are the template's spelling of pluginName and binName.
func (manifest) Name() string { return pluginName }
func (manifest) Bin() string  { return binName }

//go:embed gcscope.yaml.tmpl
var manifestText string

// manifestTemplate quotes what could read as a number: a sha256 of digits (and one e), an
// arch like 386.
var manifestTemplate = template.Must(template.New("gcscope.yaml").
	Option("missingkey=error").
	Funcs(template.FuncMap{"quote": strconv.Quote}).
	Parse(manifestText))

// writeManifest writes m as a krew plugin manifest (apiVersion
// krew.googlecontainertools.github.com/v1alpha2, kind Plugin).
func writeManifest(w io.Writer, m manifest) error {
	return manifestTemplate.Execute(w, m)
}
