package webhookreach_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/webhookreach"
)

func TestNamesConversion(t *testing.T) {
	const path = "/convert/cache.example.com/memcacheds"
	paths := []string{"/convert/example.com/widgets", path}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"through a Service, refused",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://memcached-webhooks.memcached-system.svc:443/convert/cache.example.com/memcacheds?timeout=30s": dial tcp 10.96.0.12:443: connect: connection refused`), true},
		{"through a Service with no endpoints",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://memcached-webhooks.memcached-system.svc:443/convert/cache.example.com/memcacheds?timeout=30s": no endpoints available for service "memcached-webhooks"`), true},
		{"at a URL, reset",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://127.0.0.1:40123/convert/cache.example.com/memcacheds?timeout=30s": read tcp 127.0.0.1:1->127.0.0.1:40123: read: connection reset by peer`), true},
		{"behind a Service's path",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://w.ns.svc:8443/hooks/convert/cache.example.com/memcacheds?timeout=30s": EOF`), true},
		{"wrapped by a list",
			fmt.Errorf("kube: listing cache.example.com/v1alpha1, Resource=memcacheds: %w",
				errors.New(`Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://127.0.0.1:9443/convert/cache.example.com/memcacheds?timeout=30s": context deadline exceeded`)), true},
		{"a list from a cold cache, as kubetest's API server (v1.37) words it",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds: failed to read one or more memcacheds.cache.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/cache.example.com/memcacheds/ns/alpha, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=231: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://127.0.0.1:36149/convert/cache.example.com/memcacheds?timeout=30s": read tcp 127.0.0.1:56902->127.0.0.1:36149: read: connection reset by peer`), true},
		{"a list the API server's own timeout ended: it names no webhook",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds: Timeout: request did not complete within requested timeout - context deadline exceeded`), false},
		{"a list whose webhook answered 504: the client's error names the CRD, not the URL",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds: Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: the server was unable to return a response in the time allotted, but may still be processing the request`), true},
		{"a list of a namespace whose webhook's proxy answered 503",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds in namespace "shop": Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: the server is currently unable to handle the request`), true},
		{"a 504 from a cold cache's list",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds: failed to read one or more memcacheds.cache.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/cache.example.com/memcacheds/ns/alpha, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=231: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: the server was unable to return a response in the time allotted, but may still be processing the request`), true},
		{"a 504 of the conversion of a resource not ours, listed",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcachedsets: Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=MemcachedSet failed: the server was unable to return a response in the time allotted, but may still be processing the request`), false},
		{"a 504 of another group's conversion",
			errors.New(`kube: listing example.com/v2, Resource=gadgets: Internal error occurred: conversion webhook for example.com/v2, Kind=Gadget failed: the server was unable to return a response in the time allotted, but may still be processing the request`), false},
		{"a 504 that names no listed resource",
			errors.New(`Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: the server was unable to return a response in the time allotted, but may still be processing the request`), false},
		{"our webhook answered 500: the webhook's own answer, not its reach",
			errors.New(`kube: listing cache.example.com/v1alpha1, Resource=memcacheds: Internal error occurred: conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: an error on the server ("boom") has prevented the request from succeeding`), false},
		{"with no query",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post https://127.0.0.1:9443/convert/cache.example.com/memcacheds: EOF`), true},
		{"another App's conversion webhook",
			errors.New(`conversion webhook for example.com/v2, Kind=Gadget failed: Post "https://127.0.0.1:9443/convert/example.com/gadgets?timeout=30s": EOF`), false},
		{"a path that only starts with one of ours",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://127.0.0.1:9443/convert/cache.example.com/memcacheds.evil?timeout=30s": EOF`), false},
		{"our webhook answered, malformed",
			errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached returned 0 objects, expected 1`), false},
		{"an admission webhook of ours",
			errors.New(`Internal error occurred: failed calling webhook "validate.v1beta1.memcacheds.cache.example.com": Post "https://127.0.0.1:9443/convert/cache.example.com/memcacheds?timeout=10s": EOF`), false},
		{"a CRD not installed", errors.New("the server could not find the requested resource"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, webhookreach.NamesConversion(tt.err, paths))
		})
	}
	t.Run("no paths", func(t *testing.T) {
		require.False(t, webhookreach.NamesConversion(tests[0].err, nil))
	})
}
