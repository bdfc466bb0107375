package kube

import (
	"fmt"
	"slices"
)

// namespacesMistakes returns what is wrong with a Cache's own namespace
// set, namespaces, of a resource of scope whose objects are kind's, with
// allNamespaces beside it. An empty set is no set.
func namespacesMistakes(namespaces []string, allNamespaces bool, scope Scope, kind string) []error {
	if len(namespaces) == 0 {
		return nil
	}
	var errs []error
	if err := CheckNamespaces(namespaces); err != nil {
		errs = append(errs, fmt.Errorf("CacheOptions.Namespaces: %w", err))
	}
	if allNamespaces {
		errs = append(errs, fmt.Errorf("CacheOptions.Namespaces: is %q, and AllNamespaces is set: set one of them", namespaces))
	}
	if scope == Cluster {
		errs = append(errs, fmt.Errorf("CacheOptions.Namespaces: is %q, but %s is cluster-scoped, so its objects are in no namespace: want none", namespaces, kind))
	}
	return errs
}

// watchedNamespaces returns the namespaces settings limit a Controller to,
// nil for every namespace, and the field that says so, for errors. The
// set is the Controller's own copy.
func watchedNamespaces(settings Settings) ([]string, string) {
	switch {
	case settings.Namespace != "":
		return []string{settings.Namespace}, "Settings.Namespace"
	case len(settings.Namespaces) > 0:
		return slices.Clone(settings.Namespaces), "Settings.Namespaces"
	}
	return nil, ""
}
