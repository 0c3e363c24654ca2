package domain

import "sort"

// Code is a stable, machine-readable error identifier. Clients match on it,
// so a published code never changes meaning.
type Code string

// Every public error code is declared here, and only here, with the kinds
// it is used with in the registry below. docs/integrators/errors.md lists
// exactly these codes (test/docs checks both, and that no other package
// declares a Code).
const (
	// General.
	CodeInternal         Code = "internal"
	CodeValidationFailed Code = "validation_failed"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeBodyTooLarge     Code = "body_too_large"
	CodeUnavailable      Code = "unavailable"
	CodeRateLimited      Code = "rate_limited"
	// CodeLimitExceeded: a request, socket or message reached one of the
	// engine's limits; Details["limit"] names it.
	CodeLimitExceeded Code = "limit_exceeded"
	// CodeQueryTimeout: a read ran out of its deadline
	// (limits.graphql.max_duration) and was stopped.
	CodeQueryTimeout Code = "query_timeout"
	// CodeUnsupportedMediaType: a body in a media type the route does not
	// read (OTLP: neither protobuf nor JSON).
	CodeUnsupportedMediaType Code = "unsupported_media_type"

	// Credentials and permissions.
	CodeUnauthenticated Code = "unauthenticated"
	CodeForbidden       Code = "forbidden"
	CodeAPIKeyRevoked   Code = "api_key_revoked"
	CodeAPIKeyExpired   Code = "api_key_expired"
	CodeSessionExpired  Code = "session_expired"
	CodeSessionRevoked  Code = "session_revoked"
	CodeUserNotActive   Code = "user_not_active"
	CodeOriginDenied    Code = "origin_denied"

	// Users.
	CodeEmailTaken               Code = "email_taken"
	CodeLastActiveAdminRequired  Code = "last_active_admin_required"
	CodeInvalidStatusTransition  Code = "invalid_status_transition"
	CodeActivationRequiresSignIn Code = "activation_requires_sign_in"
	// CodeUserNotArchived: only an archived user's personal data can be
	// erased.
	CodeUserNotArchived Code = "user_not_archived"

	// Browser sign-in through the identity registry: shown on
	// /login?error=<code> and in JSON problems.
	CodeEmailNotVerified        Code = "email_not_verified"
	CodeNotInvited              Code = "not_invited"
	CodeIdentityMismatch        Code = "identity_mismatch"
	CodeBindingInactive         Code = "binding_inactive"
	CodeIdentityAlreadyBound    Code = "identity_already_bound"
	CodeUserAlreadyBound        Code = "user_already_bound"
	CodeLicenseUnavailable      Code = "license_unavailable"
	CodeLicenseInvalid          Code = "license_invalid"
	CodeLicenseSuspended        Code = "license_suspended"
	CodeManagedIdentityDisabled Code = "managed_identity_disabled"
	CodeProductNotLicensed      Code = "product_not_licensed"
	CodeLoginExpired            Code = "login_expired"
	CodeRegistryUnavailable     Code = "registry_unavailable"
	CodeRegistryDenied          Code = "registry_denied"
	CodeSignInFailed            Code = "sign_in_failed"

	// Contracts and threads.
	CodeInvalidContract         Code = "invalid_contract"
	CodeContractVersionConflict Code = "contract_version_conflict"
	CodeThreadClosed            Code = "thread_closed"
	// CodeContractVersionInUse: a contract version cannot be deleted while a
	// thread was started with it (delete those threads first).
	CodeContractVersionInUse Code = "contract_version_in_use"
	// CodeContractConflict: a thread key resumed with another contract.
	CodeContractConflict Code = "contract_conflict"
	// CodeContractUnchanged: PUT /v1/contracts/{name} with the same content
	// (ignoring formatting, name, version and description) as the latest
	// version.
	CodeContractUnchanged Code = "contract_unchanged"
	// CodeContentRuleFailed: a step's context breaks its contract's content
	// rules; Details["violations"] lists {field, rule, message}.
	CodeContentRuleFailed Code = "content_rule_failed"
	// CodeClassifierUnavailable: a semantic rule could not be judged (no
	// classifier configured, or it failed or timed out): the step is
	// refused, fail closed; retrying later may work.
	CodeClassifierUnavailable Code = "classifier_unavailable"

	// Thread model (parties, access levels, statuses): see
	// domain/thread_rules.go.
	CodeInvalidStepStatus  Code = "invalid_step_status"
	CodeNotAParty          Code = "not_a_party"
	CodeGrantExpired       Code = "grant_expired"
	CodeInsufficientAccess Code = "insufficient_access"
	CodeAmbiguousThread    Code = "ambiguous_thread"
	CodeAmbiguousParty     Code = "ambiguous_party"
	// CodeInvocationCancelled: a step report (or wait) names an invocation
	// whose waitFor grant was given back.
	CodeInvocationCancelled Code = "invocation_cancelled"

	// Alert webhooks: a URL the engine will not post to (not absolute
	// http(s), credentials in it) or whose host alerts.allowed_hosts omits.
	CodeWebhookURLInvalid    Code = "webhook_url_invalid"
	CodeWebhookURLNotAllowed Code = "webhook_url_not_allowed"

	// GraphQL (extensions.code of request-level errors).
	CodeComplexityLimitExceeded Code = "COMPLEXITY_LIMIT_EXCEEDED"
	CodeGraphQLBadRequest       Code = "BAD_REQUEST"
	CodeGraphQLParseFailed      Code = "GRAPHQL_PARSE_FAILED"
	CodeGraphQLValidationFailed Code = "GRAPHQL_VALIDATION_FAILED"
	CodeGraphQLBadUserInput     Code = "BAD_USER_INPUT"
	CodeGraphQLQueryTooLarge    Code = "QUERY_TOO_LARGE"
)

