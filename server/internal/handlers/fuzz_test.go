package handlers_test

// Go native fuzzing of the server's request handling. `go test ./...` runs the seed corpus
// (below and testdata/fuzz/); longer runs: go test -run '^$' -fuzz=FuzzHandlers -fuzztime=3m
// (docs/reliability.md keeps the figures of the last ones).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/servertest"
)

// cappedWriter is a ResponseWriter whose client goes away after a megabyte.
type cappedWriter struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	written int64
}

var errClientGone = errors.New("client gone")

func (w *cappedWriter) Header() http.Header { return w.header }
func (w *cappedWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	if w.written+int64(len(p)) > 1<<20 {
		return 0, errClientGone
	}
	w.written += int64(len(p))
	w.body.Write(p)
	return len(p), nil
}

func FuzzHandlers(f *testing.F) {
	form := "user=u&password=p"
	f.Add("GET", "/bytes/100?gzip=1", "Accept-Encoding: gzip", []byte(nil))
	f.Add("GET", "/bytes/2147483648", "", []byte(nil))
	f.Add("GET", "/json/335114", "", []byte(nil))
	f.Add("GET", "/json/64?delay_ms=1", "", []byte(nil))
	f.Add("GET", "/feeds/99", "", []byte(nil))
	f.Add("POST", "/echo", "Content-Type: application/x-www-form-urlencoded", []byte("a=1&b=%zz&c"))
	f.Add("POST", "/echo", "Content-Type: multipart/form-data; boundary=X", []byte("--X\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--X--\r\n"))
	f.Add("PUT", "/echo", "Content-Type: application/octet-stream", []byte("raw body"))
	f.Add("POST", "/login", "Content-Type: application/x-www-form-urlencoded", []byte(form))
	f.Add("GET", "/private/bytes/10", "Cookie: clientlab_session="+handlers.NewSession(), []byte(nil))
	f.Add("GET", "/private/private/json/100", "Cookie: clientlab_session=0000", []byte(nil))
	f.Add("GET", "/redirect/3?to=/bytes/10", "", []byte(nil))
	f.Add("GET", "/redirect/1?to=/%5Cexample.com/x", "", []byte(nil))
	f.Add("GET", "/redirect/1?to=%2F%2Fexample.com", "", []byte(nil))
	f.Add("GET", "/bytes/10?delay_ms=99999999", "", []byte(nil))
	f.Add("OPTIONS", "*", "Expect: 100-continue", []byte(nil))
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		servertest.FreshTrialSometimes()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, method, "http://lab.test"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
		r.RequestURI = target
		for _, line := range strings.Split(headers, "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok {
				r.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			}
		}
		w := &cappedWriter{header: http.Header{}}
		handlers.Serve(w, r)

		if w.status == 0 {
			if ctx.Err() == nil {
				t.Fatalf("%s %q: no answer", method, target)
			}
			return // the client went away during delay_ms
		}
		if w.status == http.StatusFound {
			loc := w.header.Get("Location")
			if !handlers.SameOriginPath(loc) && !strings.HasPrefix(loc, "/redirect/") || servertest.OtherHostForBrowser(loc) {
				t.Fatalf("%q redirects to %q", target, loc)
			}
		}
		if cl := w.header.Get("Content-Length"); cl != "" && w.written < 1<<20 {
			if n, _ := strconv.ParseInt(cl, 10, 64); n < 1<<20 && n != w.written {
				t.Fatalf("%s %q: Content-Length %d, wrote %d", method, target, n, w.written)
			}
		}
		if w.status == 200 && strings.HasPrefix(r.URL.Path, "/json/") && w.header.Get("Content-Encoding") == "" &&
			w.written < 1<<20 && !json.Valid(w.body.Bytes()) {
			t.Fatalf("%q: invalid JSON", target)
		}
	})
}

func FuzzRedirectTarget(f *testing.F) {
	for _, s := range []string{"/bytes/10", "//x", `/\x`, "/%5Cx", "/%2fx", "/\tx", "http://x", "/x?y=1", "/x@y", "/%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, to string) {
		if handlers.SameOriginPath(to) && servertest.OtherHostForBrowser(to) {
			t.Fatalf("accepted %q, which a browser reads as another host", to)
		}
	})
}
