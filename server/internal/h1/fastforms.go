package h1

// The hot path's forms, redirects and session cookies (fast.go): POST /echo, POST /login,
// GET /redirect/{n}?to=PATH and the cookie of GET /private/…, answered as handlers.go answers
// them. The parsers here take the shapes clients send (urlencoded; multipart/form-data with CRLF
// lines, one Content-Disposition per part) without allocating; any other shape of a form is
// parsed by handlers.go's own code (formOf, from the body in memory), so that every result —
// fields, digests, errors — is the slow path's.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/shape"
)

const (
	textPlain     = "text/plain; charset=utf-8"
	msgLogIn      = "log in first: POST /login\n"
	msgRedirectTo = "to must be a path on this server: /, then letters, digits and -._~!$&'()*+,;=:/?% (no //, \\, @, %2F, %5C or control characters)\n"
	maxFastFields = 64 // more fields than this: handlers.go's parser (formOf)
)

// fastScratch is a connection's working memory for forms and redirects (pooled).
type fastScratch struct {
	fields [maxFastFields]fastField
	order  [maxFastFields]int
	dec    []byte // decoded names and values (capacity fastReadBuffer: never grows)
	digest []byte // what formDigest hashes
	out    []byte // an answer's body
	sums   [2][sha256.Size]byte
	hexes  [2]string // the hex of sums: a repeated form (its body and form digests) costs no allocation
	next   int
}

var fastScratches = sync.Pool{New: func() any {
	return &fastScratch{dec: make([]byte, 0, fastReadBuffer), digest: make([]byte, 0, 2*fastReadBuffer),
		out: make([]byte, 0, 512)}
}}

type fastField struct{ name, value []byte }

// hexOf is the hex of a digest as a string; the last two are kept.
func (s *fastScratch) hexOf(sum [sha256.Size]byte) string {
	for i := range s.sums {
		if s.hexes[i] != "" && s.sums[i] == sum {
			return s.hexes[i]
		}
	}
	i := s.next
	s.next = 1 - i
	s.sums[i], s.hexes[i] = sum, hex.EncodeToString(sum[:])
	return s.hexes[i]
}

// -- cookies --------------------------------------------------------------------------------

// sessionCookieOK is validSession of r.Cookie(sessionCookie) for one Cookie header line, as
// net/http's readCookies reads it: the first part named clientlab_session whose value is valid
// (quotes stripped) decides.
func sessionCookieOK(line []byte) bool {
	if bytes.Count(line, []byte(";"))+1 > 3000 { // net/http's limit (httpcookiemaxnum): no cookies at all
		return false
	}
	line = trimCookieSpace(line)
	for len(line) > 0 {
		var part []byte
		part, line, _ = bytes.Cut(line, []byte(";"))
		part = trimCookieSpace(part)
		if len(part) == 0 {
			continue
		}
		name, val, _ := bytes.Cut(part, []byte("="))
		if string(trimCookieSpace(name)) != handlers.SessionCookie {
			continue
		}
		if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		valid := true
		for _, c := range val {
			if c < 0x20 || c >= 0x7f || c == '"' || c == ';' || c == '\\' {
				valid = false
				break
			}
		}
		if valid {
			return handlers.ValidSessionOf(val)
		}
	}
	return false
}

// trimCookieSpace is textproto.TrimString.
func trimCookieSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// -- redirects ------------------------------------------------------------------------------

// routeRedirect takes /redirect/{n}?to=PATH with n in canonical digits and the query exactly
// "to=" and a value of URL characters (escapes checked when it is decoded); anything else —
// other parameters (gzip, delay_ms), '+', '&', ';', '#', '@', spaces — is net/http's.
func routeRedirect(req *fastRequest, digits, query []byte) bool {
	n, ok := shape.CanonicalNumber(digits, 9)
	if !ok || n < 1 || !bytes.HasPrefix(query, []byte("to=")) {
		return false
	}
	to := query[3:]
	for _, c := range to {
		if !redirectByte[c] {
			return false
		}
	}
	req.kind, req.n, req.to = 'r', n, to
	return true
}

var redirectByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		redirectByte[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			bytes.IndexByte([]byte("-._~!$'()*,:/?=%"), byte(c)) >= 0
	}
}

