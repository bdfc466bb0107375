// Package lintselftest holds, behind the lintselftest build tag, one call of
// each kind the lint rules forbid. `make lint-selftest` lints it and fails
// unless golangci-lint reports every one, so a rule that stops matching is
// noticed. Ordinary builds never see those calls.
package lintselftest
