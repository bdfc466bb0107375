//go:build goexperiment.jsonv2

package crd

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseTag reads a json struct tag as the encoding/json this program is
// built with reads it: here the one built on encoding/json/v2, with v1's
// semantics, which ignores a malformed tag's mistakes and reads what it can.
func parseTag(tag string) jsonTag {
	var out jsonTag
	if tag != "" && !strings.HasPrefix(tag, ",") {
		n := len(tag) - len(strings.TrimLeftFunc(tag, func(r rune) bool {
			return !strings.ContainsRune(",\\'\"`", r)
		}))
		name, ok := tag[:n], true
		if !strings.HasPrefix(tag[n:], ",") && n != len(tag) {
			name, n, ok = consumeTagOption(tag, false)
		}
		if ok {
			if !utf8.ValidString(name) {
				name = string([]rune(name))
			}
			out.name = name
		}
		tag = tag[n:]
	}
	for len(tag) > 0 {
		if tag[0] == ',' {
			tag = tag[1:]
			if tag == "" {
				break
			}
		}
		opt, n, _ := consumeTagOption(tag, false)
		tag = tag[n:]
		switch opt {
		case "omitempty":
			out.omitEmpty = true
		case "omitzero":
			out.omitZero = true
		case "string":
			out.quoted = true
		case "case", "format":
			if strings.HasPrefix(tag, ":") {
				tag = tag[1:]
				if _, n, ok := consumeTagOption(tag, opt == "format"); ok {
					tag = tag[n:]
				}
			}
		}
	}
	return out
}

// consumeTagOption reads the tag's next option: a Go identifier, or, when
// quoted allows it, a single-quoted string. It returns the option, how
// much of in it took, and whether it was well formed; a malformed option
// takes in up to the next comma.
func consumeTagOption(in string, quoted bool) (string, int, bool) {
	i := strings.IndexByte(in, ',')
	if i < 0 {
		i = len(in)
	}
	switch r, _ := utf8.DecodeRuneInString(in); {
	case r == '_' || unicode.IsLetter(r):
		n := len(in) - len(strings.TrimLeftFunc(in, func(r rune) bool {
			return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
		}))
		return in[:n], n, true
	case r == '\'' && quoted:
		var escaped bool
		b := []byte{'"'}
		n := len(`'`)
		for len(in) > n {
			r, rn := utf8.DecodeRuneInString(in[n:])
			switch {
			case escaped:
				if r == '\'' {
					b = b[:len(b)-1]
				}
				escaped = false
			case r == '\\':
				escaped = true
			case r == '"':
				b = append(b, '\\')
			case r == '\'':
				b = append(b, '"')
				n += len(`'`)
				out, err := strconv.Unquote(string(b))
				if err != nil {
					return in[:i], i, false
				}
				return out, n, true
			}
			b = append(b, in[n:][:rn]...)
			n += rn
		}
	}
	return in[:i], i, false
}

// marshalerMethods are the methods by which a type encodes itself, in the
// order encoding/json/v2 looks for them.
var marshalerMethods = []string{"MarshalJSONTo", "MarshalJSON", "AppendText", "MarshalText"}
