package domain

// PrerequisiteCheck says whether a step's prerequisites hold for one new
// invocation.
type PrerequisiteCheck struct {
	// Missing are prerequisites (DependsOn) that have never succeeded.
	Missing []string
	// Stale are fresh prerequisites ("must succeed before each invocation")
	// whose latest success an earlier invocation of the step consumed.
	Stale []string
	// Consume are the IDs of the successes this invocation consumes: the
	// latest success of each fresh prerequisite, in FreshDependsOn order.
	Consume []string
}

// Satisfied reports whether the invocation may run.
func (p PrerequisiteCheck) Satisfied() bool { return len(p.Missing) == 0 && len(p.Stale) == 0 }

// CheckPrerequisites judges one new invocation of step. history is the
// thread's recorded attempts, oldest first (engine order); consumed holds
// the IDs of prerequisite successes earlier invocations of this step
// consumed.
//
// A plain prerequisite needs any earlier success. A fresh one needs its
// latest success to be unconsumed: one approval allows one invocation, and
// two approvals recorded before a charge still allow one charge (the
// earlier approval is not after the previous invocation either). Each
// invocation consumes the latest success of every fresh prerequisite, when
// it is granted (a waitFor grant) or, unguarded, when it is reported; the
// caller stores Consume with the invocation in the same transaction as the
// check (under the thread's row lock), so two replicas cannot spend one
// approval, and keeps it when the grant is cancelled, fails or is
// abandoned: a consumed approval is never restored.
func CheckPrerequisites(step ContractStep, history []RecordedStep, consumed map[string]bool) PrerequisiteCheck {
	var out PrerequisiteCheck
	latest := map[string]RecordedStep{}
	for _, h := range history {
		if StepSucceeded(h.Status) {
			latest[h.Name] = h
		}
	}
	for _, dep := range step.DependsOn {
		if _, ok := latest[dep]; !ok {
			out.Missing = append(out.Missing, dep)
		}
	}
	for _, dep := range step.FreshDependsOn {
		h, ok := latest[dep]
		switch {
		case !ok:
			if !contains(out.Missing, dep) {
				out.Missing = append(out.Missing, dep)
			}
		case h.ID != "" && consumed[h.ID]:
			out.Stale = append(out.Stale, dep)
		default:
			out.Consume = append(out.Consume, h.ID)
		}
	}
	if !out.Satisfied() {
		out.Consume = nil
	}
	return out
}
