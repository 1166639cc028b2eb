// Test driver go-net-http-planted: go-net-http's own client (labhttp.Open) with a deliberate busy
// function on every request, which the CPU profile's differential must find and name
// (plantedSlowPath).
package main

import (
	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"
)

func main() {
	lab.Main(lab.Driver{
		Name:     "go-net-http-planted",
		Options:  labhttp.Options(),
		Versions: labhttp.Versions,
		Open: func(job *lab.Job) (lab.Client, error) {
			c, err := labhttp.Open(job)
			if err != nil {
				return nil, err
			}
			return planted{c}, nil
		},
	})
}

type planted struct{ lab.Client }

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

func (p planted) Do(req *lab.Request) (lab.Response, error) {
	plantedSlowPath()
	return p.Client.Do(req)
}
