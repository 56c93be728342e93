package security

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// SSOFlow is one single sign-on in progress, between gcscope's redirect to the provider
// and its answer: sealed into a cookie under the process key and bound to the browser
// that started it (server/edge/sso_flow.go says why).
type SSOFlow struct {
	State, Nonce, Verifier string
	Expires                time.Time
}

// NewSSOFlow is a fresh flow, expiring after lifetime.
func NewSSOFlow(now time.Time, lifetime time.Duration) SSOFlow {
	return SSOFlow{State: RandomString(), Nonce: RandomString(), Verifier: oauth2.GenerateVerifier(), Expires: now.Add(lifetime)}
}

// RandomString is 32 random bytes, URL-safe.
func RandomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewProcessKey returns a fresh key for the HMACs gcscope signs with.
func NewProcessKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// Seal is the flow's cookie value, bound to browser under key:
// state.nonce.verifier.expiry.mac (none of them holds a dot).
func (f SSOFlow) Seal(key []byte, browser string) string {
	payload := strings.Join([]string{f.State, f.Nonce, f.Verifier, strconv.FormatInt(f.Expires.Unix(), 10)}, ".")
	return payload + "." + ssoFlowMAC(key, browser, payload)
}

func ssoFlowMAC(key []byte, browser, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("gcscope-sso-flow\x00"))
	m.Write([]byte(browser))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ErrNoSSOFlow: the callback has no flow of gcscope's for this browser.
var ErrNoSSOFlow = errors.New("this sign-in was not started here (in this browser), or took longer than 10 minutes: start again")

// OpenSSOFlow is the flow value holds, when it was sealed under key for browser and has
// not expired at now.
func OpenSSOFlow(key []byte, browser, value string, now time.Time) (SSOFlow, error) {
	parts := strings.Split(value, ".")
	if len(parts) != 5 || slices.Contains(parts, "") {
		return SSOFlow{}, ErrNoSSOFlow
	}
	payload, mac := strings.Join(parts[:4], "."), parts[4]
	if !hmac.Equal([]byte(mac), []byte(ssoFlowMAC(key, browser, payload))) {
		return SSOFlow{}, ErrNoSSOFlow
	}
	unix, err := strconv.ParseInt(parts[3], 10, 64)
	f := SSOFlow{State: parts[0], Nonce: parts[1], Verifier: parts[2], Expires: time.Unix(unix, 0)}
	if err != nil || !now.Before(f.Expires) {
		return SSOFlow{}, ErrNoSSOFlow
	}
	return f, nil
}
