package faults

// The fault side's second set of origins and resources: the TLS origin s and the dark port
// (faults_redirect.go, faults_connect.go), and the request bodies the ledger measures.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"

	"clientlab/server/internal/sockets"
)

// startMore opens origin s (where the server has a certificate) and the dark port.
func (f *Server) startMore(addr netip.Addr, base *tls.Config) error {
	if base != nil {
		s, err := sockets.Listen(addr)
		if err != nil {
			return fmt.Errorf("cannot listen on %s for the fault origin s: %w", addr, err)
		}
		cfg := base.Clone()
		cfg.NextProtos = []string{"http/1.1"} // the fault origins speak HTTP/1.1 alone
		f.S, f.SConfig = s, cfg
		go f.accept(s, "s")
		h2, err := sockets.Listen(addr)
		if err != nil {
			return fmt.Errorf("cannot listen on %s for the fault origin h2: %w", addr, err)
		}
		cfg = base.Clone()
		cfg.NextProtos = []string{"h2"} // HTTP/2 alone (faults_h2.go)
		f.H2, f.h2Config = h2, cfg
		go f.accept(h2, "h2")
	}
	dark, err := openDark(addr)
	if err != nil {
		return err
	}
	f.Dark = dark
	return f.startTLS(addr, base)
}

func (f *Server) closeMore() {
	if f.S != nil {
		f.S.Close()
	}
	if f.H2 != nil {
		f.H2.Close()
	}
	if f.Dark != nil {
		f.Dark.close()
	}
	f.closeTLS()
}

func (f *Server) morePorts(ports map[string]int) {
	if f.S != nil {
		ports["s"] = sockets.Port(f.S)
	}
	if f.H2 != nil {
		ports["h2"] = sockets.Port(f.H2)
	}
	if f.Dark != nil {
		ports["dark"] = f.Dark.Port()
	}
	f.tlsPorts(ports)
}

// answerMore serves the resources of faults_*.go; false: not one of theirs.
func (f *Server) answerMore(c net.Conn, req *faultRequest, gone <-chan struct{}) bool {
	switch req.path {
	case "/fault/see-other", "/fault/redirect-to-plain":
		f.answerRedirect(c, req)
	case "/fault/gzip-bomb":
		answerBomb(c, req)
	case "/fault/big-header", "/fault/many-headers":
		answerHeaders(c, req)
	case "/fault/br-bomb":
		answerBrBomb(c, req)
	case "/fault/gzip-truncated":
		answerGzipTruncated(c, req)
	default:
		return false
	}
	return true
}

// readFaultBody reads a request's body (Content-Length or chunked) and returns its length.
func readFaultBody(r io.Reader, h textproto.MIMEHeader) (int64, error) {
	if strings.EqualFold(h.Get("Transfer-Encoding"), "chunked") {
		n, err := io.Copy(io.Discard, io.LimitReader(httputil.NewChunkedReader(r), maxFaultBytes+1))
		if err == nil && n > maxFaultBytes {
			err = fmt.Errorf("a request body over %d bytes", maxFaultBytes)
		}
		return n, err
	}
	v := h.Get("Content-Length")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxFaultBytes {
		return 0, fmt.Errorf("Content-Length must be 0 ... %d", maxFaultBytes)
	}
	_, err = io.CopyN(io.Discard, r, n)
	return n, err
}
