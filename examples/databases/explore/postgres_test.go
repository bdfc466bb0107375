package explore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/examples/databases"
	"github.com/loam-dev/loam/kubetest/explore"
)

// postgres is the test's view of PostgreSQL: the run's prefix, and what
// the invariants remember of each replay, by its namespace.
type postgres struct {
	run string

	mu      sync.Mutex
	replays map[string]*replay
}

// replay is what the invariants remember of one replay between two
// checks: what each Database asked for at the last check, and what the
// Databases deleted with deletionPolicy Retain left in PostgreSQL, which
// may stay there.
type replay struct {
	last              map[string]asks
	retainedRoles     map[string]bool
	retainedDatabases map[string]bool
}

// asks is what a Database, of its uid, asks PostgreSQL for; whether it
// was provisioned; and whether it has reported a name conflict since a
// check saw the conflict there.
type asks struct {
	uid            types.UID
	database, role string
	retain         bool
	provisioned    bool
	conflict       bool
}

// reachPostgres returns the test's view of the PostgreSQL at
// localPostgres, and drops, when the test ends, every database and role
// of the run's that a failed replay left. It skips the test when nothing
// listens there, and fails it when the administrator can't log in.
func reachPostgres(t *testing.T) *postgres {
	t.Helper()
	address := net.JoinHostPort(localPostgres.Host, strconv.Itoa(int(localPostgres.Port)))
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		t.Skipf("PostgreSQL isn't reachable at %s (%v): the test explores the controller against it; .ci/run starts it, or start it as the README says", address, err)
	}
	require.NoError(t, c.Close())
	p := &postgres{run: newRun(), replays: map[string]*replay{}}
	conn, err := p.admin(t.Context())
	require.NoError(t, err, "PostgreSQL listens at %s, but its administrator can't log in", address)
	require.NoError(t, conn.Close(t.Context()))
	t.Cleanup(func() {
		ctx := context.Background()
		st, err := p.state(ctx, p.run)
		if err == nil {
			err = p.drop(ctx, st)
		}
		if err != nil {
			t.Errorf("dropping what the run %s left in PostgreSQL: %v", p.run, err)
		}
	})
	return p
}

// connect logs in to database as user, at localPostgres, with every
// setting given, so no PG* variable of the process's steers it.
func connect(ctx context.Context, host string, port uint16, user, password, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = host, port, user, password, database
	cfg.Fallbacks = nil
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}

// admin logs in as the administrator the controller logs in as.
func (p *postgres) admin(ctx context.Context) (*pgx.Conn, error) {
	pg := localPostgres
	return connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database)
}

// state is what PostgreSQL holds of a prefix: each role's comment, and
// each database's owner, by name.
type state struct {
	roles     map[string]string
	databases map[string]string
}

