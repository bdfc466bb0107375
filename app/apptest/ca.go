package apptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// The validity of every certificate a CA issues. testing/synctest's clock
// starts at 2000-01-01, and the real one is decades later: both must fall
// inside it.
var (
	notBefore = time.Date(1999, time.January, 1, 0, 0, 0, 0, time.UTC)
	notAfter  = time.Date(2100, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// CA is a certificate authority of the test's own, with ECDSA P-256 keys.
// It issues server certificates for DNS names and IP addresses, and client
// certificates that name a Kubernetes user and groups. Its certificates
// are valid from 1999 to 2100, so they verify both in real time and on a
// testing/synctest bubble's clock, which starts at 2000-01-01.
type CA struct {
	tb   testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

// Cert is a certificate a CA issued, with its private key.
type Cert struct {
	// TLS is the certificate chain and key, for a tls.Config.
	TLS tls.Certificate
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
	// CertPEM is the certificate, PEM-encoded, as a kubeconfig's
	// client-certificate-data or a server's tls.crt holds it.
	CertPEM []byte
	// KeyPEM is the private key, PEM-encoded in PKCS #8.
	KeyPEM []byte
}

// NewCA returns a new CA. A failure to make its key or certificate fails
// the test.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("apptest: NewCA: generating the key: %v", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serialNumber(tb),
		Subject:               pkix.Name{CommonName: "apptest CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("apptest: NewCA: signing the certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("apptest: NewCA: parsing the certificate: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{
		tb:   tb,
		cert: cert,
		key:  key,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pool: pool,
	}
}

// Certificate returns the CA's own certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// PEM returns the CA's certificate, PEM-encoded, as a service account's
// ca.crt or a kubeconfig's certificate-authority-data holds it.
func (ca *CA) PEM() []byte { return append([]byte(nil), ca.pem...) }

// Pool returns a new pool holding only the CA's certificate, for a
// tls.Config's RootCAs or ClientCAs.
func (ca *CA) Pool() *x509.CertPool { return ca.pool.Clone() }

// ServerCert issues a certificate for a TLS server reached as any of
// hosts: each is an IP address, which goes in the certificate's IP
// addresses, or a DNS name. No host, or an empty one, fails the test.
func (ca *CA) ServerCert(hosts ...string) Cert {
	ca.tb.Helper()
	if len(hosts) == 0 {
		ca.tb.Fatalf("apptest: ServerCert: no host")
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		switch ip := net.ParseIP(h); {
		case h == "":
			ca.tb.Fatalf("apptest: ServerCert: an empty host in %q", hosts)
		case ip != nil:
			template.IPAddresses = append(template.IPAddresses, ip)
		default:
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	return ca.issue("ServerCert", template)
}

// ClientCert issues a certificate a TLS client authenticates with, naming
// user in its common name and each of groups in an organization, which
// is how the Kubernetes API server reads a user's name and groups. An
// empty user fails the test.
func (ca *CA) ClientCert(user string, groups ...string) Cert {
	ca.tb.Helper()
	if user == "" {
		ca.tb.Fatalf("apptest: ClientCert: an empty user")
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: append([]string(nil), groups...)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue("ClientCert", template)
}

// ServerConfig returns a TLS server configuration with a certificate
// ServerCert issues for hosts, offering HTTP/2 and HTTP/1.1, and verifying
// a client certificate the CA issued when the client presents one.
func (ca *CA) ServerConfig(hosts ...string) *tls.Config {
	ca.tb.Helper()
	cert := ca.ServerCert(hosts...)
	return &tls.Config{
		Certificates: []tls.Certificate{cert.TLS},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.VerifyClientCertIfGiven,
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
}

// issue signs template with the CA's key, for a new key of its own.
func (ca *CA) issue(what string, template *x509.Certificate) Cert {
	ca.tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.tb.Fatalf("apptest: %s: generating the key: %v", what, err)
	}
	template.SerialNumber = serialNumber(ca.tb)
	template.NotBefore, template.NotAfter = notBefore, notAfter
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.tb.Fatalf("apptest: %s: signing the certificate: %v", what, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		ca.tb.Fatalf("apptest: %s: parsing the certificate: %v", what, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.tb.Fatalf("apptest: %s: encoding the key: %v", what, err)
	}
	return Cert{
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:    leaf,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// serialNumber returns a random 128-bit serial number.
func serialNumber(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		tb.Fatalf("apptest: generating a serial number: %v", err)
	}
	return n
}
