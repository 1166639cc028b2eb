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
	"runtime"

	lab "clientlab/labdriver"
)

// Options are the job options net/http's Transport honours exactly: tcp_nodelay (set on every
// dialled connection), max_host_connections (MaxConnsPerHost) and expect_100 (the Expect header
// with ExpectContinueTimeout: net/http never sends it itself).
func Options() map[string][]any {
	return map[string][]any{"tcp_nodelay": nil, "max_host_connections": nil, "expect_100": nil,
		"accept_encoding": {"library"}}
}

// Versions names net/http's version: the Go release's own.
func Versions() map[string]string { return map[string]string{"net/http": runtime.Version()} }

// Client is the job's http.Client: a clone of net/http's DefaultTransport (what a program on
// the default client gets) with what the job names set on it (Configure), the job's timeout (0, none, when it names none), a
// cookie jar when the job keeps cookies, and a redirect policy only when an entry asks for its
// 3xx (RedirectPolicy). Nothing is dialled here.
func Client(job *lab.Job) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if err := Configure(job, transport); err != nil {
		return nil, err
	}
	client := &http.Client{Transport: transport, CheckRedirect: RedirectPolicy(job), Timeout: job.Timeout}
	if job.Cookies {
		jar, err := cookiejar.New(nil)
		if err != nil {
			return nil, err
		}
		client.Jar = jar
	}
	return client, nil
}

// Configure sets on `transport` what the job names and nothing else: Protocols forced to the
// job's version (HTTP/1.1; HTTP/2 over TLS, ALPN h2 only; h2c with prior knowledge), the job's
// CA, keep-alive, gzip, max_host_connections and tcp_nodelay. Every other field (proxies from
// the environment, dial and TLS handshake timeouts, idle connections: MaxIdleConnsPerHost 0
// is net/http's 2 a host) stays as the transport has it.
func Configure(job *lab.Job, transport *http.Transport) error {
	tlsConfig, err := lab.TLSConfig(job)
	if err != nil {
		return err
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
	default:
		return lab.Unsupported("net/http's Transport does not speak HTTP/%s", job.HTTP)
	}
	transport.Protocols = protocols
	transport.TLSClientConfig = tlsConfig
	transport.DisableKeepAlives = !job.KeepAlive
	// the Transport asks for gzip and decodes it itself unless this is set; left to the library
	// (accept_encoding = "library"), it does as it ships: asks for gzip and decodes it
	transport.DisableCompression = !job.AcceptGzip && !job.LibraryEncoding()
	if n := job.Options.MaxHostConnections; n > 0 {
		transport.MaxConnsPerHost = n
	}
	if job.Options.TCPNoDelay != nil {
		transport.DialContext = lab.NoDelayDialer(job, transport.DialContext)
	}
	return nil
}

// requireH2 fails a TLS handshake in which the server did not choose h2, so that an HTTP/2
// job never falls back to HTTP/1.1 on a server that ignores ALPN.
func requireH2(cs tls.ConnectionState) error {
	if cs.NegotiatedProtocol != "h2" {
		return fmt.Errorf("the server did not choose HTTP/2 in ALPN (got %q); no fallback to HTTP/1.1", cs.NegotiatedProtocol)
	}
	return nil
}

type noFollowKey struct{}

// Context is the context for one request: context.Background, marked when the entry asks for
// its 3xx (follow_redirects false) so that CheckRedirect stops there.
func Context(req *lab.Request) context.Context {
	if req.NoFollow() {
		return context.WithValue(context.Background(), noFollowKey{}, true)
	}
	return context.Background()
}

// RedirectPolicy is the http.Client's CheckRedirect for the job: nil (net/http's own policy:
// follow up to 10) unless an entry asks for its 3xx, then CheckRedirect.
func RedirectPolicy(job *lab.Job) func(*http.Request, []*http.Request) error {
	for _, r := range job.Requests {
		if r.NoFollow() {
			return CheckRedirect
		}
	}
	return nil
}

// CheckRedirect answers the 3xx itself for requests whose context says so (Context) and follows
// the others as net/http's own policy does (up to 10).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if noFollow, _ := req.Context().Value(noFollowKey{}).(bool); noFollow {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects") // net/http's own message
	}
	return nil
}

// Label is the response's HTTP version as the report wants it ("1.0", "1.1", "2").
func Label(resp *http.Response) string {
	return lab.HTTPLabel(resp.ProtoMajor, resp.ProtoMinor)
}
