// clientlab-server is the lab's bench server: it serves the resources that scenarios ask for
// and records, per trial, what the clients did (docs/bench-server.md).
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	disableH2 atomic.Bool
	connCap   *connLimit // the running server's cap on open connections
)

func main() {
	listen := flag.String("listen", "127.0.0.1", "address to bind (loopback or the lab's own hosts only)")
	certFile := flag.String("tls-cert", "", "PEM certificate for the https port")
	keyFile := flag.String("tls-key", "", "PEM key for the https port")
	controlAddr := flag.String("control-listen", "", "address of the control port (default: --listen); the network lab puts it where drivers cannot reach")
	maxConns := flag.Int("max-conns", 0, "at most this many client connections open at once (0: no cap)")
	flag.Parse()
	// Pinned to one core, net/http with a single P serves keep-alive requests several times
	// slower (measured: ~8k vs ~50k req/s); two Ps on one core avoid that.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	log.SetPrefix("clientlab-server: ")
	log.SetFlags(0)

	var certs *tls.Config
	if *certFile != "" {
		certs = tlsConfig(*certFile, *keyFile)
	}
	if *controlAddr == "" {
		*controlAddr = *listen
	}
	ready := start(*listen, *controlAddr, certs, *maxConns)
	line, _ := json.Marshal(ready)
	fmt.Println(string(line))

	// Never outlive the lab: stop on a signal or when stdin closes.
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-signals:
	case <-done:
	}
}

// start opens the listeners and serves them in the background; it returns the "listening" line.
func start(addr, controlAddr string, base *tls.Config, maxConns int) map[string]any {
	limit := newConnLimit(maxConns)
	connCap = limit
	plain := mustListen(addr)
	control := mustListen(controlAddr)
	srv := &http.Server{
		Handler:     http.HandlerFunc(serveHTTP),
		IdleTimeout: 5 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, ctxKey{}, tracked(c))
		},
		ConnState: func(c net.Conn, state http.ConnState) {
			limit.setIdle(tracked(c), state == http.StateIdle)
		},
		ErrorLog: log.New(io.Discard, "", 0), // clients that hang up are not the server's news
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge on the plain port
	srv.Protocols = protocols

	ready := map[string]any{"type": "listening", "http": port(plain), "control": port(control),
		"pid": os.Getpid(), "version": "1"}
	go serve(srv, &trackingListener{Listener: plain, limit: limit})
	if base != nil {
		secure := mustListen(addr)
		ready["https"] = port(secure)
		go serve(srv, &trackingListener{Listener: secure, limit: limit, tlsConfig: func() *tls.Config {
			cfg := base.Clone()
			if disableH2.Load() {
				cfg.NextProtos = []string{"http/1.1"}
			}
			return cfg
		}})
	}
	go serve(&http.Server{Handler: controlHandler(limit)}, control)
	return ready
}

func tlsConfig(certFile, keyFile string) *tls.Config {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		log.Fatalf("cannot load the TLS certificate: %v", err)
	}
	return tlsConfigFor(cert)
}

func tlsConfigFor(cert tls.Certificate) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	// One explicit ticket key shared by every per-connection clone, so sessions resume.
	var key [32]byte
	rand.Read(key[:])
	cfg.SetSessionTicketKeys([][32]byte{key})
	return cfg
}

func mustListen(addr string) net.Listener {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", addr, err)
	}
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

func serve(srv *http.Server, l net.Listener) {
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		log.Fatalf("serving %s: %v", l.Addr(), err)
	}
}
