package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func startTest(t *testing.T, delayMs int64) *listeners {
	t.Helper()
	s, err := newServer("lab.test", "10.77.0.2", 0, delayMs)
	if err != nil {
		t.Fatal(err)
	}
	l, err := start(s, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.stop)
	return l
}

func ask(t *testing.T, l *listeners, name string, qtype uint16) (*dns.Msg, time.Duration) {
	t.Helper()
	return askOver(t, "udp", l.DNS, name, qtype)
}

func askOver(t *testing.T, network, addr, name string, qtype uint16) (*dns.Msg, time.Duration) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	in, rtt, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	return in, rtt
}

func getJSON(t *testing.T, l *listeners, method, path, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+l.Control+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryNameInTheZoneAnswersTheBenchServer(t *testing.T) {
	l := startTest(t, 0)
	for _, name := range []string{"lab.test", "bench.lab.test", "H42.lab.test"} {
		in, _ := ask(t, l, name, dns.TypeA)
		if in.Rcode != dns.RcodeSuccess || len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != "10.77.0.2" {
			t.Fatalf("%s: %v", name, in)
		}
	}
}

func TestTCPAnswersOnTheSamePort(t *testing.T) {
	l := startTest(t, 0)
	in, _ := askOver(t, "tcp", l.DNS, "h7.lab.test", dns.TypeA)
	if in.Rcode != dns.RcodeSuccess || len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != "10.77.0.2" {
		t.Fatalf("over TCP: %v", in)
	}
}

func TestAAAAIsAnEmptyAnswerWithTheZonesSOA(t *testing.T) {
	l := startTest(t, 0)
	for _, qtype := range []uint16{dns.TypeAAAA, dns.TypeMX, dns.TypeTXT} {
		in, _ := ask(t, l, "bench.lab.test", qtype)
		if in.Rcode != dns.RcodeSuccess || len(in.Answer) != 0 || len(in.Ns) != 1 || !in.Authoritative {
			t.Fatalf("%s: want an authoritative NOERROR, no answer, an SOA: %v", dns.TypeToString[qtype], in)
		}
		if soa, ok := in.Ns[0].(*dns.SOA); !ok || soa.Hdr.Name != "lab.test." {
			t.Fatalf("%s: authority is not the zone's SOA: %v", dns.TypeToString[qtype], in.Ns[0])
		}
	}
}

func TestNamesOutsideTheZoneAreRefusedNotForwarded(t *testing.T) {
	in, _ := ask(t, startTest(t, 0), "example.com", dns.TypeA)
	if in.Rcode != dns.RcodeRefused || len(in.Answer) != 0 {
		t.Fatalf("want REFUSED: %v", in)
	}
}

func TestCountersCountEveryQueryAndReset(t *testing.T) {
	l := startTest(t, 0)
	ask(t, l, "bench.lab.test", dns.TypeA)
	ask(t, l, "bench.lab.test", dns.TypeAAAA)
	ask(t, l, "h1.lab.test", dns.TypeA)
	ask(t, l, "example.com", dns.TypeA)
	c := getJSON(t, l, "GET", "/counters?reset=1", "")
	if c["queries"].(float64) != 4 || c["refused"].(float64) != 1 ||
		c["by_name"].(map[string]any)["bench.lab.test."].(float64) != 2 || c["by_type"].(map[string]any)["A"].(float64) != 3 {
		t.Fatalf("counters: %v", c)
	}
	if c = getJSON(t, l, "GET", "/counters", ""); c["queries"].(float64) != 0 || len(c["by_name"].(map[string]any)) != 0 {
		t.Fatalf("not reset: %v", c)
	}
	ask(t, l, "h2.lab.test", dns.TypeA)
	if c = getJSON(t, l, "GET", "/counters", ""); c["queries"].(float64) != 1 || c["by_name"].(map[string]any)["h2.lab.test."].(float64) != 1 {
		t.Fatalf("after the reset: %v", c)
	}
}

func TestHealthAndBadConfig(t *testing.T) {
	l := startTest(t, 0)
	if h := getJSON(t, l, "GET", "/health", ""); h["ok"] != true {
		t.Fatalf("health: %v", h)
	}
	for _, body := range []string{`{"delay_ms": -1}`, `{}`, `not json`} {
		resp, err := http.Post("http://"+l.Control+"/config", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("POST /config %s: status %d", body, resp.StatusCode)
		}
	}
	if cfg := getJSON(t, l, "GET", "/config", ""); cfg["delay_ms"].(float64) != 0 {
		t.Fatalf("a refused config changed the delay: %v", cfg)
	}
}

func TestADelayDoesNotHoldOtherQueriesBack(t *testing.T) {
	l := startTest(t, 200)
	const n = 10 // one after another would take 2 s
	began := time.Now()
	var wg sync.WaitGroup
	rtts := make([]time.Duration, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion(fmt.Sprintf("h%d.lab.test.", i), dns.TypeA)
			if _, rtt, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, l.DNS); err == nil {
				rtts[i] = rtt
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	for i, rtt := range rtts {
		if rtt < 200*time.Millisecond {
			t.Fatalf("query %d: %v (failed, or not delayed)", i, rtt)
		}
	}
	if took > 1500*time.Millisecond {
		t.Fatalf("%d queries with a 200 ms delay took %v: they waited for each other", n, took)
	}
}

func TestTheDelayIsAppliedAndCanBeChangedLive(t *testing.T) {
	l := startTest(t, 50)
	if _, rtt := ask(t, l, "bench.lab.test", dns.TypeA); rtt < 50*time.Millisecond || rtt > 2*time.Second {
		t.Fatalf("answer took %v with a 50 ms delay", rtt)
	}
	if cfg := getJSON(t, l, "GET", "/config", ""); cfg["delay_ms"].(float64) != 50 {
		t.Fatalf("config: %v", cfg)
	}
	if cfg := getJSON(t, l, "POST", "/config", `{"delay_ms": 0}`); cfg["delay_ms"].(float64) != 0 {
		t.Fatalf("config: %v", cfg)
	}
	if _, rtt := ask(t, l, "bench.lab.test", dns.TypeA); rtt >= 50*time.Millisecond {
		t.Fatalf("answer took %v after the delay was removed", rtt)
	}
}

func TestTheDelayCanBeSetLive(t *testing.T) {
	l := startTest(t, 0)
	getJSON(t, l, "POST", "/config", `{"delay_ms": 80}`)
	if _, rtt := ask(t, l, "bench.lab.test", dns.TypeA); rtt < 80*time.Millisecond || rtt > 2*time.Second {
		t.Fatalf("answer took %v after the delay was set to 80 ms", rtt)
	}
}

// TestMain runs the program itself when the test binary is started as the server (below).
func TestMain(m *testing.M) {
	if os.Getenv("CLIENTLAB_DNS_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTheProgramPrintsOneJSONLineAndStopsOnSIGTERM(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--zone", "Lab.Test",
		"--answer", "127.0.0.9", "--delay-ms", "0", "--ttl", "30")
	cmd.Env = append(os.Environ(), "CLIENTLAB_DNS_RUN_MAIN=1")
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("no line on stdout; stderr: %s", stderr.String())
	}
	var addrs struct{ DNS, Control string }
	if err := json.Unmarshal(lines.Bytes(), &addrs); err != nil {
		t.Fatalf("first line %q: %v", lines.Text(), err)
	}
	for _, a := range []string{addrs.DNS, addrs.Control} {
		if _, port, _ := net.SplitHostPort(a); port == "" || port == "0" {
			t.Fatalf("not a real address: %q", lines.Text())
		}
	}
	for _, network := range []string{"udp", "tcp"} {
		in, _ := askOver(t, network, addrs.DNS, "BENCH.lab.test", dns.TypeA)
		if len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != "127.0.0.9" || in.Answer[0].Header().Ttl != 30 {
			t.Fatalf("%s: %v", network, in)
		}
	}
	resp, err := http.Get("http://" + addrs.Control + "/counters")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Queries int            `json:"queries"`
		ByName  map[string]int `json:"by_name"`
	}
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if c.Queries != 2 || c.ByName["bench.lab.test."] != 2 {
		t.Fatalf("counters: %+v", c)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
			t.Errorf("more on stdout: %q", lines.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM")
	}
}

func TestAnAskedForPortWhoseTCPTwinIsTakenIsRefusedNotMoved(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if pc, tl, err := listenPair(taken.Addr().String()); err == nil {
		pc.Close()
		tl.Close()
		t.Fatalf("listened on %s although its TCP port was taken", taken.Addr())
	}
	pc, tl, err := listenPair("127.0.0.1:0") // a port the system picks: one whose TCP twin is free
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	defer tl.Close()
	if pc.LocalAddr().String() != tl.Addr().String() {
		t.Fatalf("UDP %s and TCP %s differ", pc.LocalAddr(), tl.Addr())
	}
}
