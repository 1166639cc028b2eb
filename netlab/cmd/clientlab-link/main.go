// clientlab-link: the network lab's link in user space. It joins the client and server
// namespaces with a TUN device in each and carries every IP packet (TCP, UDP, ICMP alike)
// from one to the other after the impairment asked: one-way delay, jitter, loss (independent
// or in bursts), reordering, a rate limit. The kernel here has no netem: this stands in for it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// link is the two directions: up (client → server) and down (server → client).
type link struct {
	up, down *direction
}

type linkConfig struct {
	Up   impairment `json:"up"`
	Down impairment `json:"down"`
}

func (l *link) control() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { reply(w, map[string]bool{"ok": true}) })
	mux.HandleFunc("/counters", func(w http.ResponseWriter, r *http.Request) {
		reset := r.URL.Query().Get("reset") == "1"
		reply(w, map[string]any{"up": l.up.counts.snapshot(reset), "down": l.down.counts.snapshot(reset),
			"pending": l.up.line.pending() + l.down.line.pending()})
	})
	mux.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var cfg linkConfig
			dec := json.NewDecoder(r.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&cfg); err != nil {
				http.Error(w, `want {"up": {...}, "down": {...}} as GET /config returns: `+err.Error(), http.StatusBadRequest)
				return
			}
			for name, c := range map[string]impairment{"up": cfg.Up, "down": cfg.Down} {
				if err := c.check(); err != nil {
					http.Error(w, name+": "+err.Error(), http.StatusBadRequest)
					return
				}
			}
			l.up.configure(cfg.Up)
			l.down.configure(cfg.Down)
		}
		reply(w, linkConfig{Up: l.up.settings(), Down: l.down.settings()})
	})
	return mux
}

// nsPath takes a namespace's name (as `ip netns` names it) or a path.
func nsPath(ns string) string {
	if ns == "" || filepath.IsAbs(ns) {
		return ns
	}
	return "/run/netns/" + ns
}

type options struct {
	clientNs, clientDev, serverNs, serverDev, control string
	seed                                              int64
	exitOnStdinEOF                                    bool
	cfg                                               linkConfig
}

func parseFlags() options {
	var o options
	var rateUp, rateDown float64
	var c impairment
	flag.StringVar(&o.clientNs, "client-ns", "", "the client's network namespace (name or path); required")
	flag.StringVar(&o.clientDev, "client-dev", "clab-c0", "the TUN device made in the client's namespace")
	flag.StringVar(&o.serverNs, "server-ns", "", "the server's network namespace (name or path); \"\": this process's own")
	flag.StringVar(&o.serverDev, "server-dev", "clab-s0", "the TUN device made in the server's namespace")
	flag.StringVar(&o.control, "control", "127.0.0.1:0", "HTTP control address (counters, config)")
	flag.Float64Var(&c.DelayMs, "delay-ms", 0, "one-way delay, each direction")
	flag.Float64Var(&c.JitterMs, "jitter-ms", 0, "each packet's delay varies by up to ± this, uniformly (order is kept)")
	flag.Float64Var(&c.LossPct, "loss-pct", 0, "packets lost, % each direction")
	flag.Float64Var(&c.LossBurst, "loss-burst", 0, "mean loss burst length in packets (Gilbert model); 0: independent losses")
	flag.Float64Var(&c.ReorderPct, "reorder-pct", 0, "packets held back by --reorder-extra-ms, % each direction")
	flag.Float64Var(&c.ReorderExtraMs, "reorder-extra-ms", 10, "how long a reordered packet is held back")
	flag.Float64Var(&rateUp, "rate-up-mbit", 0, "client → server rate limit (0: none)")
	flag.Float64Var(&rateDown, "rate-down-mbit", 0, "server → client rate limit (0: none)")
	flag.Float64Var(&c.QueueMs, "queue-ms", 100, "with a rate: a packet that would wait longer than this is dropped")
	flag.Int64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	flag.BoolVar(&o.exitOnStdinEOF, "exit-on-stdin-eof", true, "exit when stdin closes (the lab that started it is gone)")
	flag.Parse()
	o.cfg = linkConfig{Up: c, Down: c}
	o.cfg.Up.RateMbit, o.cfg.Down.RateMbit = rateUp, rateDown
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return o
}

func start(o options) (*link, net.Listener, error) {
	if o.clientNs == "" {
		return nil, nil, errors.New("--client-ns is required")
	}
	for name, c := range map[string]impairment{"up": o.cfg.Up, "down": o.cfg.Down} {
		if err := c.check(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	clientFd, err := openTun(o.clientDev, nsPath(o.clientNs))
	if err != nil {
		return nil, nil, err
	}
	serverFd, err := openTun(o.serverDev, nsPath(o.serverNs))
	if err != nil {
		return nil, nil, err
	}
	up, err := newDirection(clientFd, serverFd, o.cfg.Up, o.seed)
	if err != nil {
		return nil, nil, err
	}
	down, err := newDirection(serverFd, clientFd, o.cfg.Down, o.seed+1)
	if err != nil {
		return nil, nil, err
	}
	ctl, err := net.Listen("tcp", o.control)
	if err != nil {
		return nil, nil, fmt.Errorf("control %s: %w", o.control, err)
	}
	return &link{up: up, down: down}, ctl, nil
}

func main() {
	log.SetPrefix("clientlab-link: ")
	log.SetFlags(0)
	o := parseFlags()
	l, ctl, err := start(o)
	if err != nil {
		log.Fatal(err)
	}
	failed := make(chan error, 3)
	go func() { failed <- fmt.Errorf("client → server: %w", l.up.carry()) }()
	go func() { failed <- fmt.Errorf("server → client: %w", l.down.carry()) }()
	go func() { failed <- fmt.Errorf("control: %w", http.Serve(ctl, l.control())) }()
	stdinClosed := make(chan struct{})
	if o.exitOnStdinEOF {
		go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	line, _ := json.Marshal(map[string]any{"control": ctl.Addr().String(), "client_dev": o.clientDev,
		"server_dev": o.serverDev, "config": o.cfg})
	fmt.Println(string(line)) // the only line on stdout
	log.Printf("%s (ns %s) <-> %s; up %+v; down %+v; control http://%s", o.clientDev, o.clientNs, o.serverDev,
		o.cfg.Up, o.cfg.Down, ctl.Addr())
	select {
	case sig := <-signals:
		log.Printf("%v: stopping", sig)
	case <-stdinClosed:
		log.Printf("stdin closed: stopping")
	case err := <-failed:
		log.Fatal(err)
	}
}
