package security

import (
	"context"
	"errors"
	"testing"
)

// authFunc is an Authenticator of a function.
type authFunc func(ctx context.Context, token string) (*User, error)

func (f authFunc) Authenticate(ctx context.Context, token string) (*User, error) {
	return f(ctx, token)
}

// accepting accepts token as name; any other token is unauthenticated.
func accepting(token, name string) Authenticator {
	return authFunc(func(_ context.Context, t string) (*User, error) {
		if t == token {
			return &User{Name: name}, nil
		}
		return nil, ErrUnauthenticated
	})
}

// TestAnyOfSignsInWhenOneClusterAccepts: a credential one cluster accepts signs in, even
// while another cluster cannot be reached (it waits on its context: the first acceptance
// ends the wait); one every cluster refuses is unauthenticated (401); one refused by some
// while another could not be asked is that error (503: the user may be that cluster's).
func TestAnyOfSignsInWhenOneClusterAccepts(t *testing.T) {
	unreachable := authFunc(func(ctx context.Context, _ string) (*User, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	down := authFunc(func(context.Context, string) (*User, error) { return nil, errors.New("apiserver down") })
	doors := AnyOf{unreachable, accepting("west-token", "alice@west"), accepting("east-token", "alice")}

	u, err := doors.Authenticate(context.Background(), "east-token")
	if err != nil || u.Name != "alice" {
		t.Errorf("east's credential: %v %v; want alice, with a cluster unreachable", u, err)
	}
	if _, err := (AnyOf{accepting("a", "a"), accepting("b", "b")}).Authenticate(context.Background(), "c"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a credential none accepts: %v; want ErrUnauthenticated", err)
	}
	if _, err := (AnyOf{accepting("a", "a"), down}).Authenticate(context.Background(), "c"); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a credential one refused while another could not be asked: %v; want that cluster's error", err)
	}
	if _, err := (AnyOf{}).Authenticate(context.Background(), "a"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("no clusters: %v; want ErrUnauthenticated", err)
	}
}

// TestAnyOfKnowsWhatOneOfThemAccepted: a token one cluster's reviewer accepted recently is
// known good without asking anyone, and one it accepted before is recognized (a signed-in
// user's review spends no failure budget).
func TestAnyOfKnowsWhatOneOfThemAccepted(t *testing.T) {
	var east, west fakeReviews
	eastR, westR := east.reviewer(), west.reviewer()
	doors := AnyOf{eastR, westR}
	if _, ok := doors.KnownGood("good-alice"); ok {
		t.Fatal("known good before anyone reviewed it")
	}
	if _, err := westR.Authenticate(context.Background(), "good-alice"); err != nil {
		t.Fatal(err)
	}
	if u, ok := doors.KnownGood("good-alice"); !ok || u.Name != "alice" {
		t.Errorf("KnownGood after west accepted: %v %v", u, ok)
	}
	if !doors.AcceptedBefore("good-alice") || doors.AcceptedBefore("good-bob") {
		t.Error("AcceptedBefore does not say what one of them accepted")
	}
}
