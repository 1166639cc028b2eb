package h2_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/h1"
	"clientlab/server/internal/h2"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/shape"
)

// Our HTTP/2 server answers (status, headers, body) and records (log fields) every request as
// net/http's HTTP/1.1 path does, over TLS and h2c.
func TestHTTP2AnswersAndRecordsAsNetHTTP(t *testing.T) {
	http1 := &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: servertest.NoRedirect}
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true,
		DisableCompression: true}, CheckRedirect: servertest.NoRedirect}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: protocols, DisableCompression: true}, CheckRedirect: servertest.NoRedirect}
	// no connection of ours outlives the test: later tests count the connections open at a reset
	defer http1.CloseIdleConnections()
	defer h2.CloseIdleConnections()
	defer h2c.CloseIdleConnections()
	servertest.Configure(t, `{"record_digests": true}`)
	defer servertest.Configure(t, `{"record_digests": false}`)
	for _, r := range servertest.H2Requests(t) {
		http1.CloseIdleConnections()
		servertest.Reset(t)
		h1.SetOff(true) // the reference: net/http's own HTTP/1.1 handling
		want, wantBody := r.Do(t, http1, servertest.PlainURL)
		h1.SetOff(false)
		wantLog := servertest.Counters(t).Log
		for _, way := range []struct {
			name string
			c    *http.Client
			base string
		}{{"h2", h2, servertest.SecureURL}, {"h2c", h2c, servertest.PlainURL}} {
			way.c.CloseIdleConnections() // a new connection in each trial: its record is listed
			servertest.Reset(t)
			got, gotBody := r.Do(t, way.c, way.base)
			name := fmt.Sprintf("%s %s %s", way.name, r.Method, r.Path)
			if got.ProtoMajor != 2 {
				t.Fatalf("%s: answered over %s", name, got.Proto)
			}
			if got.StatusCode != want.StatusCode || !bytes.Equal(gotBody, wantBody) && r.Path != "/login" {
				t.Errorf("%s: %d %q, net/http %d %q", name, got.StatusCode, servertest.CutText(gotBody), want.StatusCode, servertest.CutText(wantBody))
			}
			for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Location", "Vary"} {
				if got.Header.Get(h) != want.Header.Get(h) && !(h == "Content-Length" && r.Method == "HEAD") {
					t.Errorf("%s: %s %q, net/http %q", name, h, got.Header.Get(h), want.Header.Get(h))
				}
			}
			if (got.Header.Get("Set-Cookie") == "") != (want.Header.Get("Set-Cookie") == "") || got.Header.Get("Date") == "" {
				t.Errorf("%s: Set-Cookie %q / Date %q", name, got.Header.Get("Set-Cookie"), got.Header.Get("Date"))
			}
			s := servertest.Counters(t)
			if len(s.Log) != 1 || len(wantLog) != 1 || s.Requests != 1 || s.Versions["HTTP/2.0"] != 1 || s.Conns[0].Requests != 1 {
				t.Fatalf("%s: %d log entries (net/http %d), %+v", name, len(s.Log), len(wantLog), s.Versions)
			}
			g, w := s.Log[0], wantLog[0]
			if g.Proto != "HTTP/2.0" || g.Reads != 0 || g.HeaderReads != 0 || g.FirstByteNs <= 0 || g.DoneNs < g.FirstByteNs {
				t.Errorf("%s: log entry %+v", name, g)
			}
			w.Conn, w.Proto, w.Reads, w.HeaderReads, w.FirstByteNs, w.LastByteNs, w.MaxReadGapNs, w.DoneNs =
				g.Conn, g.Proto, g.Reads, g.HeaderReads, g.FirstByteNs, g.LastByteNs, g.MaxReadGapNs, g.DoneNs
			if g.CookieOK != nil && w.CookieOK != nil && *g.CookieOK == *w.CookieOK {
				w.CookieOK = g.CookieOK // the same value (the pointers differ)
			}
			if r.Path == "/login" || r.Method == "HEAD" {
				w.RespSHA256, w.RespBodyBytes = g.RespSHA256, g.RespBodyBytes // a new token; net/http's HEAD counts the body it dropped
			}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s: log entry\n%+v\nnet/http's\n%+v", name, g, w)
			}
		}
	}
}