// registry holds every public code and the kinds it is used with, the
// usual one first. A code used with several kinds keeps each of them
// because clients already see those statuses (e.g. user_not_active is 401
// on an API request and 403 on a refused sign-in).
var registry = map[Code][]Kind{
	CodeInternal:         {KindInternal},
	CodeValidationFailed: {KindInvalid},
	CodeNotFound:         {KindNotFound, KindConflict},
	CodeMethodNotAllowed: {KindMethodNotAllowed},
	CodeBodyTooLarge:     {KindTooLarge},
	CodeUnavailable:      {KindUnavailable},
	CodeRateLimited:      {KindRateLimited},
	CodeLimitExceeded:    {KindTooLarge, KindRateLimited},
	CodeQueryTimeout:     {KindUnavailable},

	CodeUnsupportedMediaType: {KindUnsupportedMedia},

	CodeUnauthenticated: {KindUnauthenticated},
	CodeForbidden:       {KindForbidden},
	CodeAPIKeyRevoked:   {KindUnauthenticated},
	CodeAPIKeyExpired:   {KindUnauthenticated},
	CodeSessionExpired:  {KindUnauthenticated},
	CodeSessionRevoked:  {KindUnauthenticated},
	CodeUserNotActive:   {KindUnauthenticated, KindForbidden, KindConflict},
	CodeOriginDenied:    {KindForbidden},

	CodeEmailTaken:               {KindConflict},
	CodeLastActiveAdminRequired:  {KindConflict},
	CodeInvalidStatusTransition:  {KindConflict},
	CodeActivationRequiresSignIn: {KindConflict},
	CodeUserNotArchived:          {KindConflict},

	CodeEmailNotVerified:        {KindForbidden},
	CodeNotInvited:              {KindForbidden},
	CodeIdentityMismatch:        {KindForbidden},
	CodeBindingInactive:         {KindForbidden},
	CodeIdentityAlreadyBound:    {KindConflict},
	CodeUserAlreadyBound:        {KindConflict},
	CodeLicenseUnavailable:      {KindUnavailable},
	CodeLicenseInvalid:          {KindForbidden},
	CodeLicenseSuspended:        {KindForbidden},
	CodeManagedIdentityDisabled: {KindForbidden},
	CodeProductNotLicensed:      {KindForbidden},
	CodeLoginExpired:            {KindUnauthenticated},
	CodeRegistryUnavailable:     {KindUnavailable},
	CodeRegistryDenied:          {KindForbidden},
	CodeSignInFailed:            {KindUnauthenticated},

	CodeInvalidContract:         {KindInvalid},
	CodeContractVersionConflict: {KindConflict},
	CodeThreadClosed:            {KindConflict},
	CodeContractVersionInUse:    {KindConflict},
	CodeContractConflict:        {KindConflict},
	CodeContractUnchanged:       {KindConflict},
	CodeContentRuleFailed:       {KindUnprocessable},
	CodeClassifierUnavailable:   {KindUnavailable},

	CodeInvalidStepStatus:   {KindInvalid},
	CodeNotAParty:           {KindForbidden},
	CodeGrantExpired:        {KindForbidden},
	CodeInsufficientAccess:  {KindForbidden},
	CodeAmbiguousThread:     {KindInvalid},
	CodeAmbiguousParty:      {KindInvalid},
	CodeInvocationCancelled: {KindConflict},

	CodeWebhookURLInvalid:    {KindInvalid},
	CodeWebhookURLNotAllowed: {KindInvalid},

	CodeComplexityLimitExceeded: {KindUnprocessable},
	CodeGraphQLBadRequest:       {KindInvalid},
	CodeGraphQLParseFailed:      {KindUnprocessable},
	CodeGraphQLValidationFailed: {KindUnprocessable},
	CodeGraphQLBadUserInput:     {KindUnprocessable},
	CodeGraphQLQueryTooLarge:    {KindTooLarge},
}

// Codes returns every public code, sorted.
func Codes() []Code {
	out := make([]Code, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// KindsOf returns the kinds code is used with (the usual one first), or
// nil for a code that is not registered.
func KindsOf(code Code) []Kind {
	return append([]Kind(nil), registry[code]...)
}

// Registered reports whether code is a public code used with kind.
func Registered(code Code, kind Kind) bool {
	for _, k := range registry[code] {
		if k == kind {
			return true
		}
	}
	return false
}
