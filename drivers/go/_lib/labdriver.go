// Package labdriver is the clientlab driver protocol (docs/driver-protocol.md) for Go drivers.
//
// A driver fills a Driver (the options it honours, its versions, Open) and calls Main; Open
// builds a Client for one job, Client.Do does one request, Client.Close closes it. Main does
// the rest: hello / job / ready / go / done / report, refusing jobs that set an option the
// driver does not honour (capabilities are declared in driver.toml and checked by the lab, which
// sends no job that needs one not claimed), and running the job's requests in order, or from
// `concurrency` goroutines when the job asks for more than one.
// It also answers the calibration loop (`bare`): the same requests on one client kept from round
// to round, counted rather than reported, timed by the driver's own clock.
//
// Main also moves the real stdout aside: protocol lines go to a private copy of it and fd 1
// points at stderr, so that nothing a library prints can corrupt the protocol.
//
// Standard library only: each driver's own dependencies stay in its own go.mod.
package labdriver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Protocol is the protocol version this package speaks.
const Protocol = 1

// Driver is what a driver supplies; Main does everything else.
type Driver struct {
	// Name for log lines on stderr, e.g. "go-net-http".
	Name string
	// Options maps each job option the driver honours to the values it honours exactly, or to
	// nil for every valid value; any other non-null option is answered unsupported.
	Options map[string][]any
	// Versions adds library versions to the hello (Go, crypto/tls and every module the binary
	// was built with are added by Main). May be nil.
	Versions func() map[string]string
	// Open builds the client for a job: configured, no connection opened, no request sent.
	// Return Unsupported(reason) when the job cannot be done exactly as asked.
	Open func(job *Job) (Client, error)
}

// Client is one job's client.
type Client interface {
	// Do does one request; an error means no response (it becomes a report error). With
	// concurrency > 1 it is called from several goroutines at once.
	Do(req *Request) (Response, error)
	// Close closes the client and every connection it holds (called after the report).
	Close()
}

// UnsupportedError is a job the driver cannot do exactly as asked.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return e.Reason }

// Unsupported returns an error that Main answers with an `unsupported` message.
func Unsupported(format string, args ...any) error {
	return &UnsupportedError{Reason: fmt.Sprintf(format, args...)}
}

// Logf writes one line to stderr (the lab keeps the last lines for failure messages).
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", logName, fmt.Sprintf(format, args...))
}

var logName = "driver"

// Main runs the driver on stdin/stdout until end of stdin, then exits.
func Main(d Driver) {
	logName = d.Name
	proto, err := moveStdoutAside()
	if err != nil {
		Logf("stdout: %v", err)
		os.Exit(3)
	}
	// bufio's default sizes: a line longer than a buffer is still read and written whole, and
	// larger buffers would sit on the heap through every timed phase, which a plain program of
	// the library has not: Go's collector starts its cycles that much sooner
	l := &loop{driver: d, out: bufio.NewWriter(proto)}
	l.run(bufio.NewReader(os.Stdin))
	os.Exit(0)
}

// moveStdoutAside returns a private (close-on-exec) copy of fd 1 for protocol lines and points
// fd 1 at stderr, so a library's output, or a child process's, never reaches the lab's pipe.
func moveStdoutAside() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		return nil, err
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "protocol"), nil
}

type loop struct {
	driver Driver
	out    *bufio.Writer
	job    *Job
	client Client
	bare   Client // the calibration loop's client, kept from one bare round to the next
}

func (l *loop) send(message any) {
	data, err := json.Marshal(message)
	if err != nil { // only our own types are sent: cannot happen
		Logf("cannot encode a message: %v", err)
		os.Exit(3)
	}
	l.out.Write(data)
	l.out.WriteByte('\n')
	if err := l.out.Flush(); err != nil {
		Logf("writing to the lab: %v", err)
		os.Exit(3)
	}
}

