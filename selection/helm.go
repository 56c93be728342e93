package selection

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// helm uninstall, read from Helm's own storage: each revision of a release is a Secret
// (type helm.sh/release.v1, labeled owner=helm and name=RELEASE, or a ConfigMap with the
// configmap driver) in the release's namespace, whose data "release" is the release as
// JSON, gzipped, in base64. Uninstall takes the newest revision, deletes every resource of
// its manifest but those annotated helm.sh/resource-policy: keep, runs its pre-delete and
// post-delete hooks around that, leaves the resources other hooks made (Helm does not
// track them), and deletes the revisions' records.

const (
	helmKeepPolicy = "helm.sh/resource-policy"
	// maxReleaseBytes bounds a release inflated from its record.
	maxReleaseBytes = 64 << 20
)

// helmRelease is what uninstall reads of a release.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Manifest  string `json:"manifest"`
	Info      struct {
		Status string `json:"status"`
	} `json:"info"`
	Hooks []helmHook `json:"hooks"`
}

type helmHook struct {
	Name           string   `json:"name"`
	Kind           string   `json:"kind"`
	Path           string   `json:"path"`
	Manifest       string   `json:"manifest"`
	Events         []string `json:"events"`
	DeletePolicies []string `json:"delete_policies"`
}

// releaseRecord is one revision's record.
type releaseRecord struct {
	ref     gc.ObjectRef
	version int
	data    []byte
}

// HelmRelease resolves what helm uninstall NAME -n NAMESPACE deletes.
func (s *Source) HelmRelease(ctx context.Context, name, namespace string) (Set, error) {
	if namespace == "" {
		namespace = s.Namespace
	}
	describe := fmt.Sprintf("helm uninstall %s -n %s", name, namespace)
	records, err := s.releaseRecords(ctx, name, namespace)
	if err != nil {
		return Set{}, err
	}
	if len(records) == 0 {
		return Set{}, fmt.Errorf("%s: release not found (no Secret or ConfigMap labeled owner=helm,name=%s in namespace %s)", describe, name, namespace)
	}
	newest := records[len(records)-1]
	rel, err := decodeRelease(newest.data)
	if err != nil {
		return Set{}, fmt.Errorf("%s: reading %s %s: %v", describe, newest.ref.Kind, newest.ref.Name, err)
	}
	if rel.Info.Status == "uninstalled" {
		return Set{}, fmt.Errorf("%s: the release is already uninstalled (its history was kept)", describe)
	}
	docs, err := ParseManifest([]byte(rel.Manifest), "the release's manifest")
	if err != nil {
		return Set{}, fmt.Errorf("%s: %v", describe, err)
	}
	var entries []*entry
	for _, d := range docs {
		e := &entry{ref: d.ObjectRef, where: d.Source}
		if d.Annotations[helmKeepPolicy] == "keep" {
			e.keep = "helm.sh/resource-policy: keep: helm uninstall leaves it (and it no longer belongs to a release)"
		}
		entries = append(entries, e)
	}
	set := Set{Describe: describe}
	for _, h := range rel.Hooks {
		hookDocs, err := ParseManifest([]byte(h.Manifest), "hook "+h.Path)
		if err != nil {
			continue // a hook Helm could not apply either
		}
		runs := slices.ContainsFunc(h.Events, func(e string) bool { return e == "pre-delete" || e == "post-delete" })
		if runs {
			set.Notes = append(set.Notes, hookNote(h))
		}
		for _, d := range hookDocs {
			e := &entry{ref: d.ObjectRef, where: "hook " + h.Path}
			switch {
			case runs && slices.Contains(h.DeletePolicies, "before-hook-creation"):
				continue // deleted and made again by the hook itself: said in its note
			case runs:
				e.keep = fmt.Sprintf("made by the release's %s hook: helm uninstall runs it again", strings.Join(h.Events, ", "))
			default:
				e.keep = fmt.Sprintf("made by the release's %s hook: Helm does not track hook resources, uninstall leaves them", strings.Join(h.Events, ", "))
			}
			entries = append(entries, e)
		}
	}
	if len(entries) > MaxObjects {
		return Set{}, tooMany(len(entries), describe)
	}
	rs := *s
	rs.Namespace = namespace // the release's resources without a namespace are in its own
	if err := rs.resolve(ctx, entries); err != nil {
		return Set{}, err
	}
	// Hooks whose resources are gone (deleted by their policy) are not missing.
	entries = slices.DeleteFunc(entries, func(e *entry) bool { return strings.HasPrefix(e.where, "hook ") && e.miss != "" })
	collect(&set, entries)
	for _, r := range records {
		set.Objects = append(set.Objects, r.ref)
	}
	if len(records) == 1 {
		set.Notes = append(set.Notes, fmt.Sprintf("helm deletes the release's record (%s %s) last; with --keep-history it keeps it, marked uninstalled", newest.ref.Kind, newest.ref.Name))
	} else {
		set.Notes = append(set.Notes, fmt.Sprintf("helm deletes the records of the release's %d revisions (%ss %s.v*) last; with --keep-history it keeps them, marked uninstalled",
			len(records), newest.ref.Kind, strings.TrimSuffix(newest.ref.Name, fmt.Sprintf(".v%d", newest.version))))
	}
	return set, nil
}

