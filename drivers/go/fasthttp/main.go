// clientlab driver go-fasthttp: one fasthttp.Client per job, pooled request/response objects.
package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime/multipart"
	"net"
	"time"

	lab "clientlab/labdriver"

	"github.com/valyala/fasthttp"
)

// maxRedirects is what fasthttp's own Get follows (its unexported defaultMaxRedirectsCount).
const maxRedirects = 16

func main() {
	lab.Main(lab.Driver{
		Name: "go-fasthttp",
		// tcp_nodelay: set on every dialled connection; max_host_connections: MaxConnsPerHost
		// (requests wait for a free connection); fasthttp's client never sends
		// Expect: 100-continue, so only expect_100=false is what it does
		// accept_encoding "library": fasthttp asks for no coding and decodes nothing by itself,
		// as a job without accept_gzip does already
		Options: map[string][]any{"tcp_nodelay": nil, "max_host_connections": nil, "expect_100": {false},
			"accept_encoding": {"library"}},
		Open: open,
	})
}

type client struct {
	job *lab.Job
	c   *fasthttp.Client
}

func open(job *lab.Job) (lab.Client, error) {
	if job.HTTP != "1.1" { // the manifest claims neither: the lab refuses these first
		return nil, lab.Unsupported("fasthttp speaks HTTP/1.1 only")
	}
	tlsConfig, err := lab.TLSConfig(job)
	if err != nil {
		return nil, err
	}
	c := &fasthttp.Client{TLSConfig: tlsConfig}
	if n := job.Options.MaxHostConnections; n > 0 {
		c.MaxConnsPerHost = n
		// wait for a free connection, not ErrNoFreeConns; as long as the job's time limit, or
		// without one of its own (the lab's limit on the trial ends a hang)
		c.MaxConnWaitTimeout = job.Timeout
		if job.Timeout == 0 {
			c.MaxConnWaitTimeout = 24 * time.Hour
		}
	}
	if job.Options.TCPNoDelay != nil {
		c.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
			var conn net.Conn
			var err error
			if timeout > 0 { // what fasthttp's client does without a dial function of its own
				conn, err = fasthttp.DialTimeout(addr, timeout)
			} else {
				conn, err = fasthttp.Dial(addr)
			}
			if err != nil {
				return nil, err
			}
			if err := lab.SetNoDelay(job, conn); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		}
	}
	return &client{job: job, c: c}, nil
}

func (cl *client) Do(req *lab.Request) (lab.Response, error) {
	freq := fasthttp.AcquireRequest()
	fresp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(freq)
	defer fasthttp.ReleaseResponse(fresp)
	upload, err := cl.build(req, freq)
	if upload != nil {
		defer upload.Close()
	}
	if err != nil {
		return lab.Response{}, err
	}
	fresp.StreamBody = req.ToFile() // a file sink reads the body as a stream, not into memory
	if req.Follow() {               // Do itself never follows: false and absent alike
		err = cl.c.DoRedirects(freq, fresp, maxRedirects)
	} else {
		err = cl.c.Do(freq, fresp)
	}
	if err != nil {
		return lab.Response{}, err
	}
	status, http := fresp.StatusCode(), lab.ProtoLabel(string(fresp.Header.Protocol()))
	if req.ToFile() {
		defer fresp.CloseBodyStream()
		body, err := cl.stream(fresp)
		if err != nil {
			return lab.Response{}, err
		}
		return lab.Stream(cl.job, req, status, http, body)
	}
	data := fresp.Body()
	if cl.job.AcceptGzip {
		if data, err = fresp.BodyUncompressed(); err != nil {
			return lab.Response{}, err
		}
	}
	return lab.Memory(cl.job, status, http, data), nil
}

// build fills a fasthttp request from a job entry; the returned file (if any) is the
// streamed upload body, to close after the request.
func (cl *client) build(req *lab.Request, freq *fasthttp.Request) (io.Closer, error) {
	freq.SetRequestURI(req.URL)
	freq.Header.SetMethod(req.Method)
	if cl.job.Timeout > 0 {
		freq.SetTimeout(cl.job.Timeout) // per request (per hop when following redirects)
	}
	if !cl.job.KeepAlive {
		freq.SetConnectionClose() // Connection: close, and the client closes it after the response
	}
	if cl.job.AcceptGzip {
		freq.Header.Set("Accept-Encoding", "gzip") // fasthttp asks for no coding by itself
	}
	var file io.Closer
	switch {
	case req.Multipart():
		w := multipart.NewWriter(freq.BodyWriter())
		for _, f := range *req.Form {
			if err := w.WriteField(f.Name, f.Value); err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		freq.Header.SetMultipartFormBoundary(w.Boundary())
	case req.Form != nil:
		args := freq.PostArgs()
		for _, f := range *req.Form {
			args.Add(f.Name, f.Value)
		}
		freq.Header.SetContentType("application/x-www-form-urlencoded")
	case req.BodyFile != "":
		f, size, err := req.OpenBody()
		if err != nil {
			return nil, err
		}
		file = f
		freq.SetBodyStream(f, int(size)) // streamed from the file, with its Content-Length
		freq.Header.SetContentType(req.UploadType())
	}
	for _, h := range req.Headers {
		freq.Header.Set(h.Name, h.Value)
	}
	return file, nil
}

// stream is the response body as a reader (decoded when the job asked for gzip and got it).
func (cl *client) stream(fresp *fasthttp.Response) (io.Reader, error) {
	var r io.Reader = fresp.BodyStream()
	if r == nil {
		r = bytes.NewReader(fresp.Body())
	}
	if cl.job.AcceptGzip && bytes.EqualFold(fresp.Header.ContentEncoding(), []byte("gzip")) {
		return gzip.NewReader(r)
	}
	return r, nil
}

func (cl *client) Close() { cl.c.CloseIdleConnections() }
