package labdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"strings"
)

// Chunk is the read/write size for streamed bodies.
const Chunk = 64 * 1024

// Response is what one request got: final status, decoded body length, HTTP version as the
// client saw it ("1.0", "1.1", "2"), and the body's SHA-256 (hex) when the job verifies.
type Response struct {
	Status int
	Bytes  int64
	HTTP   string
	SHA256 string
}

// Memory describes a response whose whole (decoded) body is in memory.
func Memory(job *Job, status int, http string, body []byte) Response {
	resp := Response{Status: status, Bytes: int64(len(body)), HTTP: http}
	if job.Verify {
		sum := sha256.Sum256(body)
		resp.SHA256 = hex.EncodeToString(sum[:])
	}
	return resp
}

// Read takes a response body the way the request's sink asks: into memory (io.ReadAll, as a
// program keeping the body does) or streamed to the request's sink file.
func Read(job *Job, req *Request, status int, http string, body io.Reader) (Response, error) {
	if req.ToFile() {
		return Stream(job, req, status, http, body)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return Response{}, err
	}
	return Memory(job, status, http, data), nil
}

// Stream writes a body to the request's sink file chunk by chunk, counting it (and hashing it
// when the job verifies), and describes the file.
func Stream(job *Job, req *Request, status int, http string, body io.Reader) (Response, error) {
	f, err := os.Create(req.SinkPath)
	if err != nil {
		return Response{}, err
	}
	var w io.Writer = f
	var digest hash.Hash
	if job.Verify {
		digest = sha256.New()
		w = io.MultiWriter(f, digest)
	}
	n, err := io.CopyBuffer(w, body, make([]byte, Chunk))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Response{}, err
	}
	resp := Response{Status: status, Bytes: n, HTTP: http}
	if digest != nil {
		resp.SHA256 = hex.EncodeToString(digest.Sum(nil))
	}
	return resp, nil
}

// File describes a body the client library itself wrote to the request's sink file: its size,
// and its SHA-256 (read back from the file) when the job verifies.
func File(job *Job, req *Request, status int, http string) (Response, error) {
	f, err := os.Open(req.SinkPath)
	if err != nil {
		return Response{}, err
	}
	defer f.Close()
	resp := Response{Status: status, HTTP: http}
	if !job.Verify {
		st, err := f.Stat()
		if err != nil {
			return Response{}, err
		}
		resp.Bytes = st.Size()
		return resp, nil
	}
	digest := sha256.New()
	if resp.Bytes, err = io.CopyBuffer(digest, f, make([]byte, Chunk)); err != nil {
		return Response{}, err
	}
	resp.SHA256 = hex.EncodeToString(digest.Sum(nil))
	return resp, nil
}

// HTTPLabel normalises a protocol version to "1.0", "1.1", "2" or "3" (from major/minor numbers).
// The usual ones are constants: called once a request, it allocates nothing for them.
func HTTPLabel(major, minor int) string {
	switch {
	case major == 1 && minor == 1:
		return "1.1"
	case major == 1 && minor == 0:
		return "1.0"
	case major == 2:
		return "2"
	case major == 3:
		return "3"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// ProtoLabel normalises "HTTP/1.1", "HTTP/2.0", "HTTP/2", "HTTP/3.0" to "1.1", "2", "3".
func ProtoLabel(proto string) string {
	v := strings.TrimPrefix(strings.ToUpper(proto), "HTTP/")
	if v == "2.0" || v == "3.0" {
		return v[:1]
	}
	return v
}

func goVersion() string { return runtime.Version() }
