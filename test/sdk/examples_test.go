package sdk_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The Go SDK's own examples connect to the hosted engine's address
// (wss://eng.threadify.dev/threads, a constant) and cannot be pointed
// elsewhere. To run one unmodified against this engine, the test runs it
// with HTTPS_PROXY set to a proxy here that accepts the CONNECT, ends the
// TLS with a certificate for that host signed by a certificate authority
// made for the test (trusted through SSL_CERT_FILE, in the example's
// process only), and hands the plain connection to the engine.

// hostedProxy is that proxy; env is what the example needs to use it.
type hostedProxy struct {
	env []string
}

func startHostedProxy(t *testing.T, engineAddr string) *hostedProxy {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "threadengine test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "eng.threadify.dev"},
		DNSNames: []string{"eng.threadify.dev"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || !strings.HasPrefix(r.Host, "eng.threadify.dev:") {
			http.Error(w, "only CONNECT to the hosted engine's address", http.StatusForbidden)
			return
		}
		client, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		engine, err := net.Dial("tcp", engineAddr)
		if err != nil {
			client.Close()
			return
		}
		plain := tls.Server(client, cfg)
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = io.Copy(engine, plain); engine.Close() }()
		go func() { defer wg.Done(); _, _ = io.Copy(plain, engine); plain.Close() }()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
	return &hostedProxy{env: []string{"HTTPS_PROXY=http://" + l.Addr().String(), "https_proxy=http://" + l.Addr().String(),
		"NO_PROXY=", "no_proxy=", "SSL_CERT_FILE=" + caFile}}
}

// buildGoSDKFile builds a main package of the Go SDK checkout (rel, e.g.
// examples/notifications/main.go), unmodified, outside the repository.
func buildGoSDKFile(t *testing.T, rel string) string {
	t.Helper()
	dir := os.Getenv(goSDKEnv)
	if dir == "" {
		t.Skipf("%s not set (point it at a checkout of ThreadifyDev/go-sdk)", goSDKEnv)
	}
	src, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return buildGoMain(t, src, dir)
}

// A raw WebSocket writer for the example's counterpart.
type rawWS struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialRaw(t *testing.T, e *enginetest.Engine, key string) *rawWS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(e), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &rawWS{t: t, conn: conn}
	c.call(map[string]any{"action": "connect", "apiKey": key, "serviceName": "payments-service"})
	return c
}

// call sends m and returns the next reply (pushes are skipped).
func (c *rawWS) call(m map[string]any) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(m)
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
	for {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			c.t.Fatal(err)
		}
		var r map[string]any
		_ = json.Unmarshal(data, &r)
		if r["action"] == "notification" {
			continue
		}
		if r["status"] != "success" {
			c.t.Fatalf("%v: %v", m["action"], r)
		}
		return r
	}
}

// The Go SDK's examples/notifications, unmodified: it connects, joins an
// existing thread as an observer and WaitFor("payment_confirmed") without
// subscribing to anything (the hosted engine's auto-subscription), then
// acks. Another party records the step; the example must print its
// confirmation and exit 0.
func TestGoSDKNotificationsExample(t *testing.T) {
	bin := buildGoSDKFile(t, "examples/notifications/main.go")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		proxy := startHostedProxy(t, strings.TrimPrefix(e.URL, "http://"))
		_, ownerKey := e.NewUser(t, domain.RoleMember)
		_, observerKey := e.NewUser(t, domain.RoleMember)
		payer := dialRaw(t, e, ownerKey)
		tid := payer.call(map[string]any{"action": "startThread", "refs": map[string]any{"orderId": "O-1"}})["threadId"].(string)
		// The observer holds a party already (an invitation accepted
		// earlier), so the example's join by id re-attaches it.
		token := payer.call(map[string]any{"action": "inviteParty", "threadId": tid, "role": "observer", "accessLevel": "observer"})["threadToken"]
		dialRaw(t, e, observerKey).call(map[string]any{"action": "joinThread", "threadToken": token})

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, tid)
		cmd.Env = append(append(os.Environ(), "THREADIFY_API_KEY="+observerKey), proxy.env...)
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		var out []string
		waiting := false
		for !waiting && lines.Scan() {
			out = append(out, lines.Text())
			waiting = strings.Contains(lines.Text(), "Waiting for 'payment_confirmed'")
		}
		if !waiting {
			_ = cmd.Wait()
			t.Fatalf("the example did not join: %v\n%s", out, stderr.String())
		}
		// WaitFor registers right after that line, with no signal the test
		// can see: the step is recorded (under a new key each time) until
		// the example has heard one.
		rest := make(chan []string, 1)
		go func() {
			var more []string
			for lines.Scan() {
				more = append(more, lines.Text())
			}
			rest <- more
		}()
		for i := 0; ; i++ {
			now := time.Now().UTC().Format(time.RFC3339Nano)
			payer.call(map[string]any{"action": "recordThreadEvent", "threadId": tid, "stepName": "payment_confirmed", "status": "success",
				"context": map[string]any{"amount": "12"}, "idempotencyKey": fmt.Sprint("pay-", i), "startedAt": now, "finishedAt": now})
			select {
			case more := <-rest:
				out = append(out, more...)
			case <-time.After(500 * time.Millisecond):
				continue
			}
			break
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the example failed: %v\nstdout: %v\nstderr: %s", err, out, stderr.String())
		}
		if !strings.Contains(strings.Join(out, "\n"), "Step confirmed!") {
			t.Fatalf("stdout %v", out)
		}
		t.Logf("example output: %v", out)
	})
}
