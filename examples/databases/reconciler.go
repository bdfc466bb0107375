package databases

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
)

// Finalizer is the finalizer that keeps a Database until its database
// and role are dropped.
const Finalizer = "databases.example.com/finalizer"

// conflictRecheck is how long a Database whose names conflict waits before
// it looks again: nothing the controller watches tells it the conflict is
// gone, and retrying with backoff would only fill the logs.
const conflictRecheck = time.Minute

// The keys of a Database's Secret.
const (
	SecretHost     = "host"
	SecretPort     = "port"
	SecretDatabase = "database"
	SecretUser     = "user"
	SecretPassword = "password"
)

// Reconciler provisions each Database in PostgreSQL and applies its
// Secret; Finalize drops what it provisioned.
type Reconciler struct {
	// Kube reads and applies the Secrets.
	Kube kubernetes.Interface
	// Postgres is the server the databases are on.
	Postgres Postgres
	// FieldManager names the Reconciler's applies of Secrets.
	FieldManager string
}

// SecretName is the name of the Secret of the Database name.
func SecretName(name string) string { return name + "-credentials" }

// owner is the name of the Database's login role.
func owner(d Object) string {
	if d.Spec.Owner != "" {
		return d.Spec.Owner
	}
	return d.Name
}

// Reconcile creates d's role and database when they are missing and
// applies d's Secret, reusing the password the Secret already holds. It
// returns d's status with the Ready condition: on a failure, False with
// the reason, and the error, which retries d with backoff; on a name
// conflict or an owner name too long, no error, since retrying can't
// help, and a conflict is looked at again after a minute.
func (r Reconciler) Reconcile(ctx context.Context, d Object) (kube.Result[DatabaseStatus], error) {
	st := d.Status
	st.ObservedGeneration = d.Generation
	ready := func(status metav1.ConditionStatus, reason, message string) *DatabaseStatus {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionReady, Status: status, Reason: reason, Message: message,
			ObservedGeneration: d.Generation,
		})
		return &st
	}
	role := owner(d)
	if len(role) > maxIdentifier {
		msg := fmt.Sprintf("the owner role's name %q is longer than %d characters: set spec.owner", role, maxIdentifier)
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonInvalidOwner, msg)}, nil
	}

	secretName := SecretName(d.Name)
	password, err := r.password(ctx, d, secretName)
	var conflict *conflictError
	switch {
	case errors.As(err, &conflict):
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonNameConflict, err.Error()), After: conflictRecheck}, nil
	case err != nil:
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonSecretFailed, err.Error())}, err
	}

	err = r.Postgres.ensure(ctx, d.Namespace, d.Name, d.Spec.DatabaseName, role, password)
	var unavailable *unavailableError
	switch {
	case errors.As(err, &conflict):
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonNameConflict, err.Error()), After: conflictRecheck}, nil
	case errors.As(err, &unavailable):
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonPostgresUnavailable, err.Error())}, err
	case err != nil:
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonProvisionFailed, err.Error())}, err
	}

	if err := r.applySecret(ctx, d, secretName, role, password); err != nil {
		return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionFalse, ReasonSecretFailed, err.Error())}, err
	}
	st.SecretName = secretName
	msg := fmt.Sprintf("the database %q is owned by the role %q; the Secret %s has the credentials", d.Spec.DatabaseName, role, secretName)
	return kube.Result[DatabaseStatus]{Status: ready(metav1.ConditionTrue, ReasonProvisioned, msg)}, nil
}

// Finalize drops d's database and role, unless d's deletionPolicy is
// Retain; a role that still owns another database, one a Retain kept,
// stays. It is idempotent: what is already gone is skipped. The Secret
// is left to the garbage collector, through its owner reference.
func (r Reconciler) Finalize(ctx context.Context, d Object) error {
	if d.Spec.DeletionPolicy == Retain {
		return nil
	}
	return r.Postgres.drop(ctx, d.Namespace, d.Name, d.Spec.DatabaseName, owner(d))
}

// password returns the password d's Secret holds, or a new one when there
// is no Secret yet, so a password is generated once and kept. A Secret of
// that name that d doesn't control is a conflictError.
func (r Reconciler) password(ctx context.Context, d Object, name string) (string, error) {
	// A live GET, and not a read from a cache of Secrets: the Secret is
	// this Reconciler's own write, applied by the reconcile of d before
	// this one, which may have ended a moment ago, and a cache fills from
	// a watch that may not have brought that apply yet. A cache that
	// hasn't would say there is no Secret, and this reconcile would make a
	// new password and set it on the role, under every application that
	// has just read the old one. The rule: read from a cache what others
	// write and the Reconciler reacts to, such as a ConfigMap of settings;
	// read back from the API server what the Reconciler itself wrote and
	// must not act on a stale copy of (read-your-writes).
	s, err := r.Kube.CoreV1().Secrets(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return rand.Text(), nil // 26 characters of base32: 130 bits
	case err != nil:
		return "", fmt.Errorf("reading the Secret %s/%s: %w", d.Namespace, name, err)
	case !metav1.IsControlledBy(s, &d.ObjectMeta):
		return "", &conflictError{what: fmt.Sprintf("the Secret %s/%s already exists and isn't this Database's", d.Namespace, name)}
	}
	if p := s.Data[SecretPassword]; len(p) > 0 {
		return string(p), nil
	}
	return rand.Text(), nil
}

// applySecret applies d's Secret, controlled by d, with server-side apply.
func (r Reconciler) applySecret(ctx context.Context, d Object, name, role, password string) error {
	_, err := r.Kube.CoreV1().Secrets(d.Namespace).Apply(ctx,
		corev1ac.Secret(name, d.Namespace).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(d.APIVersion).WithKind(d.Kind).WithName(d.Name).WithUID(d.UID).
				WithController(true).WithBlockOwnerDeletion(true)).
			WithType(corev1.SecretTypeOpaque).
			WithData(map[string][]byte{
				SecretHost:     []byte(r.Postgres.Host),
				SecretPort:     []byte(strconv.Itoa(int(r.Postgres.Port))),
				SecretDatabase: []byte(d.Spec.DatabaseName),
				SecretUser:     []byte(role),
				SecretPassword: []byte(password),
			}),
		metav1.ApplyOptions{FieldManager: r.FieldManager, Force: true},
	)
	if err != nil {
		return fmt.Errorf("applying the Secret %s/%s: %w", d.Namespace, name, err)
	}
	return nil
}
