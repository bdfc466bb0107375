package config_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/loam-dev/loam/app/config"
)

// FuzzChain reads an arbitrary value through a Parse, Default and Validate
// chain inside a Struct, and checks the result against what each step
// promises: never a panic, a default only when the variable is empty, a
// parse or check error named and on one line, and otherwise the parsed
// value.
func FuzzChain(f *testing.F) {
	for _, seed := range []string{"", "0", "7", "-1", "x", " 1", "1\n2", "99999999999999999999", "+3", "0x10"} {
		f.Add(seed)
	}
	errNegative := errors.New("negative")
	nonNegative := func(n int) error {
		if n < 0 {
			return errNegative
		}
		return nil
	}
	f.Fuzz(func(t *testing.T, value string) {
		env := config.Map{"N": value}
		got, err := config.Struct(func(r *config.Resolver) int {
			return r.Get(config.Env(env, "N").Parse(strconv.Atoi).Default(7).Validate(nonNegative))
		}).Read(t.Context())

		if value == "" {
			if err != nil || got != 7 {
				t.Fatalf("empty value: got %d, %v; want the default 7", got, err)
			}
			return
		}
		n, parseErr := strconv.Atoi(value)
		switch {
		case parseErr != nil:
			want := fmt.Sprintf("config N: %v", parseErr)
			if err == nil || err.Error() != want {
				t.Fatalf("value %q: got error %v; want %q", value, err, want)
			}
			var num *strconv.NumError
			if !errors.As(err, &num) {
				t.Fatalf("value %q: error %v does not wrap the parse error", value, err)
			}
		case n < 0:
			if !errors.Is(err, errNegative) || err.Error() != "config N: negative" {
				t.Fatalf("value %q: got error %v; want the check's", value, err)
			}
		default:
			if err != nil || got != n {
				t.Fatalf("value %q: got %d, %v; want %d", value, got, err, n)
			}
		}
		if err != nil {
			if got != 0 {
				t.Fatalf("value %q: got %d with an error; want the zero value", value, got)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("value %q: one bad variable spans lines: %q", value, err)
			}
		}
	})
}
