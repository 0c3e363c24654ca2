package server

import (
	"net"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/config"
)

// clientIP is how the engine learns a request's client address (logs, the
// sign-in throttle): X-Forwarded-For only when the TCP peer is one of the
// configured trusted proxies, else the peer itself, so a client cannot pick
// its own address.
func clientIP(trusted []string) (echo.IPExtractor, error) {
	prefixes, err := config.ParseTrustedProxies(trusted)
	if err != nil {
		return nil, err
	}
	if len(prefixes) == 0 {
		return echo.ExtractIPDirect(), nil
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range prefixes {
		_, n, err := net.ParseCIDR(p.String())
		if err != nil {
			return nil, err
		}
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...), nil
}
