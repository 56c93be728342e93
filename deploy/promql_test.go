package deploy_test

// The metric names a PromQL expression or a scrape names, for the alert and dashboard checks.

import (
	"bufio"
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exposedNames are the sample names of a Prometheus text exposition (a histogram's
// _bucket, _sum and _count each).
func exposedNames(body []byte) map[string]bool {
	out := map[string]bool{}
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

var (
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	braces      = regexp.MustCompile(`\{[^{}]*\}`)
	brackets    = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	// promqlWords are PromQL's keywords, which look like metric names.
	promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true, "atan2": true}
)

// promqlMetricNames returns the metric names a PromQL expression reads: the identifiers
// that are not functions (followed by "("), keywords, label names (inside {} or a
// grouping clause), durations or Grafana variables ($name).
func promqlMetricNames(expr string) []string {
	e := stringLit.ReplaceAllString(expr, `""`)
	e = braces.ReplaceAllString(e, " ")
	e = brackets.ReplaceAllString(e, " ")
	e = grouping.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(e, -1) {
		word := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "$0123456789.") {
			continue // a variable, a number's exponent or a duration's unit
		}
		if next := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(next, "(") || promqlWords[strings.ToLower(word)] {
			continue
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}

// labelValuesSelector is the series selector of a Grafana label_values(selector, label)
// query.
func labelValuesSelector(q string) (string, bool) {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func TestPromQLMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket{job="g", name=~"a|b"}[$__rate_interval]))`: {"workqueue_queue_duration_seconds_bucket"},
		`max by (namespace, job) (a_total{x="y"}) > 0 or on (job) b == 0 unless absent(c{d="e"})`:                   {"a_total", "b", "c"},
		`sum(increase(d{outcome="diverged"}[1h])) / sum(e offset 5m) > 1e3`:                                         {"d", "e"},
		`histogram_quantile(0.99, sum by (le) (rate(f_bucket[5m])))`:                                                {"f_bucket"},
	} {
		if got := promqlMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("promqlMetricNames(%s) = %v, want %v", expr, got, want)
		}
	}
	if sel, ok := labelValuesSelector(`label_values(gcscope_gc_graph_nodes{namespace="$namespace"}, job)`); !ok || !slices.Equal(promqlMetricNames(sel), []string{"gcscope_gc_graph_nodes"}) {
		t.Errorf("label_values: %q %v", sel, ok)
	}
}
