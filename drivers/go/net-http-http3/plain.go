//go:build ignore

// The plain loop of go-net-http-http3 (docs/driver-protocol.md §9): with a CA (an https URL on
// the bench server's HTTP/3 port), an http.Client on quic-go's http3.Transport trusting that
// CA, as quic-go's docs show it; without one, net/http's own client (the driver's other
// versions run on net/http's Transport). Get and io.ReadAll, as net/http's docs show them.
// Usage: plain URL COUNT MODE WARMUP_S [CA] (MODE keep-alive or close).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	if len(os.Args) < 5 || len(os.Args) > 6 || (os.Args[3] != "keep-alive" && os.Args[3] != "close") {
		fail("usage: plain URL COUNT keep-alive|close WARMUP_S [CA]")
	}
	url, closing := os.Args[1], os.Args[3] == "close"
	count, err := strconv.Atoi(os.Args[2])
	if err != nil || count < 0 {
		fail("COUNT must be a whole number >= 0, not %q", os.Args[2])
	}
	warmup, err := strconv.ParseFloat(os.Args[4], 64)
	if err != nil || warmup < 0 {
		fail("WARMUP_S must be a number of seconds >= 0, not %q", os.Args[4])
	}

	client := http.DefaultClient
	switch {
	case len(os.Args) == 6:
		if closing {
			fail("quic-go's http3.Transport has no switch for a connection per request (close)")
		}
		pem, err := os.ReadFile(os.Args[5])
		if err != nil {
			fail("%v", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			fail("%s: no PEM certificate in it", os.Args[5])
		}
		transport := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
		defer transport.Close()
		client = &http.Client{Transport: transport}
	case closing:
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.DisableKeepAlives = true
		client = &http.Client{Transport: transport}
	}
	get := func() int {
		resp, err := client.Get(url)
		if err != nil {
			fail("%v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			fail("GET %s: reading the body: %v", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			fail("GET %s: status %d", url, resp.StatusCode)
		}
		return len(body)
	}

	for end := time.Now().Add(time.Duration(warmup * float64(time.Second))); time.Now().Before(end); {
		get()
	}
	total := 0
	start := time.Now()
	for range count {
		total += get()
	}
	seconds := time.Since(start).Seconds()
	fmt.Printf("{\"requests\": %d, \"bytes\": %d, \"seconds\": %.6f}\n", count, total, seconds)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "plain go-net-http-http3: "+format+"\n", args...)
	os.Exit(1)
}
