package server

import "github.com/threadengine/engine/ports"

// threadContracts is the contract store thread ingestion validates against.
// TODO(H2b): switch to contractstore.New(s.DB) once adapters/contractstore lands.
func (s *Server) threadContracts() ports.Contracts { return nil }
