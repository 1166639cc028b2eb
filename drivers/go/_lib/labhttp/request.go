package labhttp

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	lab "clientlab/labdriver"
)

// NewRequest builds one request of the job as a net/http program builds it, for any
// http.RoundTripper: a urlencoded or multipart form, or a file streamed as the raw body with
// its Content-Length; the job's headers; Expect when the job asks for it. Its context is
// Context(req) (redirects).
func NewRequest(job *lab.Job, req *lab.Request) (*http.Request, error) {
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
		body, size, contentType = f, n, req.UploadType() // the transport closes f
		if n == 0 {
			f.Close()
			body = http.NoBody
		}
	}
	hreq, err := http.NewRequestWithContext(Context(req), req.Method, req.URL, body)
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
	if e := job.Options.Expect100; e != nil && *e && req.HasBody() {
		hreq.Header.Set("Expect", "100-continue")
	}
	return hreq, nil
}

// Open is go-net-http's client for a job: net/http's own client on the job's Transport (Client),
// its requests sent by a Caller, its idle connections closed when the job ends. A test driver
// wraps it to add work to each request (tests/testdrivers/planted-go).
func Open(job *lab.Job) (lab.Client, error) {
	hc, err := Client(job)
	if err != nil {
		return nil, err
	}
	return &pooled{Caller{Job: job, HC: hc}}, nil
}

type pooled struct{ Caller }

func (c *pooled) Close() { c.HC.CloseIdleConnections() }

// Caller sends a job's requests on one http.Client as a net/http program does: each built by
// NewRequest, each answer read through lab.Read. Drivers embed it and add their Close.
type Caller struct {
	Job *lab.Job
	HC  *http.Client
}

func (c *Caller) Do(req *lab.Request) (lab.Response, error) {
	hreq, err := NewRequest(c.Job, req)
	if err != nil {
		return lab.Response{}, err
	}
	resp, err := c.HC.Do(hreq)
	if err != nil {
		return lab.Response{}, err
	}
	defer resp.Body.Close()
	return lab.Read(c.Job, req, resp.StatusCode, Label(resp), resp.Body)
}
