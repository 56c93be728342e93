// Package wire is what crosses the wire between gcscope's server and its clients: it parses
// what clients send (websocket frames, the delete and set bodies; strict, and small enough
// to fuzz on its own), and declares what the stream sends (frames.go).
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxSubscriptionItems bounds each list of a subscription.
const MaxSubscriptionItems = 1000

// Subscription narrows what a stream client receives. Empty lists select everything.
type Subscription struct {
	// Namespaces: objects in these namespaces; "" selects cluster-scoped objects.
	Namespaces []string
	// Kinds: objects of these kinds (case-insensitive).
	Kinds []string
	// UIDs: the objects connected to these through ownerReferences, either way.
	UIDs []types.UID
	// Queues: queue transitions and worker actions are sent (for the selected objects).
	Queues bool
	// Summary: the client is sent the graph counted (summary frames), and objects only
	// for the namespaces, kinds and uids it names (none: no object at all), instead of
	// everything when it names none (docs/stream.md, "Summary first").
	Summary bool
}

// Validate checks the lists are few and well-formed.
func (s Subscription) Validate() error {
	if len(s.Namespaces) > MaxSubscriptionItems || len(s.Kinds) > MaxSubscriptionItems || len(s.UIDs) > MaxSubscriptionItems {
		return fmt.Errorf("at most %d namespaces, kinds and uids each", MaxSubscriptionItems)
	}
	for _, ns := range s.Namespaces {
		if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
			return fmt.Errorf("namespace %q is not a valid namespace name", clip(ns, 64))
		}
	}
	for _, k := range s.Kinds {
		if !plainToken(k, 253) {
			return fmt.Errorf("kind %q is not a valid kind", clip(k, 64))
		}
	}
	for _, u := range s.UIDs {
		if !plainToken(string(u), 128) {
			return fmt.Errorf("uid %q is not a valid uid", clip(string(u), 64))
		}
	}
	return nil
}

// plainToken: 1 to max bytes of valid UTF-8 without spaces or control characters.
func plainToken(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
}

// clip shortens s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ClientRequest is a parsed client frame: a ping, or a subscription.
type ClientRequest struct {
	Ping bool
	Sub  Subscription
}

