package shape

// Deterministic response bodies: /bytes from one precomputed block, /json generated as it is
// sent (small documents are kept in a cache of bounded size), /feeds generated on demand (100,000
// of them, the first 1,000 kept once made) (docs/bench-server.md).

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// blockSize is prime so that a dropped or repeated chunk of any usual buffer size changes the digest.
const blockSize = 65521

var Block = func() []byte {
	b := make([]byte, blockSize)
	x := uint32(1)
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
	return b
}()

// blockRun is block repeated to about 512 KiB, so that a large /bytes answer leaves in writes of
// 460-512 KiB, as nginx's (output_buffers, sendfile off) do: a client's reads and wake-ups follow
// the server's writes, and 64 KiB writes cost some clients a quarter of their rate.
var blockRun = bytes.Repeat(Block, 8)

// WriteBytes writes the first n bytes of the endless repetition of block to w, without
// allocating in proportion to n.
func WriteBytes(w interface{ Write([]byte) (int, error) }, n int64) error {
	var off int64
	for off < n {
		start := int(off % blockSize)
		end := len(blockRun)
		if rest := n - off; rest < int64(end-start) {
			end = start + int(rest)
		}
		written, err := w.Write(blockRun[start:end])
		off += int64(written)
		if err != nil {
			return err
		}
	}
	return nil
}

const (
	MaxJSONDoc     = 64 << 20 // largest /json/{n}
	maxCachedJSON  = 1 << 20  // documents up to this size are cached ...
	jsonCacheBytes = 32 << 20 // ... within this many bytes in all
)

// WriteJSON writes the JSON document of exactly n bytes (n >= 64): {"items":[...],"pad":"xx…"}
// with as many items as fit and the padding filling the rest. It generates the items as it goes,
// in chunks from a pooled buffer, so memory does not grow with n.
func WriteJSON(w io.Writer, n int) error {
	const head, tail = `{"items":[`, `],"pad":""}`
	bufp := chunkBuffers.Get().(*[]byte)
	defer chunkBuffers.Put(bufp)
	buf := append((*bufp)[:0], head...)
	size := len(head) // bytes of the document so far
	var scratch [160]byte
	for i := 0; ; i++ {
		item := appendItem(scratch[:0], i)
		sep := min(i, 1)
		if size+sep+len(item)+len(tail) > n {
			break
		}
		if sep == 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, item...)
		size += sep + len(item)
		if len(buf) >= chunkSize-len(scratch) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, `],"pad":"`...)
	for pad := n - size - len(tail); pad > 0; {
		k := min(pad, chunkSize-len(buf))
		buf = append(buf, padding[:k]...)
		pad -= k
		if len(buf) == chunkSize {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, `"}`...)
	_, err := w.Write(buf)
	return err
}

const chunkSize = 32 << 10

var (
	chunkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }}
	padding      = []byte(strings.Repeat("x", chunkSize))
)

// appendItem appends item i:
// {"id":i,"name":"item-%07d","price":P.%02d,"tags":["a%d","b%d"],"ok":bool}
func appendItem(b []byte, i int) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"name":"item-`...)
	b = appendPadded(b, i, 7)
	b = append(b, `","price":`...)
	b = strconv.AppendInt(b, int64((i*7919)%10000), 10)
	b = append(b, '.')
	b = appendPadded(b, i%100, 2)
	b = append(b, `,"tags":["a`...)
	b = strconv.AppendInt(b, int64(i%13), 10)
	b = append(b, `","b`...)
	b = strconv.AppendInt(b, int64(i%17), 10)
	b = append(b, `"],"ok":`...)
	b = strconv.AppendBool(b, i%3 == 0)
	return append(b, '}')
}

func appendPadded(b []byte, v, width int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(v), 10)
	for k := len(d); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// jsonCache keeps small documents within a byte budget. Lookups take no lock; one document at
// a time is generated for it (concurrent misses are streamed instead), and when the budget is
// full arbitrary entries are dropped.
var jsonCache struct {
	docs  sync.Map // n -> []byte
	mu    sync.Mutex
	bytes int
}

// JSONDoc is the cached document of n bytes, or nil when it is to be streamed (writeJSON).
func JSONDoc(n int) []byte {
	if n > maxCachedJSON {
		return nil
	}
	if v, ok := jsonCache.docs.Load(n); ok {
		return v.([]byte)
	}
	if !jsonCache.mu.TryLock() {
		return nil // another request is filling the cache: stream this one
	}
	defer jsonCache.mu.Unlock()
	if v, ok := jsonCache.docs.Load(n); ok {
		return v.([]byte)
	}
	var b bytes.Buffer
	b.Grow(n)
	WriteJSON(&b, n)
	doc := b.Bytes()
	for jsonCache.bytes+len(doc) > jsonCacheBytes {
		jsonCache.docs.Range(func(k, v any) bool {
			jsonCache.docs.Delete(k)
			jsonCache.bytes -= len(v.([]byte))
			return false
		})
	}
	jsonCache.docs.Store(n, doc)
	jsonCache.bytes += len(doc)
	return doc
}

// feedCount feeds exist (enough for a sweep to thousands of transfers in flight); the first
// cachedFeeds are kept once made, the rest are made per request, so memory stays bounded.
const (
	FeedCount   = 100_000
	CachedFeeds = 1_000
)

// FeedDoc is feed i: a distinct Atom document of 2-20 KB.
func FeedDoc(i int) []byte {
	if i >= CachedFeeds {
		return buildFeed(i)
	}
	if v, ok := feeds.Load(i); ok {
		return v.([]byte)
	}
	v, _ := feeds.LoadOrStore(i, buildFeed(i))
	return v.([]byte)
}

func buildFeed(i int) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+
		`<feed xmlns="http://www.w3.org/2005/Atom"><title>Channel %d</title><id>urn:clientlab:feed:%d</id>`+
		`<updated>2026-01-01T00:00:00Z</updated>`+"\n", i, i)
	entries := 8 + (i*37)%53
	for e := 0; e < entries; e++ {
		fmt.Fprintf(&sb, `<entry><title>Video %d of channel %d</title><id>urn:clientlab:feed:%d:%d</id>`+
			`<link href="http://lab.test/watch?v=%d-%d"/><updated>2026-01-%02dT%02d:00:00Z</updated>`+
			`<summary>Entry %d in feed %d, a deterministic text for the lab.</summary></entry>`+"\n",
			e, i, i, e, i, e, 1+e%28, e%24, e, i)
	}
	sb.WriteString("</feed>\n")
	return []byte(sb.String())
}

var feeds sync.Map // i (0 ... cachedFeeds-1) -> []byte

// KeptFeeds is how many feeds are kept in memory.
func KeptFeeds() int {
	kept := 0
	feeds.Range(func(_, _ any) bool { kept++; return true })
	return kept
}

// CanonicalNumber reads 1 … max digits without a leading zero.
func CanonicalNumber(digits []byte, max int) (int64, bool) {
	if len(digits) == 0 || len(digits) > max || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// AppendBytes appends the first n bytes of /bytes/{n}'s content.
func AppendBytes(out []byte, n int64) []byte {
	for n > 0 {
		k := min(n, blockSize)
		out = append(out, Block[:k]...)
		n -= k
	}
	return out
}
