package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gcscope/gcscope/server/security"
)

// Each remote decides who a user is, as a cluster does with TokenReview: the hub asks
// the remote's /session as the holder of the user's credential, and the remote answers
// after its own review (--auth=kubernetes: its apiserver's TokenReview). Answers are kept
// as a cluster's are (security.TokenReviewer: good ones a minute, bad ones 10 s), so the
// picker's refusals, the door of a hub of remotes alone and its streams' re-checks cost a
// remote one review per user and minute.

// errRefused: the remote does not take the user's credential (its 401 or 403, or the hub
// does not forward that credential to it). It is an ErrUnauthenticated of that remote.
type errRefused struct {
	cluster string
	reason  string // "does not accept your credential: ...", for the picker
}

func (e *errRefused) Error() string { return fmt.Sprintf("cluster %q %s", e.cluster, e.reason) }

func (e *errRefused) Unwrap() error { return security.ErrUnauthenticated }

// errAuthenticatesNoOne: the remote runs without authentication, so its /session takes
// any credential and names no one. It cannot sign a user in to the hub; a hub without
// authentication reaches it all the same.
type errAuthenticatesNoOne struct{ cluster string }

func (e *errAuthenticatesNoOne) Error() string {
	return fmt.Sprintf("cluster %q authenticates no one (it runs without --auth or --auth-token-file), so it cannot sign a user in", e.cluster)
}

func (e *errAuthenticatesNoOne) Unwrap() error { return security.ErrUnauthenticated }

func refusedBecause(cluster string, body io.Reader) *errRefused {
	return &errRefused{cluster, "does not accept your credential: " + errorMessage(body)}
}

// sessionAnswer is what the hub reads of a remote's /session.
type sessionAnswer struct {
	User          *security.User `json:"user"`
	Authenticated bool           `json:"authenticated"`
	CSRFToken     string         `json:"csrfToken"`
	csrfCookie    string         // its gcscope_csrf cookie
}

// session asks the remote's /session as the holder of token ("": none), within timeout.
func (rm *Remote) session(ctx context.Context, token string, timeout time.Duration) (*sessionAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, _ := rm.endpoint("/api/v1/session")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "gcscope-hub")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := rm.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, refusedBecause(rm.cfg.Name, resp.Body)
	default:
		return nil, fmt.Errorf("its /session answered %d: %s", resp.StatusCode, errorMessage(resp.Body))
	}
	var s sessionAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&s); err != nil {
		return nil, fmt.Errorf("its /session: %w", err)
	}
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			s.csrfCookie = c.Value
		}
	}
	return &s, nil
}

// whoIs is the remote's review of token (security.Review): the user it names, an
// errRefused or errAuthenticatesNoOne, or why it could not be asked in time.
func (rm *Remote) whoIs(ctx context.Context, token string) (*security.User, error) {
	s, err := rm.session(ctx, token, rm.limits.ProbeTimeout)
	var refused *errRefused
	switch {
	case errors.As(err, &refused):
		return nil, err
	case err != nil:
		rm.probeNow()
		return nil, fmt.Errorf("cluster %q (%s) did not answer: %w", rm.cfg.Name, rm.base, err)
	case !s.Authenticated || s.User == nil || s.User.Name == "":
		return nil, &errAuthenticatesNoOne{rm.cfg.Name}
	}
	// The hub makes no write as the user (the remote does), so it impersonates no one.
	return &security.User{Name: s.User.Name, Groups: s.User.Groups}, nil
}

// refuses says why the remote refuses cred ("" when it takes it, or cannot say in time).
func (rm *Remote) refuses(ctx context.Context, cred Credential) string {
	token, err := rm.forward.pick(rm.cfg.Name, cred)
	switch {
	case err != nil:
	case token == "":
		// A hub without authentication forwards no credential: the remote must take none.
		_, err = rm.session(ctx, "", rm.limits.ProbeTimeout)
	default:
		_, err = rm.users.Authenticate(ctx, token)
	}
	var refused *errRefused
	if errors.As(err, &refused) {
		return refused.reason
	}
	return ""
}

// IDTokens is single sign-on as the hub's door needs it (*security.SSO): its issuer, and
// a check of a token that claims to be one of its ID tokens.
type IDTokens interface {
	Issuer() string
	VerifyIDToken(ctx context.Context, token string) error
}

// Door signs a user in to the hub when one of the remotes accepts their credential (the
// one the hub would forward to it). Whom it names is only the hub's (its session, its
// audit lines): each remote reviews every request to it again, under the name it gives.
//
// A token that claims to be single sign-on's ID token (ids nil: none does) is checked at
// the hub first: a forged or expired one reaches no remote. A remote counts the
// credentials it refuses against the hub's address (its budget of failed
// authentications), so that what the hub forwards must not be anyone's guess: a remote
// given forward=id-token only ever gets ID tokens the hub has checked.
func (s *Set) Door(ids IDTokens) security.Authenticator {
	d := door{ids: ids, members: make(security.AnyOf, 0, len(s.list))}
	for _, rm := range s.list {
		d.members = append(d.members, memberOf{rm, &d})
	}
	return &d
}

type door struct {
	ids     IDTokens
	members security.AnyOf
}

// isIDToken reports whether token claims to be single sign-on's ID token.
func (d *door) isIDToken(token string) bool {
	return d.ids != nil && IsIDTokenOf(token, d.ids.Issuer())
}

// Authenticate implements security.Authenticator.
func (d *door) Authenticate(ctx context.Context, token string) (*security.User, error) {
	if d.isIDToken(token) {
		if err := d.ids.VerifyIDToken(ctx, token); err != nil {
			return nil, fmt.Errorf("%w: %v", security.ErrUnauthenticated, err)
		}
	}
	return d.members.Authenticate(ctx, token)
}

// KnownGood implements security.KnownGood.
func (d *door) KnownGood(token string) (*security.User, bool) { return d.members.KnownGood(token) }

// AcceptedBefore implements security.Recognizer.
func (d *door) AcceptedBefore(token string) bool { return d.members.AcceptedBefore(token) }

// memberOf is one remote as a member of the door: the credential the hub would forward to
// it, reviewed by it.
type memberOf struct {
	rm   *Remote
	door *door
}

func (m memberOf) forwarded(token string) (string, error) {
	return m.rm.forward.pick(m.rm.cfg.Name, Credential{Token: token, IDToken: m.door.isIDToken(token)})
}

// Authenticate implements security.Authenticator.
func (m memberOf) Authenticate(ctx context.Context, token string) (*security.User, error) {
	fwd, err := m.forwarded(token)
	if err != nil {
		return nil, err
	}
	return m.rm.users.Authenticate(ctx, fwd)
}

// KnownGood implements security.KnownGood.
func (m memberOf) KnownGood(token string) (*security.User, bool) {
	fwd, err := m.forwarded(token)
	if err != nil {
		return nil, false
	}
	return m.rm.users.KnownGood(fwd)
}

// AcceptedBefore implements security.Recognizer.
func (m memberOf) AcceptedBefore(token string) bool {
	fwd, err := m.forwarded(token)
	return err == nil && m.rm.users.AcceptedBefore(fwd)
}
