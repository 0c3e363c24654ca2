// Package webhooksender posts signed webhook deliveries over HTTP(S) with
// a request timeout, a bounded response read and, optionally, a refusal of
// private and loopback addresses (checked on the address actually dialled,
// so a DNS answer cannot point a public name at an internal service).
package webhooksender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/ports"
)

// MaxResponseRead bytes of an answer are read (the rest is discarded
// unread and the connection closed).
const MaxResponseRead = 4 << 10

// Sender implements ports.WebhookSender.
type Sender struct {
	client *http.Client
	tracer trace.Tracer
}

var _ ports.WebhookSender = (*Sender)(nil)

// ErrAddressRefused is returned for a destination alerts.block_private_addresses refuses.
var ErrAddressRefused = errors.New("destination address refused (alerts.block_private_addresses)")

// New returns a sender whose requests time out after timeout; with
// blockPrivate it refuses loopback, private, link-local and unspecified
// addresses. Redirects are not followed (a 3xx is a failed attempt).
func New(timeout time.Duration, blockPrivate bool) *Sender {
	d := &net.Dialer{Timeout: timeout}
	d.ControlContext = func(ctx context.Context, _, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if !refused(host) {
			return nil
		}
		if blockPrivate {
			return ErrAddressRefused
		}
		markPrivate(ctx)
		return nil
	}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: timeout,
		ResponseHeaderTimeout: timeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second}
	return &Sender{client: &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// notPublic are ranges the net.IP predicates miss: shared address space
// (carrier-grade NAT), "this network", and the IPv6 prefixes that carry an
// IPv4 address (NAT64, 6to4), which could wrap a private one.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
}

// refused reports whether alerts.block_private_addresses refuses host (the
// address actually dialled).
func refused(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() ||
		a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Send: see ports.WebhookSender.
func (s *Sender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, strings.NewReader(string(r.Body)))
	if err != nil {
		return ports.WebhookResponse{}, err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return ports.WebhookResponse{}, fmt.Errorf("refusing scheme %q", req.URL.Scheme)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	// Which address was used: a new connection is seen as it is dialled
	// (also when the dial then fails), a reused one when it is handed out.
	var private atomic.Bool
	dctx := context.WithValue(req.Context(), privateKey{}, &private)
	dctx = httptrace.WithClientTrace(dctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if host, _, err := net.SplitHostPort(info.Conn.RemoteAddr().String()); err == nil && refused(host) {
			private.Store(true)
		}
	}})
	req = req.WithContext(dctx)
	span := s.startSpan(ctx, r, req)
	resp, err := s.client.Do(req)
	if err != nil {
		endSpan(span, 0, err)
		return ports.WebhookResponse{Private: private.Load()}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseRead))
	endSpan(span, resp.StatusCode, nil)
	return ports.WebhookResponse{Status: resp.StatusCode, Body: string(b), Private: private.Load()}, nil
}

type privateKey struct{}

// markPrivate notes on the request's context that a private address is
// being dialled.
func markPrivate(ctx context.Context) {
	if p, ok := ctx.Value(privateKey{}).(*atomic.Bool); ok {
		p.Store(true)
	}
}
