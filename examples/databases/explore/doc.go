// Package explore explores the databases example's controller with
// kubetest's explorer (docs/testing.md, "Exploring an operator"), against
// the real PostgreSQL at 127.0.0.1:5432, with invariants over what
// PostgreSQL holds. It holds the test alone, in a package of its own, so
// that the example's own fuzz target doesn't link, and instrument, an API
// server.
package explore
