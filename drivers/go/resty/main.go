// clientlab driver go-resty: one resty.Client per job on an http.Client of its own (net/http).
package main

import (
	"context"
	_ "embed"
	"runtime"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"

	"github.com/go-resty/resty/v2"
)

//go:embed driver.toml
var manifest []byte

func main() {
	lab.Main(lab.Driver{
		Name:     "go-resty",
		Manifest: manifest,
		// the Transport underneath honours these exactly, as for go-net-http
		Options:  map[string][]any{"tcp_nodelay": nil, "max_host_connections": nil, "expect_100": nil},
		Versions: func() map[string]string { return map[string]string{"net/http": runtime.Version()} },
		Open:     open,
	})
}

type client struct {
	job *lab.Job
	rc  *resty.Client
}

func open(job *lab.Job) (lab.Client, error) {
	hc, err := labhttp.Client(job) // timeout, cookie jar (or none), transport
	if err != nil {
		return nil, err
	}
	rc := resty.NewWithClient(hc)
	rc.SetRedirectPolicy(resty.RedirectPolicyFunc(labhttp.CheckRedirect)) // per request, see Do
	return &client{job: job, rc: rc}, nil
}

func (c *client) Do(req *lab.Request) (lab.Response, error) {
	r := c.rc.R().SetContext(labhttp.WithFollow(context.Background(), req.FollowRedirects))
	switch {
	case req.Multipart():
		r.SetMultipartFormData(fields(req))
	case req.Form != nil:
		r.SetFormData(fields(req))
	case req.BodyFile != "":
		f, _, err := req.OpenBody()
		if err != nil {
			return lab.Response{}, err
		}
		defer f.Close()
		// an io.Reader body is streamed (chunked: resty sets a length only by buffering it)
		r.SetBody(f).SetHeader("Content-Type", req.UploadType())
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
	http := labhttp.Label(resp.RawResponse)
	if req.ToFile() {
		return lab.File(c.job, req, resp.StatusCode(), http)
	}
	return lab.Memory(c.job, resp.StatusCode(), http, resp.Body()), nil
}

func fields(req *lab.Request) map[string]string {
	m := make(map[string]string, len(*req.Form))
	for _, f := range *req.Form {
		m[f.Name] = f.Value
	}
	return m
}

func (c *client) Close() { c.rc.GetClient().CloseIdleConnections() }
