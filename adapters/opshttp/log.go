package opshttp

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app/transparency"
	"github.com/threadengine/engine/domain"
)

// LogHandler serves the transparency log (docs/integrators/verification.md).
// Checkpoints, keys and proofs by leaf index are public, as in other
// transparency logs: they hold hashes only. A proof by step id names a
// thread, so it needs a caller who may read that thread.
type LogHandler struct {
	Log transparency.Application
}

// Mount registers the routes; mw authenticates the by-step proof.
func (h *LogHandler) Mount(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.GET("/v1/log/checkpoint", h.checkpoint)
	e.GET("/v1/log/keys", h.keys)
	e.GET("/v1/log/proof/consistency", h.consistency)
	stepProof := mw(h.stepInclusion)
	e.GET("/v1/log/proof/inclusion", func(c echo.Context) error {
		if c.QueryParam("step") != "" {
			return stepProof(c)
		}
		return h.inclusion(c)
	})
}

// ProofJSON is an inclusion or consistency proof.
type ProofJSON struct {
	// Leaf and Size: inclusion of leaf Leaf in the tree of size Size.
	Leaf *int64 `json:"leaf,omitempty"`
	Size *int64 `json:"size,omitempty"`
	// Old and New: consistency of the tree of size Old with that of size New.
	Old *int64 `json:"old,omitempty"`
	New *int64 `json:"new,omitempty"`
	// Proof are the hashes, base64, in golang.org/x/mod/sumdb/tlog's order.
	Proof []string `json:"proof"`
	// Data is the leaf (step proofs only); Checkpoint the signed checkpoint
	// of Size (step proofs only).
	Data       *string `json:"data,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
}

func proofStrings(p transparency.Proof) []string {
	out := make([]string, len(p))
	for i, h := range p {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

func int64Param(c echo.Context, name string, required bool) (int64, error) {
	s := strings.TrimSpace(c.QueryParam(name))
	if s == "" {
		if required {
			return 0, domain.Invalid(name, "%s is required", name)
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, domain.Invalid(name, "%s must be a non-negative integer", name)
	}
	return n, nil
}

func plain(c echo.Context, body string) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(body))
}

// checkpoint: GET /v1/log/checkpoint[?size=N], the signed note, text/plain.
func (h *LogHandler) checkpoint(c echo.Context) error {
	size := int64(-1)
	if c.QueryParam("size") != "" {
		n, err := int64Param(c, "size", true)
		if err != nil {
			return err
		}
		size = n
	}
	cp, err := h.Log.Queries.Checkpoint.Handle(c.Request().Context(), size)
	if err != nil {
		return err
	}
	return plain(c, cp.Note)
}

// keys: GET /v1/log/keys, one verifier key per line, newest first.
func (h *LogHandler) keys(c echo.Context) error {
	return plain(c, strings.Join(h.Log.Queries.Keys.Handle(c.Request().Context()).Verifiers, "\n")+"\n")
}

// inclusion: GET /v1/log/proof/inclusion?leaf=N[&size=S].
func (h *LogHandler) inclusion(c echo.Context) error {
	leaf, err := int64Param(c, "leaf", true)
	if err != nil {
		return err
	}
	size, err := int64Param(c, "size", false)
	if err != nil {
		return err
	}
	p, size, err := h.Log.Queries.Inclusion.Handle(c.Request().Context(), leaf, size)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProofJSON{Leaf: &leaf, Size: &size, Proof: proofStrings(p)})
}

// stepInclusion: GET /v1/log/proof/inclusion?step=ID (authenticated).
func (h *LogHandler) stepInclusion(c echo.Context) error {
	s, err := h.Log.Queries.StepInclusion.Handle(c.Request().Context(), c.QueryParam("step"))
	if err != nil {
		return err
	}
	data := string(s.Data)
	return c.JSON(http.StatusOK, ProofJSON{Leaf: &s.Index, Size: &s.Checkpoint.Size, Proof: proofStrings(s.Proof),
		Data: &data, Checkpoint: s.Checkpoint.Note})
}

// consistency: GET /v1/log/proof/consistency?old=A[&new=B].
func (h *LogHandler) consistency(c echo.Context) error {
	oldSize, err := int64Param(c, "old", true)
	if err != nil {
		return err
	}
	newSize, err := int64Param(c, "new", false)
	if err != nil {
		return err
	}
	p, newSize, err := h.Log.Queries.Consistency.Handle(c.Request().Context(), oldSize, newSize)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProofJSON{Old: &oldSize, New: &newSize, Proof: proofStrings(p)})
}
