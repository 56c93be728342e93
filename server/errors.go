package server

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiError is the one shape of every error the API answers with.
type apiError struct {
	// Code is a stable machine-readable word: bad_request, not_found, unauthorized,
	// forbidden, read_only, csrf, conflict, unavailable, apiserver.
	Code    string `json:"error"`
	Message string `json:"message"`
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

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, apiError{Code: code, Message: message})
}

// writeAPIServerError passes an apiserver error through with its status and message.
func writeAPIServerError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		code := int(st.Code)
		if code < 400 || code > 599 {
			code = http.StatusBadGateway
		}
		writeJSON(w, code, apiError{Code: "apiserver", Message: st.Message, Reason: string(st.Reason)})
		return
	}
	writeJSON(w, http.StatusBadGateway, apiError{Code: "apiserver", Message: err.Error()})
}
