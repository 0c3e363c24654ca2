package ports

import "context"

// Classifier answers a closed question: it picks one of the labels it is
// offered and says how sure it is. Semantic rules ("must satisfy
// question"), can's goals and should's advice are put to it
// (app/semantic); adapters/classifier speaks to an OpenAI-compatible
// chat-completions endpoint. Nil means none is configured.
type Classifier interface {
	Classify(ctx context.Context, q ClassifyRequest) (ClassifyAnswer, error)
}

// ClassifyRequest is one question.
type ClassifyRequest struct {
	// Task says what to decide, in words (a contract's question, an
	// agent's goal).
	Task string
	// Labels are the possible answers; the answer is exactly one of them.
	Labels []string
	// State is the JSON-encodable facts to decide on.
	State any
}

// ClassifyAnswer is the label chosen and the classifier's probability that
// it is right (0..1).
type ClassifyAnswer struct {
	Label       string
	Probability float64
}
