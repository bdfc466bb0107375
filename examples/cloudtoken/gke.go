package cloudtoken

import (
	"context"
	"encoding/base64"
	"fmt"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/kube"
)

// GKEScope is the OAuth 2.0 scope of a token a GKE cluster's API server
// takes: Google Cloud's, with which IAM and the cluster's RBAC decide what
// the caller may do.
const GKEScope = "https://www.googleapis.com/auth/cloud-platform"

// GKE returns a Token function that returns the access token of tokens.
// tokens should be a reusing source, as google.DefaultTokenSource's is,
// which keeps a token until shortly before it expires, an hour after it
// was issued, so most calls send no request. A call fails when tokens
// does, wrapping its error; an access token of "" is ErrEmptyToken to the
// Client. oauth2.TokenSource takes no context, so a slow token endpoint
// holds up a call for as long as the source's HTTP client allows.
func GKE(tokens oauth2.TokenSource) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		tok, err := tokens.Token()
		if err != nil {
			return "", fmt.Errorf("GKE: the Google access token: %w", err)
		}
		return tok.AccessToken, nil
	}
}

// GKEDefault returns GKE's Token function on Application Default
// Credentials with GKEScope: on GKE, the pod's Kubernetes service account
// through Workload Identity Federation, from the metadata server; on a
// laptop, gcloud auth application-default login's credentials, or the key
// file that GOOGLE_APPLICATION_CREDENTIALS names. The Google SDK reads
// that variable and those files, and reaches the metadata server, on its
// own; ctx carries the HTTP client it fetches other tokens with, under
// oauth2.HTTPClient, and must last as long as the Token function is used.
// It fails, wrapping the SDK's error, when no credentials are found.
func GKEDefault(ctx context.Context) (func(context.Context) (string, error), error) {
	tokens, err := google.DefaultTokenSource(ctx, GKEScope)
	if err != nil {
		return nil, fmt.Errorf("GKE: Application Default Credentials: %w", err)
	}
	return GKE(tokens), nil
}

// GKEFromSetup fills the Connection of the GKE cluster whose endpoint
// GKE_ENDPOINT names and whose CA is GKE_CA, base64-encoded PEM, both read
// from s.Process, as an Init calls it, with GKEDefault's token. gcloud
// container clusters describe prints both, as endpoint and
// masterAuth.clusterCaCertificate. The token requests that the Google SDK
// sends itself, for a key file or a gcloud login, go through
// HTTPClient(s); the metadata server's, on GKE, go through the SDK's own
// client. It reports every missing or malformed variable together, and
// fails as GKEDefault and Connection do.
func GKEFromSetup(ctx context.Context, s *app.Setup) (kube.Connection, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }
	type settings struct {
		endpoint string
		ca       []byte
	}
	set, err := config.Struct(func(r *config.Resolver) settings {
		return settings{
			endpoint: r.Get(env("GKE_ENDPOINT")),
			ca:       r.Get(env("GKE_CA").Parse(base64.StdEncoding.DecodeString)),
		}
	}).Read(ctx)
	if err != nil {
		return kube.Connection{}, err
	}
	token, err := GKEDefault(context.WithValue(ctx, oauth2.HTTPClient, HTTPClient(s)))
	if err != nil {
		return kube.Connection{}, err
	}
	conn, err := Connection(set.endpoint, set.ca, token)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("the GKE cluster at %s: %w", set.endpoint, err)
	}
	return conn, nil
}
