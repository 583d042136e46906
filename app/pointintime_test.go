package app

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// One parser reads every time flag: what --time takes, --at-time takes, and both
// refuse the same values with the same message.
func TestTimeFlagsShareOneParser(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time // zero: refused
		say  string
	}{
		{"2024-06-10T06:13:20Z", time.Date(2024, 6, 10, 6, 13, 20, 0, time.UTC), ""},
		{"2024-06-10T08:13:20.5+02:00", time.Date(2024, 6, 10, 6, 13, 20, 5e8, time.UTC), ""},
		{"1718000000s", time.Unix(1718000000, 0).UTC(), ""},
		{"1718000000000ms", time.Unix(1718000000, 0).UTC(), ""},
		{"1718000000000000us", time.Unix(1718000000, 0).UTC(), ""},
		{"1718000000000000000ns", time.Unix(1718000000, 0).UTC(), ""},
		{"-30m", now.Add(-30 * time.Minute), ""},
		{"-1h", now.Add(-time.Hour), ""},
		{"+0s", now, ""},
		{"1718000000", time.Time{}, "ambiguous"},
		{"-5s", now.Add(-5 * time.Second), ""},
		{"-1000000h", time.Time{}, "before 1970"},
		{"-1x", time.Time{}, "signed duration"},
		{"-1718000000s", now.Add(-1718000000 * time.Second), ""},
		{"253402300800s", time.Time{}, "9999"},
		{"yesterday", time.Time{}, "RFC 3339"},
		{"9223372036854775807s", time.Time{}, "9999"},
	} {
		for _, flag := range []string{flagTime, flagAtTime} {
			got, err := parseTime(flag, tc.in, now)
			switch {
			case tc.say == "" && (err != nil || !got.Equal(tc.want)):
				t.Errorf("--%s %s = %v, %v; want %v", flag, tc.in, got, err, tc.want)
			case tc.say != "" && (err == nil || !strings.Contains(err.Error(), tc.say) || !strings.Contains(err.Error(), "--"+flag)):
				t.Errorf("--%s %s = %v, %v; want an error naming --%s and saying %q", flag, tc.in, got, err, flag, tc.say)
			}
		}
	}
}

// The point-in-time flags, from the binary: --at-time takes what --time takes,
// --at-zxid decimal or 0x hex (as its help says), a zxid past the newest txn is
// refused naming the newest (as a revision past the newest is), and two flags
// naming different points exit 2.
func TestPointInTimeFlags(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 7})
	zk := "zk-data:" + filepath.Join("..", "testdata", "zookeeper", "sample")
	base := []string{"-d", dir, "--metadata", zk, "--json"}
	view := func(args ...string) (string, string, int) {
		return runBin(t, append(append(append([]string{}, base...), args...), "inspect", "node", "/")...)
	}
	newest, errOut, code := view()
	if code != 0 {
		t.Fatalf("newest view: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		say  string // in stderr
		same bool   // the newest view (else not checked)
	}{
		{[]string{"--at-zxid", "0x3e"}, 0, "zxid 0x3e", true},
		{[]string{"--at-zxid", "62"}, 0, "zxid 0x3e", true},
		{[]string{"--at-zxid", "0X3E"}, 0, "zxid 0x3e", true},
		{[]string{"--at-zxid", "0x5"}, 0, "zxid 0x5", false},
		{[]string{"--at-time", "-30m"}, 0, "zxid 0x3e", true},
		{[]string{"--at-time", "+0s"}, 0, "zxid 0x3e", true},
		{[]string{"--at-time", "2026-11-30T02:00:22.600Z"}, 0, "zxid 0x1", false},
		{[]string{"--at-zxid", "0x40"}, 2, "newest txn", false},
		{[]string{"--at-zxid", "0x40"}, 2, "0x3e", false},
		{[]string{"--at-zxid", "-1"}, 2, "positive", false},
		{[]string{"--at-zxid", "0"}, 2, "positive", false},
		{[]string{"--at-zxid", "0o17"}, 2, "hex (0x5c)", false},
		{[]string{"--at-time", "1718000000"}, 2, "ambiguous", false},
		{[]string{"--at-zxid", "5", "--at-time", "-1h"}, 2, "--at-zxid and --at-time name different points in time", false},
		{[]string{"--at-zxid", "5", "--revision", "5"}, 2, "give one", false},
	} {
		out, errOut, code := view(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.say) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d saying %q", tc.args, code, errOut, tc.code, tc.say)
			continue
		}
		if tc.same && out != newest {
			t.Errorf("%q: the view is not the newest:\n%s\nwant\n%s", tc.args, out, newest)
		}
	}
}
