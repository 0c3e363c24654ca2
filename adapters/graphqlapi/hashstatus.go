package graphqlapi

import "github.com/threadengine/engine/domain"

// Code is what verification found (domain.ChainCode).
func (r *hashStatusResolver) Code() string {
	if r.st.Code == "" {
		if r.st.Verified {
			return string(domain.ChainVerified)
		}
		return string(domain.ChainTampered)
	}
	return string(r.st.Code)
}

// MissingSteps are the steps a record names that the store lacks.
func (r *hashStatusResolver) MissingSteps() []*missingStepResolver {
	out := make([]*missingStepResolver, len(r.st.Missing))
	for i := range r.st.Missing {
		out[i] = &missingStepResolver{m: r.st.Missing[i]}
	}
	return out
}

// Log is what the transparency log holds of the thread.
func (r *hashStatusResolver) Log() *chainLogResolver {
	if r.st.Log == nil {
		return nil
	}
	return &chainLogResolver{l: *r.st.Log}
}

type missingStepResolver struct{ m domain.MissingStep }

func (r *missingStepResolver) StepID() *string { return strPtr(r.m.StepID) }
func (r *missingStepResolver) Seq() int32      { return int32(r.m.Seq) }
func (r *missingStepResolver) Hash() string    { return r.m.Hash }
func (r *missingStepResolver) LogIndex() *float64 {
	if r.m.LogIndex < 0 {
		return nil
	}
	f := float64(r.m.LogIndex)
	return &f
}

type chainLogResolver struct{ l domain.ChainLogStatus }

func (r *chainLogResolver) Leaves() int32   { return int32(r.l.Leaves) }
func (r *chainLogResolver) Unlogged() int32 { return int32(r.l.Unlogged) }
func (r *chainLogResolver) LastIndex() *float64 {
	if r.l.LastIndex < 0 {
		return nil
	}
	f := float64(r.l.LastIndex)
	return &f
}