// state reads the roles and the databases whose names start with prefix.
func (p *postgres) state(ctx context.Context, prefix string) (st state, err error) {
	conn, err := p.admin(ctx)
	if err != nil {
		return state{}, err
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()
	st = state{roles: map[string]string{}, databases: map[string]string{}}
	for _, q := range []struct {
		query string
		into  map[string]string
	}{
		{`SELECT rolname, coalesce(shobj_description(oid, 'pg_authid'), '') FROM pg_roles WHERE starts_with(rolname, $1)`, st.roles},
		{`SELECT datname, pg_get_userbyid(datdba) FROM pg_database WHERE starts_with(datname, $1)`, st.databases},
	} {
		rows, err := conn.Query(ctx, q.query, prefix)
		if err != nil {
			return state{}, err
		}
		var name, value string
		if _, err := pgx.ForEachRow(rows, []any{&name, &value}, func() error {
			q.into[name] = value
			return nil
		}); err != nil {
			return state{}, err
		}
	}
	return st, nil
}

// drop drops every database and role of st, the databases first, since
// a role that owns one can't be dropped.
func (p *postgres) drop(ctx context.Context, st state) (err error) {
	conn, err := p.admin(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()
	for _, db := range slices.Sorted(maps.Keys(st.databases)) {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	for _, role := range slices.Sorted(maps.Keys(st.roles)) {
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

// replay returns what is remembered of the replay of ns.
func (p *postgres) replay(ns string) *replay {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.replays[ns]
	if !ok {
		r = &replay{last: map[string]asks{}, retainedRoles: map[string]bool{}, retainedDatabases: map[string]bool{}}
		p.replays[ns] = r
	}
	return r
}

// provisioned is what the controller promises of PostgreSQL after each
// step: each Database is Ready with its database, owned by its role, and
// a Secret whose credentials log in to it, or not Ready with a name
// conflict that is there to see; PostgreSQL holds no database or role of
// the replay's that no Database asks for, but what a Database deleted
// with Retain kept; and a Database deleted with Retain kept what it had.
func (p *postgres) provisioned() explore.Invariant {
	return explore.Invariant{
		Name: "PostgreSQL holds what the Databases ask for, and their Secrets log in",
		Check: func(ctx context.Context, client dynamic.Interface, ns string) error {
			_, err := p.check(ctx, client, ns)
			return err
		},
	}
}

// gone is what the finalizer promises once every Database is deleted:
// PostgreSQL holds nothing of the replay's but what Retain kept. It then
// drops what the replay left, so the next replay starts from nothing.
func (p *postgres) gone() explore.Invariant {
	return explore.Invariant{
		Name: "the finalizer left nothing in PostgreSQL but what Retain kept",
		Check: func(ctx context.Context, client dynamic.Interface, ns string) error {
			st, err := p.check(ctx, client, ns)
			if st.roles != nil {
				err = errors.Join(err, p.drop(ctx, st))
			}
			return err
		},
	}
}

// check checks the Databases of ns against PostgreSQL, as provisioned
// says, and returns what PostgreSQL held of the replay.
func (p *postgres) check(ctx context.Context, client dynamic.Interface, ns string) (state, error) {
	list, err := client.Resource(databases.Database.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, err
	}
	st, err := p.state(ctx, prefix(p.run, ns))
	if err != nil {
		return state{}, err
	}
	r := p.replay(ns)
	var errs []error
	now := map[string]asks{}
	for i := range list.Items {
		var d databases.Object
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &d); err != nil {
			return state{}, fmt.Errorf("%s: %w", list.Items[i].GetName(), err)
		}
		a := asks{uid: d.UID, database: d.Spec.DatabaseName, role: d.Spec.Owner, retain: d.Spec.DeletionPolicy == databases.Retain}
		before, ok := r.last[d.Name]
		seen := ok && before.uid == d.UID && before.conflict
		a.provisioned, a.conflict, err = p.ready(ctx, client, d, st, seen)
		errs = append(errs, err)
		now[d.Name] = a
	}
	errs = append(errs, r.forget(ns, now, st))
	errs = append(errs, r.accounted(ns, now, st))
	r.last = now
	return st, errors.Join(errs...)
}

// forget remembers what each Database deleted since the last check, the
// Databases' then, kept with Retain, and returns an error when one that
// was provisioned kept less than its role and its database.
func (r *replay) forget(ns string, now map[string]asks, st state) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.last)) {
		a := r.last[name]
		if _, ok := now[name]; ok || !a.retain {
			continue
		}
		roleKept := st.roles[a.role] == databases.ManagedBy(ns, name)
		dbKept := roleKept && st.databases[a.database] == a.role
		if roleKept {
			r.retainedRoles[a.role] = true
		}
		if dbKept {
			r.retainedDatabases[a.database] = true
		}
		if a.provisioned && !dbKept {
			errs = append(errs, fmt.Errorf("%s was deleted with deletionPolicy Retain, but the database %q owned by the role %q is gone", name, a.database, a.role))
		}
	}
	return errors.Join(errs...)
}

// accounted returns an error naming each role and database of st that no
// Database of now asks for, and no Retain kept.
func (r *replay) accounted(ns string, now map[string]asks, st state) error {
	roles, dbs := map[string]bool{}, map[string]bool{}
	for name, a := range now {
		if st.roles[a.role] == databases.ManagedBy(ns, name) {
			roles[a.role] = true
			if st.databases[a.database] == a.role {
				dbs[a.database] = true
			}
		}
	}
	var errs []error
	for _, role := range slices.Sorted(maps.Keys(st.roles)) {
		if !roles[role] && !r.retainedRoles[role] {
			errs = append(errs, fmt.Errorf("the role %q (%q) is left over: no Database asks for it", role, st.roles[role]))
		}
	}
	for _, db := range slices.Sorted(maps.Keys(st.databases)) {
		if !dbs[db] && !r.retainedDatabases[db] {
			errs = append(errs, fmt.Errorf("the database %q, owned by %q, is left over: no Database asks for it", db, st.databases[db]))
		}
	}
	return errors.Join(errs...)
}

// ready checks d's Ready condition against PostgreSQL, st, and d's
// Secret, and returns whether d is provisioned, and whether it reports a
// name conflict that is there, or was at an earlier check, seen.
// Provisioned: its role is d's, its database the role's, and its
// Secret's credentials log in to it. NameConflict: its role is
// another's, its database another role's, or its Secret another's, or
// one was: the controller looks again a minute later, since nothing it
// watches says when the conflict is gone, and a step settles sooner. Any
// other reason, after a step has settled, is an error the controller
// gave up on or never retried.
func (p *postgres) ready(ctx context.Context, client dynamic.Interface, d databases.Object, st state, seen bool) (provisioned, conflict bool, err error) {
	c := meta.FindStatusCondition(d.Status.Conditions, databases.ConditionReady)
	if c == nil {
		return false, false, fmt.Errorf("%s has no Ready condition", d.Name)
	}
	secret, err := p.secret(ctx, client, d)
	if err != nil {
		return false, false, err
	}
	comment, roleExists := st.roles[d.Spec.Owner]
	owner, dbExists := st.databases[d.Spec.DatabaseName]
	roleOurs := roleExists && comment == databases.ManagedBy(d.Namespace, d.Name)
	secretOurs := secret == nil || metav1.IsControlledBy(secret, &d.ObjectMeta)
	switch {
	case c.Reason == databases.ReasonProvisioned && c.Status == metav1.ConditionTrue:
		var errs []error
		if !roleOurs {
			errs = append(errs, fmt.Errorf("its role %q isn't its (it exists: %t, comment %q)", d.Spec.Owner, roleExists, comment))
		}
		if !dbExists || owner != d.Spec.Owner {
			errs = append(errs, fmt.Errorf("its database %q isn't its role's (it exists: %t, owner %q)", d.Spec.DatabaseName, dbExists, owner))
		}
		if err := logsIn(ctx, d, secret); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return false, false, fmt.Errorf("%s is Ready, but %w", d.Name, err)
		}
		return true, false, nil
	case c.Reason == databases.ReasonNameConflict && c.Status == metav1.ConditionFalse:
		if seen || (roleExists && !roleOurs) || (dbExists && owner != d.Spec.Owner) || !secretOurs {
			return false, true, nil
		}
		return false, false, fmt.Errorf("%s reports a name conflict, but its role %q (exists: %t), its database %q (exists: %t, owner %q) and its Secret are its: %s",
			d.Name, d.Spec.Owner, roleExists, d.Spec.DatabaseName, dbExists, owner, c.Message)
	}
	return false, false, fmt.Errorf("%s: Ready is %s, %s: %s", d.Name, c.Status, c.Reason, c.Message)
}

