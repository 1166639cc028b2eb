package labdriver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The golden transcript (drivers/contract/transcript.json) through the message loop, with the
// transcript's contract client behind Driver.Open and Client.Do.

type transcriptCase struct {
	Name   string            `json:"name"`
	About  string            `json:"about"`
	Lab    []json.RawMessage `json:"lab"`
	Driver []any             `json:"driver"`
}

var statusInURL = regexp.MustCompile(`/status/(\d{3})`)

// contractClient answers as the transcript's `client` says.
type contractClient struct{ job *Job }

func (c *contractClient) Do(req *Request) (Response, error) {
	if strings.Contains(req.URL, "/fail") {
		return Response{}, errors.New("connection refused")
	}
	status := 200
	if m := statusInURL.FindStringSubmatch(req.URL); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	return Memory(c.job, status, "1.1", []byte(req.URL)), nil
}

func (c *contractClient) Close() {}

var contractDriver = Driver{
	Name:     "contract",
	Options:  map[string][]any{"tcp_nodelay": nil, "expect_100": {false}},
	Versions: func() map[string]string { return map[string]string{"contract": "1"} },
	Open: func(job *Job) (Client, error) {
		switch job.Scenario {
		case "refused-by-client":
			return nil, Unsupported("the contract client refuses this job")
		case "open-fails":
			return nil, errors.New("the contract client cannot be built")
		}
		return &contractClient{job: job}, nil
	},
}

// matches is the transcript's comparison: equal JSON, where a <...> string in want is a pattern.
func matches(want, got any) bool {
	if w, ok := want.(string); ok && strings.HasPrefix(w, "<") && strings.HasSuffix(w, ">") {
		g, isString := got.(string)
		switch {
		case w == "<any string>":
			return isString
		case w == "<any number>":
			n, isNumber := got.(float64)
			return isNumber && n >= 0
		case strings.HasPrefix(w, "<text with: "):
			return isString && strings.Contains(g, strings.TrimSuffix(strings.TrimPrefix(w, "<text with: "), ">"))
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		rest, hasRest := w["<more>"]
		for k, v := range w {
			if gv, present := g[k]; k != "<more>" && (!present || !matches(v, gv)) {
				return false
			}
		}
		for k, gv := range g {
			if _, named := w[k]; !named && (!hasRest || !matches(rest, gv)) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matches(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

func TestTranscript(t *testing.T) {
	data, err := os.ReadFile("../../contract/transcript.json")
	if err != nil {
		t.Fatal(err)
	}
	var transcript struct{ Cases []transcriptCase }
	if err := json.Unmarshal(data, &transcript); err != nil {
		t.Fatalf("transcript.json: %v", err)
	}
	for _, c := range transcript.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var in strings.Builder
			for _, raw := range c.Lab {
				var line string
				if json.Unmarshal(raw, &line) != nil { // an object: sent as compact JSON
					var compact bytes.Buffer
					json.Compact(&compact, raw)
					line = compact.String()
				}
				in.WriteString(line + "\n")
			}
			var out bytes.Buffer
			l := &loop{driver: contractDriver, out: bufio.NewWriter(&out)}
			l.run(bufio.NewReader(strings.NewReader(in.String())))
			got := []any{}
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line == "" {
					continue
				}
				var message any
				if err := json.Unmarshal([]byte(line), &message); err != nil {
					t.Fatalf("not JSON: %s", line)
				}
				got = append(got, message)
			}
			if !matches(c.Driver, got) {
				shown, _ := json.Marshal(c.Driver)
				t.Errorf("%s\nwant %s\ngot  %s", c.About, shown, out.String())
			}
		})
	}
}

func TestTranscriptComparisonTakesPatternsAndNothingElse(t *testing.T) {
	var want, got any
	json.Unmarshal([]byte(`{"a":"<text with: bad>","<more>":"<any string>"}`), &want)
	json.Unmarshal([]byte(`{"a":"a bad job","b":"x"}`), &got)
	if !matches(want, got) {
		t.Errorf("a pattern did not match")
	}
	json.Unmarshal([]byte(`{"a":1}`), &want)
	json.Unmarshal([]byte(`{"a":1,"b":"x"}`), &got)
	if matches(want, got) || matches([]any{1.0, 2.0}, []any{2.0, 1.0}) || matches("<any number>", true) {
		t.Errorf("a difference matched")
	}
}

// An option the helper does not check is refused unless a driver honours it (a new option is).
func TestTheOptionsTheHelperChecksAreTheSchemas(t *testing.T) {
	data, err := os.ReadFile("../../contract/schema.toml")
	if err != nil {
		t.Fatal(err)
	}
	// the [options] table's lines, `name = { type = "…", … }` (standard library only: no TOML reader)
	section := strings.SplitN(strings.SplitN(string(data), "\n[options]\n", 2)[1], "\n[", 2)[0]
	types := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+) = \{ type = "([^"]+)"`).FindAllStringSubmatch(section, -1) {
		types[m[1]] = m[2]
	}
	schemaType := map[string]string{"bool": "bool", "positive integer": "integer", "list": "list of string", "string": "string"}
	for name, kind := range optionKinds {
		if types[name] != schemaType[kind] {
			t.Errorf("option %s: the helper checks a %s, schema.toml says %q", name, kind, types[name])
		}
	}
	if len(types) == 0 {
		t.Errorf("no options read from schema.toml")
	}
}
