package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// krew itself, pinned: validate-krew-manifest is the check krew-index's CI runs on every
// plugin manifest (at this version), and krew the plugin manager users run. go install
// pkg@version builds them in krew's own module: gcscope's go.mod is not touched.
const krewTools = "sigs.k8s.io/krew/cmd/%s@v0.4.4"

// testVersion is the version make test packs the host's archive as.
const testVersion = "v0.0.0-krewtest"

// TestKrewInstallsTheArchives checks the archives and manifest of make dist as krew-index
// and krew take them. Under make dist, GCSCOPE_DIST names its output and every platform is
// checked; under make test, the test runs make dist-archives for this machine's platform
// alone (each platform is a build of client-go and the engine: four take many minutes).
//
// validate-krew-manifest -skip-install makes krew-index's checks of the manifest (krew's
// own validation, every platform selector matching an os/arch krew knows and no two
// matching the same). Then, as validate-krew-manifest does without -skip-install, each
// platform is installed with KREW_OS/KREW_ARCH set to it, here from its archive (krew
// install --manifest --archive, which checks the archive's sha256 against the manifest)
// rather than downloaded from its uri, which exists only once the release is published.
// Each installed binary is kubectl-gcscope built for that platform with CGO off and
// -trimpath; the host's runs `version` and `--help`.
func TestKrewInstallsTheArchives(t *testing.T) {
	host := platform{runtime.GOOS, runtime.GOARCH}
	dist := os.Getenv("GCSCOPE_DIST")
	if dist == "" {
		checkDefaultPlatforms(t)
		dist = t.TempDir()
		runMake(t, "dist-archives", "DIST="+dist, "DIST_PLATFORMS="+host.String(), "VERSION="+testVersion)
	}
	manifestPath := filepath.Join(dist, "gcscope.yaml")
	b, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	plugin := readPlugin(t, b)
	version := plugin.Spec.Version
	if os.Getenv("GCSCOPE_DIST") == "" && version != testVersion {
		t.Errorf("the manifest's version is %q, want make's VERSION %q", version, testVersion)
	}

	bin := t.TempDir()
	install := exec.Command("go", "install", fmt.Sprintf(krewTools, "krew"), fmt.Sprintf(krewTools, "validate-krew-manifest"))
	install.Dir, install.Env = bin, append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install krew: %v\n%s", err, out)
	}
	validate := exec.Command(filepath.Join(bin, "validate-krew-manifest"), "-manifest", manifestPath, "-skip-install")
	if out, err := validate.CombinedOutput(); err != nil {
		t.Fatalf("krew-index's validation refuses %s: %v\n%s", manifestPath, err, out)
	}

	_, err = os.Stat("../../LICENSE")
	repoHasLicense := err == nil
	hasHost := false
	for _, pl := range plugin.Spec.Platforms {
		p := platform{pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]}
		t.Run(p.OS+"_"+p.Arch, func(t *testing.T) {
			archive := filepath.Join(dist, path.Base(pl.URI))
			if want := archiveName(version, p); path.Base(pl.URI) != want {
				t.Errorf("uri %s: want it to end in %s", pl.URI, want)
			}
			root := t.TempDir()
			krew := exec.Command(filepath.Join(bin, "krew"), "install", "--manifest="+manifestPath, "--archive="+archive)
			krew.Env = []string{"KREW_ROOT=" + root, "KREW_OS=" + p.OS, "KREW_ARCH=" + p.Arch, "KREW_NO_UPGRADE_CHECK=1",
				"HOME=" + root, "PATH=" + filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
			if out, err := krew.CombinedOutput(); err != nil {
				t.Fatalf("krew install --manifest=%s --archive=%s: %v\n%s", manifestPath, archive, err, out)
			}
			link := filepath.Join(root, "bin", "kubectl-gcscope")
			installed, err := filepath.EvalSymlinks(link)
			if err != nil {
				t.Fatalf("krew linked no kubectl-gcscope: %v", err)
			}
			store, err := filepath.EvalSymlinks(filepath.Join(root, "store", "gcscope", version))
			if err != nil || filepath.Dir(installed) != store {
				t.Errorf("%s links to %s, want a file in krew's store for gcscope %s (%v)", link, installed, version, err)
			}
			checkInstalledFiles(t, filepath.Dir(installed), repoHasLicense)
			checkBinary(t, installed, p, version)
			if p == host {
				runInstalled(t, link, version)
			}
		})
		hasHost = hasHost || p == host
	}
	if !hasHost {
		t.Logf("no archive for this machine (%s): no installed binary was run", host)
	}
}

