package config_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/loam-dev/loam/app/config"
)

func Example() {
	// In an Init, the Environment is s.Process.Environment.
	env := config.Map{"WORKERS": "x", "RESYNC": "30m"}

	type Settings struct {
		Name    string
		Workers int
		Resync  time.Duration
	}
	s, err := config.Struct(func(r *config.Resolver) Settings {
		return Settings{
			Name:    r.Get(config.Env(env, "NAME")),
			Workers: r.Get(config.Env(env, "WORKERS").Parse(strconv.Atoi).Default(1)),
			Resync:  r.Get(config.Env(env, "RESYNC").Parse(time.ParseDuration).Default(10 * time.Hour)),
		}
	}).Read(context.Background())
	fmt.Printf("%+v\n", s)
	fmt.Println(err)
	// Output:
	// {Name: Workers:0 Resync:0s}
	// config NAME: not found
	// config WORKERS: strconv.Atoi: parsing "x": invalid syntax
}

func ExampleValue_Default() {
	env := config.Map{"RESYNC": ""} // empty: not found, so the default applies
	resync, err := config.Env(env, "RESYNC").Parse(time.ParseDuration).Default(10 * time.Hour).Read(context.Background())
	fmt.Println(resync, err)
	// Output: 10h0m0s <nil>
}
