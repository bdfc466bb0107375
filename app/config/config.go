// Package config sources an App's settings from its Process's environment.
//
// A Value says where one setting comes from and how it becomes a Go value:
// Env names an environment variable, Parse turns its text into another
// type, Default fills it when the variable is not found, and Validate
// checks it. Struct reads many Values at once into a settings struct and
// reports every bad one in a single error, one line each:
//
//	config CONTROLLER_NAME: not found
//	config CONTROLLER_WORKERS: strconv.Atoi: parsing "x": invalid syntax
//
// # Chains
//
// A chain applies its steps left to right, each to what the steps before it
// produced, and a Value never changes once made: every step returns a new
// Value. Parse and Validate pass a value that was not found through
// untouched, and Default fills only a value that was not found. So in
//
//	config.Env(env, "CONTROLLER_WORKERS").Parse(strconv.Atoi).Default(1).Validate(checkWorkers)
//
// the default is checked like a sourced value, while a Validate written
// before Default would not see it. A parse or check error is never replaced
// by the default: a variable that is set wrongly fails, rather than being
// silently ignored.
//
// # Empty variables
//
// A variable that is set to the empty string counts as not found, exactly
// as one that is not set. A manifest that lists a variable with an empty
// value means no more than one that leaves it out, and treating both alike
// means an empty variable takes its Default, or fails as not found, instead
// of reaching Parse as "".
//
// # Mistakes in the chain itself
//
// A nil Environment, an empty variable name, a nil parse or check function,
// a nil Struct function and the zero Value are reported as errors when the
// Value is read, naming the variable, never as panics.
package config

import (
	"context"
	"errors"
	"sync"
)

// ErrNotFound is the cause of an Error for a setting that is not set, or is
// set to the empty string, and has no Default.
var ErrNotFound = errors.New("not found")

// The mistakes in a chain itself, reported when the Value is read.
var (
	errNoEnvironment = errors.New("no Environment to look the variable up in (nil)")
	errNoName        = errors.New("no variable name (empty)")
	errNoSource      = errors.New("no source: the zero Value, not one made by Env, Func or Struct")
	errNilParse      = errors.New("nil parse function")
	errNilCheck      = errors.New("nil check function")
	errNilRead       = errors.New("nil read function")
	errNilStruct     = errors.New("nil Struct function")
)

// Error is the error of one bad setting: the setting's Name and why it is
// bad. Err is ErrNotFound, the parse function's error or the check
// function's error, which errors.Is and errors.As reach through Error.
type Error struct {
	// Name is the setting's name: the environment variable's, for a Value
	// made by Env. It is empty for a Value made by Struct.
	Name string
	// Err is why the setting is bad.
	Err error
}

