//go:build ignore

// The plain loop of go-net-http (docs/driver-protocol.md §9): net/http's own client, Get and
// io.ReadAll as its docs show them; close mode is a Transport with DisableKeepAlives.
// Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 5 || (os.Args[3] != "keep-alive" && os.Args[3] != "close") {
		fail("usage: plain URL COUNT keep-alive|close WARMUP_S")
	}
	url := os.Args[1]
	count, err := strconv.Atoi(os.Args[2])
	if err != nil || count < 0 {
		fail("COUNT must be a whole number >= 0, not %q", os.Args[2])
	}
	warmup, err := strconv.ParseFloat(os.Args[4], 64)
	if err != nil || warmup < 0 {
		fail("WARMUP_S must be a number of seconds >= 0, not %q", os.Args[4])
	}

	client := http.DefaultClient
	if os.Args[3] == "close" {
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
	fmt.Fprintf(os.Stderr, "plain go-net-http: "+format+"\n", args...)
	os.Exit(1)
}
