package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// ContractSummary describes one stored contract version without its steps.
type ContractSummary struct {
	Name        string
	Version     int
	Description string
	StepCount   int
	CreatedBy   string
	CreatedAt   time.Time
	// LatestVersion is the newest version of the contract (ListContracts
	// returns one summary per contract, for its latest version).
	LatestVersion int
	// SourceFormat is the language the version was written in.
	SourceFormat domain.ContractFormat
	// ContentHash is the hash of its compiled content (domain.Contract.ContentHash).
	ContentHash string
}

// Contracts stores contract versions. Versions are immutable once stored.
type Contracts interface {
	// PutContractVersion stores c (parsed from source; its format is
	// detected from source). A version that exists already, or is not
	// greater than the latest, gives KindConflict.
	PutContractVersion(ctx context.Context, c domain.Contract, source []byte, createdBy string, now time.Time) error
	ContractReader
	ContractSources
	ContractLister
}

// ContractReader reads compiled contract versions.
type ContractReader interface {
	// GetContract returns one version; version 0 means the latest. Unknown
	// names or versions give KindNotFound.
	GetContract(ctx context.Context, name string, version int) (domain.Contract, error)
}

// ContractSources reads versions as written.
type ContractSources interface {
	// GetContractSource returns the source as uploaded, for one version (0 = latest).
	GetContractSource(ctx context.Context, name string, version int) ([]byte, ContractSummary, error)
}

// ContractLister lists contracts and versions.
type ContractLister interface {
	// ListContracts returns the latest version of every contract, by name.
	ListContracts(ctx context.Context) ([]ContractSummary, error)
	// ListContractVersions returns every version of one contract, newest
	// first; an unknown name gives KindNotFound.
	ListContractVersions(ctx context.Context, name string) ([]ContractSummary, error)
}

// NewContractVersion is a version to publish.
type NewContractVersion struct {
	Contract     domain.Contract
	Source       []byte
	SourceFormat domain.ContractFormat
	ContentHash  string
	CreatedBy    string
	At           time.Time
	// Update: the contract must exist already (KindNotFound otherwise) and
	// the content must differ from its latest version's
	// (CodeContractUnchanged otherwise), checked in the same transaction.
	Update bool
}

// ContractPublisher publishes contract versions.
type ContractPublisher interface {
	// PublishContractVersion stores v. A version that exists already, or
	// is not greater than the latest, gives CodeContractVersionConflict
	// with Details["latestVersion"].
	PublishContractVersion(ctx context.Context, v NewContractVersion) error
}

// ContractEraser deletes contract versions.
type ContractEraser interface {
	// DeleteContractVersion removes one version; KindNotFound when it does
	// not exist, CodeContractVersionInUse (KindConflict) when a thread was
	// started with it. The contract disappears with its last version.
	DeleteContractVersion(ctx context.Context, name string, version int) error
}