// checkDefaultPlatforms: make dist builds linux and darwin, amd64 and arm64, by default.
func checkDefaultPlatforms(t *testing.T) {
	t.Helper()
	cmd := makeCommand("-f", "Makefile", "-f", "-", "print-dist-platforms")
	cmd.Stdin = strings.NewReader("print-dist-platforms:\n\t@echo $(DIST_PLATFORMS)\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make: %v", err)
	}
	if got, want := strings.TrimSpace(string(out)), "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"; got != want {
		t.Errorf("make dist builds %q by default, want %q", got, want)
	}
}

// makeCommand runs make in the repository's root, apart from any make that runs the test.
func makeCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = "../.."
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

func runMake(t *testing.T, args ...string) {
	t.Helper()
	cmd := makeCommand(args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	} else {
		t.Logf("make %s:\n%s", strings.Join(args, " "), out)
	}
}

// checkInstalledFiles: the plugin's directory holds the binary, executable, and the
// LICENSE when the repository has one (krew-index's check: a file it takes for a license).
func checkInstalledFiles(t *testing.T, dir string, wantLicense bool) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	license := false
	for _, de := range des {
		names = append(names, de.Name())
		license = license || (de.Type().IsRegular() && isLicense(de.Name()))
	}
	want := []string{"kubectl-gcscope"}
	if wantLicense {
		want = []string{"LICENSE", "kubectl-gcscope"}
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("installed %v, want %v", names, want)
	}
	if wantLicense && !license {
		t.Error("no license file installed: krew-index refuses the plugin")
	}
	fi, err := os.Stat(filepath.Join(dir, "kubectl-gcscope"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("kubectl-gcscope has mode %v: not executable", fi.Mode())
	}
}

// checkBinary: the file is kubectl-gcscope for p, built with CGO off and -trimpath, holding
// its version; an ELF one is statically linked.
func checkBinary(t *testing.T, file string, p platform, version string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if bi.Path != "github.com/gcscope/gcscope/cmd/kubectl-gcscope" {
		t.Errorf("%s is %s, want github.com/gcscope/gcscope/cmd/kubectl-gcscope", file, bi.Path)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": p.OS, "GOARCH": p.Arch, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("built with %s=%q, want %q", k, settings[k], want)
		}
	}
	// (Build info leaves -ldflags out under -trimpath: the version set by -X is looked for
	// in the file, and the host's binary prints it.)
	if data, err := os.ReadFile(file); err != nil || !bytes.Contains(data, []byte(version)) {
		t.Errorf("%s does not hold its version %s (%v)", file, version, err)
	}
	switch p.OS {
	case "linux":
		f, err := elf.Open(file)
		if err != nil {
			t.Fatalf("%s is no ELF file: %v", file, err)
		}
		defer f.Close()
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM, "ppc64le": elf.EM_PPC64}[p.Arch]
		if f.Machine != machine {
			t.Errorf("an ELF file for %v, want %v", f.Machine, machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Error("dynamically linked (it names an interpreter): CGO was on")
			}
		}
	case "darwin":
		f, err := macho.Open(file)
		if err != nil {
			t.Fatalf("%s is no Mach-O file: %v", file, err)
		}
		defer f.Close()
		cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.Arch]
		if f.Cpu != cpu {
			t.Errorf("a Mach-O file for %v, want %v", f.Cpu, cpu)
		}
	}
}

// runInstalled runs the plugin as krew linked it: `version` says the manifest's version,
// `--help` lists the commands.
func runInstalled(t *testing.T, link, version string) {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"), "PATH=" + os.Getenv("PATH")}
	cmd := exec.Command(link, "version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if want := "kubectl-gcscope " + version + "\n"; err != nil || string(out) != want {
		t.Errorf("kubectl-gcscope version: %v, %q, want %q", err, out, want)
	}
	cmd = exec.Command(link, "--help")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Commands:") || !strings.Contains(string(out), "predict") {
		t.Errorf("kubectl-gcscope --help: %v\n%s", err, out)
	}
}
