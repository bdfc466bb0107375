// Package e2e runs the Database controller as a whole App, databases.Init
// as its main runs it, against an API server of kubetest's and the real
// PostgreSQL at 127.0.0.1:5432. It has only tests.
package e2e
