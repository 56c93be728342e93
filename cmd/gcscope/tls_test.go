package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
)

// TestTLSServesHTTPSWithSecureCookies: with --tls-cert-file/--tls-private-key-file gcscope
// serves https only, says so, and its session and CSRF cookies are Secure.
func TestTLSServesHTTPSWithSecureCookies(t *testing.T) {
	// Its own gcscope process, data dir and port: it runs beside the other process tests,
	// after the browser tests, which stay serial (they time what the page draws).
	t.Parallel()
	root := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, root)
	tokenFile := filepath.Join(root, "tokens")
	const token = "tls-test-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+" tester\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, root, "home"), "TMPDIR=" + mkdir(t, root, "tmp")}
	addr := freeAddr(t)
	p := startProcess(t, root, env, binary, "--listen", addr, "--demo=false",
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--auth-token-file", tokenFile)

	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	base := "https://" + addr
	exited := false
	err := testkit.Poll(context.Background(), 2*time.Minute, func() bool {
		select {
		case <-p.exited:
			exited = true
			return true
		default:
		}
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if exited {
		t.Fatalf("gcscope exited before ready (%v):\n%s\n%s", p.waitErr, p.stdout(), p.stderrText())
	}
	if err != nil {
		t.Fatalf("not ready over https after 2 minutes:\n%s\n%s", p.stdout(), p.stderrText())
	}
	// /readyz answers before gcscope prints what it serves, and its output comes through a pipe.
	testkit.Poll(context.Background(), 10*time.Second, func() bool { return strings.Contains(p.stdout(), " serving on ") })
	if !strings.Contains(p.stdout(), "serving on https://") {
		t.Errorf("stdout does not say https:\n%s", p.stdout())
	}
	if !strings.Contains(p.stdout(), "access: bearer tokens from "+tokenFile) {
		t.Errorf("stdout does not say who may use it:\n%s", p.stdout())
	}
	// Plain http on the same port gets no answer from the application.
	if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain http answered 200 on the TLS port")
		}
	}

	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := cookieNamed(resp.Cookies(), "gcscope_session")
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.Secure || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login over https: %d, session cookie %+v; want 303 and a Secure, HttpOnly, SameSite=Strict cookie", resp.StatusCode, session)
	}
	req, _ = http.NewRequest("GET", base+"/api/v1/session", nil)
	req.AddCookie(session)
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := cookieNamed(resp.Cookies(), "gcscope_csrf"); resp.StatusCode != 200 || c == nil || !c.Secure {
		t.Errorf("session over https: %d, csrf cookie %+v; want 200 and a Secure cookie", resp.StatusCode, c)
	}
	p.stop(t, syscall.SIGTERM, addr)
}

func cookieNamed(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and returns a pool that
// trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcscope test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
