//go:build ignore

// The plain loop of go-fasthttp (docs/driver-protocol.md §9): a fasthttp.Client with its
// defaults, and Do with pooled Request/Response objects, as fasthttp's README shows it.
// Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	if len(os.Args) != 5 || (os.Args[3] != "keep-alive" && os.Args[3] != "close") {
		fail("usage: plain URL COUNT keep-alive|close WARMUP_S")
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

	var c fasthttp.Client
	get := func() int {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		if closing {
			req.SetConnectionClose() // Connection: close; the client closes it after the answer
		}
		if err := c.Do(req, resp); err != nil {
			fail("GET %s: %v", url, err)
		}
		if resp.StatusCode() != fasthttp.StatusOK {
			fail("GET %s: status %d", url, resp.StatusCode())
		}
		return len(resp.Body())
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
	fmt.Fprintf(os.Stderr, "plain go-fasthttp: "+format+"\n", args...)
	os.Exit(1)
}
