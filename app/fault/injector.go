// Package fault is the App's failure injector. PLACEHOLDER: replaced by the
// failure-injection work.
package fault

// Injector evaluates injection points.
type Injector struct{}