// Error returns "config NAME: cause", or "config: cause" when Name is empty.
func (e *Error) Error() string {
	if e.Name == "" {
		return "config: " + e.Err.Error()
	}
	return "config " + e.Name + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Environment looks up environment variables. app.Process's Environment is
// one; Map is another.
type Environment interface {
	// LookupEnv returns the variable's value and whether it is set.
	LookupEnv(name string) (value string, ok bool)
}

// Map is an Environment held in a map, for tests and for settings that come
// from somewhere other than a process.
type Map map[string]string

// LookupEnv returns m[name] and whether m holds name.
func (m Map) LookupEnv(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Value is one setting of type T: where it comes from and the steps that
// turn it into a T. Values are immutable, so one may be shared and extended
// by several chains. The zero Value has no source: reading it fails.
type Value[T any] struct {
	name string
	// read returns the setting, whether it was found, and an error that
	// already names the setting. An error takes precedence over found.
	read func(ctx context.Context) (value T, found bool, err error)
}

// Env returns the Value of the environment variable name, looked up in env
// when the Value is read. A variable that is not set, or is set to the empty
// string, is not found.
func Env(env Environment, name string) Value[string] {
	return Value[string]{name: name, read: func(context.Context) (string, bool, error) {
		switch {
		case name == "":
			return "", false, &Error{Err: errNoName}
		case env == nil:
			return "", false, &Error{Name: name, Err: errNoEnvironment}
		}
		v, ok := env.LookupEnv(name)
		if !ok || v == "" {
			return "", false, nil
		}
		return v, true, nil
	}}
}

// Func returns a Value named name that read sources, such as a setting kept
// in a file. read returns found false when the setting is absent, which
// Default then fills and Read reports as ErrNotFound; read's error fails the
// Value, named name.
func Func[T any](name string, read func(ctx context.Context) (value T, found bool, err error)) Value[T] {
	return Value[T]{name: name, read: func(ctx context.Context) (T, bool, error) {
		var zero T
		if read == nil {
			return zero, false, &Error{Name: name, Err: errNilRead}
		}
		t, found, err := read(ctx)
		if err != nil {
			return zero, false, &Error{Name: name, Err: err}
		}
		if !found {
			return zero, false, nil
		}
		return t, true, nil
	}}
}

// Parse returns a Value that turns v's value into a U with parse, such as
// strconv.Atoi or time.ParseDuration. A value that is not found stays not
// found, without calling parse; parse's error fails the Value, so that
// Read's error is "config NAME: " followed by parse's own message.
func (v Value[T]) Parse[U any](parse func(T) (U, error)) Value[U] {
	return Value[U]{name: v.name, read: func(ctx context.Context) (U, bool, error) {
		var zero U
		if parse == nil {
			return zero, false, v.fail(errNilParse)
		}
		t, found, err := v.get(ctx)
		if err != nil || !found {
			return zero, false, err
		}
		u, err := parse(t)
		if err != nil {
			return zero, false, v.fail(err)
		}
		return u, true, nil
	}}
}

// Default returns a Value that is d when v's value is not found, and v's
// value otherwise. It leaves v's errors alone: a value that fails to parse
// or to validate is not replaced by d.
func (v Value[T]) Default(d T) Value[T] {
	return Value[T]{name: v.name, read: func(ctx context.Context) (T, bool, error) {
		t, found, err := v.get(ctx)
		switch {
		case err != nil:
			return t, false, err
		case !found:
			return d, true, nil
		}
		return t, true, nil
	}}
}

// Validate returns a Value that fails with check's error when check rejects
// v's value. A value that is not found stays not found, without calling
// check, so a Default placed before Validate is checked and one placed
// after is not.
func (v Value[T]) Validate(check func(T) error) Value[T] {
	return Value[T]{name: v.name, read: func(ctx context.Context) (T, bool, error) {
		var zero T
		if check == nil {
			return zero, false, v.fail(errNilCheck)
		}
		t, found, err := v.get(ctx)
		if err != nil || !found {
			return zero, false, err
		}
		if err := check(t); err != nil {
			return zero, false, v.fail(err)
		}
		return t, true, nil
	}}
}

// Read sources v and runs its chain. On failure it returns T's zero value
// and an *Error naming the setting: ErrNotFound when the setting is not
// found and has no Default, or the parse or check function's error. A Value
// made by Struct returns every bad setting's *Error, joined.
func (v Value[T]) Read(ctx context.Context) (T, error) {
	t, found, err := v.get(ctx)
	var zero T
	switch {
	case err != nil:
		return zero, err
	case !found:
		return zero, v.fail(ErrNotFound)
	}
	return t, nil
}

// get runs v's chain, failing for the zero Value.
func (v Value[T]) get(ctx context.Context) (T, bool, error) {
	if v.read == nil {
		var zero T
		return zero, false, v.fail(errNoSource)
	}
	return v.read(ctx)
}

// fail names err with v's setting.
func (v Value[T]) fail(err error) error {
	return &Error{Name: v.name, Err: err}
}

// Struct returns a Value that builds a T, typically a settings struct, with
// build. build reads each setting with r.Get, which returns the setting's
// value, or its type's zero value after recording the setting's error, so
// build runs to its end and every bad setting is found in one pass. Read
// then returns the T build returned, or, if any setting was bad, T's zero
// value and every recorded error joined with errors.Join, in the order
// build read them: one line per bad setting.
func Struct[T any](build func(r *Resolver) T) Value[T] {
	return Value[T]{read: func(ctx context.Context) (T, bool, error) {
		var zero T
		if build == nil {
			return zero, false, &Error{Err: errNilStruct}
		}
		r := &Resolver{ctx: ctx}
		t := build(r)
		if err := r.err(); err != nil {
			return zero, false, err
		}
		return t, true, nil
	}}
}

// Resolver reads the settings of a Struct and collects their errors. It is
// safe for concurrent use.
type Resolver struct {
	ctx  context.Context
	mu   sync.Mutex
	errs []error
	seen map[string]bool
}

// Get reads v, with the context Struct's Read was given. It returns v's
// value or, when v is bad, T's zero value, recording v's error for Read to
// report. An error identical to one already recorded, as when two chains
// read the same bad variable, is reported once.
func (r *Resolver) Get[T any](v Value[T]) T {
	t, err := v.Read(r.ctx)
	if err != nil {
		r.record(err)
	}
	return t
}

// record keeps err for err() unless an identical error is kept already.
func (r *Resolver) record(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := err.Error()
	if r.seen[msg] {
		return
	}
	if r.seen == nil {
		r.seen = make(map[string]bool)
	}
	r.seen[msg] = true
	r.errs = append(r.errs, err)
}

// err joins the recorded errors, or returns nil when there are none.
func (r *Resolver) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
