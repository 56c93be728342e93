package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// compressJSON gzips JSON answers for clients that ask.
var compressJSON = middleware.Compress(5, "application/json")

// CompressJSON gzips the large reads for clients that ask (an explanation of 2,000
// blockers, refreshed every second, is 350 KB of JSON). Not for an answer that carries a
// secret (the session's CSRF token): compressed secrets invite BREACH.
func CompressJSON(next http.Handler) http.Handler { return compressJSON(next) }