// ParseClientFrame parses one text frame from a client; the error says what is wrong
// with it, in words fit for a close reason.
func ParseClientFrame(data []byte) (ClientRequest, error) {
	if !utf8.Valid(data) {
		return ClientRequest{}, errors.New("bad frame: not valid UTF-8")
	}
	var f struct {
		Type       string      `json:"type"`
		Namespaces []string    `json:"namespaces"`
		Kinds      []string    `json:"kinds"`
		UIDs       []types.UID `json:"uids"`
		Queues     *bool       `json:"queues"`
		Summary    *bool       `json:"summary"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return ClientRequest{}, fmt.Errorf("bad frame: invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ClientRequest{}, errors.New("bad frame: invalid JSON: data after the object")
	}
	switch f.Type {
	case "ping":
		if f.Namespaces != nil || f.Kinds != nil || f.UIDs != nil || f.Queues != nil || f.Summary != nil {
			return ClientRequest{}, errors.New("bad frame: ping takes no fields")
		}
		return ClientRequest{Ping: true}, nil
	case "subscribe":
		sub := Subscription{Namespaces: f.Namespaces, Kinds: f.Kinds, UIDs: f.UIDs, Queues: f.Queues == nil || *f.Queues, Summary: f.Summary != nil && *f.Summary}
		if err := sub.Validate(); err != nil {
			return ClientRequest{}, fmt.Errorf("bad frame: %v", err)
		}
		return ClientRequest{Sub: sub}, nil
	case "":
		return ClientRequest{}, errors.New(`bad frame: missing "type"`)
	default:
		return ClientRequest{}, fmt.Errorf("bad frame: unknown type %q", clip(f.Type, 32))
	}
}

// CloseReason fits msg into a close frame (123 bytes).
func CloseReason(msg string) string {
	if len(msg) <= 123 {
		return msg
	}
	return clip(msg, 120)
}

// DeleteRequest is the body of POST /api/v1/objects/{uid}/delete.
type DeleteRequest struct {
	PropagationPolicy string `json:"propagationPolicy"`
	DryRun            bool   `json:"dryRun"`
}

// Policies are the propagation policies a delete accepts.
var Policies = []string{"Background", "Foreground", "Orphan"}

// Error says what is wrong with a request, and the accepted values when it is a choice.
type Error struct {
	Message string
	Allowed []string
}

func (e *Error) Error() string { return e.Message }

// ParseDeleteRequest decodes and validates a delete body. dryRun must be there and be a
// boolean: a body that forgot it is a mistake, never a real delete.
func ParseDeleteRequest(body io.Reader) (DeleteRequest, *Error) {
	const want = `; want {"propagationPolicy": "Background|Foreground|Orphan", "dryRun": true|false}`
	var raw struct {
		PropagationPolicy string `json:"propagationPolicy"`
		DryRun            *bool  `json:"dryRun"`
	}
	if err := decodeOne(body, &raw, "propagationPolicy", "dryRun"); err != nil {
		return DeleteRequest{}, &Error{Message: err.Error() + want}
	}
	req := DeleteRequest{PropagationPolicy: raw.PropagationPolicy}
	if raw.DryRun == nil {
		return req, &Error{Message: `body: "dryRun" is required (true predicts, false deletes)` + want}
	}
	req.DryRun = *raw.DryRun
	for _, p := range Policies {
		if req.PropagationPolicy == p {
			return req, nil
		}
	}
	return req, &Error{Message: fmt.Sprintf("propagationPolicy %q is not one of the allowed values", req.PropagationPolicy), Allowed: Policies}
}

// MaxSetObjects bounds the objects one POST /api/v1/deletions names.
const MaxSetObjects = 5000

// DeleteSetRequest is the body of POST /api/v1/deletions: several objects predicted
// together and, unless DryRun, deleted with one confirmation. Exactly one of UIDs,
// Selector, Manifest, HelmRelease and ArgoCDApplication names them.
type DeleteSetRequest struct {
	UIDs []string `json:"uids,omitempty"`
	// Selector: kubectl delete TYPES -l LABELS [-n NS | -A].
	Selector *SetSelector `json:"selector,omitempty"`
	// Manifest: kubectl delete -f, its documents' text; Namespace is where documents
	// without one are.
	Manifest *SetManifest `json:"manifest,omitempty"`
	// HelmRelease: helm uninstall NAME -n NAMESPACE (predicted only).
	HelmRelease *NamedSet `json:"helmRelease,omitempty"`
	// ArgoCDApplication: the delete of an Argo CD Application (predicted only).
	ArgoCDApplication *NamedSet `json:"argoCDApplication,omitempty"`
	PropagationPolicy string    `json:"propagationPolicy"`
	DryRun            bool      `json:"dryRun"`
}

// SetSelector names the objects of Types that LabelSelector matches, in Namespace or in
// all with AllNamespaces.
type SetSelector struct {
	Types         []string `json:"types"`
	LabelSelector string   `json:"labelSelector"`
	Namespace     string   `json:"namespace,omitempty"`
	AllNamespaces bool     `json:"allNamespaces,omitempty"`
}

// SetManifest is the text of YAML or JSON documents.
type SetManifest struct {
	Text      string `json:"text"`
	Namespace string `json:"namespace,omitempty"`
}

// NamedSet is a Helm release or an Argo CD Application, by name.
type NamedSet struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Predicted reports whether the set can only be predicted here: its tool deletes it (Helm
// runs hooks; Argo CD's finalizer deletes the resources).
func (r *DeleteSetRequest) Predicted() string {
	switch {
	case r.HelmRelease != nil:
		return "helm uninstall " + r.HelmRelease.Name + " deletes a release (and runs its hooks): gcscope predicts it, with dryRun true"
	case r.ArgoCDApplication != nil:
		return "a delete of the Application itself deletes the rest (through its finalizer): delete the Application, or predict with dryRun true"
	}
	return ""
}

// ParseDeleteSetRequest decodes and validates a set delete: one way of naming it (uids: 1
// to MaxSetObjects, each once, none empty; a selector with types; a manifest's text; a
// release's or Application's name), the policy, and dryRun, required as for one object.
func ParseDeleteSetRequest(body io.Reader) (DeleteSetRequest, *Error) {
	const want = `; want {"uids": ["…"] | "selector": {"types": ["…"], "labelSelector": "…", "namespace": "…"} | "manifest": {"text": "…"} | "helmRelease": {"name": "…", "namespace": "…"} | "argoCDApplication": {"name": "…"}, "propagationPolicy": "Background|Foreground|Orphan", "dryRun": true|false}`
	var raw struct {
		UIDs              []string     `json:"uids"`
		Selector          *SetSelector `json:"selector"`
		Manifest          *SetManifest `json:"manifest"`
		HelmRelease       *NamedSet    `json:"helmRelease"`
		ArgoCDApplication *NamedSet    `json:"argoCDApplication"`
		PropagationPolicy string       `json:"propagationPolicy"`
		DryRun            *bool        `json:"dryRun"`
	}
	if err := decodeOne(body, &raw, "uids", "selector", "manifest", "helmRelease", "argoCDApplication", "propagationPolicy", "dryRun"); err != nil {
		return DeleteSetRequest{}, &Error{Message: err.Error() + want}
	}
	req := DeleteSetRequest{UIDs: raw.UIDs, Selector: raw.Selector, Manifest: raw.Manifest, HelmRelease: raw.HelmRelease,
		ArgoCDApplication: raw.ArgoCDApplication, PropagationPolicy: raw.PropagationPolicy}
	if raw.DryRun == nil {
		return req, &Error{Message: `body: "dryRun" is required (true predicts, false deletes)` + want}
	}
	req.DryRun = *raw.DryRun
	named := 0
	for _, given := range []bool{raw.UIDs != nil, raw.Selector != nil, raw.Manifest != nil, raw.HelmRelease != nil, raw.ArgoCDApplication != nil} {
		if given {
			named++
		}
	}
	if named != 1 {
		return req, &Error{Message: `body: name the set one way: "uids", "selector", "manifest", "helmRelease" or "argoCDApplication"` + want}
	}
	var err *Error
	switch {
	case raw.UIDs != nil:
		err = checkUIDs(req.UIDs, want)
	case raw.Selector != nil:
		err = checkSelector(req.Selector)
	case raw.Manifest != nil:
		if strings.TrimSpace(req.Manifest.Text) == "" {
			err = &Error{Message: `body: "manifest.text" is empty: give the documents to delete`}
		} else {
			err = checkNamespace("manifest.namespace", req.Manifest.Namespace)
		}
	case raw.HelmRelease != nil:
		err = checkNamed("helmRelease", req.HelmRelease, 53)
	default:
		err = checkNamed("argoCDApplication", req.ArgoCDApplication, 253)
	}
	if err != nil {
		return req, err
	}
	if !slices.Contains(Policies, req.PropagationPolicy) {
		return req, &Error{Message: fmt.Sprintf("propagationPolicy %q is not one of the allowed values", req.PropagationPolicy), Allowed: Policies}
	}
	return req, nil
}

func checkUIDs(uids []string, want string) *Error {
	switch {
	case len(uids) == 0:
		return &Error{Message: `body: "uids" names no object` + want}
	case len(uids) > MaxSetObjects:
		return &Error{Message: fmt.Sprintf("body: %d uids, more than the %d one request may name", len(uids), MaxSetObjects)}
	}
	seen := make(map[string]bool, len(uids))
	for _, u := range uids {
		if u == "" || len(u) > 128 {
			return &Error{Message: fmt.Sprintf("body: uid %q is not a uid", clip(u, 64))}
		}
		if seen[u] {
			return &Error{Message: fmt.Sprintf("body: uid %q given twice", clip(u, 64))}
		}
		seen[u] = true
	}
	return nil
}

// maxSetTypes bounds the types of a selector.
const maxSetTypes = 50

func checkSelector(s *SetSelector) *Error {
	switch {
	case len(s.Types) == 0:
		return &Error{Message: `body: "selector.types" names no type: name them, as kubectl delete does (["deployments", "services"])`}
	case len(s.Types) > maxSetTypes:
		return &Error{Message: fmt.Sprintf("body: %d types, at most %d", len(s.Types), maxSetTypes)}
	case strings.TrimSpace(s.LabelSelector) == "":
		return &Error{Message: `body: "selector.labelSelector" is empty: a delete of everything of a type is not a selection`}
	case len(s.LabelSelector) > 4096:
		return &Error{Message: "body: selector.labelSelector is longer than 4096 bytes"}
	case s.AllNamespaces && s.Namespace != "":
		return &Error{Message: `body: "selector.namespace" and "selector.allNamespaces" both say where: give one`}
	}
	for _, t := range s.Types {
		if t == "" || len(t) > 253 || strings.ContainsAny(t, "/ ") {
			return &Error{Message: fmt.Sprintf("body: type %q is not a type (deployments, deploy, Deployment.apps)", clip(t, 64))}
		}
	}
	if _, err := labels.Parse(s.LabelSelector); err != nil {
		return &Error{Message: fmt.Sprintf("body: selector.labelSelector %q: %v", clip(s.LabelSelector, 64), err)}
	}
	return checkNamespace("selector.namespace", s.Namespace)
}

func checkNamespace(field, ns string) *Error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return &Error{Message: fmt.Sprintf("body: %s %q is not a namespace: %s", field, clip(ns, 64), errs[0])}
	}
	return nil
}

func checkNamed(field string, n *NamedSet, maxName int) *Error {
	if n.Name == "" || len(n.Name) > maxName || len(validation.IsDNS1123Subdomain(n.Name)) > 0 {
		return &Error{Message: fmt.Sprintf("body: %s.name %q is not a name (at most %d characters, lower case, digits, '-' and '.')", field, clip(n.Name, 64), maxName)}
	}
	return checkNamespace(field+".namespace", n.Namespace)
}

// SlowMotionRequest is the body of POST /api/v1/slow-motion.
type SlowMotionRequest struct {
	Enabled *bool `json:"enabled"`
}

// ParseSlowMotionRequest decodes a slow-motion switch: {"enabled": true|false}.
func ParseSlowMotionRequest(body io.Reader) (bool, *Error) {
	var req SlowMotionRequest
	if err := decodeOne(body, &req, "enabled"); err != nil {
		return false, &Error{Message: err.Error() + `; want {"enabled": true|false}`}
	}
	if req.Enabled == nil {
		return false, &Error{Message: `body: "enabled" is required; want {"enabled": true|false}`}
	}
	return *req.Enabled, nil
}

// ParseEmptyRequest checks the body of a write that takes no fields (the scenario
// player's play, release and cleanup): empty, or the empty object {}.
func ParseEmptyRequest(body io.Reader) *Error {
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Message: fmt.Sprintf("body larger than %d bytes; want none, or {}", tooBig.Limit)}
		}
		return &Error{Message: fmt.Sprintf("body: %v", err)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var v struct{}
	if err := decodeOne(bytes.NewReader(data), &v); err != nil {
		return &Error{Message: err.Error() + "; this request takes no fields: send none, or {}"}
	}
	return nil
}

// decodeOne decodes exactly one JSON object into v. Its keys must be among fields,
// spelled exactly (encoding/json would take "DRYRUN" for "dryRun") and each given once
// (it would keep the last of two): what the server acts on is what the client wrote.
func decodeOne(body io.Reader, v any, fields ...string) error {
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("body larger than %d bytes", tooBig.Limit)
		}
		return fmt.Errorf("body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return errors.New("body: more than one JSON value")
	}
	return exactKeys(data, fields)
}

// exactKeys checks the top-level keys of the JSON object in data (already known to be
// valid JSON): each one of fields, once.
func exactKeys(data []byte, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("body: want a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("body: %w", err)
		}
		key, _ := t.(string)
		if !slices.Contains(fields, key) {
			return fmt.Errorf("body: unknown field %q", clip(key, 64))
		}
		if seen[key] {
			return fmt.Errorf("body: field %q given twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	}
	return nil
}
