package faults

// HTTP/2 faults (docs/behaviour.md) on origin h2, a TLS listener that speaks h2 alone, served
// frame by frame: a server that says GOAWAY while the client has streams in flight, and one that
// refuses a stream (RST_STREAM REFUSED_STREAM). Both tell the client that the stream was not
// processed (RFC 9113 §6.8, §8.7), so a client may send it again, on a new connection after a
// GOAWAY; the ledger shows every request with its connection, so a retry is seen.
//
//   /fault/h2-goaway?n=<n>:  a connection's first request gets GOAWAY (its last stream id that
//     request's) and then its answer; every later stream on the connection stays unanswered.
//   /fault/h2-refused?n=<n>: a connection's first request is answered; a later one is refused
//     the first time its n comes on the connection, answered after.

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/sockets"
)

// goAwayLinger is how long a connection that was sent a GOAWAY stays open without a frame.
const goAwayLinger = 2 * time.Second

func (f *Server) serveH2(c net.Conn, port int, h *heldConn) {
	conn := h.Serial
	tc := tls.Server(c, f.h2Config)
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(sockets.HeaderTimeout))
	if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
		return
	}
	r, w := bufio.NewReader(tc), bufio.NewWriter(tc)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(w, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	w.Flush()
	var enc bytesWriter
	henc := hpack.NewEncoder(&enc)
	answer := func(stream uint32, n string) {
		body := "h2 n=" + n + "\n"
		enc.b = enc.b[:0]
		henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		henc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/plain; charset=utf-8"})
		henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: enc.b, EndHeaders: true})
		fr.WriteData(stream, true, []byte(body))
	}
	seq := 0
	var goneAway uint32          // the GOAWAY's last stream id, once sent
	refused := map[string]bool{} // the numbers refused once on this connection
	for {
		wait := sockets.HeaderTimeout
		if goneAway != 0 {
			// After its GOAWAY a server lets the client finish, then closes, as Go's and
			// nginx's do: a client that keeps the gone connection open must not hold it (and
			// the fault origin's count of connections served) for the minute of an idle one.
			wait = goAwayLinger
		}
		tc.SetReadDeadline(time.Now().Add(wait))
		frame, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch fm := frame.(type) {
		case *http2.SettingsFrame:
			if !fm.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !fm.IsAck() {
				fr.WritePing(true, fm.Data)
			}
		case *http2.GoAwayFrame:
			return
		case *http2.MetaHeadersFrame:
			seq++
			target, _ := url.ParseRequestURI(fm.PseudoValue("path"))
			if target == nil {
				fr.WriteRSTStream(fm.StreamID, http2.ErrCodeProtocol)
				break
			}
			n := target.Query().Get("n")
			if target.Path == "/fault/h2-max-streams" && seq == 1 { // the connection is the lowered limit's (faults_h2_limit.go)
				f.serveLoweredLimit(tc, fr, w, answer, h, port, fm.StreamID, fm.PseudoValue("method"), n)
				return
			}
			entry := LedgerEntry{Origin: "h2", Port: port, Method: handlers.Cut(fm.PseudoValue("method")), Path: handlers.Cut(target.Path),
				Credentials: []string{}, N: handlers.Cut(n), Conn: conn, Seq: seq}
			f.Ledger.record(entry)
			h.reading(entry.Method, entry.Path)
			switch {
			case target.Path == "/fault/h2-goaway" && goneAway == 0:
				goneAway = fm.StreamID
				fr.WriteGoAway(goneAway, http2.ErrCodeNo, nil)
				answer(fm.StreamID, n)
			case target.Path == "/fault/h2-goaway": // beyond the GOAWAY: left unanswered, never processed
			case target.Path == "/fault/h2-refused" && seq > 1 && !refused[n]:
				refused[n] = true
				fr.WriteRSTStream(fm.StreamID, http2.ErrCodeRefusedStream)
			default:
				answer(fm.StreamID, n)
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// bytesWriter is the header block being encoded.
type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
