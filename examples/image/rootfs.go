package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The files every image has besides its binary, as distroless/static has
// them: the CA certificates, a user database naming the nonroot user, its
// home, and a /tmp anyone may write to.
const (
	// CABundle is where the CA certificates are, in PEM: the first
	// path Go's crypto/x509 (and OpenSSL on Debian) looks for on Linux.
	CABundle = "etc/ssl/certs/ca-certificates.crt"
	// Tmp is the directory anyone may write to, sticky, mode 1777.
	Tmp = "tmp"
	// Passwd and Group are the user database: root, nobody and nonroot
	// (65532), as distroless/static's.
	Passwd = "etc/passwd"
	Group  = "etc/group"
)

// passwd and group are distroless/static's /etc/passwd and /etc/group:
// with them, a container runtime sets HOME to /home/nonroot for 65532,
// and user.Current names the user.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"tty:x:5:\n" +
		"staff:x:50:\n" +
		"nonroot:x:65532:\n"
)

// epoch is every entry's modification time, so that the same inputs make
// the same layer, byte for byte.
var epoch = time.Unix(0, 0) //nolint:gochecknoglobals // a constant time.Time

// reserved are the top-level names the layer holds besides the binary,
// which the binary's name may therefore not take.
var reserved = []string{"etc", "home", "root", "tmp"} //nolint:gochecknoglobals // a constant list

// CACertificates returns the PEM bundle the image holds at CABundle:
// Mozilla's root certificates trusted for TLS servers, as
// golang.org/x/crypto/x509roots/fallback/bundle ships them (the version
// examples/go.mod pins), in its order, each after a comment naming its
// subject. A root Mozilla constrains beyond X.509 (a "distrust after"
// date) is left out: a PEM file can't carry the constraint, and trusting
// the root without it would accept certificates Mozilla no longer does.
// It returns an error if a root in the bundle doesn't parse.
func CACertificates() ([]byte, error) {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		c, err := x509.ParseCertificate(root.Certificate)
		if err != nil {
			return nil, fmt.Errorf("the CA bundle: a root that doesn't parse: %w", err)
		}
		fmt.Fprintf(&b, "# %s\n", c.Subject)
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, fmt.Errorf("the CA bundle: %s: %w", c.Subject, err)
		}
	}
	return b.Bytes(), nil
}

// maxUSTARName is the longest name a USTAR header holds without splitting
// it at a slash, which a binary's name has none of.
const maxUSTARName = 100

// entry is one file or directory of the layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	content  []byte
}

// layer returns the uncompressed tar of the image's one layer: the binary
// at /name, mode 0755, owned by UID:GID, and distroless/static's files
// (certs, the CA bundle; passwd and group; /home/nonroot and /root; /tmp
// of mode 1777), entries sorted by name, with a fixed time and numeric
// owners alone, so that the same binary makes the same layer. Every
// header is USTAR's, but a binary's name longer than 100 bytes, which a
// PAX record carries.
func layer(name string, binary, certs []byte) ([]byte, error) {
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: Group, mode: 0o644, content: []byte(group)},
		{name: Passwd, mode: 0o644, content: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CABundle, mode: 0o644, content: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: GID, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: Tmp + "/", mode: 0o1777, dir: true},
		{name: name, mode: 0o755, uid: UID, gid: GID, content: binary},
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.name,
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.gid,
			Size:     int64(len(e.content)),
			ModTime:  epoch,
			Format:   tar.FormatUSTAR,
		}
		if len(e.name) > maxUSTARName {
			// A binary's long name: a PAX record carries it whole,
			// with nothing else (no times, no user names).
			hdr.Format = tar.FormatPAX
		}
		if e.dir {
			hdr.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.content); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
