// Package names holds Kubernetes' rules for the names an end user gives a
// controller's parts: a finalizer's and an annotation key's. Each check
// returns an error that reads after what it names, such as "the
// finalizer ".
package names

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckFinalizer reports whether name can name a finalizer: a qualified
// name with a domain prefix, as Kubernetes asks of every finalizer but its
// own.
func CheckFinalizer(name string) error {
	if name == "" {
		return errors.New("is empty: want a qualified name with a domain, such as example.com/finalizer")
	}
	if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a qualified name: %s", name, strings.Join(msgs, "; "))
	}
	if !strings.Contains(name, "/") {
		return fmt.Errorf("%q has no domain: want one, such as example.com/%s", name, name)
	}
	return nil
}

// CheckAnnotation reports whether key can name an annotation, as the API
// server validates one: a qualified name, its optional prefix a DNS
// subdomain, case aside.
func CheckAnnotation(key string) error {
	if key == "" {
		return errors.New("is empty: want an annotation key, such as example.com/failure-scenario")
	}
	if msgs := validation.IsQualifiedName(strings.ToLower(key)); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid annotation key: %s", key, strings.Join(msgs, "; "))
	}
	return nil
}
