package cloudtoken

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/stretchr/testify/require"
)

func TestEKSToken_is_the_prefix_and_the_URL_in_unpadded_base64url(t *testing.T) {
	tests := []struct {
		url, token string
	}{
		// Standard base64 would end this one with "==".
		{
			"https://sts.us-west-2.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Expires=60",
			"k8s-aws-v1.aHR0cHM6Ly9zdHMudXMtd2VzdC0yLmFtYXpvbmF3cy5jb20vP0FjdGlvbj1HZXRDYWxsZXJJZGVudGl0eSZWZXJzaW9uPTIwMTEtMDYtMTUmWC1BbXotRXhwaXJlcz02MA",
		},
		// Standard base64 would write this one with "/" and "+".
		{
			"https://sts.amazonaws.com/?a=~~~>>>?",
			"k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_YT1-fn4-Pj4_",
		},
	}
	for _, tt := range tests {
		require.Equal(t, tt.token, EKSToken(tt.url))
	}
}

// awsConfig is a config with static credentials: presigning sends no
// request, so the test reaches no cloud.
func awsConfig(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
	}
}

// allowed are the query parameters aws-iam-authenticator accepts in a
// token's URL; it refuses a token with any other.
var allowed = map[string]bool{
	"action": true, "version": true, "x-amz-algorithm": true, "x-amz-credential": true, "x-amz-date": true,
	"x-amz-expires": true, "x-amz-security-token": true, "x-amz-signature": true, "x-amz-signedheaders": true,
}

// decodeEKS returns the presigned URL of an EKS token.
func decodeEKS(t *testing.T, token string) *url.URL {
	t.Helper()
	require.True(t, strings.HasPrefix(token, EKSTokenPrefix), token)
	require.LessOrEqual(t, len(token), 4096, "the authenticator's limit")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, EKSTokenPrefix))
	require.NoError(t, err)
	u, err := url.Parse(string(raw))
	require.NoError(t, err)
	return u
}

func TestEKS_presigns_GetCallerIdentity_for_the_cluster_as_the_authenticator_reads_it(t *testing.T) {
	token, err := EKS(awsConfig("eu-central-1"), "demo")(t.Context())
	require.NoError(t, err)
	u := decodeEKS(t, token)

	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "sts.eu-central-1.amazonaws.com", u.Host, "the region's STS endpoint")
	require.Equal(t, "/", u.Path)
	q := u.Query()
	for k, v := range q {
		require.True(t, allowed[strings.ToLower(k)], "the authenticator refuses the query parameter %s", k)
		require.Len(t, v, 1, k)
	}
	require.Equal(t, "GetCallerIdentity", q.Get("Action"))
	require.Equal(t, "2011-06-15", q.Get("Version"))
	require.Equal(t, "60", q.Get("X-Amz-Expires"))
	require.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"))
	require.Contains(t, strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), EKSClusterHeader, "the cluster's name is signed")
	require.Regexp(t, `^AKIDEXAMPLE/[0-9]{8}/eu-central-1/sts/aws4_request$`, q.Get("X-Amz-Credential"))
	require.NotEmpty(t, q.Get("X-Amz-Signature"))
	signed, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), signed, time.Minute, "signed now: valid for 15 minutes from now")
}

func TestEKS_fails_naming_the_cluster(t *testing.T) {
	denied := errors.New("no credentials here")
	tests := []struct {
		name string
		cfg  aws.Config
		is   error
	}{
		{"without a region", awsConfig(""), nil},
		{"without credentials", aws.Config{
			Region: "us-east-1",
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{}, denied
			}),
		}, denied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := EKS(tt.cfg, "demo")(t.Context())
			require.ErrorContains(t, err, "the EKS cluster demo: presign sts:GetCallerIdentity: ")
			require.Empty(t, tok)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
		})
	}
}

// describer answers DescribeCluster as EKS would, for the test.
type describer struct {
	out *eks.DescribeClusterOutput
	err error
	got []string // the clusters described
}

func (d *describer) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	d.got = append(d.got, aws.ToString(in.Name))
	return d.out, d.err
}

func TestEKSConnection_connects_to_the_described_endpoint_trusting_its_CA(t *testing.T) {
	d := &describer{out: &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
		Endpoint:             aws.String("https://ABCDEF.gr7.eu-central-1.eks.amazonaws.com"),
		CertificateAuthority: &ekstypes.Certificate{Data: aws.String(base64.StdEncoding.EncodeToString(caPEM(t)))},
		Status:               ekstypes.ClusterStatusActive,
	}}}
	conn, err := EKSConnection(t.Context(), d, awsConfig("eu-central-1"), "demo")
	require.NoError(t, err)
	require.Equal(t, []string{"demo"}, d.got)
	require.Equal(t, "ABCDEF.gr7.eu-central-1.eks.amazonaws.com:443", conn.Server)
	require.NotNil(t, conn.TLS.RootCAs)
	token, err := conn.Token(t.Context())
	require.NoError(t, err)
	require.Equal(t, "sts.eu-central-1.amazonaws.com", decodeEKS(t, token).Host)
}

func TestEKSConnection_reports_what_the_description_lacks(t *testing.T) {
	failed := errors.New("AccessDeniedException")
	tests := []struct {
		name string
		d    *describer
		want []string
	}{
		{"a failed description", &describer{err: failed}, []string{"the EKS cluster demo: describe: AccessDeniedException"}},
		{"no cluster", &describer{out: &eks.DescribeClusterOutput{}}, []string{"the EKS cluster demo: the description holds no cluster"}},
		{"a cluster being created", &describer{out: &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{Status: ekstypes.ClusterStatusCreating}}}, []string{
			"the EKS cluster demo (status CREATING): endpoint: empty",
			"the EKS cluster demo (status CREATING): certificateAuthority.data: empty",
		}},
		{"a CA that is no base64", &describer{out: &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
			Endpoint:             aws.String("https://ABCDEF.gr7.eu-central-1.eks.amazonaws.com"),
			CertificateAuthority: &ekstypes.Certificate{Data: aws.String("%%%")},
		}}}, []string{"the EKS cluster demo: certificateAuthority.data: illegal base64 data"}},
		{"a CA that is no PEM", &describer{out: &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
			Endpoint:             aws.String("https://ABCDEF.gr7.eu-central-1.eks.amazonaws.com"),
			CertificateAuthority: &ekstypes.Certificate{Data: aws.String(base64.StdEncoding.EncodeToString([]byte("not PEM")))},
		}}}, []string{"the EKS cluster demo: the CA holds no PEM certificate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EKSConnection(t.Context(), tt.d, awsConfig("eu-central-1"), "demo")
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			if tt.d.err != nil {
				require.ErrorIs(t, err, tt.d.err)
			}
		})
	}
}
