package security

// Whether a request comes from another site: by its Origin (a browser sends one with every
// write and websocket), else its Sec-Fetch-Site, against the request's own origin and the
// origins allowed besides.

import (
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// CrossSite reports why a request does not come from gcscope's own pages (or an allowed
// origin), or "" when it does or when no browser header says otherwise.
func CrossSite(r *http.Request, allowedOrigins []string) string {
	// A browser sends each once; a second one is not a browser's, and whichever one were
	// read, the other could say another site.
	if len(r.Header.Values("Origin")) > 1 || len(r.Header.Values("Sec-Fetch-Site")) > 1 {
		return "more than one Origin or Sec-Fetch-Site header"
	}
	if o := r.Header.Get("Origin"); o != "" {
		if !OriginAllowed(o, r, allowedOrigins) {
			return "cross-origin request from " + quoteClip(o)
		}
		return ""
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request (Sec-Fetch-Site: " + quoteClip(site) + ")"
	}
	return ""
}

// OwnOrigin is the origin a page gcscope served itself has for this request.
func OwnOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// originAllowed: origin (scheme and host) is the request's own, or matches an allowed
// pattern. A pattern with a scheme ("https://*.example.com") matches scheme and host; one
// without matches the host over https, or over http when gcscope itself serves http.
// The Host itself has passed the host allow-list, so "the request's own" is a name
// gcscope answers to.
func OriginAllowed(origin string, r *http.Request, patterns []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	got := u.Scheme + "://" + withoutDefaultPort(u.Scheme, strings.ToLower(u.Host))
	own, _ := url.Parse(OwnOrigin(r))
	if got == own.Scheme+"://"+withoutDefaultPort(own.Scheme, strings.ToLower(own.Host)) {
		return true
	}
	host := withoutDefaultPort(u.Scheme, strings.ToLower(u.Host))
	for _, p := range patterns {
		p = strings.ToLower(p)
		if scheme, rest, ok := strings.Cut(p, "://"); ok {
			if scheme == u.Scheme {
				if m, _ := path.Match(withoutDefaultPort(scheme, rest), host); m {
					return true
				}
			}
			continue
		}
		if u.Scheme == "https" || r.TLS == nil {
			if m, _ := path.Match(p, host); m {
				return true
			}
		}
	}
	return false
}

func withoutDefaultPort(scheme, host string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// quoteClip quotes s for a message, clipped so that a huge header cannot bloat one.
func quoteClip(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return strconv.Quote(s)
}
