package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// strictQuery parses a request's query string: one that does not parse, an unknown
// parameter, or a single-valued one given twice is refused (400), so a typo or a
// smuggled second value never silently changes what is answered.
func strictQuery(r *http.Request, single, multi []string) (url.Values, *apiError) {
	allowed := slices.Concat(single, multi)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &apiError{Code: codeBadRequest, Message: "the query string does not parse: " + err.Error(), Allowed: allowed}
	}
	for name, vs := range q {
		switch {
		case slices.Contains(single, name):
			if len(vs) > 1 {
				return nil, &apiError{Code: codeBadRequest, Message: fmt.Sprintf("parameter %q given %d times; it takes one value", name, len(vs)), Allowed: allowed}
			}
		case slices.Contains(multi, name):
		default:
			return nil, &apiError{Code: codeBadRequest, Message: fmt.Sprintf("unknown parameter %q", clipName(name)), Allowed: allowed}
		}
	}
	return q, nil
}

// noQuery refuses any query string on routes that take none.
func noQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, e := strictQuery(r, nil, nil); e != nil {
			writeJSON(w, http.StatusBadRequest, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
