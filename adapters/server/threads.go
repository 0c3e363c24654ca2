package server

import (
	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/ports"
)

// threadContracts is the contract store thread ingestion validates steps
// against (contract versions are immutable, so the thread use cases cache them).
func (s *Server) threadContracts() ports.Contracts { return contractstore.New(s.DB) }
