// clientlab driver go-resty: one resty.Client per job (resty.New, net/http underneath).
package main

import (
	"errors"
	"net/http"
	"os"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"

	"github.com/go-resty/resty/v2"
)

func main() {
	lab.Main(lab.Driver{
		Name: "go-resty",
		// resty's Transport honours these exactly, as for go-net-http
		Options:  labhttp.Options(),
		Versions: labhttp.Versions,
		Open:     open,
	})
}

type client struct {
	job *lab.Job
	rc  *resty.Client
}

func open(job *lab.Job) (lab.Client, error) {
	rc := resty.New() // as resty's users start: its own http.Client, transport and cookie jar
	transport, ok := rc.GetClient().Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("resty.New built no *http.Transport")
	}
	if err := labhttp.Configure(job, transport); err != nil { // only what the job names
		return nil, err
	}
	if job.Timeout > 0 {
		rc.SetTimeout(job.Timeout)
	}
	if !job.Cookies {
		rc.SetCookieJar(nil) // the job keeps no cookies
	}
	if policy := labhttp.RedirectPolicy(job); policy != nil { // only when an entry wants its 3xx
		rc.SetRedirectPolicy(resty.RedirectPolicyFunc(policy))
	}
	return &client{job: job, rc: rc}, nil
}

func (c *client) Do(req *lab.Request) (lab.Response, error) {
	r := c.rc.R()
	if req.NoFollow() {
		r.SetContext(labhttp.Context(req)) // the redirect policy answers its 3xx
	}
	switch {
	case req.Multipart():
		r.SetMultipartFormData(fields(req))
	case req.Form != nil:
		r.SetFormData(fields(req))
	case req.BodyFile != "":
		// a file upload as resty's README does it: the file's bytes, with Content-Length (an
		// io.Reader body would go chunked; SetContentLength on one buffers it all the same)
		data, err := os.ReadFile(req.BodyFile)
		if err != nil {
			return lab.Response{}, err
		}
		r.SetBody(data).SetContentLength(true).SetHeader("Content-Type", req.UploadType())
	}
	for _, h := range req.Headers {
		r.SetHeader(h.Name, h.Value)
	}
	if e := c.job.Options.Expect100; e != nil && *e && req.HasBody() {
		r.SetHeader("Expect", "100-continue")
	}
	if req.ToFile() {
		r.SetOutput(req.SinkPath) // resty streams the body into the file itself
	}
	resp, err := r.Execute(req.Method, req.URL)
	if err != nil {
		return lab.Response{}, err
	}
	version := labhttp.Label(resp.RawResponse)
	if req.ToFile() {
		return lab.File(c.job, req, resp.StatusCode(), version)
	}
	return lab.Memory(c.job, resp.StatusCode(), version, resp.Body()), nil
}

func fields(req *lab.Request) map[string]string {
	m := make(map[string]string, len(*req.Form))
	for _, f := range *req.Form {
		m[f.Name] = f.Value
	}
	return m
}

func (c *client) Close() { c.rc.GetClient().CloseIdleConnections() }
