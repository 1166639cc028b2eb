package main

import (
	"encoding/json"
	"net/http"
	"strings"
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
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	in, rtt, err := new(dns.Client).Exchange(m, l.DNS)
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

func TestAAAAIsAnEmptyAnswerWithTheZonesSOA(t *testing.T) {
	in, _ := ask(t, startTest(t, 0), "bench.lab.test", dns.TypeAAAA)
	if in.Rcode != dns.RcodeSuccess || len(in.Answer) != 0 || len(in.Ns) != 1 {
		t.Fatalf("want NOERROR, no answer, an SOA: %v", in)
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
	if c = getJSON(t, l, "GET", "/counters", ""); c["queries"].(float64) != 0 {
		t.Fatalf("not reset: %v", c)
	}
}

func TestTheDelayIsAppliedAndCanBeChangedLive(t *testing.T) {
	l := startTest(t, 50)
	if _, rtt := ask(t, l, "bench.lab.test", dns.TypeA); rtt < 50*time.Millisecond || rtt > 2*time.Second {
		t.Fatalf("answer took %v with a 50 ms delay", rtt)
	}
	if cfg := getJSON(t, l, "POST", "/config", `{"delay_ms": 0}`); cfg["delay_ms"].(float64) != 0 {
		t.Fatalf("config: %v", cfg)
	}
	if _, rtt := ask(t, l, "bench.lab.test", dns.TypeA); rtt >= 50*time.Millisecond {
		t.Fatalf("answer took %v after the delay was removed", rtt)
	}
}
