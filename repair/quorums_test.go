package repair

import (
	"errors"
	"testing"
)

func TestQuorums(t *testing.T) {
	for _, tc := range []struct {
		q          Quorums
		checkOK    bool
		e, w, a    int32 // applied over a 2/2/2 sibling
		applyFails bool
	}{
		{Quorums{}, true, 2, 2, 2, false},
		{Quorums{Ensemble: 3}, true, 3, 2, 2, false},
		{Quorums{Ensemble: 3, Write: 3, Ack: 2}, true, 3, 3, 2, false},
		{Quorums{Write: 3}, true, 0, 0, 0, true}, // over the sibling's ensemble of 2
		{Quorums{Ensemble: 1}, true, 0, 0, 0, true},
		{Quorums{Ensemble: 2, Write: 3}, false, 0, 0, 0, true},
		{Quorums{Write: 2, Ack: 3}, false, 0, 0, 0, true},
		{Quorums{Ack: -1}, false, 0, 0, 0, true},
		{Quorums{Ensemble: 65}, false, 0, 0, 0, true},
	} {
		err := tc.q.Check()
		if (err == nil) != tc.checkOK || err != nil && !errors.Is(err, ErrBadQuorums) {
			t.Errorf("%+v: Check = %v, want ok %v", tc.q, err, tc.checkOK)
		}
		if !tc.checkOK {
			continue
		}
		e, w, a, err := tc.q.apply(2, 2, 2)
		if tc.applyFails {
			if !errors.Is(err, ErrBadQuorums) {
				t.Errorf("%+v over 2/2/2: %d/%d/%d %v, want ErrBadQuorums", tc.q, e, w, a, err)
			}
			continue
		}
		if err != nil || e != tc.e || w != tc.w || a != tc.a {
			t.Errorf("%+v over 2/2/2: %d/%d/%d %v, want %d/%d/%d", tc.q, e, w, a, err, tc.e, tc.w, tc.a)
		}
	}
}
