package witnesshttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/ports"
)

// Client submits checkpoints to one witness (ports.Witness).
type Client struct {
	url  string
	http *http.Client
}

// NewClient is a client of the witness at url (its submission prefix).
// The caller's context bounds each request (the engine gives each one a
// deadline, transparency.Deps.WitnessTimeout); the client adds none, so
// that deadline is the only one.
func NewClient(url string) *Client {
	return &Client{url: strings.TrimSuffix(url, "/"), http: &http.Client{}}
}

// AddCheckpoint: see ports.Witness.
func (c *Client) AddCheckpoint(ctx context.Context, oldSize int64, proof []tlog.Hash, checkpoint []byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(checkpoint)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/add-checkpoint", &b)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSuffix(string(body), "\n"), 10, 64)
		if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/x.tlog.size") {
			return nil, fmt.Errorf("witness %s: 409 without a size", c.url)
		}
		return nil, &ports.WitnessConflict{Size: n}
	default:
		return nil, fmt.Errorf("witness %s: %s: %s", c.url, resp.Status, strings.TrimSpace(string(body)))
	}
}
