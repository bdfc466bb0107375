package config_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/config"
)

// settings stands in for a settings type such as kube.Settings, with check
// functions of the same shape as its own.
type settings struct {
	Name      string
	Workers   int
	Namespace string
	Identity  string
}

func defaultSettings() settings { return settings{Workers: 1} }

func checkName(name string) error {
	if strings.ToLower(name) != name {
		return fmt.Errorf("name %q is not lower case", name)
	}
	return nil
}

func checkWorkers(n int) error {
	if n < 1 {
		return fmt.Errorf("workers is %d, fewer than 1", n)
	}
	return nil
}

func checkNamespace(string) error { return nil }

func checkIdentity(id string) error {
	if strings.Contains(id, "/") {
		return fmt.Errorf("identity %q holds a slash", id)
	}
	return nil
}

// readSettings is the spec's readSettings, on the stand-in settings.
func readSettings(ctx context.Context, env config.Environment) (settings, error) {
	v := func(name string) config.Value[string] { return config.Env(env, name) }
	d := defaultSettings()
	return config.Struct(func(r *config.Resolver) settings {
		k := d
		k.Name = r.Get(v("CONTROLLER_NAME").Validate(checkName))
		k.Workers = r.Get(v("CONTROLLER_WORKERS").Parse(strconv.Atoi).Default(d.Workers).Validate(checkWorkers))
		k.Namespace = r.Get(v("POD_NAMESPACE").Validate(checkNamespace))
		k.Identity = r.Get(v("POD_NAME").Validate(checkIdentity))
		return k
	}).Read(ctx)
}

func TestStructReportsEveryBadVariableInTheSpecsForm(t *testing.T) {
	tests := []struct {
		name string
		env  config.Map
		want string
	}{
		{
			name: "none set",
			env:  config.Map{},
			want: "config CONTROLLER_NAME: not found\n" +
				"config POD_NAMESPACE: not found\n" +
				"config POD_NAME: not found",
		},
		{
			name: "missing, unparsable and rejected",
			env:  config.Map{"CONTROLLER_WORKERS": "x", "POD_NAMESPACE": "default", "POD_NAME": "a/b"},
			want: "config CONTROLLER_NAME: not found\n" +
				"config CONTROLLER_WORKERS: strconv.Atoi: parsing \"x\": invalid syntax\n" +
				"config POD_NAME: identity \"a/b\" holds a slash",
		},
		{
			name: "empty counts as not found",
			env:  config.Map{"CONTROLLER_NAME": "", "CONTROLLER_WORKERS": "", "POD_NAMESPACE": "ns", "POD_NAME": "p"},
			want: "config CONTROLLER_NAME: not found",
		},
		{
			name: "a bad default is checked",
			env:  config.Map{"CONTROLLER_NAME": "Upper", "CONTROLLER_WORKERS": "0", "POD_NAMESPACE": "ns", "POD_NAME": "p"},
			want: "config CONTROLLER_NAME: name \"Upper\" is not lower case\n" +
				"config CONTROLLER_WORKERS: workers is 0, fewer than 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readSettings(t.Context(), tt.env)
			require.EqualError(t, err, tt.want)
			require.Zero(t, got, "a failed Read returns the zero value")
		})
	}
}

func TestStructErrorsAreInspectable(t *testing.T) {
	_, err := readSettings(t.Context(), config.Map{"CONTROLLER_WORKERS": "x", "POD_NAMESPACE": "ns", "POD_NAME": "a/b"})
	require.Error(t, err)
	require.ErrorIs(t, err, config.ErrNotFound)

	var num *strconv.NumError
	require.ErrorAs(t, err, &num)
	require.Equal(t, "x", num.Num)

	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Struct's error is a join of one error per setting")
	var names []string
	for _, e := range joined.Unwrap() {
		var ce *config.Error
		require.ErrorAs(t, e, &ce)
		names = append(names, ce.Name)
	}
	require.Equal(t, []string{"CONTROLLER_NAME", "CONTROLLER_WORKERS", "POD_NAME"}, names)
}

func TestStructReturnsTheBuiltValue(t *testing.T) {
	got, err := readSettings(t.Context(), config.Map{
		"CONTROLLER_NAME": "memcached", "POD_NAMESPACE": "ns", "POD_NAME": "pod-0",
	})
	require.NoError(t, err)
	require.Equal(t, settings{Name: "memcached", Workers: 1, Namespace: "ns", Identity: "pod-0"}, got)

	got, err = readSettings(t.Context(), config.Map{
		"CONTROLLER_NAME": "memcached", "CONTROLLER_WORKERS": "4", "POD_NAMESPACE": "ns", "POD_NAME": "pod-0",
	})
	require.NoError(t, err)
	require.Equal(t, 4, got.Workers)
}

func TestEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     config.Environment
		varName string
		want    string
		wantErr string
	}{
		{name: "set", env: config.Map{"A": "a value"}, varName: "A", want: "a value"},
		{name: "spaces are kept", env: config.Map{"A": " a "}, varName: "A", want: " a "},
		{name: "not set", env: config.Map{}, varName: "A", wantErr: "config A: not found"},
		{name: "empty", env: config.Map{"A": ""}, varName: "A", wantErr: "config A: not found"},
		{name: "nil map", env: config.Map(nil), varName: "A", wantErr: "config A: not found"},
		{name: "nil Environment", env: nil, varName: "A", wantErr: "config A: no Environment to look the variable up in (nil)"},
		{name: "no name", env: config.Map{"": "x"}, varName: "", wantErr: "config: no variable name (empty)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Env(tt.env, tt.varName).Read(t.Context())
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNotFoundIsErrNotFound(t *testing.T) {
	for _, env := range []config.Map{{}, {"A": ""}} {
		_, err := config.Env(env, "A").Read(t.Context())
		require.ErrorIs(t, err, config.ErrNotFound)
		var ce *config.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "A", ce.Name)
	}
}

func TestChains(t *testing.T) {
	errOdd := errors.New("odd")
	even := func(n int) error {
		if n%2 != 0 {
			return errOdd
		}
		return nil
	}
	tests := []struct {
		name    string
		env     config.Map
		value   func(config.Environment) config.Value[int]
		want    int
		wantErr string
	}{
		{
			name:  "parse",
			env:   config.Map{"N": "42"},
			value: func(e config.Environment) config.Value[int] { return config.Env(e, "N").Parse(strconv.Atoi) },
			want:  42,
		},
		{
			name:    "parse error",
			env:     config.Map{"N": "4x"},
			value:   func(e config.Environment) config.Value[int] { return config.Env(e, "N").Parse(strconv.Atoi) },
			wantErr: `config N: strconv.Atoi: parsing "4x": invalid syntax`,
		},
		{
			name:    "parse skips not found",
			env:     config.Map{},
			value:   func(e config.Environment) config.Value[int] { return config.Env(e, "N").Parse(strconv.Atoi) },
			wantErr: "config N: not found",
		},
		{
			name: "default when not found",
			env:  config.Map{},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Default(8)
			},
			want: 8,
		},
		{
			name: "default when empty",
			env:  config.Map{"N": ""},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Default(8)
			},
			want: 8,
		},
		{
			name: "default does not hide a parse error",
			env:  config.Map{"N": "eight"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Default(8)
			},
			wantErr: `config N: strconv.Atoi: parsing "eight": invalid syntax`,
		},
		{
			name: "found beats default",
			env:  config.Map{"N": "2"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Default(8)
			},
			want: 2,
		},
		{
			name: "validate passes",
			env:  config.Map{"N": "2"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(even)
			},
			want: 2,
		},
		{
			name: "validate fails with the check's error",
			env:  config.Map{"N": "3"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(even)
			},
			wantErr: "config N: odd",
		},
		{
			name: "validate skips not found",
			env:  config.Map{},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(even)
			},
			wantErr: "config N: not found",
		},
		{
			name: "a default before validate is checked",
			env:  config.Map{},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Default(3).Validate(even)
			},
			wantErr: "config N: odd",
		},
		{
			name: "a default after validate is not",
			env:  config.Map{},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(even).Default(3)
			},
			want: 3,
		},
		{
			name: "default does not hide a check's error",
			env:  config.Map{"N": "5"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(even).Default(2)
			},
			wantErr: "config N: odd",
		},
		{
			name: "parse twice",
			env:  config.Map{"N": "12"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Parse(func(n int) (int, error) { return n * 2, nil })
			},
			want: 24,
		},
		{
			name: "nil parse function",
			env:  config.Map{"N": "1"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse((func(string) (int, error))(nil))
			},
			wantErr: "config N: nil parse function",
		},
		{
			name: "nil parse function when not found",
			env:  config.Map{},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse((func(string) (int, error))(nil)).Default(1)
			},
			wantErr: "config N: nil parse function",
		},
		{
			name: "nil check function",
			env:  config.Map{"N": "1"},
			value: func(e config.Environment) config.Value[int] {
				return config.Env(e, "N").Parse(strconv.Atoi).Validate(nil)
			},
			wantErr: "config N: nil check function",
		},
		{
			name:    "zero value",
			env:     config.Map{},
			value:   func(config.Environment) config.Value[int] { return config.Value[int]{} },
			wantErr: "config: no source: the zero Value, not one made by Env, Func or Struct",
		},
		{
			name: "zero value in a chain",
			env:  config.Map{},
			value: func(config.Environment) config.Value[int] {
				return config.Value[string]{}.Parse(strconv.Atoi).Default(1).Validate(even)
			},
			wantErr: "config: no source: the zero Value, not one made by Env, Func or Struct",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.value(tt.env).Read(t.Context())
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Zero(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestValuesAreImmutable(t *testing.T) {
	env := config.Map{}
	base := config.Env(env, "D").Parse(time.ParseDuration)
	short := base.Default(time.Second)
	long := base.Default(time.Hour)

	got, err := short.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, time.Second, got)
	got, err = long.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, time.Hour, got)
	_, err = base.Read(t.Context())
	require.ErrorIs(t, err, config.ErrNotFound, "Default returned a new Value and left base alone")

	// A Value reads its source each time it is read.
	env["D"] = "3m"
	got, err = short.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3*time.Minute, got)
}