type simple struct {
	Type    string `json:"type"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// run answers messages until end of input, then closes the calibration loop's client.
func (l *loop) run(in *bufio.Reader) {
	defer l.endBare()
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			l.handle(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				Logf("reading stdin: %v", err)
			}
			return
		}
	}
}

func (l *loop) handle(line []byte) {
	var message struct {
		Type string          `json:"type"`
		Job  json.RawMessage `json:"job"`
	}
	if err := json.Unmarshal(line, &message); err != nil || message.Type == "" {
		l.send(simple{Type: "error", Message: fmt.Sprintf("not a protocol message: %.200q", line)})
		return
	}
	switch message.Type {
	case "hello":
		l.send(struct {
			Type     string            `json:"type"`
			Protocol int               `json:"protocol"`
			Versions map[string]string `json:"versions"`
		}{"hello", Protocol, l.versions()})
	case "job":
		l.onJob(message.Job)
	case "go":
		l.onGo()
	case "bare":
		l.onBare(message.Job)
	default:
		l.send(simple{Type: "error", Message: fmt.Sprintf("unknown message type %q", message.Type)})
	}
}

func (l *loop) onJob(data json.RawMessage) {
	if l.client != nil { // a job that never got its go: no connection survives it
		l.client.Close()
	}
	l.job, l.client = nil, nil
	l.endBare()
	job, client, err := l.prepare(data)
	if err != nil {
		l.refuse(err)
		return
	}
	l.job, l.client = job, client
	l.send(simple{Type: "ready"})
}

// refuse answers a job that cannot be done: unsupported, or an error.
func (l *loop) refuse(err error) {
	var unsupported *UnsupportedError
	if errors.As(err, &unsupported) {
		l.send(simple{Type: "unsupported", Reason: unsupported.Reason})
		return
	}
	Logf("%v", err)
	l.send(simple{Type: "error", Message: err.Error()})
}

// prepare parses a job, refuses what the driver cannot do exactly, and builds the client.
func (l *loop) prepare(data json.RawMessage) (*Job, Client, error) {
	job, err := parseJob(data)
	if err != nil {
		return nil, nil, fmt.Errorf("bad job: %w", err)
	}
	if reason := refusal(job, l.driver.Options); reason != "" {
		return nil, nil, &UnsupportedError{Reason: reason}
	}
	client, err := l.driver.Open(job)
	if err != nil {
		return nil, nil, fmt.Errorf("building the client failed: %w", err)
	}
	return job, client, nil
}

func (l *loop) onGo() {
	job, client := l.job, l.client
	l.job, l.client = nil, nil
	if job == nil {
		l.send(simple{Type: "error", Message: "go without a ready job"})
		return
	}
	rep := newReport(job)
	runAll(job, client, rep)
	l.send(simple{Type: "done"}) // before the report: serialising it is not timed
	l.send(rep)
	client.Close() // no connection survives the job
}

// bareAnswer is one calibration round's outcome.
type bareAnswer struct {
	Type     string  `json:"type"`
	WallS    float64 `json:"wall_s"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Error    string  `json:"error,omitempty"`
}

// onBare is one round of the calibration loop: the first round builds the client as a job
// would (the same refusals), later rounds reuse it; the job's requests run through runAll, as
// in a timed trial, into a tally instead of a report.
func (l *loop) onBare(data json.RawMessage) {
	var job *Job
	var err error
	if l.bare != nil {
		if job, err = parseJob(data); err != nil {
			err = fmt.Errorf("bad job: %w", err)
		}
	} else {
		job, l.bare, err = l.prepare(data)
	}
	if err != nil {
		l.refuse(err)
		return
	}
	var t tally
	start := time.Now()
	runAll(job, l.bare, &t)
	wall := time.Since(start)
	l.send(bareAnswer{Type: "bare", WallS: wall.Seconds(), Requests: t.responses, Errors: t.errors, Error: t.firstError})
}

// endBare closes the calibration loop's client, if one is open.
func (l *loop) endBare() {
	if l.bare != nil {
		l.bare.Close()
		l.bare = nil
	}
}

// recorder takes each request's outcome: a report in a timed trial, a tally in a bare round.
// runAll serialises the calls.
type recorder interface {
	add(req *Request, resp Response, err error)
}

