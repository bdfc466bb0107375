package explore_test

import (
	"crypto/rand"
	"flag"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/examples/databases"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, kubetest.GoleakOptions()...) }

// exploreDuration is how long TestExplore explores: make explore sets it
// to ten minutes, the kept sequences first; make test replays the kept
// sequences alone, as go test replays a fuzz target's corpus.
var exploreDuration = flag.Duration("explore.duration", 0, "explore the controller for this long, rather than replay the kept sequences alone")

// localPostgres is the server the controller provisions on, as Init's
// defaults name it: the one .ci/run starts, and the e2e tests use.
var localPostgres = databases.Postgres{Host: "127.0.0.1", Port: 5432, User: "postgres", Database: "postgres"}

// TestExplore explores the Database controller, as Init makes it, with
// kubetest's explorer: generated changes to Databases, crashes after the
// controller's writes, stale views, lost events, API server restarts,
// changes made while it is down, transient errors through the example's
// failure injection, and, after each step,
// the invariant that PostgreSQL holds what the Databases ask for and
// their Secrets log in; after the final delete, that the finalizer left
// nothing in PostgreSQL but what a Database's Retain kept.
//
// Each replay's databases and roles are its own: External.Spec prefixes
// every name a spec gives PostgreSQL with the run's and the replay's
// (names), and the final check drops what is left. The test's cleanup
// drops whatever a failed replay left with the run's prefix.
func TestExplore(t *testing.T) {
	pg := reachPostgres(t)
	crd, err := databases.Database.CRD()
	require.NoError(t, err)
	c := kubetest.Start(t, kubetest.WithControllerManager(), kubetest.WithCRDs(crd))
	explore.Run(t, c, explore.Config[databases.DatabaseSpec, databases.DatabaseStatus]{
		Resource:   databases.Database,
		Build:      exploreBuild,
		Invariants: []explore.Invariant{pg.provisioned()},
		Seed:       1, Steps: 6, Duration: *exploreDuration, KeptOnly: *exploreDuration == 0,
		// Quiet is the Memcached example's: a reconcile busy in
		// PostgreSQL, in a CREATE DATABASE, writes nothing to the
		// cluster until it is done, and the explorer counts it as not
		// quiet while it runs, so Quiet needn't outlast it.
		Quiet: 300 * time.Millisecond, Settle: 30 * time.Second,
		// Every fault but the kubelet's: the controller makes no Pod.
		// A kept sequence replays its own faults whatever these say.
		Faults:   explore.Faults{ScenarioAnnotation: databases.ScenarioAnnotation, Restarts: true, LostEvents: true, Down: true},
		External: explore.External{Spec: pg.names, Gone: []explore.Invariant{pg.gone()}},
		// A fresh Database of a step's spec names the stepped one's
		// database and role in PostgreSQL, which the stepped one holds:
		// the two can't end alike, so the fresh-create oracle is off.
		// A faulted sequence's replay without faults runs in a
		// namespace of its own, its names in PostgreSQL its own:
		// External.Spec prefixes them with a hash of the namespace,
		// which the oracle's placeholders don't stand for. So the Ready
		// condition's message, which names the database and the role,
		// and the Secret's database, user and (random) password differ
		// whatever the controller does: they are volatile. What they
		// say is the invariant's to check, against PostgreSQL. make
		// test compares too: without them, every kept sequence with a
		// fault failed make explore at once, on the message (its
		// replays cost seconds).
		NoFreshCreates: true,
		Volatile: []string{"Database.status.conditions[*].message",
			"Secret.data.database", "Secret.data.user", "Secret.data.password"},
	})
}

// exploreBuild makes the controller as Init does, in namespace ns alone,
// with its Lease there, trusting the scenarios of ns: the explorer's
// transient errors.
func exploreBuild(s *app.Setup, client *kube.Client, ns string) ([]app.Service, error) {
	ctrl, err := databases.Controller(s, client, explore.Settings("databases-controller", ns), localPostgres, ns)
	if err != nil {
		return nil, err
	}
	return []app.Service{ctrl}, nil
}

// newRun returns a prefix no other run of the test has: "xp" and ten
// random characters, lower case, as an unquoted identifier may be.
func newRun() string {
	return "xp" + strings.ToLower(rand.Text()[:10])
}

// prefix returns the prefix of every name in PostgreSQL of the replay of
// namespace ns in the run run: the run's, then a hash of the namespace,
// which is the replay's own in the run's cluster.
func prefix(run, ns string) string {
	return fmt.Sprintf("%s_%08x_", run, crc32.ChecksumIEEE([]byte(ns)))
}

// names makes the names the spec of the Database name gives PostgreSQL
// the replay's own, and few, so that Databases share them and change
// them: the databaseName becomes the prefix and db0 or db1, and an owner
// r0 or r1, by the generated name's length (so an update keeps the
// database's name, which is immutable, half the time, and two Databases
// ask for one database, or one role, half the time). An empty owner, the
// Database's name by default, would be the same role in every replay and
// run: it becomes the prefix and the Database's name, as the default
// would make it, with underscores for its hyphens. deletionPolicy is
// left as it was drawn.
func (p *postgres) names(ns, name string, spec map[string]any) {
	pre := prefix(p.run, ns)
	db, _ := spec["databaseName"].(string)
	spec["databaseName"] = fmt.Sprintf("%sdb%d", pre, len(db)%2)
	if owner, _ := spec["owner"].(string); owner != "" {
		spec["owner"] = fmt.Sprintf("%sr%d", pre, len(owner)%2)
	} else {
		spec["owner"] = pre + strings.ReplaceAll(name, "-", "_")
	}
}
