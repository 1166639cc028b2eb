package labdriver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func job(t *testing.T, text string) *Job {
	t.Helper()
	j, err := parseJob(json.RawMessage(text))
	if err != nil {
		t.Fatalf("parseJob: %v", err)
	}
	return j
}

func TestParseJobDefaultsAndOrder(t *testing.T) {
	j := job(t, `{"requests":[{"method":"post","url":"http://h/echo","form":{"b":"2","a":"","c":"3"}},
		{"method":"GET","url":"http://h/x","repeat":3,"unknown":1}],"options":{"tcp_nodelay":null}}`)
	if j.HTTP != "1.1" || j.Concurrency != 1 || !j.KeepAlive || j.Timeout != 0 || j.Total != 4 {
		t.Fatalf("defaults: %+v", j)
	}
	r := j.Requests[0]
	if r.Method != "POST" || r.Repeat != 1 || r.FormEncoding != "urlencoded" || r.Sink != "memory" {
		t.Fatalf("request defaults: %+v", r)
	}
	if got := *r.Form; len(got) != 3 || got[0] != (KV{"b", "2"}) || got[1] != (KV{"a", ""}) {
		t.Fatalf("form order: %v", got)
	}
	if len(j.Work()) != 4 || j.Work()[1].R != 1 {
		t.Fatalf("work: %v", j.Work())
	}
	if j.Options.TCPNoDelay != nil || len(j.Options.set) != 0 {
		t.Fatalf("null option kept: %+v", j.Options)
	}
	if r.FollowRedirects != nil || r.Follow() || r.NoFollow() {
		t.Fatalf("an absent follow_redirects must stay absent: %v", r.FollowRedirects)
	}
	f := job(t, `{"requests":[{"method":"GET","url":"u","follow_redirects":true},{"method":"GET","url":"u","follow_redirects":false}]}`)
	if !f.Requests[0].Follow() || f.Requests[0].NoFollow() || f.Requests[1].Follow() || !f.Requests[1].NoFollow() {
		t.Fatalf("follow_redirects true / false: %v, %v", *f.Requests[0].FollowRedirects, *f.Requests[1].FollowRedirects)
	}
	if z := job(t, `{"requests":[{"method":"GET","url":"u","repeat":0}]}`); z.Total != 0 {
		t.Fatalf("repeat 0 became %d", z.Total)
	}
}

func TestParseJobRejects(t *testing.T) {
	const bad, unsupported = 1, 2
	for _, c := range []struct {
		text string
		want int
	}{
		{`{}`, bad}, // no requests list
		{`{"concurrency":0,"requests":[]}`, bad},
		{`{"requests":[{"method":"GET","url":"u","sink":"file"}]}`, bad}, // no sink_path
		{`{"requests":[{"method":"GET","url":"u","headers":{"a":1}}]}`, bad},
		{`{"http":"4","requests":[]}`, unsupported},
		{`{"requests":[{"method":"GET","url":"u","sink":"pipe"}]}`, unsupported},
		{`{"requests":[{"method":"GET","url":"u","form_encoding":"json"}]}`, unsupported},
		{`{"options":{"tcp_nodelay":1},"requests":[]}`, unsupported},
		{`{"options":{"max_host_connections":0},"requests":[]}`, unsupported},
		{`{"options":{"max_host_connections":true},"requests":[]}`, unsupported},
		{`{"options":{"share":["dns","disk"]},"requests":[]}`, unsupported},
	} {
		_, err := parseJob(json.RawMessage(c.text))
		var u *UnsupportedError
		got := map[bool]int{false: bad, true: unsupported}[errors.As(err, &u)]
		if err == nil || got != c.want {
			t.Errorf("%s: %v (kind %d, want %d)", c.text, err, got, c.want)
		}
	}
}

