package databases

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

// DeletionPolicy says what deleting a Database does to what it created in
// PostgreSQL.
type DeletionPolicy string

const (
	// Delete drops the database and the role when the Database is deleted.
	Delete DeletionPolicy = "Delete"
	// Retain keeps them: only the Database and its Secret go.
	Retain DeletionPolicy = "Retain"
)

// DatabaseSpec is what a Database declares.
type DatabaseSpec struct {
	// DatabaseName is the PostgreSQL database's name.
	DatabaseName string `json:"databaseName"`
	// Owner is the login role that owns the database; "" is the
	// Database's own name. Like DatabaseName, it can't change.
	Owner string `json:"owner,omitempty"`
	// DeletionPolicy is Delete or Retain.
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// DatabaseStatus is what the controller reports of a Database.
type DatabaseStatus struct {
	// Conditions holds the Ready condition.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SecretName names the Secret with the credentials, once it exists.
	SecretName string `json:"secretName,omitempty"`
}

// Object is one Database, as the controller hands it to the Reconciler.
type Object = kube.Object[DatabaseSpec, DatabaseStatus]

// The Ready condition and its reasons.
const (
	// ConditionReady is True once the database, the role and the Secret
	// all exist as the Database declares.
	ConditionReady = "Ready"
	// ReasonProvisioned: the database, the role and the Secret exist.
	ReasonProvisioned = "Provisioned"
	// ReasonPostgresUnavailable: PostgreSQL can't be reached; retried with
	// backoff.
	ReasonPostgresUnavailable = "PostgresUnavailable"
	// ReasonNameConflict: the database, the role or the Secret already
	// exists and belongs to someone else. Checked again every minute.
	ReasonNameConflict = "NameConflict"
	// ReasonInvalidOwner: the owner role's name, taken from the Database's
	// name, is longer than PostgreSQL allows.
	ReasonInvalidOwner = "InvalidOwner"
	// ReasonProvisionFailed: PostgreSQL refused a statement; retried with
	// backoff.
	ReasonProvisionFailed = "ProvisionFailed"
	// ReasonSecretFailed: reading or applying the Secret failed; retried
	// with backoff.
	ReasonSecretFailed = "SecretFailed"
)

// identifier is what databaseName and owner may be: an unquoted
// PostgreSQL identifier in lower case, which needs no quoting in psql
// either. Identifiers are quoted anyway wherever they meet SQL.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// maxIdentifier is PostgreSQL's NAMEDATALEN-1: a longer name is truncated
// by the server, so two long names could collide.
const maxIdentifier = 63

// spec and status are what Database's Rules point into.
var (
	spec   DatabaseSpec
	status DatabaseStatus
)

// Database is the Database custom resource, databases.example.com/v1alpha1.
var Database = kube.Resource[DatabaseSpec, DatabaseStatus]{
	Group:   "databases.example.com",
	Version: "v1alpha1",
	Kind:    "Database",
	Plural:  "databases",
	Scope:   kube.Namespaced,
	Rules: []kube.TypeRules{
		kube.Rules(&spec,
			kube.Field(&spec.DatabaseName).Pattern(identifier).MaxLength(maxIdentifier).
				Description("The PostgreSQL database's name: lower-case letters, digits and underscores."),
			kube.Field(&spec.Owner).Pattern(identifier).MaxLength(maxIdentifier).Optional().
				Description("The login role that owns the database; the Database's name when empty. Immutable."),
			kube.Field(&spec.DeletionPolicy).Enum(Delete, Retain).Default(Delete).
				Description("Delete drops the database and the role with the Database; Retain keeps them."),
		).Validation("self.databaseName == oldSelf.databaseName", "databaseName is immutable").
			// A new owner would leave the old role behind, owning the
			// database, and the Database in NameConflict with its own
			// database (examples/databases/explore found it).
			Validation("has(self.owner) == has(oldSelf.owner) && (!has(self.owner) || self.owner == oldSelf.owner)", "owner is immutable"),
		kube.Rules(&status,
			kube.Field(&status.Conditions).ListMap("type"),
		),
	},
}