// -- a raw h2c client: frames by hand, to drive flow control and resets ------------------------

// A client with a 100-byte stream window and the default 64 KB connection window still gets
// every byte, small answers (which the hot path leaves to the goroutine path then) and large.
func TestHTTP2HonoursTheClientsFlowControlWindows(t *testing.T) {
	r := servertest.DialRawH2(t, 0x4, 100) // INITIAL_WINDOW_SIZE 100
	defer r.C.Close()
	sizes := map[uint32]int{1: 1024, 3: 200000, 5: 0, 7: 99}
	for id := uint32(1); id <= 7; id += 2 {
		r.Get(id, fmt.Sprintf("/bytes/%d", sizes[id]))
	}
	got := map[uint32][]byte{}
	ended := map[uint32]bool{}
	for len(ended) < len(sizes) {
		typ, flags, id, payload := r.Frame()
		switch typ {
		case h2.FrameData:
			if len(payload) > 100 {
				t.Fatalf("stream %d: a DATA frame of %d bytes in a 100-byte window", id, len(payload))
			}
			got[id] = append(got[id], payload...)
			if len(payload) > 0 { // give back what arrived, stream and connection
				r.Write(h2.AppendWindowUpdate(h2.AppendWindowUpdate(nil, id, uint32(len(payload))), 0, uint32(len(payload))))
			}
		case h2.FrameHeaders:
			fields, err := r.Dec.DecodeFull(payload)
			if err != nil || fields[0].Value != "200" {
				t.Fatalf("stream %d: headers %v %v", id, fields, err)
			}
		case h2.FrameSettings:
			if flags&h2.FlagAck == 0 {
				r.Write(h2.AppendFrameHeader(nil, 0, h2.FrameSettings, h2.FlagAck, 0))
			}
			continue
		case h2.FrameRSTStream, h2.FrameGoAway:
			t.Fatalf("frame %d on stream %d: %x", typ, id, payload)
		}
		if flags&h2.FlagEndStream != 0 && (typ == h2.FrameData || typ == h2.FrameHeaders) {
			ended[id] = true
		}
	}
	for id, n := range sizes {
		var want bytes.Buffer
		shape.WriteBytes(&want, int64(n))
		if !bytes.Equal(got[id], want.Bytes()) {
			t.Errorf("stream %d: %d bytes, want %d (content differs: %v)", id, len(got[id]), n, len(got[id]) == n)
		}
	}
}

// A stream the client resets while its answer waits (delay_ms) ends at once, recorded as a
// client that went away; the connection serves on.
func TestHTTP2StreamResetCancelsItsRequest(t *testing.T) {
	servertest.Reset(t)
	r := servertest.DialRawH2(t)
	defer r.C.Close()
	r.Get(1, "/bytes/10?delay_ms=30000")
	time.Sleep(50 * time.Millisecond)
	rst := h2.AppendFrameHeader(nil, 4, h2.FrameRSTStream, 0, 1)
	r.Write(binary.BigEndian.AppendUint32(rst, h2.ErrCodeCancel))
	r.Get(3, "/bytes/10")
	for {
		typ, flags, id, _ := r.Frame()
		if id == 1 && typ != h2.FrameWindowUpdate {
			t.Fatalf("frame %d on the reset stream", typ)
		}
		if id == 3 && typ == h2.FrameData && flags&h2.FlagEndStream != 0 {
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := servertest.Counters(t)
		if len(s.Log) == 2 {
			if !strings.Contains(s.Log[1].RespWriteError+s.Log[0].RespWriteError, "went away") {
				t.Fatalf("log: %+v", s.Log)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reset request was not recorded: %+v", s.Log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
