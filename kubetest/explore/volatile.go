package explore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// volatile is one entry of Config.Volatile, parsed: a kind, and a path
// in its objects, each element a key or every, "*", for every item of a
// list. An empty path makes which objects of the kind there are
// volatile.
type volatile struct {
	kind string
	path []string
}

// every is the path element that stands for every item of a list.
const every = "*"

var (
	// kindName is a kind as Kubernetes spells one: CamelCase.
	kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// pathElement is a key of a path: a JSON field name, or "[*]", or
	// "['k']" for a key with dots or brackets in it.
	pathElement = regexp.MustCompile(`^(?:\.([A-Za-z0-9_$-]+)|\[\*\]|\['([^']+)'\])`)
)

// parseVolatile parses Config.Volatile. explored is the explored kind,
// whose objects the oracles compare by their status alone. It returns
// an error naming every entry that doesn't parse.
func parseVolatile(entries []string, explored string) ([]volatile, error) {
	var (
		out  []volatile
		errs []error
	)
	for i, entry := range entries {
		v, err := parseVolatileEntry(entry, explored)
		if err != nil {
			errs = append(errs, fmt.Errorf("explore.Config.Volatile[%d] %q: %w", i, entry, err))
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}

func parseVolatileEntry(entry, explored string) (volatile, error) {
	kind, rest := entry, ""
	if i := strings.IndexAny(entry, ".["); i >= 0 {
		kind, rest = entry[:i], entry[i:]
	}
	if !kindName.MatchString(kind) {
		return volatile{}, fmt.Errorf("%q is not a kind: want a kind, such as Deployment, then a path, such as .spec.replicas", kind)
	}
	v := volatile{kind: kind}
	for rest != "" {
		m := pathElement.FindStringSubmatch(rest)
		if m == nil {
			return volatile{}, fmt.Errorf("%q: want .field, [*] or ['key'] after %s", rest, strings.TrimSuffix(entry, rest))
		}
		switch {
		case m[1] != "":
			v.path = append(v.path, m[1])
		case m[2] != "":
			v.path = append(v.path, m[2])
		default:
			if len(v.path) == 0 || v.path[len(v.path)-1] == every {
				return volatile{}, fmt.Errorf("[*] after %s: it follows a field that holds a list", strings.TrimSuffix(entry, rest))
			}
			v.path = append(v.path, every)
		}
		rest = rest[len(m[0]):]
	}
	// A list volatile item by item is a list volatile.
	for len(v.path) > 0 && v.path[len(v.path)-1] == every {
		v.path = v.path[:len(v.path)-1]
	}
	if kind == explored && (len(v.path) == 0 || v.path[0] != "status") {
		return volatile{}, fmt.Errorf("the oracles compare a %s by its status alone: start the path at .status", explored)
	}
	return v, nil
}

// drop removes what vs makes volatile in obj, an object of kind.
func drop(obj map[string]any, kind string, vs []volatile) {
	for _, v := range vs {
		if v.kind == kind && len(v.path) > 0 {
			dropPath(obj, v.path)
		}
	}
}

// dropPath removes path from v: a key of a map, or every item's path of
// a list.
func dropPath(v any, path []string) {
	if len(path) == 0 {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(t, path[0])
			return
		}
		dropPath(t[path[0]], path[1:])
	case []any:
		if path[0] != every {
			return
		}
		for _, item := range t {
			dropPath(item, path[1:])
		}
	}
}

// volatileKind reports whether vs makes which objects of kind there are
// volatile.
func volatileKind(kind string, vs []volatile) bool {
	for _, v := range vs {
		if v.kind == kind && len(v.path) == 0 {
			return true
		}
	}
	return false
}
