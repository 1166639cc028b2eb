// clientlab driver go-net-http: net/http, one http.Client with its own Transport per job.
package main

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"strings"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"
)

func main() {
	lab.Main(lab.Driver{
		Name: "go-net-http",
		// tcp_nodelay: set on every dialled connection; max_host_connections: MaxConnsPerHost;
		// expect_100: the Expect header with ExpectContinueTimeout (net/http never sends it itself)
		Options:  map[string][]any{"tcp_nodelay": nil, "max_host_connections": nil, "expect_100": nil},
		Versions: func() map[string]string { return map[string]string{"net/http": runtime.Version()} },
		Open: func(job *lab.Job) (lab.Client, error) {
			hc, err := labhttp.Client(job)
			if err != nil {
				return nil, err
			}
			return &client{job: job, hc: hc}, nil
		},
	})
}

type client struct {
	job *lab.Job
	hc  *http.Client
}

func (c *client) Do(req *lab.Request) (lab.Response, error) {
	hreq, err := c.newRequest(req)
	if err != nil {
		return lab.Response{}, err
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return lab.Response{}, err
	}
	defer resp.Body.Close()
	return lab.Read(c.job, req, resp.StatusCode, labhttp.Label(resp), resp.Body)
}

// newRequest builds one request: a urlencoded or multipart form, or a file streamed as the
// raw body with its Content-Length; the job's headers; Expect when the job asks for it.
func (c *client) newRequest(req *lab.Request) (*http.Request, error) {
	var body io.Reader
	var size int64 = -1
	contentType := ""
	switch {
	case req.Multipart():
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for _, f := range *req.Form {
			if err := w.WriteField(f.Name, f.Value); err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		body, contentType = &buf, w.FormDataContentType()
	case req.Form != nil:
		values := url.Values{}
		for _, f := range *req.Form {
			values.Add(f.Name, f.Value)
		}
		body, contentType = strings.NewReader(values.Encode()), "application/x-www-form-urlencoded"
	case req.BodyFile != "":
		f, n, err := req.OpenBody()
		if err != nil {
			return nil, err
		}
		body, size, contentType = f, n, req.UploadType() // the Transport closes f
		if n == 0 {
			f.Close()
			body = http.NoBody
		}
	}
	hreq, err := http.NewRequestWithContext(labhttp.Context(req), req.Method, req.URL, body)
	if err != nil {
		if closer, ok := body.(io.Closer); ok {
			closer.Close()
		}
		return nil, err
	}
	if size >= 0 {
		hreq.ContentLength = size // streamed from the file, with its length (not chunked)
	}
	if contentType != "" {
		hreq.Header.Set("Content-Type", contentType)
	}
	for _, h := range req.Headers {
		hreq.Header.Set(h.Name, h.Value)
	}
	if e := c.job.Options.Expect100; e != nil && *e && req.HasBody() {
		hreq.Header.Set("Expect", "100-continue")
	}
	return hreq, nil
}

func (c *client) Close() { c.hc.CloseIdleConnections() }
