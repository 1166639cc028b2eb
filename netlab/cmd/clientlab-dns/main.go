// clientlab-dns: the network lab's DNS server. It answers for one zone only (every name under
// it has the same A record: the bench server), can delay each answer, counts the queries it
// gets for the lab to read per trial, and forwards nothing anywhere.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// counters are what the lab reads (and resets) per trial.
type counters struct {
	mu      sync.Mutex
	Queries int            `json:"queries"`
	ByType  map[string]int `json:"by_type"`
	ByName  map[string]int `json:"by_name"`
	Refused int            `json:"refused"`
}

func newCounters() *counters {
	return &counters{ByType: map[string]int{}, ByName: map[string]int{}}
}

func (c *counters) count(name, qtype string, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Queries++
	c.ByType[qtype]++
	c.ByName[name]++
	if refused {
		c.Refused++
	}
}

// snapshot copies the counters, and zeroes them when reset is set (atomically with the copy).
func (c *counters) snapshot(reset bool) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]any{"queries": c.Queries, "by_type": c.ByType, "by_name": c.ByName, "refused": c.Refused}
	if reset {
		c.Queries, c.Refused = 0, 0
		c.ByType, c.ByName = map[string]int{}, map[string]int{}
	} else {
		out["by_type"], out["by_name"] = copyMap(c.ByType), copyMap(c.ByName)
	}
	return out
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type server struct {
	zone    string // fully qualified, lower case: "lab.test."
	answer  net.IP
	ttl     uint32
	delayMs atomic.Int64
	counts  *counters
}

// ServeDNS answers one query. miekg/dns runs each UDP query and each TCP connection in its own
// goroutine, so a delay here does not hold other queries back (queries pipelined on one TCP
// connection are answered in turn).
func (s *server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	inZone := dns.IsSubDomain(s.zone, name)
	s.counts.count(name, dns.Type(q.Qtype).String(), !inZone) // "A", "AAAA", … "TYPE65534"
	if d := s.delayMs.Load(); d > 0 {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
	switch {
	case !inZone:
		m.Rcode = dns.RcodeRefused
		m.Authoritative = false
	case q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: s.ttl},
			A:   s.answer,
		})
	default: // AAAA and the rest: the name exists, with no data of that type
		m.Ns = append(m.Ns, s.soa())
	}
	w.WriteMsg(m)
}

func (s *server) soa() dns.RR {
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: s.ttl},
		Ns:  "ns." + s.zone, Mbox: "lab." + s.zone, Serial: 1, Refresh: 3600, Retry: 600,
		Expire: 86400, Minttl: s.ttl,
	}
}

func (s *server) control() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { reply(w, map[string]bool{"ok": true}) })
	mux.HandleFunc("/counters", func(w http.ResponseWriter, r *http.Request) {
		reply(w, s.counts.snapshot(r.URL.Query().Get("reset") == "1"))
	})
	mux.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var cfg struct {
				DelayMs *int64 `json:"delay_ms"`
			}
			if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil || cfg.DelayMs == nil || *cfg.DelayMs < 0 {
				http.Error(w, `want {"delay_ms": N} with N >= 0`, http.StatusBadRequest)
				return
			}
			s.delayMs.Store(*cfg.DelayMs)
		}
		reply(w, map[string]any{"delay_ms": s.delayMs.Load(), "zone": s.zone, "answer": s.answer.String()})
	})
	return mux
}

// listeners are the running DNS and control servers; start returns once all of them listen.
type listeners struct {
	udp, tcp *dns.Server
	ctl      net.Listener
	DNS      string `json:"dns"`
	Control  string `json:"control"`
}

// pairTries is how many system-picked UDP ports start tries for one whose TCP twin is free.
const pairTries = 20

// listenPair listens on UDP and TCP at the same port. A port the system picked for UDP (port 0)
// may be taken for TCP by another program: then it tries another; a port that was asked for is
// tried once.
func listenPair(addr string) (net.PacketConn, net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	for try := 1; ; try++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		tl, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, tl, nil
		}
		pc.Close()
		if port != "0" || try == pairTries {
			return nil, nil, err
		}
	}
}

func start(s *server, addr, controlAddr string) (*listeners, error) {
	pc, tl, err := listenPair(addr)
	if err != nil {
		return nil, err
	}
	ctl, err := net.Listen("tcp", controlAddr)
	if err != nil {
		pc.Close()
		tl.Close()
		return nil, err
	}
	l := &listeners{
		udp: &dns.Server{PacketConn: pc, Handler: s}, tcp: &dns.Server{Listener: tl, Handler: s}, ctl: ctl,
		DNS: pc.LocalAddr().String(), Control: ctl.Addr().String(),
	}
	started := make(chan struct{}, 2)
	l.udp.NotifyStartedFunc = func() { started <- struct{}{} }
	l.tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	go l.udp.ActivateAndServe()
	go l.tcp.ActivateAndServe()
	go func() {
		if err := http.Serve(ctl, s.control()); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Printf("control: %v", err)
		}
	}()
	<-started
	<-started
	return l, nil
}

// stop closes the listeners and waits (a bounded time) for the answers in flight.
func (l *listeners) stop() {
	l.ctl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.udp.ShutdownContext(ctx)
	l.tcp.ShutdownContext(ctx)
}

func newServer(zone, answer string, ttl uint32, delayMs int64) (*server, error) {
	ip := net.ParseIP(answer).To4()
	if ip == nil {
		return nil, fmt.Errorf("--answer %q is not an IPv4 address", answer)
	}
	s := &server{zone: dns.Fqdn(strings.ToLower(zone)), answer: ip, ttl: ttl, counts: newCounters()}
	s.delayMs.Store(delayMs)
	return s, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "DNS address (UDP and TCP)")
	controlAddr := flag.String("control", "127.0.0.1:0", "HTTP control address (counters, config)")
	zone := flag.String("zone", "lab.test", "the only zone answered; other names are REFUSED")
	answer := flag.String("answer", "127.0.0.1", "the A record of every name in the zone")
	delay := flag.Int64("delay-ms", 0, "delay before each answer")
	ttl := flag.Uint("ttl", 0, "TTL of the answers (0: resolvers do not cache)")
	flag.Parse()
	log.SetPrefix("clientlab-dns: ")
	log.SetFlags(0)

	if *delay < 0 {
		log.Fatalf("--delay-ms %d: want N >= 0", *delay)
	}
	s, err := newServer(*zone, *answer, uint32(*ttl), *delay)
	if err != nil {
		log.Fatal(err)
	}
	l, err := start(s, *listen, *controlAddr)
	if err != nil {
		log.Fatalf("cannot listen: %v", err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	line, _ := json.Marshal(l)
	fmt.Println(string(line)) // the only line on stdout
	log.Printf("zone %s -> %s, ttl %d, delay %d ms; dns %s (udp, tcp), control http://%s",
		s.zone, s.answer, s.ttl, s.delayMs.Load(), l.DNS, l.Control)

	sig := <-signals
	log.Printf("%v: stopping", sig)
	l.stop()
}
