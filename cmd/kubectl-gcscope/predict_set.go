package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/selection"
)

// kubectl gcscope predict for the deletes people make as sets: TYPE[,TYPE…] -l SELECTOR
// (kubectl delete -l), -f FILE|DIR|- (kubectl delete -f), --helm-release NAME (helm
// uninstall) and --argocd-app NAME (deleting an Argo CD Application), each predicted as
// one (the collector acting on all of them at once), not one object at a time.

// setFlags are how a set is named on the command line.
type setFlags struct {
	types     string // TYPE[,TYPE…] with -l
	selector  string
	all       bool
	files     []string
	helm      string
	argoCDApp string
}

func (f *setFlags) given() bool {
	return f.selector != "" || len(f.files) > 0 || f.helm != "" || f.argoCDApp != ""
}

// check refuses ways of naming a set that do not go together, or arguments they do not take.
func (f *setFlags) check(args []string) error {
	n := 0
	for _, on := range []bool{f.selector != "", len(f.files) > 0, f.helm != "", f.argoCDApp != ""} {
		if on {
			n++
		}
	}
	switch {
	case n > 1:
		return usageError{errors.New("-l, -f, --helm-release and --argocd-app each name a set: give one")}
	case f.selector != "" && (len(args) != 1 || strings.Contains(args[0], "/")):
		return usageError{fmt.Errorf("with -l, name the types only: predict TYPE[,TYPE…] -l %s", f.selector)}
	case f.selector == "" && len(args) > 0:
		return usageError{fmt.Errorf("-f, --helm-release and --argocd-app name the objects themselves: drop %q", strings.Join(args, " "))}
	case f.selector == "" && f.all:
		return usageError{errors.New("-A goes with -l only")}
	}
	if f.selector != "" {
		if _, err := labels.Parse(f.selector); err != nil {
			return usageError{fmt.Errorf("-l %q: %v", f.selector, err)}
		}
		f.types = args[0]
	}
	return nil
}

// resolveSet reads what f names from the cluster, with the user's credentials.
func resolveSet(ctx context.Context, o *options, k *kube, f *setFlags) (selection.Set, error) {
	src, err := selection.NewSource(k.short, k.mapper, k.namespace)
	if err != nil {
		return selection.Set{}, err
	}
	switch {
	case f.selector != "":
		types := slices.DeleteFunc(strings.Split(f.types, ","), func(s string) bool { return s == "" })
		set, err := src.Selector(ctx, types, f.selector, "", f.all)
		if errors.Is(err, selection.ErrUnknownType) {
			return set, usageError{err}
		}
		return set, err
	case len(f.files) > 0:
		var docs []selection.Document
		for _, name := range f.files {
			more, err := readManifests(o, name)
			if err != nil {
				return selection.Set{}, err
			}
			docs = append(docs, more...)
		}
		return src.Manifest(ctx, docs, "kubectl delete -f "+strings.Join(f.files, " -f "))
	case f.helm != "":
		return src.HelmRelease(ctx, f.helm, k.namespace)
	default:
		return src.ArgoCDApplication(ctx, f.argoCDApp, o.namespace) // -n names its namespace; argocd by default
	}
}