func TestRefusal(t *testing.T) {
	honoured := map[string][]any{"tcp_nodelay": nil, "expect_100": {false}}
	for text, want := range map[string]string{
		`{"requests":[{"method":"POST","url":"https://h/","form":{}}]}`:      "",
		`{"options":{"tcp_nodelay":false,"expect_100":false},"requests":[]}`: "",
		`{"options":{"expect_100":true},"requests":[]}`:                      "option expect_100=true cannot be honoured (only [false])",
		`{"options":{"max_host_connections":4},"requests":[]}`:               "option max_host_connections is not supported",
		`{"options":{"brand_new":"x"},"requests":[]}`:                        "option brand_new is not supported",
	} {
		if got := refusal(job(t, text), honoured); got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
	// capabilities are the lab's to check (it sends no job a manifest does not claim)
	anything := `{"cookies":true,"http":"h2c","requests":[{"method":"GET","url":"u","follow_redirects":true}]}`
	if got := refusal(job(t, anything), nil); got != "" {
		t.Errorf("a job without options was refused: %q", got)
	}
}

type fakeClient struct {
	inFlight, most atomic.Int32
	closed         atomic.Bool
}

func (f *fakeClient) Do(req *Request) (Response, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	time.Sleep(time.Millisecond)
	if req.R == 1 {
		return Response{}, errors.New("refused")
	}
	return Memory(&Job{Verify: true}, 200, "1.1", []byte("abc")), nil
}

func (f *fakeClient) Close() { f.closed.Store(true) }

func TestRunAllKeepsConcurrency(t *testing.T) {
	j := job(t, `{"concurrency":3,"verify":true,"requests":[{"method":"GET","url":"u","repeat":20},{"method":"GET","url":"v","repeat":2}]}`)
	f := &fakeClient{}
	rep := newReport(j)
	runAll(j, f, rep)
	if len(rep.responses()) != 20 || len(rep.errors) != 2 || f.most.Load() != 3 {
		t.Fatalf("%d responses, %d errors, %d in flight at most", len(rep.responses()), len(rep.errors), f.most.Load())
	}
	if rep.responses()[0].SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("sha256 %q", rep.responses()[0].SHA256)
	}
	j.Concurrency, j.Verify = 1, false
	f = &fakeClient{}
	rep = newReport(j)
	if runAll(j, f, rep); f.most.Load() != 1 || rep.responses()[0].SHA256 != "" || rep.errors[0].R != 1 {
		t.Fatalf("sequential: %d in flight, %+v", f.most.Load(), rep.responses()[0])
	}
}

func TestLoopMessages(t *testing.T) {
	f := &fakeClient{}
	var out bytes.Buffer
	l := &loop{out: bufio.NewWriter(&out), driver: Driver{
		Options:  map[string][]any{},
		Versions: func() map[string]string { return map[string]string{"lib": "1.0"} },
		Open: func(j *Job) (Client, error) {
			if j.Scenario == "refuse" {
				return nil, Unsupported("not today")
			}
			return f, nil
		},
	}}
	in := strings.Join([]string{
		`{"type":"hello","protocol":1}`,
		`{"type":"go"}`,
		`{"type":"job","job":{"scenario":"refuse","requests":[]}}`,
		`{"type":"job","job":{"options":{"share":["dns"]},"requests":[]}}`,
		``,
		`{"type":"job","job":{"verify":true,"requests":[{"method":"GET","url":"u","repeat":2}]}}`,
		`{"type":"go"}`,
		`{"type":"bye"}`,
		`not json`,
	}, "\n")
	l.run(bufio.NewReader(strings.NewReader(in)))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{`{"type":"hello","protocol":1,"versions":{`, `{"type":"error","message":"go without a ready job"}`,
		`{"type":"unsupported","reason":"not today"}`, `{"type":"unsupported","reason":"option share is not supported"}`,
		`{"type":"ready"}`, `{"type":"done"}`, `{"type":"report","responses":[{"r":0,"status":200,"bytes":3,"http":"1.1","sha256":"ba78`,
		`{"type":"error","message":"unknown message type \"bye\""}`, `{"type":"error","message":"not a protocol message:`}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %s\nwant prefix %s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[0], `"lib":"1.0"`) || !strings.Contains(lines[0], `"go":"go1.`) || !f.closed.Load() {
		t.Errorf("hello %s, closed %v", lines[0], f.closed.Load())
	}
}

func TestSetNoDelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, on := range []bool{false, true} {
		j := &Job{Options: Options{TCPNoDelay: &on}}
		conn, err := NoDelayDialer(j, nil)(t.Context(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := conn.(*net.TCPConn).SyscallConn()
		var got int
		raw.Control(func(fd uintptr) { got, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY) })
		conn.Close()
		if (got != 0) != on {
			t.Errorf("tcp_nodelay=%v: socket says %d", on, got)
		}
	}
}

// bareLoop is a loop whose Open hands out a new fakeClient per call, kept in *opened.
func bareLoop(t *testing.T, out *bytes.Buffer) (*loop, *[]*fakeClient) {
	t.Helper()
	opened := &[]*fakeClient{}
	return &loop{out: bufio.NewWriter(out), driver: Driver{
		Options: map[string][]any{},
		Open: func(j *Job) (Client, error) {
			if j.Scenario == "refuse" {
				return nil, Unsupported("not today")
			}
			for _, f := range *opened {
				if !f.closed.Load() {
					t.Errorf("a client was opened while another one was still open")
				}
			}
			f := &fakeClient{}
			*opened = append(*opened, f)
			return f, nil
		},
	}}, opened
}

// answers decodes every line the loop wrote.
func answers(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var got []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		got = append(got, m)
	}
	out.Reset()
	return got
}

// feed gives the loop some lines without ending its input (run would close the bare client).
func feed(l *loop, lines ...string) {
	for _, line := range lines {
		l.handle([]byte(line))
	}
}

