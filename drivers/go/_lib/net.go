package labdriver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// TLSConfig is a verifying TLS configuration trusting the job's CA file (the system roots
// when the job has none). Verification is never turned off.
func TLSConfig(job *Job) (*tls.Config, error) {
	cfg := &tls.Config{}
	if job.TLSCA != "" {
		pem, err := os.ReadFile(job.TLSCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", job.TLSCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// SetNoDelay applies the job's tcp_nodelay option to a freshly dialled connection (nothing
// when it is null). It has to come after the dial: Go's net package turns TCP_NODELAY on
// for every TCP connection it makes, after a net.Dialer's Control function has run.
func SetNoDelay(job *Job, conn net.Conn) error {
	if job.Options.TCPNoDelay == nil {
		return nil
	}
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return errors.New("tcp_nodelay: not a TCP connection")
	}
	return tcp.SetNoDelay(*job.Options.TCPNoDelay)
}

// Dial is a transport's dial function.
type Dial func(ctx context.Context, network, addr string) (net.Conn, error)

// NoDelayDialer wraps a transport's own dial function (nil: a plain net.Dialer, as
// http.Transport uses without one) so that every connection it makes gets the job's
// tcp_nodelay option.
func NoDelayDialer(job *Job, dial Dial) Dial {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := SetNoDelay(job, conn); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
}
