package cloudtoken

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/kube"
)

// EKSTokenPrefix begins every EKS bearer token: the version of the token's
// format that the cluster's authenticator reads.
const EKSTokenPrefix = "k8s-aws-v1."

// EKSClusterHeader is the signed header that names the cluster a token is
// for, so that a token for one cluster is refused by every other.
const EKSClusterHeader = "x-k8s-aws-id"

// EKSToken returns the bearer token of presignedURL, a presigned request of
// sts:GetCallerIdentity: EKSTokenPrefix and the URL in unpadded base64url.
// The cluster's authenticator decodes it, sends the request to STS and
// maps the identity STS answers with to a Kubernetes user.
func EKSToken(presignedURL string) string {
	return EKSTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(presignedURL))
}

// EKS returns a Token function for the EKS cluster named cluster, which
// presigns sts:GetCallerIdentity with cfg's credentials and region on each
// call. Presigning sends no request, and the SDK caches the credentials it
// signs with, so a call costs microseconds once they are fetched. A token
// is valid for 15 minutes after it is signed, and the Client asks for a new
// one every minute, so a kept token, after a call that failed, still serves
// for 14 more. A call fails, wrapping the SDK's error and naming the
// cluster, when cfg has no region or its credentials can't be retrieved.
func EKS(cfg aws.Config, cluster string) func(context.Context) (string, error) {
	presigner := sts.NewPresignClient(sts.NewFromConfig(cfg))
	headers := sts.WithAPIOptions(
		smithyhttp.AddHeaderValue(EKSClusterHeader, cluster),
		// STS ignores it (the URL is valid for 15 minutes whatever it
		// says), but the authenticator refuses a token without it, or
		// with more than 900.
		smithyhttp.AddHeaderValue("X-Amz-Expires", "60"),
	)
	return func(ctx context.Context) (string, error) {
		req, err := presigner.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
			o.ClientOptions = append(o.ClientOptions, headers)
		})
		if err != nil {
			return "", fmt.Errorf("the EKS cluster %s: presign sts:GetCallerIdentity: %w", cluster, err)
		}
		return EKSToken(req.URL), nil
	}
}

// EKSDescriber describes an EKS cluster: *eks.Client, or a test's fake.
type EKSDescriber interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// EKSConnection returns the Connection of the EKS cluster named cluster:
// its endpoint and CA, as clusters describes them (the caller needs
// eks:DescribeCluster on it), and EKS(cfg, cluster) as its Token. It fails
// when the description fails, wrapping the SDK's error, and reports
// together, naming the cluster, everything the description lacks or holds
// malformed: the endpoint and the CA, which a cluster still being created
// has neither of.
func EKSConnection(ctx context.Context, clusters EKSDescriber, cfg aws.Config, cluster string) (kube.Connection, error) {
	out, err := clusters.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return kube.Connection{}, fmt.Errorf("the EKS cluster %s: describe: %w", cluster, err)
	}
	if out.Cluster == nil {
		return kube.Connection{}, fmt.Errorf("the EKS cluster %s: the description holds no cluster", cluster)
	}
	c := out.Cluster
	var errs []error
	endpoint := aws.ToString(c.Endpoint)
	if endpoint == "" {
		errs = append(errs, fmt.Errorf("the EKS cluster %s (status %s): endpoint: empty", cluster, c.Status))
	}
	var ca []byte
	if c.CertificateAuthority == nil || aws.ToString(c.CertificateAuthority.Data) == "" {
		errs = append(errs, fmt.Errorf("the EKS cluster %s (status %s): certificateAuthority.data: empty", cluster, c.Status))
	} else if ca, err = base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data)); err != nil {
		errs = append(errs, fmt.Errorf("the EKS cluster %s: certificateAuthority.data: %w", cluster, err))
	}
	if err := errors.Join(errs...); err != nil {
		return kube.Connection{}, err
	}
	conn, err := Connection(endpoint, ca, EKS(cfg, cluster))
	if err != nil {
		return kube.Connection{}, fmt.Errorf("the EKS cluster %s: %w", cluster, err)
	}
	return conn, nil
}

// EKSFromSetup fills the Connection of the EKS cluster that EKS_CLUSTER
// names, in the region AWS_REGION names, both read from s.Process, as an
// Init calls it. The AWS SDK's default chain finds the credentials: on
// EKS, the pod's EKS Pod Identity or IAM role for its service account; on a
// laptop, the shared config's profile. The SDK reads its own variables and
// files for them (AWS_PROFILE, AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE,
// ~/.aws/config, and the rest), and its requests, to STS for credentials
// and to EKS for the cluster, go through HTTPClient(s). It reports both
// variables together when they are missing, and fails as EKSConnection
// does.
func EKSFromSetup(ctx context.Context, s *app.Setup) (kube.Connection, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }
	type settings struct{ cluster, region string }
	set, err := config.Struct(func(r *config.Resolver) settings {
		return settings{cluster: r.Get(env("EKS_CLUSTER")), region: r.Get(env("AWS_REGION"))}
	}).Read(ctx)
	if err != nil {
		return kube.Connection{}, err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(set.region),
		awsconfig.WithHTTPClient(HTTPClient(s)),
	)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("the EKS cluster %s: the AWS config: %w", set.cluster, err)
	}
	return EKSConnection(ctx, eks.NewFromConfig(cfg), cfg, set.cluster)
}
