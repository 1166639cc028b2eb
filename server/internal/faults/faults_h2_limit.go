package faults

// MAX_CONCURRENT_STREAMS lowered mid-run (docs/behaviour.md), on origin h2:
// /fault/h2-max-streams?n=<n>. A connection whose first request is this one gets, with that
// request in flight, a SETTINGS frame lowering MAX_CONCURRENT_STREAMS from 100 to 1, and a PING
// after it: the client answers the PING once it has taken the SETTINGS (a peer handles frames
// in order), so from that answer on a stream opened while another is unanswered is the
// client's, over the limit it knows. Such a stream is refused (RST_STREAM REFUSED_STREAM, RFC
// 9113 §5.1.2: a stream over the advertised limit is a stream error of that kind) and its ledger
// entry says "refused"; no request is processed twice by the server. Streams opened before the
// client knew are let finish, as RFC 9113 §6.5.2 allows. The server answers the streams it took
// one at a time, one every h2LimitPace, starting a pace after the client knows the limit (or a
// second after the SETTINGS, when it does not say), so that the client has streams in flight when
// the limit falls and requests waiting after it: a client keeps to the limit by queueing them,
// or by opening another connection.

import (
	"bufio"
	"crypto/tls"
	"net/url"
	"time"

	"golang.org/x/net/http2"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/sockets"
)

const (
	h2LimitPace    = 50 * time.Millisecond // one answer every pace
	h2LimitWaitAck = time.Second           // answer anyway when the PING's answer does not come
)

var H2LimitPing = [8]byte{'l', 'o', 'w', 'e', 'r', 'e', 'd', '1'}

// h2Event is what the limit's reader passes on of a frame (a frame's memory is the framer's,
// reused by its next read).
type h2Event struct {
	err            error
	settings, ack  bool
	ping           bool
	data           [8]byte
	headers        bool
	stream         uint32
	method, target string
	rst, goaway    bool
}

func readH2Event(tc *tls.Conn, fr *http2.Framer) h2Event {
	tc.SetReadDeadline(time.Now().Add(sockets.HeaderTimeout))
	frame, err := fr.ReadFrame()
	if err != nil {
		return h2Event{err: err}
	}
	switch fm := frame.(type) {
	case *http2.SettingsFrame:
		return h2Event{settings: true, ack: fm.IsAck()}
	case *http2.PingFrame:
		return h2Event{ping: true, ack: fm.IsAck(), data: fm.Data}
	case *http2.MetaHeadersFrame:
		return h2Event{headers: true, stream: fm.StreamID, method: fm.PseudoValue("method"), target: fm.PseudoValue("path")}
	case *http2.RSTStreamFrame:
		return h2Event{rst: true, stream: fm.StreamID}
	case *http2.GoAwayFrame:
		return h2Event{goaway: true}
	}
	return h2Event{}
}

type h2Pending struct {
	stream uint32
	n      string
}

// serveLoweredLimit takes over an h2 connection from serveH2 at its first request, the limit's.
func (f *Server) serveLoweredLimit(tc *tls.Conn, fr *http2.Framer, w *bufio.Writer, answer func(uint32, string),
	h *heldConn, port int, first uint32, method, n string) {
	record := func(seq int, method, path, n string, refused bool) {
		f.Ledger.record(LedgerEntry{Origin: "h2", Port: port, Method: handlers.Cut(method), Path: handlers.Cut(path), Credentials: []string{},
			N: handlers.Cut(n), Conn: h.Serial, Seq: seq, Refused: refused})
		h.reading(handlers.Cut(method), handlers.Cut(path))
	}
	record(1, method, "/fault/h2-max-streams", n, false)
	pending := []h2Pending{{first, n}}
	const limit = 1
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: limit})
	fr.WritePing(false, H2LimitPing)
	if w.Flush() != nil {
		return
	}
	lowered := time.Now()
	var informed bool
	var informedAt time.Time

	events := make(chan h2Event)
	done := make(chan struct{})
	defer close(done)
	h.goServe(func() {
		for {
			ev := readH2Event(tc, fr)
			select {
			case events <- ev:
			case <-done:
				return
			}
			if ev.err != nil {
				return
			}
		}
	})
	pace := time.NewTicker(h2LimitPace)
	defer pace.Stop()
	seq := 1
	for {
		select {
		case ev := <-events:
			switch {
			case ev.err != nil, ev.goaway:
				return
			case ev.settings && !ev.ack:
				fr.WriteSettingsAck()
			case ev.ping && !ev.ack:
				fr.WritePing(true, ev.data)
			case ev.ping && ev.data == H2LimitPing:
				informed, informedAt = true, time.Now()
			case ev.rst:
				for i, p := range pending {
					if p.stream == ev.stream {
						pending = append(pending[:i], pending[i+1:]...)
						break
					}
				}
			case ev.headers:
				seq++
				target, _ := url.ParseRequestURI(ev.target)
				if target == nil {
					fr.WriteRSTStream(ev.stream, http2.ErrCodeProtocol)
					break
				}
				n := target.Query().Get("n")
				over := informed && len(pending) >= limit
				record(seq, ev.method, target.Path, n, over)
				if over {
					fr.WriteRSTStream(ev.stream, http2.ErrCodeRefusedStream)
				} else {
					pending = append(pending, h2Pending{ev.stream, n})
				}
			}
		case <-pace.C:
			due := informed && time.Since(informedAt) >= h2LimitPace || !informed && time.Since(lowered) > h2LimitWaitAck
			if len(pending) == 0 || !due {
				continue
			}
			answer(pending[0].stream, pending[0].n)
			pending = pending[1:]
		}
		if w.Flush() != nil {
			return
		}
	}
}
