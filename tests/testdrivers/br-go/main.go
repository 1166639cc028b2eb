// Test drivers go-fake-br-careful and go-fake-br-lenient: net/http's client (labhttp's, as
// go-net-http builds it for the job) that asks for br beside gzip and decodes both itself, br with
// andybalholm/brotli. Where the job leaves the coding to the library (accept_encoding =
// "library", the brotli bomb's job) it sends "Accept-Encoding: gzip, br", as a program on this
// client would; where the job names accept_gzip it sends the same, a departure from protocol
// version 1 (gzip alone). careful stops past 64 MiB decoded; lenient decodes all of it into
// memory.
package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"
	"github.com/andybalholm/brotli"
)

const decodedLimit = 64 << 20 // careful's limit on a decoded body

func main() {
	careful := len(os.Args) > 1 && os.Args[1] == "careful"
	lab.Main(lab.Driver{
		Name:     "go-fake-br",
		Options:  labhttp.Options(),
		Versions: labhttp.Versions,
		Open: func(job *lab.Job) (lab.Client, error) {
			hc, err := labhttp.Client(job)
			if err != nil {
				return nil, err
			}
			return &client{job: job, hc: hc, careful: careful}, nil
		},
	})
}

type client struct {
	job     *lab.Job
	hc      *http.Client
	careful bool
}

func (c *client) Close() { c.hc.CloseIdleConnections() }

func (c *client) Do(req *lab.Request) (lab.Response, error) {
	hreq, err := labhttp.NewRequest(c.job, req)
	if err != nil {
		return lab.Response{}, err
	}
	// set by hand, so net/http leaves the body to us, gzip included; this test driver's "library"
	// (accept_encoding = "library") is net/http with a brotli decoder: it asks for both
	if c.job.AcceptGzip || c.job.LibraryEncoding() {
		hreq.Header.Set("Accept-Encoding", "gzip, br")
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return lab.Response{}, err
	}
	defer resp.Body.Close()
	body, err := decoded(resp)
	if err != nil {
		return lab.Response{}, err
	}
	if c.careful {
		body = io.LimitReader(body, decodedLimit+1)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return lab.Response{}, err
	}
	if c.careful && len(data) > decodedLimit {
		return lab.Response{}, fmt.Errorf("the decoded body passed careful's limit of %d MiB", decodedLimit>>20)
	}
	return lab.Memory(c.job, resp.StatusCode, labhttp.Label(resp), data), nil
}

// decoded is the response's body with its Content-Encoding (one coding) undone.
func decoded(resp *http.Response) (io.Reader, error) {
	switch coding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); coding {
	case "", "identity":
		return resp.Body, nil
	case "br":
		return brotli.NewReader(resp.Body), nil
	case "gzip":
		return gzip.NewReader(resp.Body)
	default:
		return nil, fmt.Errorf("unknown Content-Encoding %q", coding)
	}
}
