package apptest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/apptest"
)

func TestCA_server_certificates_verify_by_name_and_address(t *testing.T) {
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("api.test", "10.96.0.1", "[::1]")
	require.Equal(t, []string{"api.test"}, cert.Leaf.DNSNames)
	require.Len(t, cert.Leaf.IPAddresses, 2)

	for _, name := range []string{"api.test", "10.96.0.1", "::1"} {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: ca.Pool()})
		require.NoError(t, err, name)
	}
	_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "other.test", Roots: ca.Pool()})
	require.Error(t, err)
	_, err = cert.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: apptest.NewCA(t).Pool()})
	require.Error(t, err, "another CA does not vouch for it")
	_, err = cert.Leaf.Verify(x509.VerifyOptions{
		DNSName: "api.test", Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	require.Error(t, err, "a server certificate does not authenticate a client")

	pub, ok := cert.Leaf.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok)
	require.Equal(t, elliptic.P256(), pub.Curve)
}

func TestCA_client_certificates_name_a_user_and_groups(t *testing.T) {
	ca := apptest.NewCA(t)
	cert := ca.ClientCert("jane", "system:masters", "dev")
	require.Equal(t, "jane", cert.Leaf.Subject.CommonName)
	require.ElementsMatch(t, []string{"system:masters", "dev"}, cert.Leaf.Subject.Organization)
	_, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}

func TestCA_PEM_encodings_round_trip(t *testing.T) {
	ca := apptest.NewCA(t)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.PEM()), "a service account's ca.crt")
	require.True(t, ca.Pool().Equal(pool))
	require.True(t, ca.Certificate().IsCA)

	cert := ca.ClientCert("jane")
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	require.NoError(t, err, "a kubeconfig's client-certificate-data and client-key-data")
	require.Equal(t, cert.TLS.Certificate, pair.Certificate)
	block, _ := pem.Decode(cert.KeyPEM)
	require.Equal(t, "PRIVATE KEY", block.Type)
}

func TestCA_certificates_are_valid_in_real_time_and_in_a_bubble(t *testing.T) {
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("api.test")
	verifyAt := func(now time.Time) error {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: ca.Pool(), CurrentTime: now})
		return err
	}
	require.NoError(t, verifyAt(time.Now()))
	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, verifyAt(time.Now()), "the bubble's clock reads %v", time.Now())
		inBubble := apptest.NewCA(t).ServerCert("api.test")
		require.True(t, inBubble.Leaf.NotBefore.Before(time.Now()))
	})
}

func TestCA_fails_the_test_on_bad_input(t *testing.T) {
	require.Equal(t, "apptest: ServerCert: no host", fatalOf(t, func(tb testing.TB) {
		apptest.NewCA(tb).ServerCert()
	}))
	require.Equal(t, `apptest: ServerCert: an empty host in ["api.test" ""]`, fatalOf(t, func(tb testing.TB) {
		apptest.NewCA(tb).ServerCert("api.test", "")
	}))
	require.Equal(t, "apptest: ClientCert: an empty user", fatalOf(t, func(tb testing.TB) {
		apptest.NewCA(tb).ClientCert("", "group")
	}))
}
