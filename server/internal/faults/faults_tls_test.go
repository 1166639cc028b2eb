package faults_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// tlsLedger waits for the ledger to hold at least want entries, and returns them and the counts
// of requests a path (emptied).
func tlsLedger(t *testing.T, want int) ([]faults.LedgerEntry, map[string]int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if entries, _, _ := servertest.Faults.Ledger.Snapshot(false); len(entries) >= want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	entries, counts, _ := faultLedger(t)
	return entries, counts
}

func faultURL(origin string) string {
	return fmt.Sprintf("https://127.0.0.1:%d/fault/landing", sockets.Port(servertest.Faults.TLSOrigins[origin]))
}

// A client that checks certificates (Go's, trusting the CA the jobs trust) refuses each one for
// its own reason, and no request reaches the server: the ledger has the failed handshake alone.
func TestEachCertificateFaultIsRefusedByAVerifyingClientAndNoRequestArrives(t *testing.T) {
	for origin, reason := range map[string]string{"expired": "expired", "wrong-name": "doesn't contain any IP SANs",
		"untrusted": "unknown authority", "self-signed": "unknown authority"} {
		t.Run(origin, func(t *testing.T) {
			own := freshFaults(t)
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}}, Timeout: 30 * time.Second}
			resp, err := client.Get(faultURL(origin))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("the certificate was taken: %s", resp.Status)
			}
			if !strings.Contains(err.Error(), "x509: ") || !strings.Contains(err.Error(), reason) {
				t.Fatalf("error %v; want one naming the certificate (%q)", err, reason)
			}
			entries, counts := tlsLedger(t, 1)
			if len(counts) != 0 {
				t.Fatalf("a handshake counted as a request: %v", counts)
			}
			if len(entries) != 1 || entries[0].Origin != origin || entries[0].Path != "" || entries[0].TLS == "ok" || entries[0].TLS == "" {
				t.Fatalf("ledger %+v: want the failed handshake alone", entries)
			}
			client.CloseIdleConnections()
			own.waitReleased(t)
		})
	}
}

// A client that does not check gets through: the handshake is "ok", and its request is in the
// ledger on the same connection, so a cell can tell a client that took the certificate.
func TestAClientThatTakesAnyCertificateGetsItsAnswerAndTheLedgerShowsIt(t *testing.T) {
	for _, origin := range faults.CertificateFaults {
		t.Run(origin, func(t *testing.T) {
			faultLedger(t)
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
				Timeout: 30 * time.Second}
			resp, err := client.Get(faultURL(origin) + "?n=1")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			client.CloseIdleConnections()
			if string(body) != "landed\n" {
				t.Fatalf("body %q", body)
			}
			entries, _ := tlsLedger(t, 2)
			if len(entries) != 2 || entries[0].TLS != "ok" || entries[0].Seq != 0 || entries[1].Path != "/fault/landing" ||
				entries[1].N != "1" || entries[1].Conn != entries[0].Conn || entries[1].Seq != 1 {
				t.Fatalf("ledger %+v", entries)
			}
		})
	}
}

// Each certificate fails for its one reason alone: the expired one verifies at a time it was
// valid, the wrong-name one for its own name, the untrusted chain against its own root's
// intermediate, the self-signed one against itself.
func TestEachCertificateFaultIsOtherwiseValid(t *testing.T) {
	chain := func(origin string) []*x509.Certificate {
		c, err := tls.Dial("tcp", servertest.Faults.TLSOrigins[origin].Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates
	}
	ca, err := x509.ParseCertificate(servertest.Faults.SConfig.Certificates[0].Certificate[0]) // the tests' CA is the server's certificate
	if err != nil {
		t.Fatal(err)
	}
	expired := chain("expired")
	if err := expired[0].CheckSignatureFrom(ca); err != nil || expired[0].VerifyHostname("127.0.0.1") != nil ||
		!time.Now().After(expired[0].NotAfter) {
		t.Fatalf("expired: signature %v, names %v, valid until %v", err, expired[0].VerifyHostname("127.0.0.1"), expired[0].NotAfter)
	}
	wrong := chain("wrong-name")
	if _, err := wrong[0].Verify(x509.VerifyOptions{Roots: servertest.Roots, DNSName: faults.WrongHost}); err != nil {
		t.Fatalf("wrong-name for its own name: %v", err)
	}
	untrusted := chain("untrusted")
	if len(untrusted) != 2 || untrusted[1].CheckSignatureFrom(untrusted[1]) == nil || !untrusted[1].IsCA {
		t.Fatalf("untrusted: want a leaf and its intermediate (not a root), got %d certificates", len(untrusted))
	}
	own := x509.NewCertPool()
	own.AddCert(untrusted[1])
	if _, err := untrusted[0].Verify(x509.VerifyOptions{Roots: own, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("untrusted, from its intermediate: %v", err)
	}
	self := chain("self-signed")
	if len(self) != 1 || self[0].CheckSignature(self[0].SignatureAlgorithm, self[0].RawTBSCertificate, self[0].Signature) != nil ||
		self[0].IsCA {
		t.Fatalf("self-signed: %d certificates, CA %v", len(self), self[0].IsCA)
	}
	if err := self[0].VerifyHostname("127.0.0.1"); err != nil {
		t.Fatalf("self-signed names: %v", err)
	}
	tlsLedger(t, 4) // the four handshakes, emptied
}

// The stalled handshake reads the ClientHello and says nothing; a client that gives up leaves
// no connection served.
func TestTheStalledHandshakeReadsTheClientHelloAndAnswersNothing(t *testing.T) {
	own := freshFaults(t)
	raw, err := net.Dial("tcp", servertest.Faults.TLSOrigins["tls-stall"].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{RootCAs: servertest.Roots, ServerName: "127.0.0.1"})
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	err = c.Handshake()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("handshake: %v; want a timeout", err)
	}
	entries, _ := tlsLedger(t, 1)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].TLS, "stalled: a ClientHello of ") {
		t.Fatalf("ledger %+v", entries)
	}
	raw.Close()
	own.waitReleased(t)
}

func TestTheTLSFaultOriginsAreInTheListeningLine(t *testing.T) {
	ports := servertest.Faults.Ports()
	for _, origin := range append([]string{"tls-stall"}, faults.CertificateFaults...) {
		if ports[origin] == 0 {
			t.Errorf("no port for %s in %v", origin, ports)
		}
	}
}
