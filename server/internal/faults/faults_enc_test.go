package faults_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/servertest"
)

// decodedZeros decodes a brotli stream and returns how many bytes came, failing on any but zeros.
func decodedZeros(t *testing.T, r io.Reader) int64 {
	t.Helper()
	var w countZeros
	if _, err := io.Copy(&w, brotli.NewReader(r)); err != nil || w.bad {
		t.Fatalf("after %d bytes: %v (a byte not a zero: %v)", w.n, err, w.bad)
	}
	return w.n
}

// A brotli decoder (andybalholm/brotli, a port of the reference decoder) reads the built stream
// as exactly its size of zeros, in one block, several, and with a short last block.
func TestTheBrotliBombDecodesToExactlyItsSizeOfZeros(t *testing.T) {
	for _, n := range []int64{2122, 1 << 20, 1<<24 + 1<<20, 3<<24 + 12345, 2<<24 + 2000} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			stream := faults.BrotliOfZeros(n)
			if got := decodedZeros(t, bytes.NewReader(stream)); got != n {
				t.Fatalf("decoded %d bytes, want %d", got, n)
			}
			if len(stream) > 16*int(n>>24+1)+8 {
				t.Fatalf("%d bytes for %d: not a bomb", len(stream), n)
			}
		})
	}
}

func TestTheGibibyteBrotliBombIsUnderAKibibyte(t *testing.T) {
	bomb := faults.BrBomb(1024)
	if len(bomb) > 1024 || !bytes.Equal(bomb, faults.BrotliOfZeros(1<<30)) {
		t.Fatalf("%d bytes, or not the same bytes every time", len(bomb))
	}
	if testing.Short() {
		return
	}
	if got := decodedZeros(t, bytes.NewReader(bomb)); got != 1<<30 {
		t.Fatalf("decoded %d bytes", got)
	}
}

// The bomb goes only to a request that asks for br; another gets 406, and the ledger keeps what
// the request's Accept-Encoding said.
func TestTheBrotliBombGoesOnlyToAClientThatAsksForBr(t *testing.T) {
	faultLedger(t)
	head, body := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/br-bomb?mib=1", "Accept-Encoding: gzip, deflate, br"))
	if !strings.Contains(head, "200 OK") || !strings.Contains(head, "Content-Encoding: br") ||
		!strings.Contains(head, "X-Decoded-Length: 1048576") || !strings.Contains(head, "Content-Length: "+strconv.Itoa(len(body))) {
		t.Fatalf("head %q", head)
	}
	if got := decodedZeros(t, strings.NewReader(body)); got != 1<<20 {
		t.Fatalf("decoded %d bytes", got)
	}
	for _, accept := range []string{"", "Accept-Encoding: gzip", "Accept-Encoding: gzip, br;q=0"} {
		var extra []string
		if accept != "" {
			extra = append(extra, accept)
		}
		head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/br-bomb?mib=1", extra...))
		if !strings.Contains(head, "406 Not Acceptable") || strings.Contains(head, "Content-Encoding") {
			t.Fatalf("%q: head %q", accept, head)
		}
	}
	entries, _, _ := faultLedger(t)
	if len(entries) != 4 || entries[0].AcceptEncoding != "gzip, deflate, br" || entries[1].AcceptEncoding != "" {
		t.Fatalf("ledger %+v", entries)
	}
}

func TestAcceptEncodingIsReadAsAListWithQValues(t *testing.T) {
	for value, want := range map[string]bool{"br": true, "gzip, deflate, br": true, "BR;q=0.5": true, "*": true,
		"gzip": false, "br;q=0": false, "br; q=0.0": false, "": false, "brotli": false} {
		if faults.AsksFor(value, "br") != want {
			t.Errorf("%q: want %v", value, want)
		}
	}
}

// A truncated gzip has whole HTTP framing (Content-Length is what is sent) and a coding that
// ends early: a gzip reader says so, at half the stream and without the trailer alike.
func TestATruncatedGzipIsWholeOnTheWireAndShortInItsCoding(t *testing.T) {
	for _, cut := range []string{"half", "trailer"} {
		t.Run(cut, func(t *testing.T) {
			head, body := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/gzip-truncated?bytes=100000&cut="+cut))
			if !strings.Contains(head, "Content-Length: "+strconv.Itoa(len(body))) || !strings.Contains(head, "Content-Encoding: gzip") {
				t.Fatalf("head %q", head)
			}
			z, err := gzip.NewReader(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := io.ReadAll(z)
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(decoded) >= 100000 && cut == "half" {
				t.Fatalf("read %d bytes, then %v; want io.ErrUnexpectedEOF", len(decoded), err)
			}
			if cut == "trailer" && string(decoded) != string(faults.Body(100000)) {
				t.Fatalf("without its trailer the stream still decodes whole: got %d bytes", len(decoded))
			}
		})
	}
	faultLedger(t)
	if head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/gzip-truncated?cut=middle")); !strings.Contains(head, "400") {
		t.Fatalf("an unknown cut: %q", head)
	}
}
