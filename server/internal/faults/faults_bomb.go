package faults

// Decompression bombs (docs/behaviour.md): /fault/gzip-bomb?mib=<N>&layers=<1|2> answers about N
// MiB of zeros as a gzip stream of about N KiB (deflate's best ratio, 1032:1), with
// Content-Length and Content-Encoding "gzip", or "gzip, gzip" for a stream gzipped twice. The
// stream is built, not compressed: one literal zero, then copies of 258 bytes at distance 1, each
// two bits under a dynamic Huffman code that gives the copy's length and distance one bit each,
// so building it costs what sending it costs, and it is the same bytes every time. The decoded
// size is exactly bombBytes(N) (1 + 258 k).

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"sync"
)

const maxBombMiB = 1024

// BombBytes is the decoded size of the bomb of about mib MiB.
func BombBytes(mib int) int64 {
	return 1 + 258*((int64(mib)<<20-1)/258)
}

// bitWriter packs bits least significant first, as deflate does (RFC 1951 §3.1.1).
type bitWriter struct {
	out   bytes.Buffer
	acc   uint64
	nbits uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out.WriteByte(byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// code writes a Huffman code, whose bits go most significant first.
func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := uint(0); i < n; i++ {
		r = r<<1 | (c>>i)&1
	}
	w.bits(r, n)
}

// zeros writes n zero bits.
func (w *bitWriter) zeros(n int64) {
	for n > 0 && w.nbits != 0 {
		w.bits(0, 1)
		n--
	}
	w.out.Write(make([]byte, n/8))
	w.bits(0, uint(n%8))
}

func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.bits(0, 8-w.nbits)
	}
	return w.out.Bytes()
}

// zeroDeflate is the raw deflate stream of 1 + 258 k zero bytes.
func zeroDeflate(k int64) []byte {
	var w bitWriter
	w.bits(1, 1)  // BFINAL
	w.bits(2, 2)  // BTYPE: dynamic Huffman codes
	w.bits(29, 5) // HLIT: 286 literal/length codes (up to 285, the length 258)
	w.bits(0, 5)  // HDIST: one distance code (0, the distance 1)
	w.bits(14, 4) // HCLEN: 18 code length codes, in the order below, up to the symbol 1
	// the code length code: 18 (a run of zeros) one bit, 1 and 2 two bits each
	lengths := map[int]uint64{18: 1, 1: 2, 2: 2}
	for _, sym := range []int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1} {
		w.bits(lengths[sym], 3)
	}
	cl1, cl2 := func() { w.code(2, 2) }, func() { w.code(3, 2) } // canonical: 18 is 0, 1 is 10, 2 is 11
	zerosRun := func(n uint64) { w.code(0, 1); w.bits(n-11, 7) } // 18: a run of 11 ... 138 zeros
	// the literal/length code lengths: 0 two bits, 1 ... 255 none, 256 (the end) two bits,
	// 257 ... 284 none, 285 one bit; then the distance code's: 0 one bit
	cl2()
	zerosRun(138)
	zerosRun(117)
	cl2()
	zerosRun(28)
	cl1()
	cl1()
	// canonical codes: 285 is 0; literal 0 is 10; 256 is 11; the distance 0 is 0
	w.code(2, 2)   // the literal zero
	w.zeros(2 * k) // k copies: length 258 (0), distance 1 (0)
	w.code(3, 2)   // the end of the block
	return w.flush()
}

// gzipOfZeros wraps the deflate stream of n = 1 + 258 k zero bytes in gzip's header and trailer.
func GzipOfZeros(n int64) []byte {
	var out bytes.Buffer
	out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	out.Write(zeroDeflate((n - 1) / 258))
	crc := uint32(0)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		crc = crc32.Update(crc, crc32.IEEETable, zero[:min(left, int64(len(zero)))])
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], crc)
	binary.LittleEndian.PutUint32(tail[4:], uint32(n))
	out.Write(tail[:])
	return out.Bytes()
}

var bombs struct {
	sync.Mutex
	made map[[2]int][]byte // (mib, layers) -> the answer's body
}

// bomb is the body of the bomb (built once per size and layers, then kept: about 1 MiB at most).
func bomb(mib, layers int) []byte {
	bombs.Lock()
	defer bombs.Unlock()
	key := [2]int{mib, layers}
	if b, ok := bombs.made[key]; ok {
		return b
	}
	b := GzipOfZeros(BombBytes(mib))
	if layers == 2 { // the gzip stream gzipped again: Content-Encoding: gzip, gzip
		var outer bytes.Buffer
		z, _ := gzip.NewWriterLevel(&outer, gzip.BestCompression)
		z.Write(b)
		z.Close()
		b = outer.Bytes()
	}
	if bombs.made == nil {
		bombs.made = map[[2]int][]byte{}
	}
	bombs.made[key] = b
	return b
}

func answerBomb(c net.Conn, req *faultRequest) {
	mib, err1 := intParam(req.query, "mib", 1024, 1, maxBombMiB)
	layers, err2 := intParam(req.query, "layers", 1, 1, 2)
	if err := firstErr(err1, err2); err != nil {
		faultWhole(c, 400, err.Error()+"\n")
		return
	}
	body := bomb(mib, layers)
	c.Write([]byte(faultHead(200, "application/octet-stream", "Content-Length: "+strconv.Itoa(len(body)),
		"Content-Encoding: "+strings.TrimSuffix(strings.Repeat("gzip, ", layers), ", "),
		"X-Decoded-Length: "+strconv.FormatInt(BombBytes(mib), 10))))
	c.Write(body)
}

// answerHeaders: /fault/big-header?kib=<N> answers with one header line of N KiB;
// /fault/many-headers?count=<N> with N header lines. The body is small and whole: what matters is
// whether the client takes a head of that size.
func answerHeaders(c net.Conn, req *faultRequest) {
	var fields []string
	if req.path == "/fault/big-header" {
		kib, err := intParam(req.query, "kib", 1024, 1, 16<<10)
		if err != nil {
			faultWhole(c, 400, err.Error()+"\n")
			return
		}
		fields = []string{"X-Big: " + string(Body(kib<<10))}
	} else {
		count, err := intParam(req.query, "count", 10_000, 1, 1_000_000)
		if err != nil {
			faultWhole(c, 400, err.Error()+"\n")
			return
		}
		fields = make([]string, count)
		for i := range fields {
			fields[i] = "X-Many-" + strconv.Itoa(i) + ": " + strconv.Itoa(i)
		}
	}
	faultWhole(c, 200, "headers\n", fields...)
}
