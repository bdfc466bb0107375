//go:build !goexperiment.jsonv2

package crd

import (
	"strings"
	"unicode"
)

// parseTag reads a json struct tag as the encoding/json this program is
// built with reads it: here encoding/json's own v1, which takes the name
// before the first comma when it is valid, and options after it.
func parseTag(tag string) jsonTag {
	name, opts, _ := strings.Cut(tag, ",")
	var out jsonTag
	if validTag(name) {
		out.name = name
	}
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		switch o {
		case "omitempty":
			out.omitEmpty = true
		case "omitzero":
			out.omitZero = true
		case "string":
			out.quoted = true
		}
	}
	return out
}

// validTag reports whether v1 takes s as a name, as its isValidTag does.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
			// Backslash and quote chars are reserved, but otherwise any
			// punctuation chars are allowed in a tag name.
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// marshalerMethods are the methods by which a type encodes itself, in the
// order encoding/json looks for them.
var marshalerMethods = []string{"MarshalJSON", "MarshalText"}
