// Package gettingstarted keeps docs/getting-started.md true: its test
// builds, vets and tests the page's code as a module of its own, with the
// page's commands.
package gettingstarted