// secret returns d's Secret, or nil when there is none.
func (p *postgres) secret(ctx context.Context, client dynamic.Interface, d databases.Object) (*corev1.Secret, error) {
	u, err := client.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(d.Namespace).Get(ctx, databases.SecretName(d.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s's Secret: %w", d.Name, err)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil, fmt.Errorf("%s's Secret: %w", d.Name, err)
	}
	return &s, nil
}

// logsIn returns nil when s is d's Secret, names d's database and role
// and localPostgres, and its credentials log in to the database, as an
// application's would.
func logsIn(ctx context.Context, d databases.Object, s *corev1.Secret) (err error) {
	switch {
	case s == nil:
		return fmt.Errorf("it has no Secret %s", databases.SecretName(d.Name))
	case !metav1.IsControlledBy(s, &d.ObjectMeta):
		return fmt.Errorf("its Secret %s isn't its", s.Name)
	}
	get := func(key string) string { return string(s.Data[key]) }
	want := map[string]string{
		databases.SecretHost: localPostgres.Host, databases.SecretPort: strconv.Itoa(int(localPostgres.Port)),
		databases.SecretDatabase: d.Spec.DatabaseName, databases.SecretUser: d.Spec.Owner,
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if get(key) != want[key] {
			return fmt.Errorf("its Secret's %s is %q, want %q", key, get(key), want[key])
		}
	}
	port, err := strconv.ParseUint(get(databases.SecretPort), 10, 16)
	if err != nil {
		return fmt.Errorf("its Secret's port: %w", err)
	}
	conn, err := connect(ctx, get(databases.SecretHost), uint16(port), get(databases.SecretUser), get(databases.SecretPassword), get(databases.SecretDatabase))
	if err != nil {
		return fmt.Errorf("its Secret's credentials don't log in: %w", err)
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()
	var user, db string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &db); err != nil {
		return fmt.Errorf("its Secret's credentials logged in, but: %w", err)
	}
	if user != d.Spec.Owner || db != d.Spec.DatabaseName {
		return fmt.Errorf("its Secret's credentials log in as %q to %q", user, db)
	}
	return nil
}
