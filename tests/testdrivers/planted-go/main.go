// Test driver go-net-http-planted: go-net-http with a deliberate busy function on every request,
// which the CPU profile's differential must find and name (plantedSlowPath).
package main

import (
	"runtime"

	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"
)

func main() {
	lab.Main(lab.Driver{
		Name:     "go-net-http-planted",
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

var sink uint64

// plantedSlowPath costs about three times net/http's own work a request, so the cell stays past
// the CPU-gap rule's threshold even when net/http's reference cell runs slow on a busy host.
//
//go:noinline
func plantedSlowPath() {
	x := sink
	for i := uint64(0); i < 300000; i++ {
		x ^= i * 7
		x = x<<1 | x>>63
	}
	sink = x
}

func (c *client) Do(req *lab.Request) (lab.Response, error) {
	plantedSlowPath()
	return c.Caller.Do(req)
}

func (c *client) Close() { c.HC.CloseIdleConnections() }
