package opshttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// failingLister lists the first page of threads and fails on the next.
type failingLister struct {
	ports.ThreadLister
	calls int
}

func (l *failingLister) ListThreadIDs(ctx context.Context, f ports.ExportFilter, after *ports.ThreadCursor, limit int) ([]ports.ThreadCursor, error) {
	if l.calls++; l.calls > 1 {
		return nil, errors.New("database went away")
	}
	return l.ThreadLister.ListThreadIDs(ctx, f, after, limit)
}

// An export stream that fails after its first lines were sent (the status
// is 200 already) ends with one line naming the error, so a client can
// tell a cut-short download from a complete one.
func TestExportStreamEndsWithAnErrorLine(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := sqldbtest.Open(t, d)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "admin", Role: domain.RoleAdmin})
			threads := threadsapp.New(threadstore.New(db), nil, nil, []byte("secret"), log)
			for range readmodel.ExportBatch {
				if _, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			tq := threadquery.New(db)
			d := readmodel.Deps{Store: tq, ChainSecrets: readmodel.ChainSecrets([]byte("secret"))}
			h := &opshttp.Handler{Exports: readmodel.NewExports(d, &failingLister{ThreadLister: tq})}
			e := echo.New()
			h.Mount(e, func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c echo.Context) error {
					c.SetRequest(c.Request().WithContext(ctx))
					return next(c)
				}
			})
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/threads/export", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var lines []string
			sc := bufio.NewScanner(rec.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if len(lines) != readmodel.ExportBatch+1 {
				t.Fatalf("%d lines, want %d threads and the error line", len(lines), readmodel.ExportBatch)
			}
			var last opshttp.StreamErrorJSON
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Error.Code == "" ||
				!strings.Contains(lines[len(lines)-1], `"error"`) || strings.Contains(lines[0], `"error":{`) {
				t.Fatalf("last line %s (%v)", lines[len(lines)-1], err)
			}
		})
	}
}