func TestFunc(t *testing.T) {
	errDisk := errors.New("disk on fire")
	type key struct{}
	tests := []struct {
		name    string
		read    func(context.Context) (string, bool, error)
		want    string
		wantErr string
	}{
		{
			name: "found, with the reader's context",
			read: func(ctx context.Context) (string, bool, error) {
				v, _ := ctx.Value(key{}).(string)
				return v, true, nil
			},
			want: "from the context",
		},
		{
			name:    "not found",
			read:    func(context.Context) (string, bool, error) { return "ignored", false, nil },
			wantErr: "config token: not found",
		},
		{
			name:    "failed",
			read:    func(context.Context) (string, bool, error) { return "ignored", true, errDisk },
			wantErr: "config token: disk on fire",
		},
		{
			name:    "nil",
			read:    nil,
			wantErr: "config token: nil read function",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.WithValue(t.Context(), key{}, "from the context")
			got, err := config.Func("token", tt.read).Read(ctx)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	got, err := config.Func("token", func(context.Context) (string, bool, error) { return "", false, nil }).
		Default("fallback").Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, "fallback", got)

	_, err = config.Func("token", func(context.Context) (string, bool, error) { return "", false, errDisk }).Read(t.Context())
	require.ErrorIs(t, err, errDisk)
}

func TestStructMistakes(t *testing.T) {
	_, err := config.Struct[settings](nil).Read(t.Context())
	require.EqualError(t, err, "config: nil Struct function")

	// A check on the whole struct, for bounds that take two fields to tell.
	type bounds struct{ Min, Max int }
	env := config.Map{"MIN": "5", "MAX": "2"}
	_, err = config.Struct(func(r *config.Resolver) bounds {
		return bounds{
			Min: r.Get(config.Env(env, "MIN").Parse(strconv.Atoi)),
			Max: r.Get(config.Env(env, "MAX").Parse(strconv.Atoi)),
		}
	}).Validate(func(b bounds) error {
		if b.Max < b.Min {
			return fmt.Errorf("MAX %d is below MIN %d", b.Max, b.Min)
		}
		return nil
	}).Read(t.Context())
	require.EqualError(t, err, "config: MAX 2 is below MIN 5")
}

func TestStructNestsAndReportsEachErrorOnce(t *testing.T) {
	env := config.Map{"PORT": "http"}
	port := config.Env(env, "PORT").Parse(strconv.Atoi)
	type inner struct{ Host string }
	type outer struct {
		Inner inner
		Port  int
		Again int
	}
	got, err := config.Struct(func(r *config.Resolver) outer {
		return outer{
			Inner: r.Get(config.Struct(func(r *config.Resolver) inner {
				return inner{Host: r.Get(config.Env(env, "HOST"))}
			})),
			Port:  r.Get(port),
			Again: r.Get(port),
		}
	}).Read(t.Context())
	require.EqualError(t, err, "config HOST: not found\n"+
		`config PORT: strconv.Atoi: parsing "http": invalid syntax`)
	require.Zero(t, got)
	require.ErrorIs(t, err, config.ErrNotFound)
}

func TestResolverIsSafeForConcurrentUse(t *testing.T) {
	env := config.Map{}
	_, err := config.Struct(func(r *config.Resolver) int {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() { r.Get(config.Env(env, "V"+strconv.Itoa(i))) })
		}
		wg.Wait()
		return 0
	}).Read(t.Context())
	require.Error(t, err)
	require.Len(t, strings.Split(err.Error(), "\n"), 8)
}

func TestErrorFormat(t *testing.T) {
	cause := errors.New("cause")
	require.Equal(t, "config A: cause", (&config.Error{Name: "A", Err: cause}).Error())
	require.Equal(t, "config: cause", (&config.Error{Err: cause}).Error())
	require.ErrorIs(t, &config.Error{Name: "A", Err: cause}, cause)
}
