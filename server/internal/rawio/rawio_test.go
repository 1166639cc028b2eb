package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// a connected TCP pair on loopback: the server side read and written through rawIO
func rawPair(t *testing.T) (*Conn, net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	r := New(server)
	if r == nil {
		t.Fatal("a TCP connection has a socket of its own")
	}
	return r, server, client
}

func TestRawIOWritesWhatTheClientReadsEvenPastTheSocketBuffer(t *testing.T) {
	r, _, client := rawPair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MB: many times the send buffer
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
		got <- b
	}()
	n, err := r.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("wrote %d of %d: %v", n, len(want), err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client read %d bytes, not what was written", len(b))
	}
}

func TestRawIOReadsWaitForDataAndEndInEOF(t *testing.T) {
	r, _, client := rawPair(t)
	go func() {
		time.Sleep(20 * time.Millisecond) // the read must wait in the netpoller, not fail
		client.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		client.Close()
	}()
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\n\r\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if n, err = r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the client closed: %d, %v; want 0, EOF", n, err)
	}
}

func TestRawIOReadsHonourTheReadDeadline(t *testing.T) {
	r, server, _ := rawPair(t)
	server.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := r.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want the deadline's error", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("returned after %v", waited)
	}
}

func TestRawIOWritesToAClosedConnectionFail(t *testing.T) {
	r, _, client := rawPair(t)
	client.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ { // the peer's reset arrives after the first write
		_, err = r.Write(make([]byte, 1<<16))
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("got %v, want a write error", err)
	}
}

func TestRawIOWritesAHeadAndABodyAsOneStream(t *testing.T) {
	r, _, client := rawPair(t)
	head := []byte("HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n")
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(head)+len(body))))
		got <- b
	}()
	n, err := r.Writev(head, body)
	if err != nil || n != len(head)+len(body) {
		t.Fatalf("wrote %d of %d: %v", n, len(head)+len(body), err)
	}
	if b := <-got; !bytes.Equal(b, append(head, body...)) {
		t.Fatalf("the client read %d bytes, not head then body", len(b))
	}
}

func TestRawIOReadsOfAResetConnectionFailWithNothingRead(t *testing.T) {
	r, _, client := rawPair(t)
	client.(*net.TCPConn).SetLinger(0) // close with a reset
	client.Close()
	time.Sleep(20 * time.Millisecond)
	n, err := r.Read(make([]byte, 8))
	if n != 0 || err == nil || err == io.EOF {
		t.Fatalf("got %d, %v; want 0 and the reset", n, err)
	}
}

func TestRawIOWaitReturnsOnTheNextRequestAfterTheSocketWasEmptied(t *testing.T) {
	r, _, client := rawPair(t)
	buf := make([]byte, 64)
	client.Write([]byte("first"))
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		client.Write([]byte("second"))
	}()
	if err := r.WaitReadable(); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "second" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

func TestRawIOWaitHonoursTheReadDeadline(t *testing.T) {
	r, server, _ := rawPair(t)
	server.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if err := r.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
}

func TestRawIOWaitSeesWhatArrivedWhileNoOneWaited(t *testing.T) {
	r, _, client := rawPair(t)
	client.Write([]byte("waiting"))
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- r.WaitReadable() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("data in the socket, and the wait did not return")
	}
}
