// Package httpapi is the vocabulary of gcscope's JSON API: the one shape of its errors,
// their codes and the constructors handlers answer with, and the strict reading of query
// strings. docs/api.md documents each code (errors_test.go checks both ways).
package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Code is the stable machine-readable word of an Error.
type Code string

// The codes the API answers with; Codes lists them all.
const (
	CodeBadRequest       Code = "bad_request"        // the request is malformed or a value is not allowed
	CodeNotFound         Code = "not_found"          // no such route, object or recorded moment
	CodeUnauthorized     Code = "unauthorized"       // no credentials, or credentials not accepted
	CodeForbidden        Code = "forbidden"          // the user may not (or the request came from another site)
	CodeReadOnly         Code = "read_only"          // a write to a server started with --read-only
	CodeCSRF             Code = "csrf"               // a write or a stream without gcscope's own origin or token
	CodeHostNotAllowed   Code = "host_not_allowed"   // a Host gcscope does not answer to (DNS rebinding)
	CodeConflict         Code = "conflict"           // the scenario player is busy
	CodeNoActionDelay    Code = "no_action_delay"    // slow motion without --gc-action-delay
	CodeTooManyRequests  Code = "too_many_requests"  // too many failed logins, or exports at once
	CodeMethodNotAllowed Code = "method_not_allowed" // the route has no such method
	CodeUnavailable      Code = "unavailable"        // no engine, history or cluster, or permissions cannot be checked
	CodeAPIServer        Code = "apiserver"          // the apiserver refused: its status and message passed through
	CodeClusterNotReady  Code = "cluster_not_ready"  // the cluster's engine is starting, or failed to (see GET /api/v1/clusters)
)

// Codes is every code the server emits.
var Codes = []Code{
	CodeBadRequest, CodeNotFound, CodeUnauthorized, CodeForbidden, CodeReadOnly, CodeCSRF,
	CodeHostNotAllowed, CodeConflict, CodeNoActionDelay, CodeTooManyRequests,
	CodeMethodNotAllowed, CodeUnavailable, CodeAPIServer, CodeClusterNotReady,
}

// Error is the one shape of every error the API answers with. Handlers make one with the
// constructors below, never a literal (errors_test.go checks the server's source).
type Error struct {
	// Code is one of Codes.
	Code    Code   `json:"error"`
	Message string `json:"message"`
	// Allowed lists the accepted values when a value was not one of them.
	Allowed []string `json:"allowed,omitempty"`
	// Reason is the apiserver's reason (Forbidden, Conflict, ...), when it answered.
	Reason string `json:"reason,omitempty"`
}

// The constructors, one per code.

// ErrBadRequest: the request is malformed; allowed, when given, lists what is accepted.
func ErrBadRequest(msg string, allowed ...string) *Error {
	return &Error{Code: CodeBadRequest, Message: msg, Allowed: allowed}
}
func ErrNotFound(msg string) *Error         { return &Error{Code: CodeNotFound, Message: msg} }
func ErrUnauthorized(msg string) *Error     { return &Error{Code: CodeUnauthorized, Message: msg} }
func ErrForbidden(msg string) *Error        { return &Error{Code: CodeForbidden, Message: msg} }
func ErrReadOnly(msg string) *Error         { return &Error{Code: CodeReadOnly, Message: msg} }
func ErrCSRF(msg string) *Error             { return &Error{Code: CodeCSRF, Message: msg} }
func ErrHostNotAllowed(msg string) *Error   { return &Error{Code: CodeHostNotAllowed, Message: msg} }
func ErrConflict(msg string) *Error         { return &Error{Code: CodeConflict, Message: msg} }
func ErrNoActionDelay(msg string) *Error    { return &Error{Code: CodeNoActionDelay, Message: msg} }
func ErrTooManyRequests(msg string) *Error  { return &Error{Code: CodeTooManyRequests, Message: msg} }
func ErrMethodNotAllowed(msg string) *Error { return &Error{Code: CodeMethodNotAllowed, Message: msg} }
func ErrUnavailable(msg string) *Error      { return &Error{Code: CodeUnavailable, Message: msg} }
func ErrClusterNotReady(msg string) *Error  { return &Error{Code: CodeClusterNotReady, Message: msg} }

// ErrAPIServer passes on the apiserver's refusal: its reason and message.
func ErrAPIServer(reason, msg string) *Error {
	return &Error{Code: CodeAPIServer, Message: msg, Reason: reason}
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json") // nosniff and no-store: the server's securityHeaders
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// QuoteClip quotes s for a message, clipped so that a huge header cannot bloat the log.
func QuoteClip(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return strconv.Quote(s)
}
