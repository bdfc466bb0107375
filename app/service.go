package app

import "context"

// Service is one long-running part of an App, such as a controller or a
// probes server.
type Service interface {
	// Serve runs the Service until ctx is done or it fails. It returns nil
	// when it stopped because ctx was done.
	Serve(ctx context.Context) error
	// Shutdown stops the Service, within ctx's deadline. It returns an error
	// wrapping ctx's when the deadline passed first.
	Shutdown(ctx context.Context) error
}

// Init builds an App's Services from its Setup. An error fails the App
// with exit code 78, naming every bad setting.
type Init func(ctx context.Context, s *Setup) ([]Service, error)
