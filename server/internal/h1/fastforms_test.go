package h1

// The hot path's parsers against the slow path's (handlers.go) and the standard library's.

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"clientlab/server/internal/handlers"
)

func FuzzFastForm(f *testing.F) {
	goCT, goMP := GoMultipart()
	for _, s := range [][2]string{
		{"application/x-www-form-urlencoded", ScenarioForm},
		{"application/x-www-form-urlencoded", "a+b=c%20d&&=x&y&%41=%42"},
		{"application/x-www-form-urlencoded", "a=%zz;b"},
		{"application/x-www-form-urlencoded; charset=utf-8", "a=1"},
		{"multipart/form-data; boundary=B", MultipartBody("B", "", "a", "1", "b", "")},
		{`multipart/form-data; boundary="B"`, MultipartBody("B", "Content-Type: text/plain\r\n", "a", "1")},
		{"multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"; filename=\"x\"\r\n\r\n\r\n--B\r\n--B--"},
		{"multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--Bx\r\n--B --\r\n"},
		{"multipart/form-data; boundary=B", "--B\nContent-Disposition: form-data; name=a\n\n1\n--B--\n"},
		{goCT, goMP},
		{"text/plain", "raw"},
		{"", ""},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		if len(body) > fastReadBuffer || strings.ContainsAny(ctype, "\r\n") {
			return // the hot path never sees these
		}
		sc := fastScratches.Get().(*fastScratch)
		defer fastScratches.Put(sc)
		got := parseForm([]byte(ctype), body, sc)
		kind, fields, bodySHA, err := handlers.FormOf(ctype, body)
		if (got.err == nil) != (err == nil) || err != nil && got.err.Error() != err.Error() {
			t.Fatalf("%q %q: error %v, want %v", ctype, body, got.err, err)
		}
		if err != nil {
			return
		}
		if got.kind != kind || len(got.fields) != len(fields) || got.bodySHA != bodySHA {
			t.Fatalf("%q %q: %s %d fields %s, want %s %d %s", ctype, body, got.kind, len(got.fields), got.bodySHA, kind, len(fields), bodySHA)
		}
		if d, want := formDigestOf(got.fields, sc), handlers.FormDigest(fields); d != want {
			t.Fatalf("%q %q: form digest %s, want %s (%q / %q)", ctype, body, d, want, got.fields, fields)
		}
	})
}

func FuzzFastQueryCodec(f *testing.F) {
	for _, s := range []string{"/bytes/1024", "%2Fbytes%2F1024", "a+b%20c", "%zz", "%4", "/a?b=c&d;e", "\x00\xff~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendQueryEscape(nil, []byte(s))), url.QueryEscape(s); got != want {
			t.Fatalf("escape %q: %q, want %q", s, got, want)
		}
		got, ok := queryUnescape(nil, []byte(s))
		want, err := url.QueryUnescape(s)
		if ok != (err == nil) || ok && string(got) != want {
			t.Fatalf("unescape %q: %q %v, want %q %v", s, got, ok, want, err)
		}
		if ok && handlers.SameOriginPathOf(got) != handlers.SameOriginPath(want) {
			t.Fatalf("sameOriginPath %q differs", want)
		}
	})
}

func FuzzFastSessionCookie(f *testing.F) {
	token := handlers.NewSession()
	for _, s := range []string{
		"clientlab_session=" + token, "a=b; clientlab_session=" + token + "; c", `clientlab_session="` + token + `"`,
		"clientlab_session=a\\b; clientlab_session=" + token, " clientlab_session = " + token, "clientlab_session=" + strings.ToUpper(token),
		"clientlab_session=0000", "", ";;;", "clientlab_session",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") {
			return
		}
		r := &http.Request{Header: http.Header{"Cookie": {line}}}
		c, err := r.Cookie(handlers.SessionCookie)
		want := err == nil && handlers.ValidSession(c.Value)
		if got := sessionCookieOK([]byte(strings.Trim(line, " \t"))); got != want {
			t.Fatalf("%q: %v, want %v", line, got, want)
		}
	})
}

// the hot path's parsers do not allocate for the scenarios' requests
func TestHotPathFormsDoNotAllocate(t *testing.T) {
	sc := fastScratches.Get().(*fastScratch)
	defer fastScratches.Put(sc)
	mp := MultipartBody("B", "", "lang", "php", "description", "", "code", "test", "parent", "0")
	urlencoded, form := []byte("application/x-www-form-urlencoded"), []byte(ScenarioForm)
	mpType, mpBody := []byte("multipart/form-data; boundary=B"), []byte(mp)
	cookie := []byte("clientlab_session=0000")
	for i, run := range []func(){
		func() { // post-form (the body's and the form's digests: the two a connection keeps)
			f := parseForm(urlencoded, form, sc)
			formDigestOf(f.fields, sc)
		},
		func() { // post-multipart
			f := parseForm(mpType, mpBody, sc)
			formDigestOf(f.fields, sc)
		},
		func() { sessionCookieOK(cookie) },
	} {
		if n := testing.AllocsPerRun(100, run); n > 0 {
			t.Fatalf("case %d: %v allocations per run", i, n)
		}
	}
}

const ScenarioForm = "lang=php&description=&code=test&parent=0"

func MultipartBody(boundary string, partHeaders string, fields ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(fields); i += 2 {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n%s\r\n%s\r\n", boundary, fields[i], partHeaders, fields[i+1])
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.String()
}

func GoMultipart() (string, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("lang", "php")
	w.WriteField("description", "")
	w.WriteField("code", "test")
	w.WriteField("parent", "0")
	f, _ := w.CreateFormFile("upload", "a.txt")
	f.Write([]byte("file\r\ncontent--"))
	w.Close()
	return w.FormDataContentType(), b.String()
}
