// clientlab driver go-net-http-http3: net/http's http.Client, on quic-go's http3.Transport for
// HTTP/3 jobs and on net/http's own Transport (as go-net-http) for the others.
package main

import (
	"net/http"
	"net/http/cookiejar"
	"strings"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	lab.Main(lab.Driver{
		Name: "go-net-http-http3",
		// honoured on net/http's Transport only; an HTTP/3 job that sets one is refused (h3Client)
		Options:  labhttp.Options(),
		Versions: labhttp.Versions,
		Open: func(job *lab.Job) (lab.Client, error) {
			var hc *http.Client
			var err error
			if job.HTTP == "3" {
				hc, err = h3Client(job)
			} else {
				hc, err = labhttp.Client(job)
			}
			if err != nil {
				return nil, err
			}
			return &client{labhttp.Caller{Job: job, HC: hc}}, nil
		},
	})
}

// h3Client is the job's http.Client on its own http3.Transport: only HTTP/3 (ALPN h3 over
// QUIC, never another version), the job's CA, gzip only when asked; everything else as
// quic-go ships it (one QUIC connection a host, reused).
func h3Client(job *lab.Job) (*http.Client, error) {
	if reason := h3Refusal(job); reason != "" {
		return nil, lab.Unsupported("%s", reason)
	}
	tlsConfig, err := lab.TLSConfig(job)
	if err != nil {
		return nil, err
	}
	transport := &http3.Transport{TLSClientConfig: tlsConfig, DisableCompression: !job.AcceptGzip && !job.LibraryEncoding()}
	client := &http.Client{Transport: transport, CheckRedirect: labhttp.RedirectPolicy(job), Timeout: job.Timeout}
	if job.Cookies {
		if client.Jar, err = cookiejar.New(nil); err != nil {
			return nil, err
		}
	}
	return client, nil
}

// h3Refusal names what quic-go's http3.Transport cannot do as the job asks ("" when it can).
func h3Refusal(job *lab.Job) string {
	switch {
	case !job.KeepAlive:
		return "quic-go's http3.Transport has no switch for a connection per request (keep_alive false)"
	case job.Options.TCPNoDelay != nil:
		return "tcp_nodelay: HTTP/3 runs over UDP"
	case job.Options.MaxHostConnections > 0:
		return "max_host_connections: quic-go's http3.Transport keeps one connection a host"
	case job.Options.Expect100 != nil && *job.Options.Expect100:
		return "expect_100: quic-go's http3.Transport sends the body without waiting for 100 Continue"
	}
	for _, r := range job.Requests {
		if !strings.HasPrefix(r.URL, "https://") {
			return "HTTP/3 needs https URLs"
		}
	}
	return ""
}

type client struct{ labhttp.Caller }

// Close ends the job's connections: an http3.Transport closes its QUIC connections (it has
// no idle pool to drain), net/http's Transport its idle ones.
func (c *client) Close() {
	if t, ok := c.HC.Transport.(*http3.Transport); ok {
		t.Close()
		return
	}
	c.HC.CloseIdleConnections()
}
