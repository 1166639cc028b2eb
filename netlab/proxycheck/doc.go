// Package proxycheck holds the test of the lab's latency proxy: Toxiproxy's own server, built
// from the version pinned in go.mod, driven through the same REST calls the lab makes
// (clientlab/netlab/services.py), must delay a request by the latency it is given.
package proxycheck