func hookNote(h helmHook) string {
	kind := cmpOr(h.Kind, "resource")
	note := fmt.Sprintf("helm uninstall runs the %s hook %s %s (%s): it creates it and waits for it", strings.Join(h.Events, ", "), kind, h.Name, h.Path)
	switch {
	case len(h.DeletePolicies) == 0:
		note += ", and leaves it in place"
	default:
		note += ", and deletes it by its policy (" + strings.Join(h.DeletePolicies, ", ") + ")"
	}
	return note
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// releaseRecords are the records of name's revisions, oldest first: Secrets, or
// ConfigMaps when no Secret holds one.
func (s *Source) releaseRecords(ctx context.Context, name, namespace string) ([]releaseRecord, error) {
	opts := metav1.ListOptions{LabelSelector: "owner=helm,name=" + name}
	secrets, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*corev1.SecretList, error) {
		return s.core.CoreV1().Secrets(namespace).List(ctx, opts)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the release's Secrets in %s: %w", namespace, err)
	}
	var out []releaseRecord
	for _, sec := range secrets.Items {
		out = append(out, releaseRecord{ref: gc.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: sec.Namespace, Name: sec.Name, UID: sec.UID},
			version: revision(sec.Labels), data: sec.Data["release"]})
	}
	if len(out) == 0 {
		cms, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*corev1.ConfigMapList, error) {
			return s.core.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		})
		if err != nil && !apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("reading the release's ConfigMaps in %s: %w", namespace, err)
		}
		if cms != nil {
			for _, cm := range cms.Items {
				out = append(out, releaseRecord{ref: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID},
					version: revision(cm.Labels), data: []byte(cm.Data["release"])})
			}
		}
	}
	slices.SortFunc(out, func(a, b releaseRecord) int { return a.version - b.version })
	return out, nil
}

func revision(labels map[string]string) int {
	v, _ := strconv.Atoi(labels["version"])
	return v
}

// decodeRelease reads a record's data: base64 of the release's JSON, gzipped (Helm 3
// writes it so; an older record may not be gzipped).
func decodeRelease(data []byte) (*helmRelease, error) {
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("not base64: %v", err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, maxReleaseBytes+1)); err != nil {
			return nil, err
		}
		if len(raw) > maxReleaseBytes {
			return nil, fmt.Errorf("inflates past %d MiB", maxReleaseBytes>>20)
		}
	}
	var rel helmRelease
	if err := json.Unmarshal(raw, &rel); err != nil {
		return nil, fmt.Errorf("not a release: %v", err)
	}
	return &rel, nil
}
