package databases

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Postgres is the PostgreSQL server the controller provisions on, and how
// it connects to it as an administrator: a role that may create roles and
// databases.
type Postgres struct {
	// Host and Port are where the server listens. They are also what the
	// Secrets tell applications.
	Host string
	Port uint16
	// User and Password are the administrator's; Password may be empty
	// under trust authentication.
	User     string
	Password string
	// Database is the database the administrator connects to, usually
	// postgres.
	Database string
	// Dial opens every connection: the App's s.Host.Dial, so a test can
	// hand it a network of its own.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// unavailableError is a failure to reach PostgreSQL at all, as opposed to
// a statement it refused: the Ready condition's reason tells them apart.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return "PostgreSQL is unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// conflictError is a name in PostgreSQL that belongs to someone else.
type conflictError struct{ what string }

func (e *conflictError) Error() string { return e.what }

// ManagedBy returns the comment the controller puts on each role it
// creates, naming the Database namespace/name: a role without it, such
// as postgres, is never altered or dropped, and one with another
// Database's is that Database's.
func ManagedBy(namespace, name string) string {
	return "managed by databases.example.com Database " + namespace + "/" + name
}

// connect opens an administrator's connection. pgx's ParseConfig needs a
// connection string; every setting it would otherwise take from PG*
// variables is given, and DialFunc and LookupFunc hand the address to
// Dial unresolved, so the connection goes through the Host. Any failure
// is an unavailableError.
func (p Postgres) connect(ctx context.Context) (*pgx.Conn, error) {
	if p.Dial == nil {
		return nil, errors.New("databases: Postgres has no Dial")
	}
	cfg, err := pgx.ParseConfig(p.connString())
	if err != nil {
		return nil, fmt.Errorf("databases: PostgreSQL settings: %w", err)
	}
	cfg.DialFunc = pgconn.DialFunc(p.Dial)
	cfg.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.Fallbacks = nil
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, &unavailableError{err: err}
	}
	return conn, nil
}

// connString returns p's settings as a keyword/value connection string,
// each value quoted as libpq reads it, so a password with quotes, spaces
// or backslashes arrives as it is.
func (p Postgres) connString() string {
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	var b strings.Builder
	for _, kv := range [][2]string{
		{"host", p.Host}, {"port", strconv.Itoa(int(p.Port))}, {"user", p.User},
		{"password", p.Password}, {"dbname", p.Database}, {"sslmode", "disable"},
	} {
		fmt.Fprintf(&b, "%s='%s' ", kv[0], quote.Replace(kv[1]))
	}
	return b.String()
}

// ensure makes role a login role with password, and database a database
// that role owns, creating what is missing. A role or a database of those
// names that isn't the Database's is a conflictError. ensure is
// idempotent: it sets the password on every call, so the role's password
// is always the Secret's.
func (p Postgres) ensure(ctx context.Context, namespace, name, database, role, password string) (err error) {
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()

	if err := ensureRole(ctx, conn, ManagedBy(namespace, name), role, password); err != nil {
		return err
	}
	return ensureDatabase(ctx, conn, database, role)
}

// ensureRole creates role, or sets its password when it exists and is
// comment's.
func ensureRole(ctx context.Context, conn *pgx.Conn, comment, role, password string) error {
	ident := pgx.Identifier{role}.Sanitize()
	owner, exists, err := roleComment(ctx, conn, role)
	if err != nil {
		return err
	}
	if exists && owner != comment {
		return &conflictError{what: fmt.Sprintf("the role %q already exists and isn't this Database's", role)}
	}
	verb := "ALTER"
	if !exists {
		verb = "CREATE"
	}
	// A utility statement takes no bind parameters: the simple protocol
	// has pgx quote the password as a literal on the client.
	if _, err := conn.Exec(ctx, verb+" ROLE "+ident+" LOGIN PASSWORD $1", pgx.QueryExecModeSimpleProtocol, password); err != nil {
		return fmt.Errorf("%s ROLE %s: %w", verb, ident, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "COMMENT ON ROLE "+ident+" IS $1", pgx.QueryExecModeSimpleProtocol, comment); err != nil {
			return fmt.Errorf("COMMENT ON ROLE %s: %w", ident, err)
		}
	}
	return nil
}

// roleComment returns role's comment, and whether the role exists.
func roleComment(ctx context.Context, conn *pgx.Conn, role string) (string, bool, error) {
	var comment *string
	err := conn.QueryRow(ctx,
		`SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1`, role).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("looking up the role %q: %w", role, err)
	case comment == nil:
		return "", true, nil
	}
	return *comment, true, nil
}

// databaseOwner returns the name of the role that owns database, and
// whether it exists.
func databaseOwner(ctx context.Context, conn *pgx.Conn, database string) (string, bool, error) {
	var owner string
	err := conn.QueryRow(ctx,
		`SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1`, database).Scan(&owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("looking up the database %q: %w", database, err)
	}
	return owner, true, nil
}

// ensureDatabase creates database owned by role, unless it exists; one
// that another role owns is a conflictError.
func ensureDatabase(ctx context.Context, conn *pgx.Conn, database, role string) error {
	owner, exists, err := databaseOwner(ctx, conn, database)
	if err != nil {
		return err
	}
	if !exists {
		ident := pgx.Identifier{database}.Sanitize()
		_, err := conn.Exec(ctx, "CREATE DATABASE "+ident+" OWNER "+pgx.Identifier{role}.Sanitize())
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42P04" { // duplicate_database
			if err != nil {
				return fmt.Errorf("CREATE DATABASE %s: %w", ident, err)
			}
			return nil
		}
		// Someone created it between the look-up and CREATE: whose is it?
		if owner, _, err = databaseOwner(ctx, conn, database); err != nil {
			return err
		}
	}
	if owner != role {
		return &conflictError{what: fmt.Sprintf("the database %q already exists, owned by the role %q", database, owner)}
	}
	return nil
}

// drop drops database and role, when they are the Database's: a database
// that another role owns, or a role that isn't the Database's or still
// owns another database, is left alone. Both are IF EXISTS, so drop is
// idempotent.
func (p Postgres) drop(ctx context.Context, namespace, name, database, role string) (err error) {
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()

	owner, exists, err := databaseOwner(ctx, conn, database)
	if err != nil {
		return err
	}
	comment, roleExists, err := roleComment(ctx, conn, role)
	if err != nil {
		return err
	}
	ours := roleExists && comment == ManagedBy(namespace, name)
	if exists && ours && owner == role {
		ident := pgx.Identifier{database}.Sanitize()
		// FORCE ends the applications' sessions, which would block the drop.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("DROP DATABASE %s: %w", ident, err)
		}
	}
	if !ours {
		return nil
	}
	// A role that still owns a database stays with it: one that a
	// Database of the same name kept with Retain before it was deleted
	// and created again, which adopted the role. DROP ROLE would fail,
	// and the finalizer with it, for good (examples/databases/explore
	// found it).
	var owns bool
	if err := conn.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_database d JOIN pg_roles r ON d.datdba = r.oid WHERE r.rolname = $1)`, role).Scan(&owns); err != nil {
		return fmt.Errorf("looking up the databases of the role %q: %w", role, err)
	}
	if owns {
		return nil
	}
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+ident); err != nil {
		return fmt.Errorf("DROP ROLE %s: %w", ident, err)
	}
	return nil
}
