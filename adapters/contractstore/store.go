// Package contractstore keeps contract versions in the engine's SQL database
// (SQLite and PostgreSQL). Versions are immutable: each upload adds a row.
package contractstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Store implements ports.Contracts.
type Store struct {
	db *sqldb.DB
}

var _ ports.Contracts = (*Store)(nil)

// New returns a store on an open, migrated database.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func (s *Store) q(query string) string { return s.db.Rebind(query) }

// PutContractVersion stores c with its source (see PublishContractVersion).
func (s *Store) PutContractVersion(ctx context.Context, c domain.Contract, source []byte, createdBy string, now time.Time) error {
	return s.PublishContractVersion(ctx, ports.NewContractVersion{Contract: c, Source: source,
		SourceFormat: domain.DetectContractFormat(source), ContentHash: c.ContentHash(), CreatedBy: createdBy, At: now})
}

var _ ports.ContractPublisher = (*Store)(nil)

// PublishContractVersion stores v. The contracts row is created on the
// first upload; on PostgreSQL the row lock taken next serialises concurrent
// uploads of one contract, so "greater than the latest" (and, for an
// update, "changed since the latest") is checked against committed data
// (SQLite's IMMEDIATE transaction does the same).
func (s *Store) PublishContractVersion(ctx context.Context, v ports.NewContractVersion) error {
	c := v.Contract
	def, err := json.Marshal(c)
	if err != nil {
		return domain.Internal(err, "encode contract")
	}
	if v.SourceFormat == "" {
		v.SourceFormat = domain.DetectContractFormat(v.Source)
	}
	if v.ContentHash == "" {
		v.ContentHash = c.ContentHash()
	}
	now := sqldb.Time(v.At)
	err = s.db.Tx(ctx, func(tx *sqlx.Tx) error {
		if !v.Update {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO contracts (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`),
				uuid.NewString(), c.Name, now); err != nil {
				return err
			}
		}
		var id string
		if err := tx.GetContext(ctx, &id, s.q(`SELECT id FROM contracts WHERE name = ?`+s.db.ForUpdate()), c.Name); err != nil {
			return sqldb.NotFoundAs(err, "contract "+c.Name)
		}
		var latest struct {
			Version    int    `db:"version"`
			Hash       string `db:"content_hash"`
			Definition []byte `db:"definition"`
		}
		err := tx.GetContext(ctx, &latest, s.q(`SELECT version, content_hash, definition FROM contract_versions WHERE name = ? ORDER BY version DESC LIMIT 1`), c.Name)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if v.Update { // its last version was deleted
				return domain.NotFound("contract " + c.Name)
			}
		case err != nil:
			return err
		default:
			if c.Version <= latest.Version {
				return versionConflict(c, latest.Version)
			}
			if v.Update {
				hash := latest.Hash
				if hash == "" { // stored before hashes were kept
					hash = versionRow{Definition: latest.Definition}.hash()
				}
				if hash == v.ContentHash {
					return domain.E(domain.KindConflict, domain.CodeContractUnchanged,
						"contract %s: the content has not changed since version %d (formatting, name, version and description do not count)", c.Name, latest.Version).
						WithDetail("latestVersion", latest.Version)
				}
			}
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO contract_versions (contract_id, name, version, source, definition, created_by, created_at, source_format, content_hash)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), id, c.Name, c.Version, string(v.Source), string(def), v.CreatedBy, now, string(v.SourceFormat), v.ContentHash)
		return err
	})
	if sqldb.IsUniqueViolation(err) {
		// The locks above make this unreachable in practice; kept so a race
		// can never surface as an internal error.
		return domain.E(domain.KindConflict, domain.CodeContractVersionConflict, "contract %s version %d already exists", c.Name, c.Version)
	}
	return sqldb.TranslateError(err)
}

func versionConflict(c domain.Contract, latest int) error {
	e := domain.E(domain.KindConflict, domain.CodeContractVersionConflict,
		"contract %s version %d is not newer than the latest version %d; increase version", c.Name, c.Version, latest)
	if c.Version == latest {
		e = domain.E(domain.KindConflict, domain.CodeContractVersionConflict,
			"contract %s version %d already exists; versions are immutable, publish version %d", c.Name, c.Version, latest+1)
	}
	return e.WithField("version").WithDetail("latestVersion", latest)
}

type versionRow struct {
	Name         string    `db:"name"`
	Version      int       `db:"version"`
	Source       string    `db:"source"`
	Definition   []byte    `db:"definition"`
	CreatedBy    string    `db:"created_by"`
	CreatedAt    time.Time `db:"created_at"`
	SourceFormat string    `db:"source_format"`
	ContentHash  string    `db:"content_hash"`
}

// hash is the stored content hash, computed from the definition for rows
// stored before hashes were kept ("" if the definition does not decode).
func (r versionRow) hash() string {
	if r.ContentHash != "" {
		return r.ContentHash
	}
	c, err := r.contract()
	if err != nil {
		return ""
	}
	return c.ContentHash()
}

func (r versionRow) contract() (domain.Contract, error) {
	var c domain.Contract
	if err := json.Unmarshal(r.Definition, &c); err != nil {
		return c, domain.Internal(err, "decode stored contract")
	}
	return c, nil
}

func (r versionRow) summary(c domain.Contract, latest int) ports.ContractSummary {
	return ports.ContractSummary{Name: r.Name, Version: r.Version, Description: c.Description, StepCount: len(c.Steps),
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), LatestVersion: latest,
		SourceFormat: domain.ContractFormat(r.SourceFormat), ContentHash: r.hash()}
}

func (s *Store) getRow(ctx context.Context, name string, version int, withSource bool) (versionRow, error) {
	cols := `name, version, definition, created_by, created_at, source_format, content_hash`
	if withSource {
		cols += `, source`
	}
	var r versionRow
	var err error
	if version > 0 {
		err = s.db.GetContext(ctx, &r, s.q(`SELECT `+cols+` FROM contract_versions WHERE name = ? AND version = ?`), name, version)
	} else {
		err = s.db.GetContext(ctx, &r, s.q(`SELECT `+cols+` FROM contract_versions WHERE name = ? ORDER BY version DESC LIMIT 1`), name)
	}
	if errors.Is(err, sql.ErrNoRows) {
		if version > 0 {
			return r, domain.NotFound("contract " + name + " version " + strconv.Itoa(version))
		}
		return r, domain.NotFound("contract " + name)
	}
	return r, sqldb.TranslateError(err)
}

// GetContract returns one version (0 = latest).
func (s *Store) GetContract(ctx context.Context, name string, version int) (domain.Contract, error) {
	r, err := s.getRow(ctx, name, version, false)
	if err != nil {
		return domain.Contract{}, err
	}
	return r.contract()
}

// GetContractSource returns the source of one version as uploaded (0 = latest).
func (s *Store) GetContractSource(ctx context.Context, name string, version int) ([]byte, ports.ContractSummary, error) {
	r, err := s.getRow(ctx, name, version, true)
	if err != nil {
		return nil, ports.ContractSummary{}, err
	}
	c, err := r.contract()
	if err != nil {
		return nil, ports.ContractSummary{}, err
	}
	latest := r.Version
	if version > 0 {
		if err := s.db.GetContext(ctx, &latest, s.q(`SELECT MAX(version) FROM contract_versions WHERE name = ?`), name); err != nil {
			return nil, ports.ContractSummary{}, sqldb.TranslateError(err)
		}
	}
	return []byte(r.Source), r.summary(c, latest), nil
}

// ListContracts returns the latest version of every contract, by name.
func (s *Store) ListContracts(ctx context.Context) ([]ports.ContractSummary, error) {
	var rows []versionRow
	err := s.db.SelectContext(ctx, &rows, `SELECT v.name, v.version, v.definition, v.created_by, v.created_at, v.source_format, v.content_hash
FROM contract_versions v
JOIN (SELECT name, MAX(version) AS version FROM contract_versions GROUP BY name) m ON m.name = v.name AND m.version = v.version
ORDER BY v.name`)
	if err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.ContractSummary, 0, len(rows))
	for _, r := range rows {
		c, err := r.contract()
		if err != nil {
			return nil, err
		}
		out = append(out, r.summary(c, r.Version))
	}
	return out, nil
}

// ListContractVersions returns every version of one contract, newest first.
func (s *Store) ListContractVersions(ctx context.Context, name string) ([]ports.ContractSummary, error) {
	var rows []versionRow
	err := s.db.SelectContext(ctx, &rows, s.q(`SELECT name, version, definition, created_by, created_at, source_format, content_hash
FROM contract_versions WHERE name = ? ORDER BY version DESC`), name)
	if err != nil {
		return nil, sqldb.TranslateError(err)
	}
	if len(rows) == 0 {
		return nil, domain.NotFound("contract " + name)
	}
	out := make([]ports.ContractSummary, 0, len(rows))
	for _, r := range rows {
		c, err := r.contract()
		if err != nil {
			return nil, err
		}
		out = append(out, r.summary(c, rows[0].Version))
	}
	return out, nil
}

var _ ports.ContractEraser = (*Store)(nil)

// DeleteContractVersion: see ports.ContractEraser. The contract row is locked
// as an upload locks it, so a concurrent upload of the same contract waits.
func (s *Store) DeleteContractVersion(ctx context.Context, name string, version int) error {
	return s.db.Tx(ctx, func(tx *sqlx.Tx) error {
		var id string
		if err := tx.GetContext(ctx, &id, s.q(`SELECT id FROM contracts WHERE name = ?`+s.db.ForUpdate()), name); err != nil {
			return sqldb.NotFoundAs(err, "contract "+name)
		}
		// Lock the version before counting its threads: a thread being
		// created holds it (threadstore.insertThread), so the count runs
		// after that thread is committed, and threads created later find
		// the version gone.
		var v int
		if err := tx.GetContext(ctx, &v, s.q(`SELECT version FROM contract_versions WHERE name = ? AND version = ?`+s.db.ForUpdate()), name, version); err != nil {
			return sqldb.NotFoundAs(err, "contract "+name+":"+strconv.Itoa(version))
		}
		var used int
		if err := tx.GetContext(ctx, &used, s.q(`SELECT COUNT(*) FROM threads WHERE contract_name = ? AND contract_version = ?`), name, version); err != nil {
			return sqldb.TranslateError(err)
		}
		if used > 0 {
			return domain.E(domain.KindConflict, domain.CodeContractVersionInUse,
				"contract %s version %d is used by %d thread(s); delete them first", name, version, used).
				WithDetail("threads", used)
		}
		// Its per-step hourly counts go with it (no thread of it is left).
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM step_stats_hourly WHERE contract_name = ? AND contract_version = ?`), name, version); err != nil {
			return sqldb.TranslateError(err)
		}
		for _, table := range []string{"process_map_hourly", "process_map_daily"} {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE contract_name = ? AND contract_version = ?`), name, version); err != nil {
				return sqldb.TranslateError(err)
			}
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM contract_versions WHERE name = ? AND version = ?`), name, version)
		if err != nil {
			return sqldb.TranslateError(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return sqldb.TranslateError(err)
		} else if n == 0 {
			return domain.NotFound("contract " + name + ":" + strconv.Itoa(version))
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM contracts WHERE id = ? AND NOT EXISTS (SELECT 1 FROM contract_versions WHERE name = ?)`), id, name)
		return sqldb.TranslateError(err)
	})
}
