// Package databases is a controller of PostgreSQL databases: for each
// Database object it creates a login role and a database owned by it, and
// a Secret the Database controls that holds the credentials an
// application connects with. A finalizer drops the database and the role
// when the Database is deleted, unless its deletionPolicy is Retain.
//
// It is the example docs/walkthrough-databases.md builds step by step: a
// production-shaped controller of something outside the cluster, which
// reports what it can't do as conditions, and reaches PostgreSQL only
// through the App's Host.
package databases
