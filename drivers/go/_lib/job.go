package labdriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// KV is one name/value pair of a header or form object, in the job's order.
type KV struct{ Name, Value string }

// KVs is a JSON object of strings that keeps its order.
type KVs []KV

// UnmarshalJSON reads {"name": "value", ...}; a value that is not a string is an error.
func (kvs *KVs) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("must be an object of strings")
	}
	*kvs = KVs{}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		var value string
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("%v: value must be a string", key)
		}
		*kvs = append(*kvs, KV{key.(string), value})
	}
	return nil
}

// Request is one entry of job.requests, done Repeat times; R is its index.
type Request struct {
	R               int    `json:"-"`
	Method          string `json:"method"`
	URL             string `json:"url"`
	Repeat          int    `json:"repeat"`
	Headers         KVs    `json:"headers"`
	Form            *KVs   `json:"form"` // nil: no form
	FormEncoding    string `json:"form_encoding"`
	BodyFile        string `json:"body_file"`
	ContentType     string `json:"content_type"`
	FollowRedirects *bool  `json:"follow_redirects"` // nil: absent, the URL does not redirect
	Sink            string `json:"sink"`
	SinkPath        string `json:"sink_path"`
}

// UnmarshalJSON reads one entry; an absent repeat is 1.
func (r *Request) UnmarshalJSON(data []byte) error {
	type plain Request
	p := plain{Repeat: 1}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = Request(p)
	return nil
}

// Multipart says the form goes as multipart/form-data.
func (r *Request) Multipart() bool { return r.Form != nil && r.FormEncoding == "multipart" }

// ToFile says the body is streamed to SinkPath.
func (r *Request) ToFile() bool { return r.Sink == "file" }

// Follow says the entry asks to follow redirects (follow_redirects true).
func (r *Request) Follow() bool { return r.FollowRedirects != nil && *r.FollowRedirects }

// NoFollow says the entry asks for the 3xx itself (follow_redirects false). Neither Follow nor
// NoFollow: the key is absent, the URL does not redirect, and the library's redirect setting
// stays as it ships.
func (r *Request) NoFollow() bool { return r.FollowRedirects != nil && !*r.FollowRedirects }

// HasBody says the request carries a body (a form or a file).
func (r *Request) HasBody() bool { return r.Form != nil || r.BodyFile != "" }

// UploadType is the Content-Type of a raw BodyFile body.
func (r *Request) UploadType() string {
	if r.ContentType != "" {
		return r.ContentType
	}
	return "application/octet-stream"
}

