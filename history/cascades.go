package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// CascadeQuery selects recorded cascades (cascade.go), newest first.
type CascadeQuery struct {
	// From and To keep the cascades that overlap [From, To) (zero: unbounded); an open
	// cascade lasts until now.
	From, To time.Time
	// UID, when set, keeps the cascades the object was the root or a member of.
	UID string
	// Limit bounds the answer; default 100, at most MaxCascades.
	Limit int
	// Visible, when set, leaves out the cascades whose root it refuses.
	Visible func(gc.ObjectRef) bool
	// Acted keeps the cascades the collector had something to do in (a write, or an
	// object besides the root) and those still open: not a single deletion it only
	// watched, as of a Pod its ReplicaSet deleted.
	Acted bool
}

// acted is CascadeQuery.Acted in SQL.
const acted = `(objects > 1 OR actions > 0 OR end IS NULL)`

// MaxCascades is the most cascades one answer lists.
const MaxCascades = 1000

// ErrNoCascade means no recorded cascade has the id asked for.
var ErrNoCascade = errors.New("history: no such cascade in the recording")

const cascadeColumns = `id, session, root_uid, root_api_version, root_kind, root_namespace, root_name, policy,
	start, end, objects, deleted, kept, actions, errors, retries, first_pos, last_pos, note`

// Cascades lists the cascades q selects, newest first.
func (s *Store) Cascades(ctx context.Context, q CascadeQuery) ([]Cascade, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, MaxCascades)
	return s.listCascades(ctx, q)
}

// listCascades is Cascades with q.Limit as it is.
func (s *Store) listCascades(ctx context.Context, q CascadeQuery) ([]Cascade, error) {
	var where []string
	var args []any
	if !q.To.IsZero() {
		where, args = append(where, "start < ?"), append(args, q.To.UnixNano())
	}
	if !q.From.IsZero() {
		where, args = append(where, "(end IS NULL OR end >= ?)"), append(args, q.From.UnixNano())
	}
	if q.UID != "" && q.Visible != nil {
		// Not even that an object the reader may not see was in a cascade.
		var ref gc.ObjectRef
		err := s.r.QueryRowContext(ctx, `SELECT uid, api_version, kind, namespace, name FROM objects WHERE uid = ?
			ORDER BY kind != '' DESC, id DESC LIMIT 1`, q.UID).Scan(&ref.UID, &ref.APIVersion, &ref.Kind, &ref.Namespace, &ref.Name)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, err
		case !q.Visible(ref):
			return []Cascade{}, nil
		}
	}
	if q.UID != "" {
		where, args = append(where, "(root_uid = ? OR id IN (SELECT cascade FROM cascade_members WHERE uid = ?))"), append(args, q.UID, q.UID)
	}
	if q.Acted {
		where = append(where, acted)
	}
	text := `SELECT ` + cascadeColumns + ` FROM cascades`
	if len(where) > 0 {
		text += ` WHERE ` + strings.Join(where, " AND ")
	}
	text += ` ORDER BY start DESC, id DESC`
	rows, err := s.r.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Cascade{}
	for rows.Next() && len(out) < q.Limit {
		c, err := scanCascade(rows)
		if err != nil {
			return nil, err
		}
		if q.Visible != nil && !q.Visible(c.Root) {
			continue
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CascadeByID is one recorded cascade.
func (s *Store) CascadeByID(ctx context.Context, id int64) (Cascade, error) {
	c, err := scanCascade(s.r.QueryRowContext(ctx, `SELECT `+cascadeColumns+` FROM cascades WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: %d", ErrNoCascade, id)
	}
	return c, err
}

func scanCascade(row interface{ Scan(...any) error }) (Cascade, error) {
	var c Cascade
	var start int64
	var end sql.NullInt64
	err := row.Scan(&c.ID, &c.Session, &c.Root.UID, &c.Root.APIVersion, &c.Root.Kind, &c.Root.Namespace, &c.Root.Name, &c.Policy,
		&start, &end, &c.Objects, &c.Deleted, &c.Kept, &c.Actions, &c.Errors, &c.Retries, &c.FirstPos, &c.LastPos, &c.Note)
	c.Start = time.Unix(0, start).UTC()
	if end.Valid {
		t := time.Unix(0, end.Int64).UTC()
		c.End = &t
	}
	return c, err
}
