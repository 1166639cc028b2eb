package faults

// TLS faults (docs/behaviour.md): origins whose certificate a client must refuse, in the classes
// badssl.com serves (expired, wrong.host, untrusted-root, self-signed), and one that stalls the
// handshake. Each certificate is minted at start with crypto/x509 (nothing is read from outside),
// for the names of the server's own certificate unless it says otherwise:
//
//	expired:     signed by the CA the jobs trust; it expired thirty days ago;
//	wrong-name:  signed by that CA, valid now, for another host name only;
//	untrusted:   a valid chain, leaf and intermediate, from a root no job trusts;
//	self-signed: the leaf signed by its own key.
//
// The CA the jobs trust (their tls_ca) comes with its key from main's --tls-ca and --tls-ca-key;
// without them the server's own certificate signs where it is a CA (the Go tests'), and where it
// is not, the two origins it would sign are not opened. Each origin is a listener of its own:
// a client connects to the server's address and checks the names as it would for origin s.
//
// A client that refuses a certificate ends the handshake, so no request reaches the ledger. Every
// handshake is an entry of its own (seq 0, its "tls" the outcome: "ok", or the error the server
// saw, often the alert the client sent), and a request after it, on the same connection, shows
// the client took the certificate.
//
// tls-stall accepts the connection, reads the ClientHello and answers nothing, as a server (or a
// middlebox) that hangs in the handshake; it closes when the client goes, or after a minute.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/sockets"
)

// signingCA is the CA the jobs trust, with its key (--tls-ca, --tls-ca-key); nil: none given.
var signingCA atomic.Pointer[tls.Certificate]

// SetCA makes c (with its key) the CA that signs the expired and wrong-name certificates of the
// fault origins started from now on.
func SetCA(c *tls.Certificate) { signingCA.Store(c) }

// CertificateFaults are the origins of a certificate to refuse, in the order they open.
var CertificateFaults = []string{"expired", "wrong-name", "untrusted", "self-signed"}

// WrongHost is the only name in the wrong-name certificate: a reserved name no client asks for.
const WrongHost = "wrong.host.clientlab.invalid"

// startTLS opens the TLS fault origins: tls-stall always; the certificate faults where the
// server has a certificate whose names they copy (and a CA for the two it signs).
func (f *Server) startTLS(addr netip.Addr, base *tls.Config) error {
	f.TLSOrigins = map[string]net.Listener{}
	open := func(name string, cfg *tls.Config) error {
		l, err := sockets.Listen(addr)
		if err != nil {
			return fmt.Errorf("cannot listen on %s for the fault origin %s: %w", addr, name, err)
		}
		f.TLSOrigins[name] = l
		go f.acceptTLS(l, name, cfg)
		return nil
	}
	if err := open("tls-stall", nil); err != nil {
		return err
	}
	if base == nil || len(base.Certificates) == 0 {
		return nil
	}
	certs, err := mintFaultCertificates(base.Certificates[0], signingCA.Load(), time.Now())
	if err != nil {
		return err
	}
	for _, name := range CertificateFaults {
		if cert, ok := certs[name]; ok {
			if err := open(name, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *Server) closeTLS() {
	for _, l := range f.TLSOrigins {
		l.Close()
	}
}

func (f *Server) tlsPorts(ports map[string]int) {
	for name, l := range f.TLSOrigins {
		ports[name] = sockets.Port(l)
	}
}

// mintFaultCertificates makes the certificate of each certificate fault, for the names of the
// certificate the server serves; the expired and wrong-name ones only where a CA signs them: ca,
// or the served certificate itself when it is a CA.
func mintFaultCertificates(served tls.Certificate, ca *tls.Certificate, now time.Time) (map[string]tls.Certificate, error) {
	own, err := x509.ParseCertificate(served.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the server's certificate: %w", err)
	}
	leaf := func(name string, notBefore, notAfter time.Time) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, NotBefore: notBefore, NotAfter: notAfter,
			DNSNames: own.DNSNames, IPAddresses: own.IPAddresses, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	}
	authority := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour),
			NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	}
	valid := func(name string) *x509.Certificate { return leaf(name, now.Add(-time.Hour), now.AddDate(1, 0, 0)) }
	out := map[string]tls.Certificate{}
	issuer := ca
	if issuer == nil && own.IsCA && own.KeyUsage&x509.KeyUsageCertSign != 0 {
		issuer = &served
	}
	if issuer != nil {
		signer, err := issuedBy(issuer)
		if err != nil {
			return nil, err
		}
		expired := leaf("clientlab expired", now.AddDate(0, 0, -60), now.AddDate(0, 0, -30))
		wrong := valid(WrongHost)
		wrong.DNSNames, wrong.IPAddresses = []string{WrongHost}, nil
		for name, tmpl := range map[string]*x509.Certificate{"expired": expired, "wrong-name": wrong} {
			made, err := signer.sign(tmpl)
			if err != nil {
				return nil, fmt.Errorf("minting the %s certificate: %w", name, err)
			}
			out[name] = made.Certificate
		}
	}
	root, err := selfSigned(authority("clientlab untrusted root"))
	if err != nil {
		return nil, fmt.Errorf("minting the untrusted root: %w", err)
	}
	middle := authority("clientlab untrusted intermediate")
	middle.MaxPathLenZero = true
	intermediate, err := root.sign(middle)
	var untrusted *minted
	if err == nil {
		untrusted, err = intermediate.sign(valid("clientlab untrusted"))
	}
	if err != nil {
		return nil, fmt.Errorf("minting the untrusted chain: %w", err)
	}
	out["untrusted"] = untrusted.Certificate
	self, err := selfSigned(valid("clientlab self-signed"))
	if err != nil {
		return nil, fmt.Errorf("minting the self-signed certificate: %w", err)
	}
	out["self-signed"] = self.Certificate
	return out, nil
}