// runAll is the timed phase: every request in order, or from up to `concurrency` goroutines,
// each one's outcome into rec.
func runAll(job *Job, client Client, rec recorder) {
	if job.Concurrency <= 1 { // in order, with no list of the repeats on the heap (see report)
		for _, req := range job.Requests {
			for range req.Repeat {
				resp, err := client.Do(req)
				rec.add(req, resp, err)
			}
		}
		return
	}
	work := job.Work()
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(job.Concurrency, len(work)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(work)) {
					return
				}
				resp, err := client.Do(work[i])
				mu.Lock()
				rec.add(work[i], resp, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

type responseItem struct {
	R      int    `json:"r"`
	Status int    `json:"status"`
	Bytes  int64  `json:"bytes"`
	HTTP   string `json:"http"`
	SHA256 string `json:"sha256,omitempty"`
}

type errorItem struct {
	R       int    `json:"r"`
	Message string `json:"message"`
}

// report is a timed job's outcome. While the requests run it keeps one small record a response
// with no pointer in it (the HTTP version an index into a few labels, the SHA-256 only when the
// job verifies), and builds the report's items only once the job is done: Go's collector starts
// a cycle when the heap has grown a fixed amount past what it keeps, and scans what is kept, so a
// record a request holding strings, a few hundred KiB over a trial, starts cycles a plain
// program of the library does not (a GC every 3 GETs of 335 KB against every 5).
type report struct {
	kept   []kept
	labels []string // the HTTP versions seen, kept[i].label indexes it
	shas   []string // a verifying job's digests, kept[i].sha indexes it
	errors []errorItem
	verify bool
}

type kept struct {
	bytes  int64
	r      int32
	status int16
	label  uint8
	sha    int32
}

func newReport(job *Job) *report {
	rep := &report{kept: make([]kept, 0, job.Total), errors: []errorItem{}, verify: job.Verify}
	if job.Verify {
		rep.shas = make([]string, 0, job.Total)
	}
	return rep
}

func (rep *report) add(req *Request, resp Response, err error) {
	if err != nil {
		rep.errors = append(rep.errors, errorItem{R: req.R, Message: errorMessage(err)})
		return
	}
	label := slices.Index(rep.labels, resp.HTTP)
	if label < 0 {
		label = len(rep.labels)
		rep.labels = append(rep.labels, resp.HTTP)
	}
	k := kept{bytes: resp.Bytes, r: int32(req.R), status: int16(resp.Status), label: uint8(label), sha: -1}
	if rep.verify {
		k.sha = int32(len(rep.shas))
		rep.shas = append(rep.shas, resp.SHA256)
	}
	rep.kept = append(rep.kept, k)
}

// responses are the report's items, built from what was kept.
func (rep *report) responses() []responseItem {
	items := make([]responseItem, len(rep.kept))
	for i, k := range rep.kept {
		items[i] = responseItem{R: int(k.r), Status: int(k.status), Bytes: k.bytes, HTTP: rep.labels[k.label]}
		if k.sha >= 0 {
			items[i].SHA256 = rep.shas[k.sha]
		}
	}
	return items
}

func (rep *report) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type      string         `json:"type"`
		Responses []responseItem `json:"responses"`
		Errors    []errorItem    `json:"errors"`
	}{"report", rep.responses(), rep.errors})
}

// tally counts responses and failures and keeps nothing else: a bare round pays for no report
// that a plain program would not build.
type tally struct {
	responses, errors int
	firstError        string
}

func (t *tally) add(req *Request, resp Response, err error) {
	if err == nil {
		t.responses++
		return
	}
	if t.errors == 0 {
		t.firstError = errorMessage(err)
	}
	t.errors++
}

// errorMessage is a failed request's message as the lab takes it (at most 500 bytes).
func errorMessage(err error) string {
	message := err.Error()
	if len(message) > 500 {
		message = message[:500]
	}
	return message
}

func (l *loop) versions() map[string]string {
	v := map[string]string{"crypto/tls": goVersion()}
	v["go"] = goVersion()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Replace != nil && (strings.HasPrefix(m.Replace.Path, ".") || strings.HasPrefix(m.Replace.Path, "/")) {
				continue // a local replacement (this package): no version to tell
			}
			if m.Replace != nil {
				m = m.Replace
			}
			v[m.Path] = m.Version
		}
	}
	if l.driver.Versions != nil {
		for name, version := range l.driver.Versions() {
			v[name] = version
		}
	}
	return v
}
