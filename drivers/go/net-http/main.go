// clientlab driver go-net-http: net/http, one http.Client with its own Transport per job
// (labhttp.Open).
package main

import (
	lab "clientlab/labdriver"
	"clientlab/labdriver/labhttp"
)

func main() {
	lab.Main(lab.Driver{Name: "go-net-http", Options: labhttp.Options(), Versions: labhttp.Versions, Open: labhttp.Open})
}