const bareJob = `{"type":"bare","job":{"requests":[{"method":"GET","url":"http://h:%d/u","repeat":5},{"method":"GET","url":"http://h:%d/v","repeat":2}]}}`

func bareRound(port int) string { return fmt.Sprintf(bareJob, port, port) }

func TestBareRoundsReuseTheFirstRoundsClient(t *testing.T) {
	var out bytes.Buffer
	l, opened := bareLoop(t, &out)
	feed(l, bareRound(1), bareRound(2), bareRound(3))
	got := answers(t, &out)
	if len(*opened) != 1 || (*opened)[0].closed.Load() {
		t.Fatalf("%d clients opened for three rounds (the first closed: %v)", len(*opened), (*opened)[0].closed.Load())
	}
	for i, a := range got {
		wall, _ := a["wall_s"].(float64)
		if a["type"] != "bare" || a["requests"] != 5.0 || a["errors"] != 2.0 || a["error"] != "refused" || wall < 0.007 {
			t.Errorf("round %d: %v", i, a)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d answers for three rounds: %v", len(got), got)
	}
}

func TestBareRoundKeepsConcurrencyAndCountsEveryStatus(t *testing.T) {
	var out bytes.Buffer
	l, opened := bareLoop(t, &out)
	feed(l, `{"type":"bare","job":{"concurrency":3,"requests":[{"method":"GET","url":"u","repeat":30}]}}`)
	got := answers(t, &out)
	if f := (*opened)[0]; f.most.Load() != 3 {
		t.Errorf("%d in flight at most, want 3", f.most.Load())
	}
	if len(got) != 1 || got[0]["requests"] != 30.0 || got[0]["errors"] != 0.0 || got[0]["error"] != nil {
		t.Fatalf("answers %v", got)
	}
}

func TestBareRefusesAsAJobWouldAndKeepsNoClient(t *testing.T) {
	var out bytes.Buffer
	l, opened := bareLoop(t, &out)
	feed(l,
		`{"type":"bare","job":{"options":{"tcp_nodelay":true},"requests":[]}}`,
		`{"type":"bare","job":{"scenario":"refuse","requests":[]}}`,
		`{"type":"bare","job":{}}`,
		bareRound(1),
		`{"type":"bare","job":{"concurrency":0,"requests":[]}}`, // a bad later round keeps the client
		bareRound(2))
	got := answers(t, &out)
	want := []string{"unsupported", "unsupported", "error", "bare", "error", "bare"}
	if len(got) != len(want) {
		t.Fatalf("answers %v", got)
	}
	for i, w := range want {
		if got[i]["type"] != w {
			t.Errorf("answer %d: %v, want %s", i, got[i], w)
		}
	}
	if got[0]["reason"] != "option tcp_nodelay is not supported" || got[1]["reason"] != "not today" {
		t.Errorf("reasons: %v, %v", got[0], got[1])
	}
	if len(*opened) != 1 || (*opened)[0].closed.Load() {
		t.Errorf("%d clients opened", len(*opened))
	}
}

func TestJobAfterBareClosesTheBareClient(t *testing.T) {
	var out bytes.Buffer
	l, opened := bareLoop(t, &out)
	feed(l, bareRound(1), bareRound(1),
		`{"type":"job","job":{"verify":true,"requests":[{"method":"GET","url":"u","repeat":2}]}}`)
	if len(*opened) != 2 || !(*opened)[0].closed.Load() || (*opened)[1].closed.Load() {
		t.Fatalf("%d clients opened; the bare one must be closed, the job's open", len(*opened))
	}
	feed(l, `{"type":"go"}`, bareRound(2))
	got := answers(t, &out)
	types := []string{}
	for _, a := range got {
		types = append(types, a["type"].(string))
	}
	if strings.Join(types, " ") != "bare bare ready done report bare" {
		t.Fatalf("answers %v", types)
	}
	if rep := got[4]; len(rep["responses"].([]any)) != 2 || len(rep["errors"].([]any)) != 0 {
		t.Errorf("report %v", rep)
	}
	if len(*opened) != 3 || !(*opened)[1].closed.Load() || (*opened)[2].closed.Load() {
		t.Errorf("%d clients opened; a bare round after a job must build a new one", len(*opened))
	}
}

func TestEndOfInputClosesTheBareClient(t *testing.T) {
	var out bytes.Buffer
	l, opened := bareLoop(t, &out)
	l.run(bufio.NewReader(strings.NewReader(bareRound(1) + "\n")))
	if got := answers(t, &out); len(got) != 1 || got[0]["type"] != "bare" {
		t.Fatalf("answers %v", got)
	}
	if len(*opened) != 1 || !(*opened)[0].closed.Load() || l.bare != nil {
		t.Fatalf("the bare client is still open at end of input")
	}
}