// OpenBody opens BodyFile for streaming and returns it with its size.
func (r *Request) OpenBody() (*os.File, int64, error) {
	f, err := os.Open(r.BodyFile)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// Options are job.options; nil / zero means null, i.e. the client's own default.
type Options struct {
	TCPNoDelay         *bool
	MaxHostConnections int
	Expect100          *bool
	Share              []string
	MultiAPI           string
	// "library": the job leaves Accept-Encoding and decoding to the library as it ships (the
	// driver sets no Accept-Encoding and decodes as the library does by itself); "": as the job says (accept_gzip)
	AcceptEncoding string
	set            map[string]any // every non-null option as sent, for refusals
}

// Job is a job (docs/driver-protocol.md §3) as typed fields.
type Job struct {
	Scenario    string
	Verify      bool
	HTTP        string // "1.1", "2", "h2c" or "3"
	TLSCA       string // "" when the job has none
	Concurrency int
	KeepAlive   bool
	Cookies     bool
	AcceptGzip  bool
	Timeout     time.Duration // 0: the job names no time limit, and the library keeps its own default
	Options     Options
	Requests    []*Request
	Total       int // every request entry's repeat, added up
}

// Work is every request to do, in order, repeats expanded.
func (j *Job) Work() []*Request {
	work := make([]*Request, 0, j.Total)
	for _, req := range j.Requests {
		for range req.Repeat {
			work = append(work, req)
		}
	}
	return work
}

type wireJob struct {
	Scenario    string                     `json:"scenario"`
	Verify      bool                       `json:"verify"`
	HTTP        string                     `json:"http"`
	TLSCA       string                     `json:"tls_ca"`
	Concurrency *int                       `json:"concurrency"`
	KeepAlive   *bool                      `json:"keep_alive"`
	Cookies     bool                       `json:"cookies"`
	AcceptGzip  bool                       `json:"accept_gzip"`
	TimeoutS    *float64                   `json:"timeout_s"`
	Options     map[string]json.RawMessage `json:"options"`
	Requests    []*Request                 `json:"requests"`
}

// parseJob reads the job object; an error is a bad job, an *UnsupportedError a job this
// protocol version's helper does not know how to do (an unknown http version, sink...).
func parseJob(data json.RawMessage) (*Job, error) {
	var w wireJob
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if w.Requests == nil {
		return nil, errors.New("job must be an object with a requests list")
	}
	job := &Job{Scenario: w.Scenario, Verify: w.Verify, HTTP: w.HTTP, TLSCA: w.TLSCA, Concurrency: 1,
		KeepAlive: true, Cookies: w.Cookies, AcceptGzip: w.AcceptGzip, Requests: w.Requests}
	if err := oneOf(&job.HTTP, "http", "1.1", "2", "h2c", "3"); err != nil {
		return nil, err
	}
	if w.Concurrency != nil {
		job.Concurrency = *w.Concurrency
	}
	if job.Concurrency < 1 {
		return nil, errors.New("concurrency must be at least 1")
	}
	if w.KeepAlive != nil {
		job.KeepAlive = *w.KeepAlive
	}
	if w.TimeoutS != nil {
		if *w.TimeoutS <= 0 || math.IsInf(*w.TimeoutS, 0) {
			return nil, errors.New("timeout_s must be positive")
		}
		job.Timeout = time.Duration(*w.TimeoutS * float64(time.Second))
	}
	for r, req := range job.Requests {
		if err := checkRequest(r, req); err != nil {
			return nil, err
		}
		job.Total += req.Repeat
	}
	opts, err := parseOptions(w.Options)
	if err != nil {
		return nil, err
	}
	job.Options = opts
	return job, nil
}

// checkRequest fills defaults of one entry and checks it like the C helper does.
func checkRequest(r int, req *Request) error {
	if req == nil || req.Method == "" || req.URL == "" {
		return fmt.Errorf("request %d: method and url are needed", r)
	}
	req.R = r
	req.Method = strings.ToUpper(req.Method)
	if req.Repeat < 0 {
		return fmt.Errorf("request %d: negative repeat", r)
	}
	if err := oneOf(&req.FormEncoding, "form_encoding", "urlencoded", "multipart"); err != nil {
		return err
	}
	if err := oneOf(&req.Sink, "sink", "memory", "file"); err != nil {
		return err
	}
	if req.ToFile() && req.SinkPath == "" {
		return fmt.Errorf("request %d: sink file without sink_path", r)
	}
	if req.Form != nil && req.BodyFile != "" {
		return fmt.Errorf("request %d: both form and body_file", r)
	}
	return nil
}

// oneOf checks a field that takes one of `values`; "" (absent) becomes the first, the default.
func oneOf(field *string, name string, values ...string) error {
	if *field == "" {
		*field = values[0]
	} else if !slices.Contains(values, *field) {
		return Unsupported("%s %q is not known", name, *field)
	}
	return nil
}

// optionKinds: every option known in protocol version 1 and its JSON kind.
var optionKinds = map[string]string{
	"tcp_nodelay": "bool", "max_host_connections": "positive integer", "share": "list",
	"expect_100": "bool", "multi_api": "string", "accept_encoding": "string",
}

func parseOptions(raw map[string]json.RawMessage) (Options, error) {
	opts := Options{set: map[string]any{}}
	for name, data := range raw {
		var value any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&value); err != nil {
			return opts, fmt.Errorf("option %s: %v", name, err)
		}
		if value == nil {
			continue // null: the client's own default
		}
		opts.set[name] = value
		kind, known := optionKinds[name]
		if !known {
			continue // refused later, as any option the driver does not honour
		}
		bad := Unsupported("option %s must be a %s, got %s", name, kind, data)
		switch name {
		case "tcp_nodelay", "expect_100":
			b, ok := value.(bool)
			if !ok {
				return opts, bad
			}
			if name == "tcp_nodelay" {
				opts.TCPNoDelay = &b
			} else {
				opts.Expect100 = &b
			}
		case "max_host_connections":
			n, ok := value.(json.Number)
			i, err := n.Int64()
			if !ok || err != nil || i < 1 || i > math.MaxInt32 {
				return opts, bad
			}
			opts.MaxHostConnections = int(i)
			opts.set[name] = int(i)
		case "share":
			items, ok := value.([]any)
			if !ok {
				return opts, bad
			}
			opts.Share = []string{}
			for _, item := range items {
				s, _ := item.(string)
				if s != "dns" && s != "tls" && s != "connections" {
					return opts, Unsupported("option share: unknown item %v", item)
				}
				opts.Share = append(opts.Share, s)
			}
		case "multi_api":
			s, _ := value.(string)
			if s != "multi" && s != "multi_socket" {
				return opts, Unsupported(`option multi_api must be "multi" or "multi_socket", got %s`, data)
			}
			opts.MultiAPI = s
		case "accept_encoding":
			s, _ := value.(string)
			if s != "library" {
				return opts, Unsupported(`option accept_encoding must be "library", got %s`, data)
			}
			opts.AcceptEncoding = s
		}
	}
	return opts, nil
}

// LibraryEncoding: the job leaves Accept-Encoding and decoding to the library as it ships (the
// option accept_encoding = "library"), rather than naming gzip or no coding (accept_gzip).
func (j *Job) LibraryEncoding() bool { return j.Options.AcceptEncoding == "library" }

// refusal says why a job cannot be done exactly (an option not honoured), or "". Capabilities
// are the lab's to check (clientlab/drivers/job.py): it sends no job that needs one the manifest does
// not claim.
func refusal(job *Job, honoured map[string][]any) string {
	names := make([]string, 0, len(job.Options.set))
	for name := range job.Options.set {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := job.Options.set[name]
		allowed, ok := honoured[name]
		if !ok {
			return fmt.Sprintf("option %s is not supported", name)
		}
		if allowed != nil && !slices.ContainsFunc(allowed, func(a any) bool { return fmt.Sprint(a) == fmt.Sprint(value) }) {
			shown, _ := json.Marshal(value)
			return fmt.Sprintf("option %s=%s cannot be honoured (only %v)", name, shown, allowed)
		}
	}
	return ""
}