// readManifests reads -f's FILE, the .yaml, .yml and .json files of a DIR (not its
// subdirectories, as kubectl without -R), or standard input for "-".
func readManifests(o *options, name string) ([]selection.Document, error) {
	read := func(r io.Reader, source string) ([]selection.Document, error) {
		data, err := io.ReadAll(io.LimitReader(r, selection.MaxManifestBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %v", source, err)
		}
		docs, err := selection.ParseManifest(data, source)
		if err != nil {
			return nil, usageError{err}
		}
		return docs, nil
	}
	if name == "-" {
		return read(o.stdin, "standard input")
	}
	st, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageError{fmt.Errorf("-f: the path %q does not exist", name)}
	} else if err != nil {
		return nil, usageError{fmt.Errorf("-f %s: %v", name, err)}
	}
	files := []string{name}
	if st.IsDir() {
		files = nil
		entries, err := os.ReadDir(name)
		if err != nil {
			return nil, usageError{fmt.Errorf("-f %s: %v", name, err)}
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(name, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, usageError{fmt.Errorf("-f %s: no .yaml, .yml or .json file in it", name)}
		}
	}
	var out []selection.Document
	for _, f := range files {
		file, err := os.Open(f)
		if err != nil {
			return nil, usageError{fmt.Errorf("-f %s: %v", f, err)}
		}
		docs, err := read(file, f)
		file.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

// predictSet predicts deleting everything f names, with policy.
func predictSet(ctx context.Context, o *options, f *setFlags, policy metav1.DeletionPropagation, cascade, output string) error {
	k, err := reached(o)
	if err != nil {
		return err
	}
	set, err := resolveSet(ctx, o, k, f)
	var status interface{ Status() metav1.Status }
	if errors.As(err, &status) {
		return k.apiError(err, "")
	}
	if err != nil {
		return err
	}
	header := fmt.Sprintf("%s --cascade=%s would:\n", set.Describe, cascade)
	if len(set.Objects) == 0 {
		if output == "json" {
			fmt.Fprint(o.stdout, jsonText(struct {
				Set selection.Set `json:"set"`
			}{set}))
			return nil
		}
		var b strings.Builder
		b.WriteString(header + "\ndelete nothing: no object matches.\n")
		renderSetNotes(&b, set, paint(o.colored(o.stdout)))
		fmt.Fprint(o.stdout, b.String())
		return nil
	}
	s, err := syncedSession(ctx, k, o)
	if err != nil {
		return err
	}
	defer s.stop()
	pr, missing := s.engine.PredictDeleteSet(set.UIDs(), policy)
	if len(missing) == len(set.Objects) {
		return fmt.Errorf("the %d objects named were deleted while the engine listed the cluster", len(missing))
	}
	x, err := deletion.New(s.engine, k.short)
	if err != nil {
		return err
	}
	parents := orderPrediction(s.engine, &pr)
	c := x.Consequences(ctx, pr, nil) // in the order the lists now have
	c.LeftBehind = append(set.LeftBehind(pr), c.LeftBehind...)
	if output == "json" {
		fmt.Fprint(o.stdout, jsonText(struct {
			Set selection.Set `json:"set"`
			gc.Prediction
			deletion.Consequences
		}{set, pr, c}))
		return nil
	}
	pt := paint(o.colored(o.stdout))
	text := renderPrediction(pr, c, parents, cascade, pt)
	// The header names the set, not its first object.
	_, rest, _ := strings.Cut(text, "\n")
	var notes strings.Builder
	renderSetNotes(&notes, set, pt)
	verb := "named"
	if f.selector != "" {
		verb = "match"
	}
	fmt.Fprintf(o.stdout, "%s%s %s, predicted together (as the collector acts when they all go at once):\n%s%s",
		header, counted(len(set.Objects)-len(missing), "object"), verb, notes.String(), rest)
	return nil
}

// renderSetNotes says what the set names that the cluster does not hold, and what its
// tool does beyond the deletes.
func renderSetNotes(b *strings.Builder, set selection.Set, paint paint) {
	if len(set.Missing) > 0 {
		fmt.Fprintf(b, "\n%s named but not there (nothing to delete):\n", counted(len(set.Missing), "object"))
		width := 0
		for _, m := range set.Missing {
			width = max(width, utf8.RuneCountInString(displayName(m.Object)))
		}
		for _, m := range set.Missing {
			fmt.Fprintf(b, "  %s  %s\n", pad(displayName(m.Object), width), paint.sev(sevBusy, m.Reason))
		}
	}
	if len(set.Notes) > 0 {
		fmt.Fprintf(b, "\nbeyond the deletes:\n")
		for _, n := range set.Notes {
			fmt.Fprintf(b, "  %s\n", n)
		}
	}
}
