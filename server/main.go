// clientlab-server is the lab's bench server: it serves the resources that scenarios ask for
// and records, per trial, what the clients did (docs/bench-server.md).
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"clientlab/server/internal/control"
	"clientlab/server/internal/faults"
	"clientlab/server/internal/h3"
	"clientlab/server/internal/server"
	"clientlab/server/internal/sockets"
)

func main() {
	listen := flag.String("listen", "127.0.0.1", "address of the public ports: "+sockets.AllowedText)
	certFile := flag.String("tls-cert", "", "PEM certificate for the https port")
	keyFile := flag.String("tls-key", "", "PEM key for the https port")
	caFile := flag.String("tls-ca", "", "PEM certificate of the CA that clients trust (the lab's), with --tls-ca-key: it signs "+
		"the fault origins' expired and wrong-name certificates (docs/behaviour.md)")
	caKeyFile := flag.String("tls-ca-key", "", "PEM key of --tls-ca")
	controlAddr := flag.String("control-listen", "", "address of the control port (default: --listen), same rule; the network lab puts it where drivers cannot reach")
	maxConns := flag.Int("max-conns", 0, "at most this many client connections open at once (0: no cap)")
	serveOnlyFlag := flag.String("serve-only", "", "serve only connections from this client address, closing any other at once; "+
		"then --listen may be any one address of this host (a bench server on a host of its own, reached across a network)")
	cpuProfile := flag.String("cpuprofile", os.Getenv("CLIENTLAB_SERVER_CPUPROFILE"),
		"write a CPU profile (pprof) to this file from start to exit (env CLIENTLAB_SERVER_CPUPROFILE)")
	memProfile := flag.String("memprofile", os.Getenv("CLIENTLAB_SERVER_MEMPROFILE"),
		"write a heap profile (pprof, allocations included) to this file at exit (env CLIENTLAB_SERVER_MEMPROFILE)")
	qlogDir := flag.String("qlog-dir", os.Getenv("CLIENTLAB_SERVER_QLOGDIR"),
		"write a qlog trace of every HTTP/3 connection into this directory, for diagnosis (env CLIENTLAB_SERVER_QLOGDIR; costs CPU)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: clientlab-server [flags] < SECRET-LINE\n\n"+
			"The first line on stdin is the control port's secret (%d-%d printable ASCII characters), which\n"+
			"every control request must carry in the %s header; the server exits when stdin closes.\n\n",
			minSecret, maxSecret, control.SecretHeader)
		flag.PrintDefaults()
	}
	flag.Parse()
	// Pinned to one core, net/http with a single P serves keep-alive requests several times
	// slower (measured: ~8k vs ~50k req/s); two Ps on one core avoid that.
	if runtime.GOMAXPROCS(0) < 2 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2)
	}
	log.SetPrefix("clientlab-server: ")
	log.SetFlags(0)

	var publicAddr netip.Addr
	var err error
	if *serveOnlyFlag != "" {
		only, perr := netip.ParseAddr(*serveOnlyFlag)
		if perr != nil {
			log.Fatalf("--serve-only %s: not an address", *serveOnlyFlag)
		}
		sockets.SetServeOnly(only)
		publicAddr, err = sockets.AnyOneAddr("--listen", *listen)
	} else {
		publicAddr, err = sockets.ListenAddr("--listen", *listen)
	}
	if err != nil {
		log.Fatal(err)
	}
	controlSet := false
	flag.Visit(func(f *flag.Flag) { controlSet = controlSet || f.Name == "control-listen" })
	controlListen := publicAddr
	if controlSet {
		if controlListen, err = sockets.ListenAddr("--control-listen", *controlAddr); err != nil {
			log.Fatal(err)
		}
	}
	if *qlogDir != "" {
		if err := h3.PrepareQlogDir(*qlogDir); err != nil {
			log.Fatal(err)
		}
		h3.SetQlogDir(*qlogDir)
	}
	var certs *tls.Config
	if *certFile != "" {
		certs = server.TLSConfig(*certFile, *keyFile)
	}
	if *caFile != "" {
		ca, err := tls.LoadX509KeyPair(*caFile, *caKeyFile)
		if err != nil {
			log.Fatalf("cannot load the CA of --tls-ca and --tls-ca-key: %v", err)
		}
		faults.SetCA(&ca)
	}
	// The control secret comes on stdin, never in argv or the environment (which other
	// processes of the user can read in /proc).
	stdin := bufio.NewReader(os.Stdin)
	secret, err := readSecret(stdin)
	if err != nil {
		log.Fatal(err)
	}
	ready, _, err := server.Start(publicAddr, controlListen, certs, *maxConns, secret)
	if err != nil {
		log.Fatal(err)
	}
	stopProfiles := startProfiles(*cpuProfile, *memProfile)
	defer stopProfiles()
	line, _ := json.Marshal(ready)
	fmt.Println(string(line))

	// Never outlive the lab: stop on a signal or when stdin closes.
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, stdin); close(done) }()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-signals:
	case <-done:
	}
	h3.FlushQlogs()
}

// startProfiles starts the CPU profile (when asked) and returns what writes the profiles at exit.
func startProfiles(cpuFile, memFile string) func() {
	var cpu *os.File
	if cpuFile != "" {
		f, err := os.Create(cpuFile)
		if err != nil {
			log.Fatalf("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("--cpuprofile: %v", err)
		}
		cpu = f
	}
	if memFile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if memFile != "" {
			if f, err := os.Create(memFile); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}
}

const (
	minSecret = 16
	maxSecret = 256
)

// readSecret reads the control secret: the first line on stdin.
func readSecret(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", fmt.Errorf("no control secret: the first line on stdin must be the control port's secret (%v)", err)
	}
	secret := strings.TrimRight(line, "\r\n")
	if len(secret) < minSecret || len(secret) > maxSecret {
		return "", fmt.Errorf("the control secret (first line on stdin) must be %d-%d characters, got %d", minSecret, maxSecret, len(secret))
	}
	for _, c := range []byte(secret) {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("the control secret (first line on stdin) must be printable ASCII without spaces")
		}
	}
	return secret, nil
}
