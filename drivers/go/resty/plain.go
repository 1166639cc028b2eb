//go:build ignore

// The plain loop of go-resty (docs/driver-protocol.md §9): one resty.New() client, R().Get and
// Body() as resty's README shows them; close mode turns keep-alives off on resty's own
// Transport (as the driver does for keep_alive false).
// Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/go-resty/resty/v2"
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

	client := resty.New()
	if os.Args[3] == "close" {
		transport, ok := client.GetClient().Transport.(*http.Transport)
		if !ok {
			fail("resty.New built no *http.Transport")
		}
		transport.DisableKeepAlives = true
	}
	get := func() int {
		resp, err := client.R().Get(url)
		if err != nil {
			fail("%v", err)
		}
		if resp.StatusCode() != http.StatusOK {
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
	fmt.Fprintf(os.Stderr, "plain go-resty: "+format+"\n", args...)
	os.Exit(1)
}