// minted is a certificate with its key, which can sign others; its chain goes with them.
type minted struct {
	tls.Certificate
	cert *x509.Certificate
}

func issuedBy(ca *tls.Certificate) (*minted, error) {
	cert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the CA's certificate: %w", err)
	}
	// the CA itself is the trust anchor: a leaf it signs is served alone
	return &minted{tls.Certificate{Certificate: [][]byte{ca.Certificate[0]}, PrivateKey: ca.PrivateKey}, cert}, nil
}

// sign mints a certificate from tmpl, signed by m, with a key of its own; it is served with m's
// chain below the trust anchor (none when m is a root).
func (m *minted) sign(tmpl *x509.Certificate) (*minted, error) {
	made, err := mint(tmpl, m.cert, m.PrivateKey)
	if err != nil {
		return nil, err
	}
	if m.cert.Subject.String() != m.cert.Issuer.String() { // an intermediate: sent along
		made.Certificate.Certificate = append(made.Certificate.Certificate, m.Certificate.Certificate...)
	}
	return made, nil
}

func selfSigned(tmpl *x509.Certificate) (*minted, error) { return mint(tmpl, nil, nil) }

// mint signs tmpl with parentKey as parent (itself, when parent is nil) over a new P-256 key.
func mint(tmpl, parent *x509.Certificate, parentKey any) (*minted, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126)); err != nil {
		return nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &minted{tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert}, nil
}

// acceptTLS serves a TLS fault origin: its certificate (cfg), or the stalled handshake (nil).
func (f *Server) acceptTLS(l net.Listener, origin string, cfg *tls.Config) {
	f.acceptEach(l, origin, func(c net.Conn, h *heldConn) {
		if cfg == nil {
			f.stallHandshake(c, origin, sockets.Port(l), h.Serial)
			return
		}
		f.serveCertificate(c, origin, sockets.Port(l), cfg, h)
	})
}

// serveCertificate records the handshake's outcome, then serves the requests of a client that
// took the certificate, as origin a serves them.
func (f *Server) serveCertificate(c net.Conn, origin string, port int, cfg *tls.Config, h *heldConn) {
	conn := h.Serial
	tc := tls.Server(c, cfg)
	tc.SetDeadline(time.Now().Add(sockets.HeaderTimeout))
	outcome := "ok"
	err := tc.Handshake()
	if err != nil {
		outcome = handshakeError(err)
	}
	f.Ledger.record(LedgerEntry{Origin: origin, Port: port, Credentials: []string{}, Conn: conn, TLS: handlers.Cut(outcome)})
	if err != nil {
		return
	}
	tc.SetDeadline(time.Time{})
	f.serveOn(tc, origin, port, h)
}

// handshakeError is what the server saw of a failed handshake, without the addresses: the alert
// the client sent ("remote error: tls: bad certificate"), or how the connection ended.
func handshakeError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	if errors.Is(err, io.EOF) {
		return "the client closed the connection in the handshake (EOF)"
	}
	return err.Error()
}

// stallHandshake reads the client's first TLS record (its ClientHello) and answers nothing.
func (f *Server) stallHandshake(c net.Conn, origin string, port int, conn int64) {
	c.SetReadDeadline(time.Now().Add(sockets.HeaderTimeout))
	var head [5]byte // a TLS record's header: type, version, length
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return
	}
	length := int64(head[3])<<8 | int64(head[4])
	if _, err := io.CopyN(io.Discard, c, length); err != nil {
		return
	}
	what := "a ClientHello"
	if head[0] != 22 { // not a handshake record
		what = fmt.Sprintf("a TLS record of type %d", head[0])
	}
	f.Ledger.record(LedgerEntry{Origin: origin, Port: port, Credentials: []string{}, Conn: conn,
		TLS: fmt.Sprintf("stalled: %s of %d bytes read, nothing answered", what, 5+length)})
	c.SetReadDeadline(time.Now().Add(maxFaultWaitMs * time.Millisecond))
	io.Copy(io.Discard, c) // until the client goes, or the wait ends
}
