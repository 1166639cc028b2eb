package h2

// The HTTP/2 hot path: GET /bytes/{n} (canonical digits, no query, n up to one frame) answered
// by the connection's reader itself, in the same flush as the other answers of that read, and
// recorded as serveHTTP records it.

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/record"
	"clientlab/server/internal/shape"
)

const h2HotMax = h2MaxFrame // larger answers go through the goroutine path (windows, frames)

// answerHot answers a GET without a body when the hot path can; it reports whether it did.
func (c *h2conn) answerHot(id uint32, path string, regular int) bool {
	rest, ok := strings.CutPrefix(path, "/bytes/")
	if !ok {
		return false
	}
	n, ok := shape.CanonicalNumber([]byte(rest), 6)
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
	t := record.Current()
	t.Answering.Add(1) // until recorded: see trial.settle
	defer t.Answering.Add(-1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sendWindow < n || c.initWindow < n || c.werr != nil || len(c.streams) >= MaxStreams {
		return false
	}
	tc := c.tc
	if tc.TrialID != t.ID {
		t.Carried(tc) // a connection kept from an earlier trial (job)
	}
	now := time.Now()
	e := record.LogEntry{Conn: tc.Rec.ID, Method: "GET", Path: path, Proto: "HTTP/2.0",
		Status: 200, RespBodyBytes: n, FormKind: "none", FirstByteNs: t.Since(now)}
	body := shape.Block[:n]
	if record.RecordDigests() {
		sum := sha256.Sum256(body)
		e.RespSHA256 = hex.EncodeToString(sum[:])
	}
	c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	if shape.MinimalHeads() {
		c.enc.WriteField(hpack.HeaderField{Name: "content-length", Value: shape.ContentLengthText(n)})
		c.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/octet-stream"})
		c.enc.WriteField(hpack.HeaderField{Name: "date", Value: shape.DateText(now)})
	} else {
		// nginx's HTTP/2 block for a file, in its order, every field whole (shape.go)
		c.encBuf.Write(shape.AppendH2Static(c.encBuf.AvailableBuffer(), n, now))
	}
	if v := record.AltSvc(); v != nil && c.tls != nil {
		if shape.MinimalHeads() {
			c.enc.WriteField(hpack.HeaderField{Name: "alt-svc", Value: *v}) // as advertiseH3
		} else {
			c.encBuf.Write(shape.AppendH2AltSvc(c.encBuf.AvailableBuffer(), *v))
		}
		t.OfferedH3()
	}
	var flags byte = FlagEndStream
	if n > 0 {
		flags = 0
	}
	c.appendHeadersLocked(id, flags != 0)
	if n > 0 {
		c.out = AppendFrameHeader(c.out, int(n), FrameData, FlagEndStream, id)
		c.out = append(c.out, body...)
		c.sendWindow -= n
	}
	tc.Rec.Requests.Add(1)
	e.DoneNs = t.Since(time.Now())
	t.Record(e)
	return true
}
