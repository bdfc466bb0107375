package ports

import "context"

//go:generate go run go.uber.org/mock/mockgen@v0.6.0 -destination portsmock/eventwriter.go -package portsmock -typed . EventWriter

// EventWriter is what writes a controller's Events to the API server: the
// Events it records, written in the background from Start until Close.
// The runtime starts it when Serve begins and closes it last in its stop
// sequence, once the workers have returned and the Lease is released, so
// that every Event a pass recorded is written.
type EventWriter interface {
	Events
	// Start starts writing the Events recorded. A second call does
	// nothing.
	Start()
	// Close stops the writing, then writes every Event still queued and
	// the count of every series, within ctx. It may be called more than
	// once, and concurrently. It returns an error wrapping ctx's when ctx
	// ends first, having cancelled the write in flight: nothing it
	// started outlives it.
	Close(ctx context.Context) error
}
