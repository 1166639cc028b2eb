package faults

// Content-coding faults (docs/behaviour.md): a brotli bomb and a truncated gzip.
//
// /fault/br-bomb?mib=<N> answers N MiB of zeros as a brotli stream (RFC 7932) of about 13 bytes
// for every 16 MiB, with Content-Encoding "br" — to a request whose Accept-Encoding asks for br.
// A request that does not gets 406: a client is never sent a coding it did not ask for, and its
// cell says so instead of passing by accident. Like the gzip bomb, the stream is built, not
// compressed, so it costs nothing to make and is the same bytes every time.
//
// /fault/gzip-truncated?bytes=<N>&cut=<half|trailer> answers the gzip of N bytes of the faults'
// body cut short: at half its length (the deflate stream ends mid-block), or without its 8-byte
// trailer (the deflate stream whole, its CRC-32 and length missing). Content-Length is the
// length sent, so the message's framing is whole and only the coding tells the body is not.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
)

// brotliOfZeros is a brotli stream of n zero bytes (n >= 2122): a window of 64 KiB, then
// meta-blocks of at most 16 MiB, each with one-symbol prefix codes (a symbol of zero bits) and
// one command: the first inserts four zero literals and copies the rest of its block at the
// distance 4 (the last distance a stream starts with, RFC 7932 §4), each later one copies its
// whole block at that distance; an empty last meta-block ends the stream.
func BrotliOfZeros(n int64) []byte {
	const maxBlock = 1 << 24 // MLEN's limit (6 nibbles)
	const copyBase = 2118    // copy length code 23: 2118 + 24 extra bits
	var w bitWriter
	w.bits(0, 1) // WBITS: 16
	for left, insert := n, int64(4); left > 0; insert = 0 {
		m := min(left, maxBlock)
		if rest := left - m; rest > 0 && rest < copyBase { // the last block must hold a copy too
			m = left - copyBase
		}
		left -= m
		w.bits(0, 1) // ISLAST: not yet
		v, nibbles := uint64(m-1), uint(4)
		if v >= 1<<20 {
			nibbles = 6
		} else if v >= 1<<16 {
			nibbles = 5
		}
		w.bits(uint64(nibbles-4), 2) // MNIBBLES
		w.bits(v, 4*nibbles)         // MLEN - 1
		w.bits(0, 1)                 // ISUNCOMPRESSED: no
		w.bits(0, 3)                 // NBLTYPESL, NBLTYPESI, NBLTYPESD: one block type each
		w.bits(0, 2)                 // NPOSTFIX
		w.bits(0, 4)                 // NDIRECT
		w.bits(0, 2)                 // the literal block type's context mode
		w.bits(0, 2)                 // NTREESL, NTREESD: one prefix code each
		// a prefix code of one symbol (HSKIP 1, NSYM 1): the symbol takes no bits where it is used
		simple := func(symbol uint64, alphabetBits uint) {
			w.bits(1, 2)
			w.bits(0, 2)
			w.bits(symbol, alphabetBits)
		}
		simple(0, 8) // literals: the zero byte
		// insert-and-copy: symbols 384...447 are insert codes 0...7 (bits 3-5) with copy codes
		// 16...23 (bits 0-2) and a distance code of their own; insert code k is k literals
		simple(uint64(384+insert<<3+7), 10)
		simple(0, 6)                          // distances: code 0, the last distance
		w.bits(uint64(m-insert-copyBase), 24) // the copy length's extra bits
	}
	w.bits(1, 1) // ISLAST
	w.bits(1, 1) // ISLASTEMPTY
	return w.flush()
}

var brBombs struct {
	sync.Mutex
	made map[int][]byte // mib -> the answer's body (about 800 bytes for 1 GiB)
}

func BrBomb(mib int) []byte {
	brBombs.Lock()
	defer brBombs.Unlock()
	if b, ok := brBombs.made[mib]; ok {
		return b
	}
	if brBombs.made == nil {
		brBombs.made = map[int][]byte{}
	}
	brBombs.made[mib] = BrotliOfZeros(int64(mib) << 20)
	return brBombs.made[mib]
}

// AsksFor reports whether an Accept-Encoding value accepts the coding: named, or "*", with a
// q-value above 0 (RFC 9110 §12.5.3).
func AsksFor(acceptEncoding, coding string) bool {
	for _, item := range strings.Split(acceptEncoding, ",") {
		name, params, _ := strings.Cut(item, ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, coding) && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if parsed, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = parsed
				}
			}
		}
		if q > 0 {
			return true
		}
	}
	return false
}

func answerBrBomb(c net.Conn, req *faultRequest) {
	mib, err := intParam(req.query, "mib", 1024, 1, maxBombMiB)
	if err != nil {
		faultWhole(c, 400, err.Error()+"\n")
		return
	}
	if !AsksFor(req.header.Get("Accept-Encoding"), "br") {
		faultWhole(c, 406, "not asked: the request's Accept-Encoding does not take br, so no brotli bomb was sent\n")
		return
	}
	body := BrBomb(mib)
	c.Write([]byte(faultHead(200, "application/octet-stream", "Content-Length: "+strconv.Itoa(len(body)),
		"Content-Encoding: br", "X-Decoded-Length: "+strconv.FormatInt(int64(mib)<<20, 10))))
	c.Write(body)
}

// gzipTruncated is the gzip of the faults' body of n bytes, cut as `cut` says.
func gzipTruncated(n int, cut string) []byte {
	var whole bytes.Buffer
	z, _ := gzip.NewWriterLevel(&whole, gzip.BestCompression)
	z.Write(Body(n))
	z.Close()
	if cut == "trailer" {
		return whole.Bytes()[:whole.Len()-8]
	}
	return whole.Bytes()[:whole.Len()/2]
}

func answerGzipTruncated(c net.Conn, req *faultRequest) {
	n, err := intParam(req.query, "bytes", 100_000, 1, maxFaultBytes)
	cut := req.query.Get("cut")
	if cut == "" {
		cut = "half"
	}
	if err == nil && cut != "half" && cut != "trailer" {
		err = fmt.Errorf("cut must be half or trailer")
	}
	if err != nil {
		faultWhole(c, 400, err.Error()+"\n")
		return
	}
	body := gzipTruncated(n, cut)
	c.Write([]byte(faultHead(200, "text/plain; charset=utf-8", "Content-Length: "+strconv.Itoa(len(body)),
		"Content-Encoding: gzip", "X-Decoded-Length: "+strconv.Itoa(n))))
	c.Write(body)
}
