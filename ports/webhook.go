package ports

import "context"

// The operations an admission review can be about, as admission/v1 names
// them.
const (
	OperationCreate  = "CREATE"
	OperationUpdate  = "UPDATE"
	OperationDelete  = "DELETE"
	OperationConnect = "CONNECT"
)

// AdmissionRequest is what an admission review asks about one object, as
// the domain hands it to an Admitter: the objects stay JSON, for the
// Admitter to decode into the end user's type.
type AdmissionRequest struct {
	// UID identifies the review; the response carries it back.
	UID string
	// Group, Version and Kind are the object's, as the review's kind says.
	Group, Version, Kind string
	// Resource and SubResource name what the request was made to, such as
	// pods and status.
	Resource, SubResource string
	// Namespace and Name are the object's; Name is empty on a create whose
	// name the API server generates.
	Namespace, Name string
	// Operation is one of OperationCreate, OperationUpdate,
	// OperationDelete and OperationConnect.
	Operation string
	// Object is the object as it would be stored: empty on a delete.
	// OldObject is the object as it was: set on an update and a delete.
	Object, OldObject []byte
	// DryRun says the request will not be persisted, so the Admitter must
	// cause no side effect.
	DryRun bool
	// UserName and Groups identify who made the request.
	UserName string
	Groups   []string
}

// AdmissionResult is an Admitter's decision to admit a request.
type AdmissionResult struct {
	// Object is the object the Admitter changed, as JSON, when it is a
	// mutating webhook's and it changed it; nil leaves it as it was. The
	// domain computes the JSON patch from the request's Object to it.
	Object []byte
	// Warnings are returned to the client, as kubectl prints them.
	Warnings []string
}

// Admitter decides one webhook's admission reviews: kube's adapter of the
// end user's typed validating or defaulting function.
type Admitter interface {
	// Admit decides on r. An error denies the request with the error's
	// message, and its warnings are returned with the denial. ctx ends
	// when the API server's timeout for the review passes.
	Admit(ctx context.Context, r AdmissionRequest) (AdmissionResult, error)
}

// Converter converts one resource's objects between its versions: kube's
// adapter of a Resource's typed conversions through its storage version.
type Converter interface {
	// Convert returns obj, an object of the resource in any of its
	// versions as JSON, converted to apiVersion, such as
	// cache.example.com/v1beta1. An error fails the whole review, with its
	// message naming the object.
	Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error)
}
