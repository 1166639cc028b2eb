package labhttp

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	lab "clientlab/labdriver"
)

// serve starts a test server speaking the given protocols; secure adds a certificate and
// returns the CA file to trust. Every answer names the protocol; /r redirects to /.
func serve(t *testing.T, secure bool, protocols func(*http.Protocols)) (*httptest.Server, string, *atomic.Int32) {
	conns := new(atomic.Int32)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/r" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		io.WriteString(w, r.Proto)
	}))
	ts.Config.Protocols = new(http.Protocols)
	protocols(ts.Config.Protocols)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if !secure {
		ts.Start()
		return ts, "", conns
	}
	ts.EnableHTTP2 = ts.Config.Protocols.HTTP2()
	if !ts.EnableHTTP2 && !ts.Config.Protocols.HTTP1() { // neither: a server that ignores ALPN
		ts.TLS = &tls.Config{NextProtos: []string{}}
	}
	ts.StartTLS()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(ca, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Close)
	return ts, ca, conns
}

// get does one GET; follow is the entry's follow_redirects (nil: absent).
func get(t *testing.T, c *http.Client, url string, follow *bool) (int, string, string, error) {
	req, _ := http.NewRequestWithContext(Context(&lab.Request{FollowRedirects: follow}), "GET", url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, Label(resp), string(body), nil
}

func TestVersionsAreForced(t *testing.T) {
	h1 := func(p *http.Protocols) { p.SetHTTP1(true) }
	both := func(p *http.Protocols) { p.SetHTTP1(true); p.SetHTTP2(true) }
	h2c := func(p *http.Protocols) { p.SetUnencryptedHTTP2(true) }
	noALPN := func(p *http.Protocols) {}
	for _, c := range []struct {
		name, http string
		tls        bool
		server     func(*http.Protocols)
		want       string // the version seen, or "" for an error (no fallback)
	}{
		{"1.1 over TLS to an h2 server", "1.1", true, both, "1.1"},
		{"h2 over TLS", "2", true, both, "2"},
		{"h2 to an HTTP/1.1-only TLS server", "2", true, h1, ""},
		{"h2 to a TLS server that ignores ALPN", "2", true, noALPN, ""},
		{"h2c prior knowledge", "h2c", false, h2c, "2"},
		{"h2c to an HTTP/1.1-only server", "h2c", false, h1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, ca, _ := serve(t, c.tls, c.server)
			defer ts.Close()
			client, err := Client(&lab.Job{HTTP: c.http, TLSCA: ca, KeepAlive: true, Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer client.CloseIdleConnections()
			_, version, _, err := get(t, client, ts.URL+"/", nil)
			if c.want == "" && err == nil {
				t.Fatalf("no error: fell back to HTTP/%s", version)
			}
			t.Logf("version %q, error %v", version, err)
			if c.want != "" && (err != nil || version != c.want) {
				t.Fatalf("version %q, error %v", version, err)
			}
		})
	}
}

func TestRedirectsKeepAliveAndGzipSettings(t *testing.T) {
	ts, _, conns := serve(t, false, func(p *http.Protocols) { p.SetHTTP1(true) })
	defer ts.Close()
	yes, no := true, false
	for _, keepAlive := range []bool{true, false} {
		conns.Store(0)
		job := &lab.Job{HTTP: "1.1", KeepAlive: keepAlive, Concurrency: 1,
			Requests: []*lab.Request{{FollowRedirects: &no}, {FollowRedirects: &yes}, {}}}
		client, err := Client(job)
		if err != nil {
			t.Fatal(err)
		}
		status, _, _, err := get(t, client, ts.URL+"/r", &no)
		if err != nil || status != http.StatusFound {
			t.Fatalf("not following: %d %v", status, err)
		}
		for _, follow := range []*bool{&yes, nil} { // absent: net/http's own policy follows
			status, _, body, err := get(t, client, ts.URL+"/r", follow)
			if err != nil || status != http.StatusOK || !strings.HasPrefix(body, "HTTP/1.1") {
				t.Fatalf("following (%v): %d %q %v", follow, status, body, err)
			}
		}
		client.CloseIdleConnections()
		if want := map[bool]int32{true: 1, false: 5}[keepAlive]; conns.Load() != want {
			t.Errorf("keep_alive=%v: %d connections for 5 requests", keepAlive, conns.Load())
		}
		if tr := client.Transport.(*http.Transport); !tr.DisableCompression || tr.Proxy == nil {
			t.Errorf("without accept_gzip the transport must ask for no coding, and read proxies as net/http's default does")
		}
	}
}

func TestWhatTheJobDoesNotNameStaysNetHTTPs(t *testing.T) {
	yes := true
	client, err := Client(&lab.Job{HTTP: "1.1", KeepAlive: true, Concurrency: 4, AcceptGzip: true,
		Requests: []*lab.Request{{}, {FollowRedirects: &yes}}})
	if err != nil {
		t.Fatal(err)
	}
	if client.CheckRedirect != nil || client.Jar != nil {
		t.Errorf("no entry asks for its 3xx and no cookies: CheckRedirect and Jar must stay nil")
	}
	tr, def := client.Transport.(*http.Transport), http.DefaultTransport.(*http.Transport)
	if tr.MaxIdleConnsPerHost != 0 || tr.MaxConnsPerHost != 0 || tr.MaxIdleConns != def.MaxIdleConns ||
		tr.IdleConnTimeout != def.IdleConnTimeout || tr.TLSHandshakeTimeout != def.TLSHandshakeTimeout ||
		tr.ExpectContinueTimeout != def.ExpectContinueTimeout || tr.DisableCompression || tr.DisableKeepAlives ||
		tr.Proxy == nil || tr.DialContext == nil || tr.ForceAttemptHTTP2 != def.ForceAttemptHTTP2 {
		t.Errorf("a setting the job does not name differs from http.DefaultTransport: %+v", tr)
	}
}

// net/http has no HTTP/3: an HTTP/3 job is refused, never run over another version.
func TestHTTP3JobIsRefusedByNetHTTP(t *testing.T) {
	_, err := Client(&lab.Job{HTTP: "3", KeepAlive: true, Concurrency: 1})
	var u *lab.UnsupportedError
	if !errors.As(err, &u) {
		t.Fatalf("an HTTP/3 job on net/http: %v, want unsupported", err)
	}
}
