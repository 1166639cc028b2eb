// Package labhttp builds a job's net/http client, shared by the drivers that run on net/http
// (go-net-http, go-resty): one http.Client with a Transport of its own per job.
package labhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"time"

	lab "clientlab/labdriver"
)

// Client is the job's http.Client: a Transport of its own forced to the job's HTTP version
// (HTTP/1.1; HTTP/2 over TLS, ALPN h2 only; h2c with prior knowledge), no proxy whatever
// the environment says, the job's CA, keep-alive, gzip, cookies, redirects (per request, see
// WithFollow), timeout and options. Nothing is dialled here.
func Client(job *lab.Job) (*http.Client, error) {
	tlsConfig, err := lab.TLSConfig(job)
	if err != nil {
		return nil, err
	}
	protocols := new(http.Protocols)
	switch job.HTTP {
	case "1.1":
		protocols.SetHTTP1(true)
	case "2":
		protocols.SetHTTP2(true) // ALPN offers only h2
		tlsConfig.VerifyConnection = requireH2
	case "h2c":
		protocols.SetUnencryptedHTTP2(true) // http:// URLs: HTTP/2 with prior knowledge
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment, // as http.DefaultTransport; the lab keeps the environment clean
		DialContext:         lab.DialContext(job),
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second, // as http.DefaultTransport
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConns:        100,
		// MaxIdleConnsPerHost stays net/http's default (2), as every program on the default
		// transport has it: a parallel job's other connections close when they come back idle
		// and are opened anew, which the server's counters and the diagnosis show
		MaxConnsPerHost:   job.Options.MaxHostConnections, // 0: no limit
		DisableKeepAlives: !job.KeepAlive,
		// the Transport asks for gzip and decodes it itself unless this is set
		DisableCompression: !job.AcceptGzip,
		Protocols:          protocols,
	}
	if e := job.Options.Expect100; e != nil && *e {
		transport.ExpectContinueTimeout = time.Second // as http.DefaultTransport
	}
	client := &http.Client{Transport: transport, CheckRedirect: CheckRedirect, Timeout: job.Timeout}
	if job.Cookies {
		if client.Jar, err = cookiejar.New(nil); err != nil {
			return nil, err
		}
	}
	return client, nil
}

// requireH2 fails a TLS handshake in which the server did not choose h2, so that an HTTP/2
// job never falls back to HTTP/1.1 on a server that ignores ALPN.
func requireH2(cs tls.ConnectionState) error {
	if cs.NegotiatedProtocol != "h2" {
		return fmt.Errorf("the server did not choose HTTP/2 in ALPN (got %q); no fallback to HTTP/1.1", cs.NegotiatedProtocol)
	}
	return nil
}

type followKey struct{}

// WithFollow marks a request's context: follow redirects (true) or report the 3xx (false).
func WithFollow(ctx context.Context, follow bool) context.Context {
	return context.WithValue(ctx, followKey{}, follow)
}

// CheckRedirect follows redirects, up to net/http's usual 10, only for requests whose context
// says so (WithFollow); the others get their 3xx response as it is.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if follow, _ := req.Context().Value(followKey{}).(bool); !follow {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// Label is the response's HTTP version as the report wants it ("1.0", "1.1", "2").
func Label(resp *http.Response) string {
	return lab.HTTPLabel(resp.ProtoMajor, resp.ProtoMinor)
}
