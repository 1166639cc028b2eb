//go:build tools

// The latency proxy is Toxiproxy's own server, pinned in go.mod and built by set-up with
// `go build github.com/Shopify/toxiproxy/v2/cmd/server`.
package tools

import _ "github.com/Shopify/toxiproxy/v2/cmd/server"
