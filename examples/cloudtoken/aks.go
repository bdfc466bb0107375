package cloudtoken

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/kube"
)

// AKSScope is the scope of a Microsoft Entra ID token an AKS cluster's API
// server takes, when the cluster has Microsoft Entra ID integration: the
// ".default" scope of the AKS server application, whose ID is the same in
// every tenant.
const AKSScope = "6dae42f8-4368-4678-94ff-3960e28e3630/.default"

// AKS returns a Token function that returns credential's token for
// AKSScope. The azidentity credentials cache their tokens and refresh them
// before they expire, so most calls send no request. A call fails when
// credential does, wrapping its error.
func AKS(credential azcore.TokenCredential) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		tok, err := credential.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{AKSScope}})
		if err != nil {
			return "", fmt.Errorf("AKS: the Microsoft Entra ID token for %s: %w", AKSScope, err)
		}
		return tok.Token, nil
	}
}

// AKSDefault returns AKS's Token function on azidentity's
// DefaultAzureCredential: on AKS, the pod's workload identity; on a VM, its
// managed identity; on a laptop, az login's. The Azure SDK reads its
// AZURE_* variables and the workload identity's token file, and runs the
// az command, on its own; transport sends the requests that it sends
// itself, such as HTTPClient's (nil: the SDK's own). It fails, wrapping
// the SDK's error, when the credential can't be built.
func AKSDefault(transport policy.Transporter) (func(context.Context) (string, error), error) {
	opts := &azidentity.DefaultAzureCredentialOptions{}
	opts.Transport = transport
	credential, err := azidentity.NewDefaultAzureCredential(opts)
	if err != nil {
		return nil, fmt.Errorf("AKS: DefaultAzureCredential: %w", err)
	}
	return AKS(credential), nil
}

// AKSFromSetup fills the Connection of the AKS cluster whose API server
// AKS_SERVER names, such as its FQDN, and whose CA is AKS_CA,
// base64-encoded PEM, both read from s.Process, as an Init calls it, with
// AKSDefault's token, whose requests go through HTTPClient(s). az aks show
// prints the FQDN; the CA is the certificate-authority-data of the
// kubeconfig az aks get-credentials writes. It reports every missing or
// malformed variable together, and fails as AKSDefault and Connection do.
func AKSFromSetup(ctx context.Context, s *app.Setup) (kube.Connection, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }
	type settings struct {
		server string
		ca     []byte
	}
	set, err := config.Struct(func(r *config.Resolver) settings {
		return settings{
			server: r.Get(env("AKS_SERVER")),
			ca:     r.Get(env("AKS_CA").Parse(base64.StdEncoding.DecodeString)),
		}
	}).Read(ctx)
	if err != nil {
		return kube.Connection{}, err
	}
	token, err := AKSDefault(HTTPClient(s))
	if err != nil {
		return kube.Connection{}, err
	}
	conn, err := Connection(set.server, set.ca, token)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("the AKS cluster at %s: %w", set.server, err)
	}
	return conn, nil
}
