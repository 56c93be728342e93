package server

import (
	"encoding/json"
	"net/http"
)

// errorCode is the stable machine-readable word of an apiError.
type errorCode string

// The codes the API answers with. errorCodes lists them all; docs/api.md documents each
// (errors_test.go checks both ways, and that the source emits no other).
const (
	codeBadRequest       errorCode = "bad_request"        // the request is malformed or a value is not allowed
	codeNotFound         errorCode = "not_found"          // no such route, object or recorded moment
	codeUnauthorized     errorCode = "unauthorized"       // no credentials, or credentials not accepted
	codeForbidden        errorCode = "forbidden"          // the user may not (or the request came from another site)
	codeReadOnly         errorCode = "read_only"          // a write to a server started with --read-only
	codeCSRF             errorCode = "csrf"               // a write or a stream without gcscope's own origin or token
	codeHostNotAllowed   errorCode = "host_not_allowed"   // a Host gcscope does not answer to (DNS rebinding)
	codeConflict         errorCode = "conflict"           // the scenario player is busy
	codeNoActionDelay    errorCode = "no_action_delay"    // slow motion without --gc-action-delay
	codeTooManyRequests  errorCode = "too_many_requests"  // too many failed logins, or exports at once
	codeMethodNotAllowed errorCode = "method_not_allowed" // the route has no such method
	codeUnavailable      errorCode = "unavailable"        // no engine, history or cluster, or permissions cannot be checked
	codeAPIServer        errorCode = "apiserver"          // the apiserver refused: its status and message passed through
	codeClusterNotReady  errorCode = "cluster_not_ready"  // the cluster's engine is starting, or failed to (see GET /api/v1/clusters)
)

// errorCodes is every code the server emits.
var errorCodes = []errorCode{
	codeBadRequest, codeNotFound, codeUnauthorized, codeForbidden, codeReadOnly, codeCSRF,
	codeHostNotAllowed, codeConflict, codeNoActionDelay, codeTooManyRequests,
	codeMethodNotAllowed, codeUnavailable, codeAPIServer, codeClusterNotReady,
}

// apiError is the one shape of every error the API answers with.
type apiError struct {
	// Code is one of errorCodes.
	Code    errorCode `json:"error"`
	Message string    `json:"message"`
	// Allowed lists the accepted values when a value was not one of them.
	Allowed []string `json:"allowed,omitempty"`
	// Reason is the apiserver's reason (Forbidden, Conflict, ...), when it answered.
	Reason string `json:"reason,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json") // nosniff and no-store: securityHeaders
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code errorCode, message string) {
	writeJSON(w, status, apiError{Code: code, Message: message})
}
