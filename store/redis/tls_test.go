package redis_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestTLS runs a redis-server of its own that speaks only TLS, with a
// certificate from a CA the test makes, and connects through a rediss://
// URL: the conformance suite passes over it; a client that does not trust
// the CA, and a plaintext client, are refused.
func TestTLS(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		msg := "redis-server is not installed; this test runs a server of its own"
		storetest.Skip(t, msg)
	}
	dir := t.TempDir()
	caPool, certFile, keyFile := makeCertificates(t, dir)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	url := fmt.Sprintf("rediss://127.0.0.1:%d/0", port)
	trusted := &tls.Config{RootCAs: caPool}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := evredis.New(context.Background(), url, &evredis.Options{TLSConfig: trusted})
		if err == nil {
			s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TLS server did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := evredis.New(context.Background(), url, &evredis.Options{TLSConfig: trusted, Prefix: "tls-" + rand.Text() + ":"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s, err := evredis.New(ctx, url, nil); err == nil {
		s.Close()
		t.Error("a client that does not trust the server's CA connected")
	}
	plain := fmt.Sprintf("redis://127.0.0.1:%d/0?dial_timeout=2s&read_timeout=2s&max_retries=-1", port)
	if s, err := evredis.New(ctx, plain, nil); err == nil {
		s.Close()
		t.Error("a plaintext client connected to the TLS port")
	}
	if _, err := evredis.New(ctx, plain, &evredis.Options{TLSConfig: trusted}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Options.TLSConfig with a redis:// URL: %v, want ErrInvalidArgument", err)
	}
}

// makeCertificates writes a server certificate for 127.0.0.1 signed by a
// new CA, and returns a pool holding the CA.
func makeCertificates(t *testing.T, dir string) (*x509.CertPool, string, string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "elicitvault test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, certFile, keyFile
}
