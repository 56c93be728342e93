package stream

import (
	"fmt"
	"sync"
)

// Seats bounds the stream clients of every cluster's hub together: in all, and per
// user. A bound per hub would let one user hold the per-user bound once per cluster.
type Seats struct {
	max, perUser int

	mu     sync.Mutex
	taken  int
	byUser map[string]int
}

func NewSeats(max, perUser int) *Seats {
	if max <= 0 {
		max = defaultMaxClients
	}
	if perUser <= 0 {
		perUser = defaultMaxClientsPerUser
	}
	return &Seats{max: max, perUser: perUser, byUser: map[string]int{}}
}

// Take gives user a seat, or says why not (a stream relayed by a hub takes one too: server/remote).
func (s *Seats) Take(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.taken >= s.max:
		return fmt.Sprintf("too many streams: the server holds its maximum of %d; try again later", s.max)
	case s.byUser[user] >= s.perUser:
		return fmt.Sprintf("too many streams for this user (%d open, across all clusters); close another tab", s.byUser[user])
	}
	s.taken++
	s.byUser[user]++
	return ""
}

// Give returns a seat user took.
func (s *Seats) Give(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken--
	if s.byUser[user]--; s.byUser[user] <= 0 {
		delete(s.byUser, user)
	}
}
