package main

// Deterministic response bodies: /bytes from one precomputed block, /json and /feeds generated
// once and cached (docs/bench-server.md).

import (
	"fmt"
	"strings"
	"sync"
)

// blockSize is prime so that a dropped or repeated chunk of any usual buffer size changes the digest.
const blockSize = 65521

var block = func() []byte {
	b := make([]byte, blockSize)
	x := uint32(1)
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
	return b
}()

// writeBytes writes the first n bytes of the endless repetition of block to w, without
// allocating in proportion to n.
func writeBytes(w interface{ Write([]byte) (int, error) }, n int64) error {
	var off int64
	for off < n {
		start := int(off % blockSize)
		end := blockSize
		if rest := n - off; rest < int64(end-start) {
			end = start + int(rest)
		}
		written, err := w.Write(block[start:end])
		off += int64(written)
		if err != nil {
			return err
		}
	}
	return nil
}

const maxCachedDoc = 64 << 20

var docs sync.Map // key string -> []byte

func cached(key string, make func() []byte) []byte {
	if v, ok := docs.Load(key); ok {
		return v.([]byte)
	}
	v, _ := docs.LoadOrStore(key, make())
	return v.([]byte)
}

// jsonDoc is a valid JSON document of exactly n bytes (n >= 64).
func jsonDoc(n int) []byte {
	return cached(fmt.Sprintf("json/%d", n), func() []byte {
		var sb strings.Builder
		sb.WriteString(`{"items":[`)
		const tail = `],"pad":""}`
		for i := 0; ; i++ {
			item := fmt.Sprintf(`{"id":%d,"name":"item-%07d","price":%d.%02d,"tags":["a%d","b%d"],"ok":%t}`,
				i, i, (i*7919)%10000, i%100, i%13, i%17, i%3 == 0)
			sep := ""
			if i > 0 {
				sep = ","
			}
			if sb.Len()+len(sep)+len(item)+len(tail) > n {
				break
			}
			sb.WriteString(sep + item)
		}
		pad := n - sb.Len() - len(tail)
		sb.WriteString(`],"pad":"`)
		sb.WriteString(strings.Repeat("x", pad))
		sb.WriteString(`"}`)
		return []byte(sb.String())
	})
}

const feedCount = 100

// feedDoc is feed i of 100: a distinct Atom document of 2-20 KB.
func feedDoc(i int) []byte {
	return cached(fmt.Sprintf("feed/%d", i), func() []byte {
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
	})
}
