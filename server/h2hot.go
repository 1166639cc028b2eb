package main

// The HTTP/2 hot path: GET /bytes/{n} (canonical digits, no query, n up to one frame) answered
// by the connection's reader itself, in the same flush as the other answers of that read, and
// recorded as serveHTTP records it.

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"
)

const h2HotMax = h2MaxFrame // larger answers go through the goroutine path (windows, frames)

// answerHot answers a GET without a body when the hot path can; it reports whether it did.
func (c *h2conn) answerHot(id uint32, path string, regular int) bool {
	rest, ok := strings.CutPrefix(path, "/bytes/")
	if !ok {
		return false
	}
	n, ok := canonicalNumber([]byte(rest), 6)
	if !ok || n > h2HotMax {
		return false
	}
	if regular > 0 {
		for _, f := range c.fields {
			if f.Name == "expect" {
				return false // logged as expect_continue by serveHTTP
			}
		}
	}
	t := current.Load()
	t.answering.Add(1) // until recorded: see trial.settle
	defer t.answering.Add(-1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sendWindow < n || c.initWindow < n || c.werr != nil || len(c.streams) >= h2MaxStreams {
		return false
	}
	tc := c.tc
	if tc.trialID != t.id {
		t.carried(tc) // a connection kept from an earlier trial (job)
	}
	now := time.Now()
	e := LogEntry{Conn: tc.rec.id, Method: "GET", Path: path, Proto: "HTTP/2.0",
		Status: 200, RespBodyBytes: n, FormKind: "none", FirstByteNs: t.since(now)}
	body := block[:n]
	if recordDigests.Load() {
		sum := sha256.Sum256(body)
		e.RespSHA256 = hex.EncodeToString(sum[:])
	}
	c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	if minimalHeads.Load() {
		c.enc.WriteField(hpack.HeaderField{Name: "content-length", Value: contentLengthText(n)})
		c.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/octet-stream"})
		c.enc.WriteField(hpack.HeaderField{Name: "date", Value: dateText(now)})
	} else {
		// nginx's HTTP/2 block for a file, in its order, every field whole (shape.go)
		c.encBuf.Write(appendH2Static(c.encBuf.AvailableBuffer(), n, now))
	}
	if v := altSvc.Load(); v != nil && c.tls != nil {
		if minimalHeads.Load() {
			c.enc.WriteField(hpack.HeaderField{Name: "alt-svc", Value: *v}) // as advertiseH3
		} else {
			c.encBuf.Write(appendH2AltSvc(c.encBuf.AvailableBuffer(), *v))
		}
		t.offeredH3()
	}
	var flags byte = flagEndStream
	if n > 0 {
		flags = 0
	}
	c.appendHeadersLocked(id, flags != 0)
	if n > 0 {
		c.out = appendFrameHeader(c.out, int(n), frameData, flagEndStream, id)
		c.out = append(c.out, body...)
		c.sendWindow -= n
	}
	tc.rec.requests.Add(1)
	e.DoneNs = t.since(time.Now())
	t.record(e)
	return true
}
