package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestParseClientFrame(t *testing.T) {
	good := map[string]ClientRequest{
		`{"type":"ping"}`:                      {Ping: true},
		`{"type":"subscribe"}`:                 {Sub: Subscription{Queues: true}},
		` {"type":"subscribe","queues":false}`: {Sub: Subscription{}},
		`{"type":"subscribe","namespaces":["a",""],"kinds":["Pod"],"uids":["u-1"],"queues":true}`: {Sub: Subscription{Namespaces: []string{"a", ""}, Kinds: []string{"Pod"}, UIDs: []types.UID{"u-1"}, Queues: true}},
	}
	for in, want := range good {
		got, err := ParseClientFrame([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got.Ping != want.Ping || !slices.Equal(got.Sub.Namespaces, want.Sub.Namespaces) || !slices.Equal(got.Sub.Kinds, want.Sub.Kinds) ||
			!slices.Equal(got.Sub.UIDs, want.Sub.UIDs) || got.Sub.Queues != want.Sub.Queues {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
	}
	bad := map[string]string{
		``:                                    "invalid JSON",
		`null`:                                `missing "type"`,
		`[]`:                                  "invalid JSON",
		`{"type":"ping"} {}`:                  "data after the object",
		`{"type":"ping","queues":true}`:       "ping takes no fields",
		`{"type":"subscribe","kinds":[""]}`:   `kind "" is not a valid kind`,
		`{"type":"subscribe","uids":["a b"]}`: `uid "a b" is not a valid uid`,
		`{"type":"Subscribe"}`:                `unknown type "Subscribe"`,
		"{\"type\":\"\xff\"}":                 "not valid UTF-8",
	}
	for in, want := range bad {
		_, err := ParseClientFrame([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), "bad frame: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one with %q", in, err, want)
		}
	}
}

func FuzzClientFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"ping"}`, `{"type":"subscribe","namespaces":["a"],"kinds":["Pod"],"uids":["u"],"queues":false}`,
		`{"type":"x"}`, `{"type":`, `null`, `{"type":"subscribe","uids":[""]}`, "{\"type\":\"\xff\"}",
		`{"type":"subscribe","namespaces":["` + strings.Repeat("a", 300) + `"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseClientFrame(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bad frame: ") {
				t.Fatalf("error without the bad frame prefix: %v", err)
			}
			if r := CloseReason(err.Error()); len(r) > 123 {
				t.Fatalf("close reason of %d bytes", len(r))
			}
			return
		}
		if req.Ping {
			return
		}
		if err := req.Sub.Validate(); err != nil {
			t.Fatalf("accepted an invalid subscription %+v: %v", req.Sub, err)
		}
	})
}

// FuzzDeleteRequest: any body either parses to one of the three policies or is refused
// with a message; it never panics.
func FuzzDeleteRequest(f *testing.F) {
	for _, seed := range []string{
		`{"propagationPolicy":"Background","dryRun":false}`, `{"propagationPolicy":"Orphan","dryRun":true}`,
		`{"propagationPolicy":"Background"}`, `{"propagationPolicy":"Background","dryRun":null}`,
		`{"propagationPolicy":"Background","DRYRUN":false}`, `{"propagationPolicy":"Background","dryRun":true,"dryRun":false}`,
		`{"propagationPolicy":"Sideways"}`, `{}`, `[]`, `null`, `{"dryRun":"yes"}`, `{"propagationPolicy":"Foreground"}{}`,
		"\x00\xff", `{"propagationPolicy":"Background","extra":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseDeleteRequest(strings.NewReader(string(body)))
		if err != nil {
			if err.Message == "" {
				t.Fatalf("error without a message: %+v", err)
			}
			return
		}
		if !slices.Contains(Policies, req.PropagationPolicy) {
			t.Fatalf("accepted policy %q", req.PropagationPolicy)
		}
		// A real delete needs an explicit "dryRun": false.
		var raw map[string]json.RawMessage
		if !req.DryRun && (json.Unmarshal(body, &raw) != nil || string(raw["dryRun"]) != "false") {
			t.Fatalf("%q parsed as a real delete without an explicit dryRun false", body)
		}
	})
}

func TestParseSlowMotionRequest(t *testing.T) {
	for body, want := range map[string]bool{`{"enabled":true}`: true, `{"enabled":false}`: false} {
		got, err := ParseSlowMotionRequest(strings.NewReader(body))
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", body, got, err, want)
		}
	}
	for _, body := range []string{`{}`, `{"enabled":"yes"}`, `{"enabled":true,"x":1}`, `{"enabled":true}{}`, ``, `null`} {
		if _, err := ParseSlowMotionRequest(strings.NewReader(body)); err == nil || err.Message == "" {
			t.Errorf("%q accepted", body)
		}
	}
}

func TestParseEmptyRequest(t *testing.T) {
	for _, body := range []string{``, ` `, `{}`, ` { } `} {
		if err := ParseEmptyRequest(strings.NewReader(body)); err != nil {
			t.Errorf("%q refused: %v", body, err)
		}
	}
	for _, body := range []string{`{"run":"x"}`, `[]`, `null`, `{}{}`, `{`, `"x"`} {
		if err := ParseEmptyRequest(strings.NewReader(body)); err == nil || err.Message == "" {
			t.Errorf("%q accepted", body)
		}
	}
}

// TestParseDeleteRequestIsExplicit: only a body that says "dryRun": false in so many
// words is a real delete; a missing, null, misspelt or repeated dryRun is refused.
func TestParseDeleteRequestIsExplicit(t *testing.T) {
	good := map[string]DeleteRequest{
		`{"propagationPolicy":"Background","dryRun":false}`: {PropagationPolicy: "Background"},
		`{"dryRun":true,"propagationPolicy":"Orphan"}`:      {PropagationPolicy: "Orphan", DryRun: true},
	}
	for body, want := range good {
		got, err := ParseDeleteRequest(strings.NewReader(body))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", body, got, err, want)
		}
	}
	for body, wantMsg := range map[string]string{
		`{"propagationPolicy":"Background"}`:                              `"dryRun" is required`,
		`{"propagationPolicy":"Background","dryRun":null}`:                `"dryRun" is required`,
		`{"propagationPolicy":"Background","dryRun":"false"}`:             "cannot unmarshal string",
		`{"propagationPolicy":"Background","dryrun":false}`:               `unknown field "dryrun"`,
		`{"propagationPolicy":"Background","dryRun":true,"dryRun":false}`: `"dryRun" given twice`,
		`{"propagationPolicy":"Background","dryRun":false}{}`:             "more than one JSON value",
	} {
		_, err := ParseDeleteRequest(strings.NewReader(body))
		if err == nil || !strings.Contains(err.Message, wantMsg) {
			t.Errorf("%s: %v, want an error saying %s", body, err, wantMsg)
		}
	}
}
