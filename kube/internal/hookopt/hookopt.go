// Package hookopt holds kube.HookOption's type, so that kube's
// sub-packages make options as kube itself does: kube/webhookcel's
// MatchConditions, which compiles CEL, lives apart from kube so that a
// program links cel-go only if it makes match conditions. End users name
// the type kube.HookOption and make one only with kube's functions and
// its sub-packages'.
package hookopt

import "github.com/loam-dev/loam/domain/webhookconfig"

// Option sets one thing about a Validate's or a Mutate's webhook; the
// zero Option is a mistake domain/webhookconfig reports.
type Option struct {
	o webhookconfig.Option
}

// New returns the Option that carries o.
func New(o webhookconfig.Option) Option { return Option{o} }

// Value returns what domain/webhookconfig reads of the option.
func (o Option) Value() webhookconfig.Option { return o.o }

// String describes the option as the end user wrote it, for errors.
func (o Option) String() string { return o.o.String() }
