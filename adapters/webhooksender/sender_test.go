package webhooksender_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/webhooksender"
	"github.com/threadengine/engine/ports"
)

func TestSenderBounds(t *testing.T) {
	t.Parallel()
	var gotSig string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			gotSig = r.Header.Get("webhook-signature")
			_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
		case "/redirect":
			http.Redirect(w, r, "/big", http.StatusFound)
		case "/slow": // never answers: only the sender's timeout ends the request
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	s := webhooksender.New(500*time.Millisecond, false)
	resp, err := s.Send(ctx, ports.WebhookRequest{URL: srv.URL + "/big", Body: []byte(`{}`), Headers: map[string]string{"webhook-signature": "v1,x"}})
	if err != nil || resp.Status != 200 || len(resp.Body) != webhooksender.MaxResponseRead || gotSig != "v1,x" {
		t.Fatalf("big: %d %d %v %q", resp.Status, len(resp.Body), err, gotSig)
	}
	if resp, err := s.Send(ctx, ports.WebhookRequest{URL: srv.URL + "/redirect"}); err != nil || resp.Status != http.StatusFound {
		t.Fatalf("redirect followed or failed: %d %v", resp.Status, err)
	}
	// The receiver never answers, so returning at all is the timeout at
	// work (however slow the machine); a missing timeout hangs the test.
	if _, err := s.Send(ctx, ports.WebhookRequest{URL: srv.URL + "/slow"}); err == nil {
		t.Fatal("slow receiver: no error")
	}
	if _, err := s.Send(ctx, ports.WebhookRequest{URL: "ftp://example.com/"}); err == nil {
		t.Fatal("ftp sent")
	}
	blocked := webhooksender.New(time.Second, true)
	if _, err := blocked.Send(ctx, ports.WebhookRequest{URL: srv.URL + "/big"}); !errors.Is(err, webhooksender.ErrAddressRefused) {
		t.Fatalf("loopback with block_private_addresses: %v", err)
	}
}

func TestRefusedAddresses(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "192.168.0.1": true, "172.16.0.1": true, "169.254.169.254": true,
		"fe80::1": true, "fc00::1": true, "0.0.0.0": true, "0.1.2.3": true, "100.64.0.1": true, "100.127.255.255": true,
		"::ffff:10.0.0.1": true, "64:ff9b::a00:1": true, "2002:a00:1::": true, "224.0.0.1": true, "not-an-ip": true,
		"93.184.216.34": false, "100.128.0.1": false, "2606:4700::1111": false,
	} {
		if got := webhooksender.Refused(host); got != want {
			t.Errorf("refused(%s) = %v, want %v", host, got, want)
		}
	}
}

// With private addresses allowed, every answer from one — and a failed
// dial to one — is marked Private, on a new connection and a reused one.
func TestPrivateDestinationsAreMarked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal secret", http.StatusNotFound)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	ctx := context.Background()
	s := webhooksender.New(5*time.Second, false)
	for i := range 2 { // the second reuses the connection
		resp, err := s.Send(ctx, ports.WebhookRequest{URL: srv.URL + "/x", Body: []byte(`{}`)})
		if err != nil || resp.Status != http.StatusNotFound || !resp.Private {
			t.Errorf("open port, request %d: %+v %v", i, resp, err)
		}
	}
	resp, err := s.Send(ctx, ports.WebhookRequest{URL: closedURL + "/x", Body: []byte(`{}`)})
	if err == nil || !resp.Private {
		t.Errorf("closed port: %+v %v", resp, err)
	}
}
