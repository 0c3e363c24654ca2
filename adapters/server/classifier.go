package server

import (
	"github.com/threadengine/engine/adapters/classifier"
	"github.com/threadengine/engine/ports"
)

// newClassifier is the semantic classifier contracts.classifier configures,
// or nil (an untyped nil: no classifier) without a URL.
func (s *Server) newClassifier() ports.Classifier {
	c := s.Config.Contracts.Classifier
	if cl := classifier.New(classifier.Config{URL: c.URL, Model: c.Model, Key: c.Key, Timeout: c.Timeout}, nil); cl != nil {
		return cl
	}
	return nil
}
