package domain

// ReadScope is which threads a principal may read. Humans always read the
// whole installation (the engine holds one company); a service account reads
// the whole installation too unless it was created with scope party, which
// limits its reads to the threads it is a party of — it started them or holds
// an unexpired grant on them (joined by invitation or by id).
type ReadScope string

const (
	ScopeCompany ReadScope = "company"
	ScopeParty   ReadScope = "party"
)

// ParseReadScope validates a scope given at service-account creation; ""
// means company.
func ParseReadScope(s string) (ReadScope, error) {
	switch ReadScope(s) {
	case "", ScopeCompany:
		return ScopeCompany, nil
	case ScopeParty:
		return ScopeParty, nil
	}
	return "", Invalid("scope", "unknown scope %q: must be company (every thread) or party (only threads the service account is a party of)", s)
}

// PartyScoped reports whether p reads only the threads it is a party of.
func (p Principal) PartyScoped() bool {
	return p.Kind == PrincipalServiceAccount && p.Scope == ScopeParty
}
