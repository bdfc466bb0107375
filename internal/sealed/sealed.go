// Package sealed holds the token that lets loam's own test packages, such
// as kube/cachetest, call an exported method of kube that a program
// outside loam must not: such a program can't import this package, so it
// can't name the token, and can't call the method.
package sealed

// Token is the argument of a method only loam's packages may call.
type Token struct{ _ struct{} }
