// Package registry talks to the identity registry: the license API
// (ports.License) and OpenID Connect browser sign-in (relying party on
// zitadel/oidc's rp package, mounted as /auth/login and /auth/callback).
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// LicensePath is the registry's license endpoint.
const LicensePath = "/api/license"

// LicenseClient implements ports.License over HTTP.
type LicenseClient struct {
	BaseURL string
	Key     string
	HTTP    *http.Client
	Clock   ports.Clock
}

var _ ports.License = (*LicenseClient)(nil)

// NewLicenseClient checks the license key at baseURL.
func NewLicenseClient(baseURL, key string, clock ports.Clock) *LicenseClient {
	return &LicenseClient{
		BaseURL: strings.TrimSuffix(baseURL, "/"), Key: key, Clock: clock,
		// Redirects are not followed: the license key must only ever be sent
		// to the configured registry.
		HTTP: &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
}

type licenseBody struct {
	Account         string   `json:"account"`
	OwnerEmail      string   `json:"owner_email"`
	Products        []string `json:"products"`
	ManagedIdentity bool     `json:"managed_identity"`
	Suspended       bool     `json:"suspended"`
}

// Check fetches the license. 401/403 mean the key is not (or no longer)
// valid; anything else unexpected means the registry is unavailable.
func (c *LicenseClient) Check(ctx context.Context) (ports.LicenseInfo, error) {
	if c.BaseURL == "" || c.Key == "" {
		return ports.LicenseInfo{}, domain.E(domain.KindUnavailable, domain.CodeUnavailable,
			"the identity registry is not configured (set registry.url and registry.license_key)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+LicensePath, nil)
	if err != nil {
		return ports.LicenseInfo{}, domain.Internal(err, "could not build the license request")
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return ports.LicenseInfo{}, unavailable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ports.LicenseInfo{}, unavailable(err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return ports.LicenseInfo{}, domain.E(domain.KindForbidden, domain.CodeLicenseInvalid,
			"the identity registry does not accept the configured license key")
	case resp.StatusCode != http.StatusOK:
		return ports.LicenseInfo{}, unavailable(fmt.Errorf("license API answered %s", resp.Status))
	}
	var b licenseBody
	if err := json.Unmarshal(body, &b); err != nil {
		return ports.LicenseInfo{}, unavailable(fmt.Errorf("license API body: %w", err))
	}
	if b.Account == "" {
		return ports.LicenseInfo{}, unavailable(errors.New("license API body has no account"))
	}
	return ports.LicenseInfo{Account: b.Account, OwnerEmail: b.OwnerEmail, Products: b.Products,
		ManagedIdentity: b.ManagedIdentity, Suspended: b.Suspended, CheckedAt: c.Clock.Now()}, nil
}

func unavailable(err error) error {
	return domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the identity registry is unreachable; try again later").WithCause(err)
}
