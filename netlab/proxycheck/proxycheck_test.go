package proxycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort is a port nobody listens on just now (Toxiproxy's -port takes no 0).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// startToxiproxy builds the pinned server (as set-up does) and starts it on 127.0.0.1; it
// returns the base address of its REST API.
func startToxiproxy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toxiproxy-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/Shopify/toxiproxy/v2/cmd/server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build toxiproxy: %v\n%s", err, out)
	}
	port := freePort(t)
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", port)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	api := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(api + "/version"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return api
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("toxiproxy did not answer GET /version\n%s", logs.String())
		}
	}
}

func post(t *testing.T, url string, body any, want int) map[string]any {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: status %d, want %d: %s", url, data, resp.StatusCode, want, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, raw)
	}
	return out
}

// fetch makes one request on a new connection and returns how long it took.
func fetch(t *testing.T, url string) time.Duration {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	began := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	if string(body) != "pong" {
		t.Fatalf("GET %s: %q", url, body)
	}
	return took
}

func TestTheLatencyToxicDelaysEachDirection(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pong")
	}))
	defer upstream.Close()
	api := startToxiproxy(t)

	proxy := post(t, api+"/proxies", map[string]any{
		"name": "bench", "listen": "127.0.0.1:0", "upstream": upstream.Listener.Addr().String(), "enabled": true,
	}, http.StatusCreated)
	listen, _ := proxy["listen"].(string)
	if _, port, _ := net.SplitHostPort(listen); port == "" || port == "0" {
		t.Fatalf("proxy: %v", proxy)
	}
	through := "http://" + listen + "/"
	direct := fetch(t, upstream.URL+"/")
	plain := fetch(t, through)

	for _, stream := range []string{"upstream", "downstream"} {
		toxic := post(t, api+"/proxies/bench/toxics", map[string]any{
			"name": "latency_" + stream, "type": "latency", "stream": stream, "toxicity": 1.0,
			"attributes": map[string]any{"latency": 25, "jitter": 0},
		}, http.StatusOK)
		if toxic["stream"] != stream || toxic["type"] != "latency" {
			t.Fatalf("toxic: %v", toxic)
		}
	}
	var took []time.Duration
	for range 5 {
		d := fetch(t, through)
		took = append(took, d)
		if d < 50*time.Millisecond || d > 2*time.Second {
			t.Fatalf("a request through 25 ms + 25 ms of latency took %v", d)
		}
	}
	t.Logf("direct %v; through the proxy without toxics %v; with latency 25 ms up + 25 ms down: %v",
		direct, plain, fmt.Sprint(took))
}
