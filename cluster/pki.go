package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pki holds the paths of the credentials the embedded control plane needs. Everything is
// generated in Go into the data dir on first start and reused afterwards, so a copied
// binary needs nothing from a source tree or module cache.
type pki struct {
	dir string

	caCert, caKey           string // cluster CA: signs the serving cert, the client CA, cluster-signing
	servingCert, servingKey string // kube-apiserver's TLS certificate
	saKey, saPub            string // service-account token signing key pair
	tokenFile               string // static token file: the admin bearer token
	adminToken              string
}

// servingHosts are the names the apiserver's certificate is valid for: the loopback
// addresses clients use and the in-cluster names pods would use.
var servingHosts = []string{"127.0.0.1", "::1", "localhost", "10.0.0.1",
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

// ensurePKI loads the credentials under dir, generating whatever is missing.
func ensurePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:         dir,
		caCert:      filepath.Join(dir, "ca.crt"),
		caKey:       filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
	}

	ca, caKey, err := p.ensureCA()
	if err != nil {
		return nil, fmt.Errorf("certificate authority: %w", err)
	}
	if !exists(p.servingCert) || !exists(p.servingKey) {
		if err := writeServingCert(p.servingCert, p.servingKey, ca, caKey); err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
	}
	if !exists(p.saKey) || !exists(p.saPub) {
		if err := writeKeyPair(p.saKey, p.saPub); err != nil {
			return nil, fmt.Errorf("service-account keys: %w", err)
		}
	}
	if p.adminToken, err = ensureTokenFile(p.tokenFile); err != nil {
		return nil, fmt.Errorf("admin token: %w", err)
	}
	return p, nil
}

func (p *pki) ensureCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if exists(p.caCert) && exists(p.caKey) {
		return loadCA(p.caCert, p.caKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "gcscope-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.caCert, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	if err := writeECKey(p.caKey, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func loadCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certDER, err := readPEM(certPath, "CERTIFICATE")
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	keyDER, err := readPEM(keyPath, "EC PRIVATE KEY")
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(keyDER)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	return cert, key, nil
}

func writeServingCert(certPath, keyPath string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range servingHosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeECKey(keyPath, key)
}

func writeKeyPair(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writeECKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pub, 0o644)
}

// ensureTokenFile returns the admin token, creating the kube-apiserver static token file
// (token,user,uid,"groups") on first use.
func ensureTokenFile(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if token, _, ok := strings.Cut(string(b), ","); ok && len(token) == 64 {
			return token, nil
		}
		return "", fmt.Errorf("%s is not a token file written by gcscope", path)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	token := hex.EncodeToString(buf)
	line := token + `,gcscope-admin,gcscope-admin,"system:masters"` + "\n"
	return token, os.WriteFile(path, []byte(line), 0o600)
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func readPEM(path, typ string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != typ {
		return nil, fmt.Errorf("%s: no %s PEM block", path, typ)
	}
	return block.Bytes, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