func (p *Server) answerRedirect(tc *record.Conn, t *record.Trial, e *record.LogEntry, req *fastRequest, headerReads int, sc *fastScratch) bool {
	to, ok := queryUnescape(sc.dec[:0], req.to)
	if !ok {
		// an invalid escape: url.Values drops the parameter (to = ""), which redirect() refuses
		return p.answerSmall(tc, t, e, req, headerReads, 400, textPlain, nil, "", []byte(msgRedirectTo))
	}
	if !handlers.SameOriginPathOf(to) {
		return p.answerSmall(tc, t, e, req, headerReads, 400, textPlain, nil, "", []byte(msgRedirectTo))
	}
	location := to
	if req.n > 1 {
		// "/redirect/" + strconv.Itoa(n-1) + "?to=" + url.QueryEscape(to)
		loc := append(sc.out[:0], "/redirect/"...)
		loc = strconv.AppendInt(loc, req.n-1, 10)
		loc = append(loc, "?to="...)
		location = appendQueryEscape(loc, to)
		sc.out = location[:0]
	}
	return p.answerSmall(tc, t, e, req, headerReads, 302, textPlain, location, "", []byte("redirecting\n"))
}

// queryUnescape appends url.QueryUnescape(s) to dst; false where it would fail.
func queryUnescape(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || !handlers.IsHex(s[i+1]) || !handlers.IsHex(s[i+2]) {
				return dst, false
			}
			hi, _ := handlers.FromHex(s[i+1])
			lo, _ := handlers.FromHex(s[i+2])
			dst = append(dst, hi<<4|lo)
			i += 2
		case '+':
			dst = append(dst, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

// appendQueryEscape appends url.QueryEscape(s).
func appendQueryEscape(dst, s []byte) []byte {
	const upperhex = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return dst
}

// -- forms ----------------------------------------------------------------------------------

// fastForm is a parsed request body: readForm's results.
type fastForm struct {
	kind    string
	fields  []fastField
	bodySHA string
	err     error
}

// parseForm reads the body as readForm would: the hot path's parsers for the usual shapes,
// handlers.go's formOf for anything else.
func parseForm(ctype, body []byte, sc *fastScratch) fastForm {
	if asciiEqualFold(ctype, "application/x-www-form-urlencoded") {
		if fields, ok := parseURLEncoded(body, sc); ok {
			return fastForm{kind: "urlencoded", fields: fields, bodySHA: sc.hexOf(sha256.Sum256(body))}
		}
	} else if boundary, ok := multipartBoundary(ctype); ok {
		if fields, ok := parseMultipart(body, boundary, sc); ok {
			return fastForm{kind: "multipart", fields: fields}
		}
	}
	kind, fields, bodySHA, err := handlers.FormOf(string(ctype), body)
	f := fastForm{kind: kind, bodySHA: bodySHA, err: err}
	for _, x := range fields {
		f.fields = append(f.fields, fastField{[]byte(x.Name), []byte(x.Value)})
	}
	return f
}

// parseURLEncoded is url.ParseQuery's fields; false for anything it would refuse (';', a bad
// escape) or that does not fit here.
func parseURLEncoded(body []byte, sc *fastScratch) ([]fastField, bool) {
	// url.ParseQuery refuses more than 10,000 parameters (urlmaxqueryparams): bodies here are
	// at most fastReadBuffer bytes, far fewer
	if bytes.Count(body, []byte("&"))+1 > maxFastFields {
		return nil, false
	}
	dec := sc.dec[:0]
	n := 0
	for len(body) > 0 {
		var seg []byte
		seg, body, _ = bytes.Cut(body, []byte("&"))
		if bytes.IndexByte(seg, ';') >= 0 {
			return nil, false
		}
		if len(seg) == 0 {
			continue
		}
		k, v, _ := bytes.Cut(seg, []byte("="))
		var ok bool
		if k, dec, ok = unescapeField(dec, k); !ok {
			return nil, false
		}
		if v, dec, ok = unescapeField(dec, v); !ok {
			return nil, false
		}
		sc.fields[n] = fastField{k, v}
		n++
	}
	return sc.fields[:n], true
}

// unescapeField decodes s into dec when it has escapes (dec never outgrows its capacity: the
// decoded body is no longer than the body).
func unescapeField(dec, s []byte) ([]byte, []byte, bool) {
	if bytes.IndexByte(s, '%') < 0 && bytes.IndexByte(s, '+') < 0 {
		return s, dec, true
	}
	start := len(dec)
	dec, ok := queryUnescape(dec, s)
	return dec[start:len(dec):len(dec)], dec, ok
}

// multipartBoundary reads "multipart/form-data; boundary=B" (B a token or a plain quoted
// string; the media type and parameter name in any case, as mime.ParseMediaType reads them);
// false for any other shape.
func multipartBoundary(ctype []byte) ([]byte, bool) {
	const mt = "multipart/form-data"
	if len(ctype) <= len(mt) || !asciiEqualFold(ctype[:len(mt)], mt) {
		return nil, false
	}
	params, ok := mediaParams(ctype[len(mt):], "boundary", "")
	if !ok || params[0] == nil || len(params[0]) == 0 {
		return nil, false
	}
	return params[0], true
}

// mediaParams reads "; key=value" parameters as mime.ParseMediaType does, for the keys a and b
// (any case; each at most once, a must be there); false for other keys or shapes.
func mediaParams(s []byte, a, b string) (params [2][]byte, ok bool) {
	for {
		s = bytes.TrimLeft(s, " \t")
		if len(s) == 0 {
			return params, params[0] != nil
		}
		if s[0] != ';' {
			return params, false
		}
		s = bytes.TrimLeft(s[1:], " \t")
		eq := bytes.IndexByte(s, '=')
		if eq <= 0 {
			return params, false
		}
		key := s[:eq]
		i := 0
		switch {
		case asciiEqualFold(key, a):
		case b != "" && asciiEqualFold(key, b):
			i = 1
		default:
			return params, false
		}
		if params[i] != nil {
			return params, false
		}
		s = s[eq+1:]
		var v []byte
		if len(s) > 0 && s[0] == '"' {
			end := bytes.IndexByte(s[1:], '"')
			if end < 0 {
				return params, false
			}
			v, s = s[1:1+end], s[2+end:]
			for _, c := range v {
				if c < 0x20 || c >= 0x7f || c == '\\' {
					return params, false
				}
			}
		} else {
			end := 0
			for end < len(s) && tokenByte[s[end]] {
				end++
			}
			if end == 0 {
				return params, false
			}
			v, s = s[:end], s[end:]
		}
		params[i] = v[:len(v):len(v)]
	}
}

// parseMultipart is mime/multipart's reading of a body in the shape every client sends:
// "--B\r\n", each part's headers (Content-Disposition: form-data; name=…, optionally filename=…
// and a Content-Type), a blank line, the value, "\r\n--B", then "\r\n" and the next part, or
// "--" and the end (or "\r\n" and an epilogue). Anything else (LF lines, a preamble, whitespace
// after a boundary, other part headers, a value that starts like a boundary) is false: formOf
// reads it.
func parseMultipart(body, boundary []byte, sc *fastScratch) ([]fastField, bool) {
	if len(body) < 4+len(boundary) || string(body[:2]) != "--" || !bytes.HasPrefix(body[2:], boundary) ||
		string(body[2+len(boundary):4+len(boundary)]) != "\r\n" {
		return nil, false
	}
	rest := body[4+len(boundary):]
	n := 0
	for {
		end := bytes.Index(rest, CRLFCRLF)
		if end < 0 || n == maxFastFields {
			return nil, false
		}
		name, ok := partName(rest[:end])
		if !ok {
			return nil, false
		}
		v := rest[end+4:]
		if len(v) >= 2+len(boundary) && string(v[:2]) == "--" && bytes.HasPrefix(v[2:], boundary) {
			return nil, false // the reader takes a leading "--B" as the part's end
		}
		// the first "\r\n--B" ends the value
		i := 0
		for {
			k := bytes.Index(v[i:], boundary)
			if k < 0 {
				return nil, false
			}
			i += k
			if i >= 4 && string(v[i-4:i]) == "\r\n--" {
				break
			}
			i++
		}
		sc.fields[n] = fastField{name, v[: i-4 : i-4]}
		n++
		after := v[i+len(boundary):]
		switch {
		case bytes.HasPrefix(after, crlf):
			rest = after[2:]
		case bytes.HasPrefix(after, []byte("--")):
			if tail := after[2:]; len(tail) == 0 || bytes.HasPrefix(tail, crlf) {
				return sc.fields[:n], true
			}
			return nil, false
		default:
			return nil, false
		}
	}
}

// partName reads a part's header lines: one Content-Disposition "form-data" with a name (and
// perhaps a filename), perhaps one Content-Type; its FormName.
func partName(h []byte) ([]byte, bool) {
	var name []byte
	disp, types := 0, 0
	for len(h) > 0 {
		var line []byte
		line, h, _ = bytes.Cut(h, crlf)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, false
		}
		value := bytes.Trim(line[colon+1:], " \t")
		for _, c := range value {
			if c < 0x20 || c >= 0x7f {
				return nil, false
			}
		}
		switch key := line[:colon]; {
		case asciiEqualFold(key, "content-disposition"):
			disp++
			const fd = "form-data"
			if len(value) <= len(fd) || !asciiEqualFold(value[:len(fd)], fd) {
				return nil, false
			}
			params, ok := mediaParams(value[len(fd):], "name", "filename")
			if !ok {
				return nil, false
			}
			name = params[0]
		case asciiEqualFold(key, "content-type"):
			types++
		default:
			return nil, false
		}
	}
	return name, disp == 1 && types <= 1
}

// formDigestOf is formDigest of fast fields, in the scratch memory.
func formDigestOf(fields []fastField, sc *fastScratch) string {
	order := sc.order[:0]
	for i := range fields {
		order = append(order, i)
	}
	// insertion sort by name, then value (few fields)
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && fieldLess(fields[order[j]], fields[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	d := sc.digest[:0]
	for _, i := range order {
		d = append(d, fields[i].name...)
		d = append(d, 0)
		d = append(d, fields[i].value...)
		d = append(d, '\n')
	}
	sc.digest = d[:0]
	return sc.hexOf(sha256.Sum256(d))
}

func fieldLess(a, b fastField) bool {
	if c := bytes.Compare(a.name, b.name); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.value, b.value) < 0
}

// answerEcho is echo(): the form's kind, fields and digests, as JSON.
func (p *Server) answerEcho(tc *record.Conn, t *record.Trial, e *record.LogEntry, req *fastRequest, headerReads int, sc *fastScratch) bool {
	f := parseForm(req.ctype, req.body, sc)
	if f.err != nil {
		return p.answerSmall(tc, t, e, req, headerReads, http.StatusBadRequest, textPlain, nil, "",
			[]byte("cannot read the body: "+f.err.Error()+"\n"))
	}
	e.FormKind = f.kind
	e.FormFields = len(f.fields)
	if f.kind == "urlencoded" || f.kind == "multipart" {
		e.FormSHA256 = formDigestOf(f.fields, sc)
		if f.kind == "multipart" {
			f.bodySHA = e.FormSHA256 // the raw body carries a random boundary
		}
	}
	// json.Marshal of the map: keys sorted; hex digests and kinds need no escaping
	out := append(sc.out[:0], `{"body_sha256":"`...)
	out = append(out, f.bodySHA...)
	out = append(out, `","fields":`...)
	out = strconv.AppendInt(out, int64(len(f.fields)), 10)
	out = append(out, `,"form_sha256":"`...)
	out = append(out, e.FormSHA256...)
	out = append(out, `","kind":"`...)
	out = append(out, f.kind...)
	out = append(out, "\"}\n"...)
	sc.out = out[:0]
	return p.answerSmall(tc, t, e, req, headerReads, 200, "application/json", nil, "", out)
}

// answerLogin is login(): a form with a user and a password gets a session cookie.
func (p *Server) answerLogin(tc *record.Conn, t *record.Trial, e *record.LogEntry, req *fastRequest, headerReads int, sc *fastScratch) bool {
	f := parseForm(req.ctype, req.body, sc)
	e.FormKind = f.kind
	e.FormFields = len(f.fields)
	if f.err != nil {
		return p.answerSmall(tc, t, e, req, headerReads, http.StatusBadRequest, textPlain, nil, "",
			[]byte("cannot read the form: "+f.err.Error()+"\n"))
	}
	e.FormSHA256 = formDigestOf(f.fields, sc)
	// login() keeps the last of each name's values in sorted order: the largest, which is
	// non-empty when any of them is
	user, password := false, false
	for _, x := range f.fields {
		user = user || string(x.name) == "user" && len(x.value) > 0
		password = password || string(x.name) == "password" && len(x.value) > 0
	}
	if !user || !password {
		return p.answerSmall(tc, t, e, req, headerReads, http.StatusBadRequest, textPlain, nil, "",
			[]byte("user and password are required\n"))
	}
	cookie := (&http.Cookie{Name: handlers.SessionCookie, Value: handlers.NewSession(), Path: "/"}).String()
	return p.answerSmall(tc, t, e, req, headerReads, 200, "application/json", nil, cookie, []byte(`{"logged_in":true}`+"\n"))
}
