// Package ports holds the interfaces a controller's domain drives, and the
// values they carry: the informers and the cache it reads objects from,
// the writer of statuses and finalizers, the work queue, the leader
// elector, the clock and its timers, the readiness it reports, the
// recorder of its telemetry, the Events it records on objects, and the
// handler that runs the end user's code.
//
// The domain decides and the adapters act: the domain imports ports, the
// adapters implement them, and neither imports the other. Mocks of every
// interface, generated with go.uber.org/mock's mockgen, are in portsmock.
package ports

//go:generate go run go.uber.org/mock/mockgen@v0.6.0 -destination portsmock/portsmock.go -package portsmock -typed . ObjectSource,Watch,Writer,Queue,Elector,Clock,Readiness,Recorder,Handler,Events,ShardLeases,StoredObjects,StorageDefinition,MigrationRecorder
