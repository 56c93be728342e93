// Package wire parses what clients send gcscope's server: websocket frames and the delete
// request body. Strict, and small enough to fuzz on its own.
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

// DeleteSetRequest is the body of POST /api/v1/deletions: several objects, by uid,
// predicted together and, unless DryRun, deleted with one confirmation.
type DeleteSetRequest struct {
	UIDs              []string `json:"uids"`
	PropagationPolicy string   `json:"propagationPolicy"`
	DryRun            bool     `json:"dryRun"`
}

// ParseDeleteSetRequest decodes and validates a set delete: uids (1 to MaxSetObjects, each
// once, none empty), the policy, and dryRun, required as for one object.
func ParseDeleteSetRequest(body io.Reader) (DeleteSetRequest, *Error) {
	const want = `; want {"uids": ["…"], "propagationPolicy": "Background|Foreground|Orphan", "dryRun": true|false}`
	var raw struct {
		UIDs              []string `json:"uids"`
		PropagationPolicy string   `json:"propagationPolicy"`
		DryRun            *bool    `json:"dryRun"`
	}
	if err := decodeOne(body, &raw, "uids", "propagationPolicy", "dryRun"); err != nil {
		return DeleteSetRequest{}, &Error{Message: err.Error() + want}
	}
	req := DeleteSetRequest{UIDs: raw.UIDs, PropagationPolicy: raw.PropagationPolicy}
	if raw.DryRun == nil {
		return req, &Error{Message: `body: "dryRun" is required (true predicts, false deletes)` + want}
	}
	req.DryRun = *raw.DryRun
	switch {
	case len(req.UIDs) == 0:
		return req, &Error{Message: `body: "uids" names no object` + want}
	case len(req.UIDs) > MaxSetObjects:
		return req, &Error{Message: fmt.Sprintf("body: %d uids, more than the %d one request may name", len(req.UIDs), MaxSetObjects)}
	}
	seen := make(map[string]bool, len(req.UIDs))
	for _, u := range req.UIDs {
		if u == "" || len(u) > 128 {
			return req, &Error{Message: fmt.Sprintf("body: uid %q is not a uid", clip(u, 64))}
		}
		if seen[u] {
			return req, &Error{Message: fmt.Sprintf("body: uid %q given twice", clip(u, 64))}
		}
		seen[u] = true
	}
	if !slices.Contains(Policies, req.PropagationPolicy) {
		return req, &Error{Message: fmt.Sprintf("propagationPolicy %q is not one of the allowed values", req.PropagationPolicy), Allowed: Policies}
	}
	return req, nil
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
