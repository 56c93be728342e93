package remote

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Forward is which of the signed-in user's credentials a remote is given. The hub's own
// credential (its service account, its kubeconfig) is never one: the remote decides who
// the user is and what they may see and delete, as if they had come to it directly.
type Forward string

const (
	// ForwardToken gives the remote the credential the user signed in to the hub with: a
	// pasted token, or single sign-on's ID token.
	ForwardToken Forward = "token"
	// ForwardIDToken gives the remote single sign-on's ID token only: a user signed in to
	// the hub with a pasted token (say, a service account's, good on one cluster only) is
	// refused this remote rather than have that token sent to it.
	ForwardIDToken Forward = "id-token"
)

func (f Forward) mode() (Forward, error) {
	switch f {
	case "", ForwardToken:
		return ForwardToken, nil
	case ForwardIDToken:
		return ForwardIDToken, nil
	}
	return "", fmt.Errorf("forward %q: want token or id-token", string(f))
}

// Credential is what the hub knows of a request's user: the token it authenticated them
// with ("" when the hub runs without authentication) and whether it is single sign-on's
// ID token.
type Credential struct {
	Token   string
	IDToken bool
}

// pick is the token a remote is given for c ("" for none), or why it is given none and
// the request is refused (an *errRefused).
func (f Forward) pick(name string, c Credential) (string, error) {
	if f == ForwardIDToken && c.Token != "" && !c.IDToken {
		return "", &errRefused{name, "takes only single sign-on's ID token: sign in to the hub with single sign-on to reach it"}
	}
	return c.Token, nil
}

// IsIDTokenOf reports whether token is a JWT issued by issuer. It does not verify the
// signature: it tells a credential the hub has authenticated already (its ID token, or a
// pasted token) apart, and verifying is each remote's own business.
func IsIDTokenOf(token, issuer string) bool {
	if issuer == "" {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	return json.Unmarshal(payload, &claims) == nil && claims.Issuer == issuer
}
