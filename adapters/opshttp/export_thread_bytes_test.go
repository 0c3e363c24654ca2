package opshttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// One thread's export loads at most limits.graphql.export_thread_max_bytes
// of stored contexts: a bigger thread is refused 413 export_thread_bytes
// before its rows are read (GET /v1/threads/{id}/export), or named in a
// skipped line of a stream that goes on with the next thread; each refusal
// is counted. The sizes are the database's octets, on both stores.
func TestExportOfABigThreadIsBounded(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db, log, ctx, app := exportWriter(t, d)
			start := func(label string, steps, contextBytes int) string {
				th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: label})
				if err != nil {
					t.Fatal(err)
				}
				for i := range steps {
					// Multi-byte characters: the bound counts octets.
					c := map[string]string{"blob": strings.Repeat("é", contextBytes/2)}
					if _, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", i),
						Status: "success", IdempotencyKey: fmt.Sprint("k", i), Context: c}); err != nil {
						t.Fatal(err)
					}
				}
				return th.ID
			}
			big := start("big", 3, 40<<10)    // 3 × 40 KiB in attempts, 3 × 40 KiB more as latest contexts
			small := start("small", 2, 1<<10) // well within the bound
			const bound = 200 << 10           // over the attempts' 120 KiB alone, under all 240 KiB
			var refused []string
			e := boundedExportServer(db, log, ctx, bound, func(n limits.Name) { refused = append(refused, string(n)) })
			get := func(path string) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				return rec
			}

			rec := get("/v1/threads/" + big + "/export")
			var p struct {
				Code  string `json:"code"`
				Limit string `json:"limit"`
				Bytes int64  `json:"bytes"`
				Max   int64  `json:"max"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			if rec.Code != http.StatusRequestEntityTooLarge || p.Code != "limit_exceeded" || p.Limit != readmodel.LimitExportThreadBytes ||
				p.Max != bound || p.Bytes < 6*40<<10 {
				t.Fatalf("the big thread's export: %d %s", rec.Code, rec.Body)
			}
			if rec := get("/v1/threads/" + small + "/export"); rec.Code != http.StatusOK {
				t.Fatalf("the small thread's export: %d %s", rec.Code, rec.Body)
			}

			rec = get("/v1/threads/export")
			var lines []string
			sc := bufio.NewScanner(rec.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if rec.Code != http.StatusOK || len(lines) != 2 {
				t.Fatalf("stream: %d, %d lines", rec.Code, len(lines))
			}
			var skipped opshttp.SkippedJSON
			var exported opshttp.ExportJSON
			if err := json.Unmarshal([]byte(lines[0]), &skipped); err != nil || skipped.Skipped.ID != big ||
				skipped.Skipped.Limit != readmodel.LimitExportThreadBytes || skipped.Skipped.Bytes != p.Bytes {
				t.Errorf("first line %.200s (%v), want the big thread skipped", lines[0], err)
			}
			if err := json.Unmarshal([]byte(lines[1]), &exported); err != nil || exported.Thread.ID != small || len(exported.Attempts) != 2 {
				t.Errorf("second line %.200s (%v), want the small thread", lines[1], err)
			}
			if want := "[export_thread_bytes export_thread_bytes]"; fmt.Sprint(refused) != want {
				t.Errorf("refusals counted %v, want %s", refused, want)
			}
		})
	}
}

// The bound counts everything an export loads, not only the contexts: a
// thread whose sub-steps carry big payloads (its attempts' contexts are
// small) is refused 413 export_thread_bytes, on both stores.
func TestExportBoundCountsSubStepPayloads(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db, log, ctx, app := exportWriter(t, d)
			th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "subs"})
			if err != nil {
				t.Fatal(err)
			}
			const subs, payload = 20, 16 << 10 // 320 KiB of sub-step payloads
			for i := range 2 {
				in := threadsapp.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", i), Status: "success",
					IdempotencyKey: fmt.Sprint("k", i), Context: map[string]string{"n": fmt.Sprint(i)}}
				for j := range subs / 2 {
					in.SubSteps = append(in.SubSteps, threadsapp.SubStepInput{Name: fmt.Sprint("sub", j), Status: "success",
						Payload: map[string]any{"blob": strings.Repeat("x", payload)}})
				}
				if _, err := app.Commands.RecordStep.Handle(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			const bound = 200 << 10 // far over the contexts, under the payloads
			e := boundedExportServer(db, log, ctx, bound, func(limits.Name) {})
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/threads/"+th.ID+"/export", nil))
			var p struct {
				Limit string `json:"limit"`
				Bytes int64  `json:"bytes"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			if rec.Code != http.StatusRequestEntityTooLarge || p.Limit != readmodel.LimitExportThreadBytes || p.Bytes < subs*payload {
				t.Fatalf("the export of a thread with %d KiB of sub-step payloads: %d %.300s", subs*payload>>10, rec.Code, rec.Body)
			}
		})
	}
}

// exportWriter is a fresh store of dialect d and the thread use cases that
// write to it, acting as an admin.
func exportWriter(t *testing.T, d sqldb.Dialect) (*sqldb.DB, *slog.Logger, context.Context, threadsapp.Application) {
	t.Helper()
	db := sqldbtest.Open(t, d)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "admin", Role: domain.RoleAdmin})
	return db, log, ctx, threadsapp.New(threadstore.New(db), nil, nil, []byte("secret"), log).Application()
}

// boundedExportServer serves the export endpoints over db with one thread's
// export bounded to maxThreadBytes, every request acting in ctx; refused
// sees each limit refusal.
func boundedExportServer(db *sqldb.DB, log *slog.Logger, ctx context.Context, maxThreadBytes int64, refused func(limits.Name)) *echo.Echo {
	tq := threadquery.New(db)
	x := readmodel.NewExports(readmodel.Deps{Store: tq, ChainSecrets: readmodel.ChainSecrets([]byte("secret"))}, tq)
	x.SetMaxThreadBytes(maxThreadBytes)
	h := &opshttp.Handler{Exports: x, Refused: refused}
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(log)
	h.Mount(e, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	})
	return e
}
