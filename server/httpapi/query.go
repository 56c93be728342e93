package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// StrictQuery parses a request's query string: one that does not parse, an unknown
// parameter, or a single-valued one given twice is refused (400), so a typo or a
// smuggled second value never silently changes what is answered.
func StrictQuery(r *http.Request, single, multi []string) (url.Values, *Error) {
	allowed := slices.Concat(single, multi)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, ErrBadRequest("the query string does not parse: "+err.Error(), allowed...)
	}
	for name, vs := range q {
		switch {
		case slices.Contains(single, name):
			if len(vs) > 1 {
				return nil, ErrBadRequest(fmt.Sprintf("parameter %q given %d times; it takes one value", name, len(vs)), allowed...)
			}
		case slices.Contains(multi, name):
		default:
			return nil, ErrBadRequest(fmt.Sprintf("unknown parameter %q", ClipName(name)), allowed...)
		}
	}
	return q, nil
}

// NoQuery refuses any query string on routes that take none.
func NoQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, e := StrictQuery(r, nil, nil); e != nil {
			WriteJSON(w, http.StatusBadRequest, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ClipName clips a name for a message.
func ClipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
