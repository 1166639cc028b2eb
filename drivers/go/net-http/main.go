// clientlab driver go-net-http: net/http, one http.Client with its own Transport per job.
package main

import (
	"runtime"

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
			return &client{labhttp.Caller{Job: job, HC: hc}}, nil
		},
	})
}

type client struct{ labhttp.Caller }

func (c *client) Close() { c.HC.CloseIdleConnections() }
