package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AdminUser is the name of the cluster's administrator: a member of
// system:masters, which RBAC lets do anything. Connection, RESTConfig and
// Kubeconfig authenticate as this user.
const AdminUser = "kubetest-admin"

// controllerManagerUser is the identity of the in-process
// kube-controller-manager. It is in system:masters so that the garbage
// collector may delete any kind of object, as it can in a real cluster
// where it acts through its own ServiceAccount.
const controllerManagerUser = "system:kube-controller-manager"

// serviceAccountIssuer is the issuer of the tokens the TokenRequest API
// mints; it is the one kind and kubeadm clusters use.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// certificateLifetime bounds the CA and the serving certificate. A cluster
// lives as long as a test or a demo; a day is plenty and keeps a leaked
// certificate harmless.
const certificateLifetime = 24 * time.Hour

// user is one static identity of the token file.
type user struct {
	name   string
	token  string
	groups []string
}

// credentials are what a cluster's API server and its clients share: the CA
// that signed the serving certificate, the key that signs ServiceAccount
// tokens, and the static bearer tokens.
type credentials struct {
	caPEM       []byte
	servingCert string // path of the serving certificate (PEM)
	servingKey  string // path of its key (PEM)
	saKey       string // path of the ServiceAccount signing key (PEM)
	tokenFile   string // path of the static token file (CSV)
	admin       user
	cmUser      user
	users       map[string]user
}

// writeCredentials creates a fresh CA, a serving certificate for the
// loopback address and the names the in-cluster Service carries, a
// ServiceAccount signing key and the static token file, all in dir.
func writeCredentials(dir string, extra []user) (*credentials, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certificateLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	servingTemplate := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certificateLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
		DNSNames: []string{
			"localhost",
			"kubernetes",
			"kubernetes.default",
			"kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTemplate, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ServiceAccount signing key: %w", err)
	}

	c := &credentials{
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "service-account.key"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
		admin:       user{name: AdminUser, token: newToken(), groups: []string{"system:masters"}},
		cmUser:      user{name: controllerManagerUser, token: newToken(), groups: []string{"system:masters"}},
		users:       make(map[string]user, len(extra)),
	}
	for _, u := range extra {
		c.users[u.name] = u
	}

	servingKeyPEM, err := ecPrivateKeyPEM(servingKey)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := ecPrivateKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	servingPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER})
	files := []struct {
		path string
		data []byte
	}{
		{c.servingCert, servingPEM},
		{c.servingKey, servingKeyPEM},
		{c.saKey, saKeyPEM},
		{c.tokenFile, c.tokenCSV(extra)},
	}
	for _, f := range files {
		//nolint:forbidigo // kube-apiserver reads these from files, in the cluster's own directory
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return c, nil
}

// tokenCSV renders the static token file kube-apiserver reads with
// --token-auth-file: token,user,uid,"group1,group2" on each line. Names and
// tokens were checked for commas and quotes by the options.
func (c *credentials) tokenCSV(extra []user) []byte {
	var b strings.Builder
	for _, u := range append([]user{c.admin, c.cmUser}, extra...) {
		fmt.Fprintf(&b, "%s,%s,%s", u.token, u.name, u.name)
		if len(u.groups) > 0 {
			fmt.Fprintf(&b, `,"%s"`, strings.Join(u.groups, ","))
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func ecPrivateKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode EC key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// serial returns a random positive certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on Linux; if it ever does, a
		// fixed serial is still a valid one for a throwaway CA.
		return big.NewInt(1)
	}
	return n.Add(n, big.NewInt(1))
}

// newToken returns a random bearer token.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails: see crypto/rand.Read
	return hex.EncodeToString(b)
}
